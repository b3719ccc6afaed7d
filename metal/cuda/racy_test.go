package cuda_test

import (
	"context"
	"io/fs"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/laya-metal/laya/kernels"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/cuda"
)

// racySoftmax is kernels/softmax.metal with the barrier that protects the
// reuse of partial[] removed: simdgroup 0 may overwrite a maximum another
// simdgroup has not read yet.
func racySoftmax(t *testing.T) metal.KernelSource {
	b, err := fs.ReadFile(kernels.FS(), "softmax.metal")
	if err != nil {
		t.Fatal(err)
	}
	const guarded = "  // Every simdgroup must have read the maxima before partial is reused.\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
	src := string(b)
	if !strings.Contains(src, guarded) {
		t.Fatal("softmax.metal no longer has the barrier this test removes")
	}
	// The line count stays the same, so reports name softmax.metal's lines.
	return metal.KernelSource{Name: "kernels/softmax.metal", Text: strings.Replace(src, guarded, "\n\n", 1)}
}

// TestRacySoftmax runs the racy softmax on the GPU for compute-sanitizer
// (scripts/gpucheck/metal-on-gpu.sh: racecheck must report the hazard at a
// softmax.metal line). It asserts nothing itself, since on the GPU the race
// need not show in the output; LAYA_CUDA_RACY=1 enables it.
func TestRacySoftmax(t *testing.T) {
	if os.Getenv("LAYA_CUDA_RACY") != "1" {
		t.Skip("LAYA_CUDA_RACY=1 runs the kernel with a barrier removed, for compute-sanitizer")
	}
	dev := openDevice(t, cuda.Options{Sources: []metal.KernelSource{racySoftmax(t)}})
	const rows, cols = 64, 1000
	in, _ := dev.NewBuffer(4 * rows * cols)
	out, _ := dev.NewBuffer(4 * rows * cols)
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	putFloats(in.Bytes(), x)
	p, err := dev.Pipeline("softmax_f32")
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := dev.NewCommandBuffer()
	if err := cb.Dispatch(p, metal.Size3{X: rows, Y: 1, Z: 1}, metal.Size3{X: 256, Y: 1, Z: 1},
		metal.Arg{Index: 0, Buffer: in}, metal.Arg{Index: 1, Buffer: out}, metal.Arg{Index: 2, Bytes: u32(cols)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var worst float64
	y := floats(out.Bytes())
	for r := 0; r < rows; r++ {
		m, s := math.Inf(-1), 0.0
		for c := 0; c < cols; c++ {
			m = max(m, float64(x[r*cols+c]))
		}
		for c := 0; c < cols; c++ {
			s += math.Exp(float64(x[r*cols+c]) - m)
		}
		for c := 0; c < cols; c++ {
			worst = max(worst, math.Abs(float64(y[r*cols+c])-math.Exp(float64(x[r*cols+c])-m)/s))
		}
	}
	t.Logf("racy softmax: max |Δ| %.3g against float64", worst)
}
