// Package metalemu registers the "metal-emu" backend: the Metal backend on
// the MSL emulator (the .metal kernels compiled with clang ≥ 16, GPU threads
// run on the CPU), so Metal semantics can be tested on any machine.
//
// A program gets it only by importing this package,
//
//	import _ "github.com/laya-metal/laya/backend/metalemu"
//
// as cmd/laya, cmd/laya-bench and the tests do: the emulator (a C++ runtime
// and clang driver) is no part of a program that only imports package laya.
package metalemu

import (
	"github.com/laya-metal/laya/backend"
	metalbackend "github.com/laya-metal/laya/backend/metal"
	"github.com/laya-metal/laya/metal"
)

func init() {
	backend.Register("metal-emu", func() (backend.Backend, error) {
		return metalbackend.OpenEmulator(metal.EmulatorOptions{})
	})
}
