//go:build darwin

package metal_test

import (
	"testing"

	. "github.com/laya-metal/laya/metal"
)

// TestDeviceFusedGemm runs the emulator's fused-GEMM and split-K cases on
// the Apple GPU against the same float64 references, and checks that a
// split-K GEMM gives the same bits on two runs there too (the reduction
// order is fixed; the threadgroups' order is the hardware's). This is what
// the emulator cannot prove: the simdgroup-matrix lane layout and the
// hardware's scheduling.
func TestDeviceFusedGemm(t *testing.T) {
	gpu, err := OpenSystemDefault()
	if err != nil {
		t.Fatalf("OpenSystemDefault: %v", err)
	}
	defer gpu.Close()
	kern := NewKernels(gpu)
	for _, c := range append(gemmSweep(false), splitSweep()...) {
		runGemmCase(t, gpu, kern, c)
	}
	first := splitKBits(t, gpu, kern)
	for run := 1; run < 4; run++ {
		bits := splitKBits(t, gpu, kern)
		for i := range bits {
			if bits[i] != first[i] {
				t.Fatalf("run %d: element %d is %#x, the first run gave %#x", run, i, bits[i], first[i])
			}
		}
	}
}
