//go:build linux || darwin

package metal_test

// The kernel tests run on the MSL emulator (package metal/emu), which
// imports package metal; so they live in the external test package and
// dot-import metal, the form Go's code review comments name for tests that
// cannot be part of the package they test because of an import cycle. The
// helpers they share with the emulator's own tests live in
// metal/internal/metaltest; the unexported float64 references and dispatch
// variants of kernel_*.go come through export_test.go.

import (
	. "github.com/laya-metal/laya/metal"
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

	actFeaturesRef   = ExportActFeaturesRef
	activateRef      = ExportActivateRef
	gegluRef         = ExportGegluRef
	geluRef          = ExportGeluRef
	attentionRef     = ExportAttentionRef
	vectorAddRef     = ExportVectorAddRef
	gatherRowsRef    = ExportGatherRowsRef
	gemmRef          = ExportGemmRef
	layerNormRef     = ExportLayerNormRef
	layerNormThreads = ExportLayerNormThreads
	ropeRef          = ExportRopeRef
	softmaxRef       = ExportSoftmaxRef
	softmaxThreads   = ExportSoftmaxThreads
	ceilDiv          = ExportCeilDiv
	paramStructs     = ExportParamStructs
)
