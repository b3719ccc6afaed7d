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
//
// Both devices refuse the same requests: CheckDispatch is the one
// validation of a dispatch (thread limits from the pipeline, argument and
// offset rules, threadgroup memory including the kernel's static arrays),
// and NoCopyLength the one rule for wrapping host memory without a copy
// (NoCopyDevice.NewBufferNoCopy wraps or fails, never copies). On darwin
// the device is checked at open (GPU family Apple7 or later, MSL version
// and math mode read back from the compile options) and reports what it
// found (SystemInfo).
package metal
