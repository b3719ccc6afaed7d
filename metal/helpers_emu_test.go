//go:build linux || darwin

package metal_test

// The kernel tests run on the MSL emulator (package metal/emu), which
// imports package metal; so they live in the external test package and
// dot-import metal, the form Go's code review comments name for tests that
// cannot be part of the package they test because of an import cycle. The
// helpers they share with the emulator's own tests live in
// metal/internal/metaltest; the float64 references come from
// metal/internal/kernelref, and the unexported dispatch variants of
// kernel_*.go through export_test.go.

import (
	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/internal/kernelref"
	"github.com/laya-metal/laya/metal/internal/metaltest"
)

var (
	openEmu             = metaltest.OpenEmu
	f32Buffer           = metaltest.F32Buffer
	f16Buffer           = metaltest.F16Buffer
	u32Buffer           = metaltest.U32Buffer
	readF32             = metaltest.ReadF32
	pseudo              = metaltest.Pseudo
	run                 = metaltest.Run
	maxErr              = metaltest.MaxErr
	wantInvalidDispatch = metaltest.WantInvalidDispatch

	actFeaturesRef = kernelref.ActFeatures
	gegluRef       = kernelref.Geglu
	geluRef        = kernelref.Gelu
	vectorAddRef   = kernelref.VectorAdd
	gatherRowsRef  = kernelref.GatherRows
	gemmRef        = kernelref.Gemm
	layerNormRef   = kernelref.LayerNorm
	ropeRef        = kernelref.Rope
	softmaxRef     = kernelref.Softmax

	layerNormThreads = ExportLayerNormThreads
	softmaxThreads   = ExportSoftmaxThreads
	ceilDiv          = ExportCeilDiv
	paramStructs     = ExportParamStructs
)

func activateRef(in []float32, act Activation) []float64 { return kernelref.Activate(in, int(act)) }

func attentionRef(qkv []float32, lengths []int, a AttentionShape) []float64 {
	return kernelref.Attention(qkv, lengths, kernelref.AttentionShape(a))
}
