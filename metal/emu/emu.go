package emu

import (
	"errors"
	"fmt"
	"github.com/laya-metal/laya/metal"
)

// Schedule is the order in which the emulator runs threadgroups, simdgroups
// and lanes. A kernel that is only correct under one order has a race; run
// tests under all three.
type Schedule struct {
	Order ScheduleOrder
	Seed  uint64 // for Shuffle
}

// ScheduleOrder names one of the three emulator schedules.
type ScheduleOrder int

const (
	// Forward runs threadgroup 0, simdgroup 0, lane 0 first.
	Forward ScheduleOrder = iota
	// Reverse runs the last threadgroup, simdgroup and lane first.
	Reverse
	// Shuffle draws every order from a generator seeded by Schedule.Seed.
	Shuffle
)

// String gives "forward", "reverse" or "shuffle:SEED", the form ParseSchedule reads.
func (s Schedule) String() string {
	switch s.Order {
	case Reverse:
		return "reverse"
	case Shuffle:
		return fmt.Sprintf("shuffle:%d", s.Seed)
	}
	return "forward"
}

// ParseSchedule reads "forward", "reverse" or "shuffle:SEED".
func ParseSchedule(s string) (Schedule, error) {
	switch s {
	case "", "forward":
		return Schedule{Order: Forward}, nil
	case "reverse":
		return Schedule{Order: Reverse}, nil
	}
	var seed uint64
	if _, err := fmt.Sscanf(s, "shuffle:%d", &seed); err == nil {
		return Schedule{Order: Shuffle, Seed: seed}, nil
	}
	return Schedule{}, fmt.Errorf("metal: schedule %q: want forward, reverse or shuffle:SEED", s)
}

// Schedules are the three orders the kernel tests run under.
var Schedules = []Schedule{{Order: Forward}, {Order: Reverse}, {Order: Shuffle, Seed: 1}}

// Options configure Open. The zero value compiles the
// kernels of package kernels with clang-19 under the forward schedule.
type Options struct {
	// Sources replaces the kernels package's .metal files. A local
	// #include "x.h" resolves against the other sources by name, then
	// against the including file's directory on disk.
	Sources []metal.KernelSource
	// Schedule is the run order (Forward when zero).
	Schedule Schedule
	// ASan builds the kernels with AddressSanitizer and runs each command
	// buffer in a separate runner process, so an out-of-bounds device access
	// becomes an error naming the .metal line. Slower; meant for tests.
	ASan bool
	// CacheDir keeps compiled objects, keyed by source and flags
	// (default: os.UserCacheDir()/laya-metal/msl-emu).
	CacheDir string
	// Clang is the compiler (default: clang-19, then clang; 16 or later).
	Clang string
	// Workers is the number of OS threads that run threadgroups (default:
	// one per CPU).
	Workers int
	// Defines are preprocessor macros, "NAME" or "NAME=VALUE", as the host
	// passes them in MTLCompileOptions.preprocessorMacros (llama.cpp's
	// GGML_METAL_HAS_BF16, for example). Kernels inside #if blocks exist
	// only when their conditions hold with these macros.
	Defines []string
}

// Errors of the emulator besides the device-wide sentinels of errors.go
// (metal.ErrShaderCompile, metal.ErrPipeline, metal.ErrInvalidDispatch, metal.ErrDeviceClosed,
// metal.ErrGPUExecution), which the emulator returns in the same situations as the
// Apple GPU device. Test with errors.Is.
var (
	// ErrNoClang: no usable clang was found.
	ErrNoClang = errors.New("metal: the MSL emulator needs clang 16 or later: install clang-19 (apt-get install clang-19)")
	// ErrThreadgroupMemory: more than metal.ThreadgroupMemoryLimit bytes
	// of threadgroup memory. It is metal.ErrThreadgroupMemory, the error
	// both devices return.
	ErrThreadgroupMemory = metal.ErrThreadgroupMemory
	// ErrKernelFault: the emulator caught a kernel bug while it ran
	// (divergent barrier, return before a barrier, out-of-bounds access...).
	// It comes with metal.ErrGPUExecution.
	ErrKernelFault = errors.New("metal: kernel fault")
)

// KernelError is a diagnostic from a kernel run. It matches ErrKernelFault
// and metal.ErrGPUExecution (and ErrThreadgroupMemory when that is the
// cause) with errors.Is.
type KernelError struct {
	Kernel string
	// Message names the .metal file and line where the emulator could.
	Message string
	// Report is extra detail, such as the AddressSanitizer report.
	Report string
	cause  error
}

func (e *KernelError) Error() string {
	return "metal: " + e.Message
}

// Unwrap returns ErrKernelFault, metal.ErrGPUExecution and the precise cause.
func (e *KernelError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrKernelFault, metal.ErrGPUExecution, e.cause}
	}
	return []error{ErrKernelFault, metal.ErrGPUExecution}
}
