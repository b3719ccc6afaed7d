//go:build linux

package cudadrv

import (
	"errors"
	"fmt"
	"testing"
)

// The errors after which a context is gone for good are told apart from
// every other failure, also when wrapped; anything not a driver error is not
// one of them.
func TestContextLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&Error{Call: "cuEventQuery", Code: 700}, true},  // illegal address
		{&Error{Call: "cuGraphLaunch", Code: 719}, true}, // launch failed
		{&Error{Call: "cuStreamSynchronize", Code: 710}, true},
		{fmt.Errorf("cuda: a kernel failed: %w", &Error{Call: "cuEventSynchronize", Code: 716}), true},
		{&Error{Call: "cuMemAlloc_v2", Code: ErrorOutOfMemory}, false},
		{&Error{Call: "cuEventQuery", Code: 600}, false},   // not ready
		{&Error{Call: "cuLaunchKernel", Code: 701}, false}, // out of resources: the launch alone
		{errors.New("CUDA_ERROR_ILLEGAL_ADDRESS"), false},
		{nil, false},
	} {
		if got := ContextLost(c.err); got != c.want {
			t.Errorf("ContextLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
