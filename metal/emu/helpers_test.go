//go:build linux || darwin

package emu_test

// The emulator's tests dot-import package metal for the Device interface
// they drive, and share their helpers with the kernel tests of package metal
// through metal/internal/metaltest.

import (
	"math"

	"github.com/laya-metal/laya/metal/internal/metaltest"
)

var (
	openEmu    = metaltest.OpenEmu
	testSource = metaltest.TestSource
	f32Buffer  = metaltest.F32Buffer
	f16Buffer  = metaltest.F16Buffer
	readF32    = metaltest.ReadF32
	pseudo     = metaltest.Pseudo
	run        = metaltest.Run
	maxErr     = metaltest.MaxErr
	u32s       = metaltest.U32s
)

// softmaxRef is the row-wise softmax in float64, the reference of the racy
// softmax test (the kernels' own references live in package metal).
func softmaxRef(in []float32, rows, cols int) []float64 {
	out := make([]float64, len(in))
	for r := 0; r < rows; r++ {
		row := in[r*cols : (r+1)*cols]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		sum := 0.0
		for c, v := range row {
			out[r*cols+c] = math.Exp(float64(v) - mx)
			sum += out[r*cols+c]
		}
		for c := range row {
			out[r*cols+c] /= sum
		}
	}
	return out
}
