// Package metalcuda registers the "metal-cuda" backend: the Metal backend of
// package backend/gpu on the CUDA device of package metal/cuda, which
// translates the repository's .metal kernels to CUDA C++, compiles them with
// NVRTC and runs them on an NVIDIA GPU. It is how the whole model is held to
// the cpu backend at full size through the Metal backend's own host code
// and kernels, and how compute-sanitizer checks the kernels. Its timings are
// NVIDIA timings of Apple-tuned kernels, not Apple estimates.
//
// Only programs that import it link the CUDA device:
//
//	import _ "github.com/laya-metal/laya/backend/metalcuda"
//
// The environment variable LAYA_METAL_CUDA sets the device's options for
// the registered backend, comma-separated (cuda.ParseOptions): streams=N,
// shuffle=SEED, device=N, precise, maphost, profile.
package metalcuda

import (
	"context"
	"fmt"
	"os"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/metal/cuda"
)

// Name is the name the backend is registered under.
const Name = "metal-cuda"

func init() {
	backend.Register(Name, func() (backend.Backend, error) {
		opts, err := cuda.ParseOptions(os.Getenv("LAYA_METAL_CUDA"))
		if err != nil {
			return nil, fmt.Errorf("metalcuda: LAYA_METAL_CUDA: %w", err)
		}
		return Open(opts)
	}, backend.Accelerator)
}

// Open returns a backend named "metal-cuda" on a new CUDA device opened with
// opts, once it passed the self-test (gpu.Open). Close closes the device.
func Open(opts cuda.Options) (*gpu.Backend, error) {
	dev, err := cuda.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("metalcuda: %w", err)
	}
	return gpu.WithSelfTestTimeout(func(ctx context.Context) (*gpu.Backend, error) { return gpu.Open(ctx, Name, dev) })
}
