// Package metalemu registers the "metal-emu" backend: the Metal backend of
// package backend/gpu on the MSL emulator device of package metal/emu,
// which compiles the repository's .metal kernels with clang (16 or later)
// and runs GPU threads on the CPU. It is how go test holds the GPU path to
// the CPU reference on Linux, and how a kernel bug is reproduced without a
// Mac.
//
// Only programs that import it link the emulator:
//
//	import _ "github.com/laya-metal/laya/backend/metalemu"
//
// cmd/laya and cmd/laya-bench do; the root package does not.
package metalemu

import (
	"context"
	"fmt"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/metal/emu"
)

// Name is the name the backend is registered under.
const Name = "metal-emu"

func init() {
	backend.Register(Name, func() (backend.Backend, error) { return Open(emu.Options{}) })
}

// Open returns a backend named "metal-emu" on a new emulator device opened
// with opts, once it passed the self-test (gpu.Open). Close closes the device.
func Open(opts emu.Options) (*gpu.Backend, error) {
	dev, err := emu.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("metalemu: %w", err)
	}
	return gpu.WithSelfTestTimeout(func(ctx context.Context) (*gpu.Backend, error) { return gpu.Open(ctx, Name, dev) })
}
