package metal

import "errors"

// Sentinel errors of the system (Apple GPU) device. Every error the device
// returns wraps one of them, so callers can branch with errors.Is while the
// message still names the kernel, file or buffer at fault.
var (
	// ErrNoMetal means this process cannot reach a Metal GPU: the OS is not
	// macOS, Metal.framework did not load, or no device was found.
	ErrNoMetal = errors.New("metal: no Metal device available")
	// ErrShaderCompile means the Metal compiler rejected a .metal source;
	// the message carries the compiler log with file:line positions.
	ErrShaderCompile = errors.New("metal: shader compile failed")
	// ErrPipeline means a compute pipeline could not be built: unknown
	// kernel, bad or missing function constants, or a pipeline error.
	ErrPipeline = errors.New("metal: pipeline creation failed")
	// ErrInvalidDispatch means a Dispatch, Barrier or buffer request was
	// malformed (bad sizes, foreign buffer, out-of-range offset, ...).
	ErrInvalidDispatch = errors.New("metal: invalid dispatch")
	// ErrGPUExecution means a committed command buffer ended in the error
	// state; the message carries Metal's localizedDescription.
	ErrGPUExecution = errors.New("metal: command buffer failed on the GPU")
	// ErrThreadgroupMemory means a kernel's threadgroup arrays plus its
	// [[threadgroup(n)]] arguments exceed the device's
	// maxThreadgroupMemoryLength (it comes with ErrInvalidDispatch or, at
	// pipeline creation, ErrPipeline).
	ErrThreadgroupMemory = errors.New("metal: threadgroup memory over the device's limit")
	// ErrNoCopy means host memory cannot back a buffer without a copy
	// (NoCopyDevice.NewBufferNoCopy).
	ErrNoCopy = errors.New("metal: memory cannot be wrapped without a copy")
	// ErrDeviceClosed is returned by every call on a device after Close.
	ErrDeviceClosed = errors.New("metal: device is closed")
)
