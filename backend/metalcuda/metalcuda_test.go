package metalcuda_test

import (
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/backendtest"
	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/backend/metalcuda"
	"github.com/laya-metal/laya/internal/cudadrv/cudatest"
	"github.com/laya-metal/laya/metal/cuda"
)

// open opens the backend or skips the test where this machine has no CUDA
// driver or GPU (CI); any other failure is a failure.
func open(t testing.TB, opts cuda.Options) *gpu.Backend {
	t.Helper()
	be, err := metalcuda.Open(opts)
	cudatest.Check(t, err)
	return be
}

func TestRegistered(t *testing.T) {
	be, err := backend.Open(metalcuda.Name)
	cudatest.Check(t, err)
	defer be.Close()
	if be.Name() != metalcuda.Name {
		t.Errorf("Name() = %q", be.Name())
	}
}

// The backend conformance suite on the Metal kernels, run on the GPU: with
// dispatches spread over 4 streams, and shuffled between barriers.
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		opts cuda.Options
	}{
		{"streams4", cuda.Options{}},
		{"shuffled", cuda.Options{Streams: 3, Shuffle: 7}},
		{"maphost", cuda.Options{MapHost: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			be := open(t, c.opts)
			be.Close()
			backendtest.Run(t, func() (backend.Backend, error) { return metalcuda.Open(c.opts) })
		})
	}
}
