// Package metal is the device layer of the GPU path: it runs this
// repository's hand-written .metal kernels (package kernels holds the
// sources) on Apple's Metal or on the MSL emulator. The model's operations
// on top of it are package backend/gpu, which works on any Device; the
// work plans of laya-bench --plan are internal/gpuplan.
//
// It has one Device interface with two implementations: the Apple GPU,
// driven from Go through purego's Objective-C runtime (darwin, no cgo), and the
// MSL emulator of package metal/emu, which compiles the same kernel sources
// with clang against a shim header and runs every GPU thread as a fiber, so
// each kernel's semantics are regression-tested by go test on any Linux
// machine. This package holds the device interface, the darwin binding and
// the kernel dispatch functions (kernel_<family>.go); it does not link the
// emulator.
//
// Each kernel family's file states, once, what its kernels do with their
// buffers and what a dispatch costs: the dispatch function binds every
// buffer with its access (Arg.Access: read, write or read-write), from
// which a backend derives its barriers, and the family's cost function
// prices a dispatch for DispatchCost (a kernel without one is an error).
// Tests hold both to the kernels' signatures in kernels/*.metal.
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
