package metal

import (
	"context"
	"fmt"
	"time"
)

// Device is the one interface the Metal backend's Go code talks to. Two
// implementations exist: the real GPU through purego (darwin only, see
// device_darwin.go) and the MSL emulator (every platform, package metal/emu), which
// compiles the very same .metal sources with clang and runs GPU threads as
// fibers. Code that picks kernels, binds buffers and sizes grids is written
// once against this interface.
type Device interface {
	// Name describes the device ("Apple M3 Max", "msl-emu (clang-19)").
	Name() string
	// NewBuffer allocates a zeroed shared-storage buffer of size bytes.
	NewBuffer(size int) (Buffer, error)
	// NewBufferWithBytes wraps host memory without copying when the device
	// allows it (page-aligned base and length, e.g. an mmap'd safetensors
	// file); otherwise it copies. The caller keeps data alive and unchanged
	// while the buffer lives.
	NewBufferWithBytes(data []byte) (Buffer, error)
	// Pipeline returns the compute pipeline for a kernel function of the
	// library, specialised by function constants. Pipelines are cached by
	// (kernel, constants).
	Pipeline(kernel string, constants ...Constant) (Pipeline, error)
	// NewCommandBuffer starts a command buffer with one concurrent compute
	// encoder.
	NewCommandBuffer() (CommandBuffer, error)
	// Close releases everything the device created.
	Close() error
}

// NoCopyDevice is implemented by devices that can wrap host memory in
// place (both devices here do). NewBufferNoCopy never copies: it wraps data
// or fails with ErrNoCopy saying why (misaligned memory, too large, refused
// by the device), so a caller that must not double its memory (an mmap'd
// checkpoint) can fall back explicitly and report it.
type NoCopyDevice interface {
	NewBufferNoCopy(data []byte) (Buffer, error)
}

// Fingerprinter is implemented by devices whose kernels compute the same
// results on every device with the same fingerprint (the emulator: the
// same compiled library and options). A self-test passed on one of them
// speaks for the others, so a process may run it once per fingerprint.
type Fingerprinter interface {
	Fingerprint() string
}

// Buffer is device memory visible to the host (shared storage).
type Buffer interface {
	// Bytes is the host view of the buffer's contents.
	Bytes() []byte
	Len() int
	Release()
}

// Pipeline is a compiled kernel.
type Pipeline interface {
	Kernel() string
	// MaxThreadsPerThreadgroup is the pipeline's limit (1024 on Apple GPUs,
	// less for register-heavy kernels).
	MaxThreadsPerThreadgroup() int
	// ThreadExecutionWidth is the SIMD width (32 on Apple GPUs).
	ThreadExecutionWidth() int
}

// KernelSource is one .metal file given to a device by name (the name
// appears in diagnostics) and text.
type KernelSource struct {
	Name string
	Text string
}

// Constant is one function-constant value, by index as declared with
// [[function_constant(Index)]] in the .metal source. Value must be bool,
// int32, uint32 or float32.
type Constant struct {
	Index int
	Value any
}

// Arg binds one kernel argument by its [[buffer(n)]] or [[threadgroup(n)]]
// index.
type Arg struct {
	Index  int
	Buffer Buffer // device buffer, or
	Offset int    // byte offset into Buffer
	// Access is what the kernel does with Buffer. This package's dispatch
	// functions set it on every buffer they bind, where they bind it, and
	// it is the one statement of a kernel's buffer roles: a backend
	// derives its barriers from it (a dispatch that reads what an earlier
	// one wrote, or writes what an earlier one touched, waits for it), as
	// MLX does from set_input_array and set_output_array. Zero (AccessNone)
	// is allowed for raw dispatches of other kernels, which no hazard
	// tracking reads.
	Access Access
	Bytes  []byte // small constant data copied at encode time (setBytes), or
	// ThreadgroupBytes sizes a [[threadgroup(n)]] parameter.
	ThreadgroupBytes int
}

// Access is how a kernel uses a bound buffer.
type Access uint8

const (
	// AccessNone declares nothing (see Arg.Access).
	AccessNone Access = 0
	// AccessRead: the kernel only reads the buffer (a device const or
	// constant parameter).
	AccessRead Access = 1 << 0
	// AccessWrite: the kernel writes the buffer and does not read what
	// was there.
	AccessWrite Access = 1 << 1
	// AccessReadWrite: the kernel reads the buffer and writes it (a
	// residual added in place, RoPE rotating in place).
	AccessReadWrite = AccessRead | AccessWrite
)

// Reads reports whether the kernel reads the buffer.
func (a Access) Reads() bool { return a&AccessRead != 0 }

// Writes reports whether the kernel writes the buffer.
func (a Access) Writes() bool { return a&AccessWrite != 0 }

func (a Access) String() string {
	switch a {
	case AccessNone:
		return "none"
	case AccessRead:
		return "read"
	case AccessWrite:
		return "write"
	case AccessReadWrite:
		return "read-write"
	}
	return fmt.Sprintf("Access(%d)", uint8(a))
}

// Size3 is a grid or threadgroup extent.
type Size3 struct{ X, Y, Z int }

// CommandBuffer records dispatches into one concurrent compute encoder.
type CommandBuffer interface {
	// Dispatch is dispatchThreadgroups: groups threadgroups of threads each.
	// It keeps neither args nor the memory their Bytes point to once it
	// returns (Metal copies setBytes data at encode time): the kernels'
	// dispatch functions reuse both for the next dispatch.
	Dispatch(p Pipeline, groups, threads Size3, args ...Arg) error
	// Barrier orders the dispatches before it against those after it for the
	// given buffers (all buffers when none is named). Only real hazards need
	// one: the encoder is concurrent.
	Barrier(buffers ...Buffer)
	// Commit submits the work; Wait blocks until it finished or ctx ends.
	Commit() error
	Wait(ctx context.Context) (Timing, error)
}

// DebugLabeler is implemented by command buffers that can label their
// dispatches for GPU tools (Xcode's GPU capture, the Metal validation
// layer): pushDebugGroup:/popDebugGroup: on the compute encoder. Labels
// reports whether labels are recorded; they cost a string per dispatch,
// so the Apple GPU records them only when asked (SystemOptions.Labels).
type DebugLabeler interface {
	Labels() bool
	PushDebugGroup(label string)
	PopDebugGroup()
}

// Timing reports where a command buffer's time went, as the device saw it.
type Timing struct {
	GPUStart, GPUEnd time.Time
}

// GPUTime is the device-side duration.
func (t Timing) GPUTime() time.Duration { return t.GPUEnd.Sub(t.GPUStart) }
