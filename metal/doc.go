// Package metal runs this repository's hand-written .metal kernels.
//
// It has one Device interface with two implementations: the Apple GPU,
// driven from Go through purego's Objective-C runtime (darwin, no cgo), and the
// MSL emulator of package metal/emu, which compiles the same kernel sources
// with clang against a shim header and runs every GPU thread as a fiber, so
// each kernel's semantics are regression-tested by go test on any Linux
// machine. This package holds the device interface, the darwin binding and
// the kernel dispatch functions (kernel_*.go); it does not link the
// emulator.
package metal
