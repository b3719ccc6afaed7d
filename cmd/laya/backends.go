//go:build metalemu

package main

// The MSL emulator (--backend metal-emu) is a tool for testing the .metal
// kernels without a Mac; laya-bench and msl-emu carry it. Linking it here
// would make laya depend on clang at run time and on purego, which on Linux
// makes the binary dynamically linked, so laya has it only when built with
// -tags metalemu.
import _ "github.com/laya-metal/laya/backend/metalemu"
