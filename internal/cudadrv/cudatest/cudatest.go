// Package cudatest holds what the tests of the CUDA-backed packages share:
// they run where there is a GPU and skip where there is none (CI).
package cudatest

import (
	"errors"
	"testing"

	"github.com/laya-metal/laya/internal/cudadrv"
)

// Check skips the test when err says this machine has no CUDA driver or GPU
// and fails it on any other error.
func Check(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, cudadrv.ErrNoCUDA) {
		t.Skipf("no CUDA driver or GPU here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
