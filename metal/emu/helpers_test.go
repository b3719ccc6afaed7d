//go:build linux || darwin

package emu_test

// The emulator's tests dot-import package metal for the Device interface
// they drive, and share their helpers with the kernel tests of package metal
// through metal/internal/metaltest.

import (
	"github.com/laya-metal/laya/metal/internal/kernelref"
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
// softmax test (package metal/internal/kernelref holds the kernels').
var softmaxRef = kernelref.Softmax
