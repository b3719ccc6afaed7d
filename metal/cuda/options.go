package cuda

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/laya-metal/laya/metal"
)

// Shim is msl_cuda.h, the MSL standard library for translated kernels; NVRTC
// gets it as an in-memory header.
//
//go:embed msl_cuda.h
var Shim string

// Options configure Open. The zero value compiles the kernels of package
// kernels for GPU 0 with 4 concurrent streams per command buffer.
type Options struct {
	// Sources replaces the kernels package's .metal files.
	Sources []metal.KernelSource
	// Device is the CUDA device ordinal.
	Device int
	// Streams is how many streams the dispatches between two barriers are
	// spread over (default 4); 1 runs every command buffer in encode order.
	Streams int
	// Shuffle, when not zero, seeds a shuffle of the dispatches between two
	// barriers before they are spread over the streams.
	Shuffle uint64
	// Precise compiles plain math functions (exp, log...) precise rather
	// than fast, which is Metal's default.
	Precise bool
	// MapHost makes NewBufferNoCopy register host memory (an mmap'd
	// checkpoint) with the driver so kernels read it in place, over the
	// bus. Off, NewBufferNoCopy refuses with metal.ErrNoCopy and callers
	// copy into device memory, which is what a GEMM needs: it reads each
	// weight once per tile row, and on the H200 a forward of 10 questions
	// of 512 tokens took 2.7 s with mapped weights against 0.37 s of
	// kernel time with copied ones.
	MapHost bool
	// Profile times every dispatch with events (and runs them in encode
	// order on one stream): see KernelTimes.
	Profile bool
	// MemoryMargin is how much of the GPU's free memory (at Open) stays
	// unallocated; default 2 GiB.
	MemoryMargin int64
	// Driver and NVRTC name the libraries (default: libcuda.so.1, and
	// libnvrtc.so from the usual places: LD_LIBRARY_PATH, /usr/local/cuda,
	// Python's nvidia packages).
	Driver, NVRTC string
}

// ParseOptions reads options from a comma-separated list, as the
// LAYA_METAL_CUDA environment variable gives them to backend/metalcuda:
// streams=N, shuffle=SEED, device=N, precise, maphost, profile.
func ParseOptions(s string) (Options, error) {
	var o Options
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		k, v, hasV := strings.Cut(f, "=")
		num := func() (int64, error) {
			if !hasV {
				return 0, fmt.Errorf("cuda: option %q needs a value", k)
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cuda: option %s: %w", k, err)
			}
			return n, nil
		}
		switch k {
		case "streams":
			n, err := num()
			if err != nil {
				return o, err
			}
			o.Streams = int(n)
		case "shuffle":
			n, err := num()
			if err != nil {
				return o, err
			}
			o.Shuffle = uint64(n)
		case "device":
			n, err := num()
			if err != nil {
				return o, err
			}
			o.Device = int(n)
		case "precise":
			o.Precise = true
		case "maphost":
			o.MapHost = true
		case "profile":
			o.Profile = true
		default:
			return o, fmt.Errorf("cuda: unknown option %q (streams=N, shuffle=SEED, device=N, precise, maphost, profile)", f)
		}
	}
	return o, nil
}

// KernelTime is the GPU time of one kernel's dispatches (Options.Profile).
type KernelTime struct {
	Kernel     string
	Dispatches int
	Seconds    float64
}

// DeviceStats is what Stats reports.
type DeviceStats struct {
	// Compiles is how many NVRTC compilations ran (one a source and set of
	// function-constant values), taking CompileTime in all.
	Compiles    int
	CompileTime time.Duration
	// Kernels are the per-kernel GPU times (Options.Profile), longest first.
	Kernels []KernelTime
}
