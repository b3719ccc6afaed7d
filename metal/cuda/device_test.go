package cuda_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/laya-metal/laya/internal/cudadrv/cudatest"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/cuda"
)

// openDevice opens a CUDA device or skips where this machine has no CUDA
// driver or GPU; any other failure fails the test.
func openDevice(t *testing.T, opts cuda.Options) metal.Device {
	t.Helper()
	dev, err := cuda.Open(opts)
	cudatest.Check(t, err)
	t.Cleanup(func() { dev.Close() })
	return dev
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func putFloats(b []byte, v []float32) {
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// vector_add of package kernels end to end: translation, NVRTC, launch,
// readback through the host view, setBytes data, a ragged last threadgroup.
func TestVectorAdd(t *testing.T) {
	dev := openDevice(t, cuda.Options{})
	t.Log(dev.Name())
	const n = 1000
	a, _ := dev.NewBuffer(4 * n)
	b, _ := dev.NewBuffer(4 * n)
	out, err := dev.NewBuffer(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	va, vb := make([]float32, n), make([]float32, n)
	for i := range va {
		va[i], vb[i] = float32(i), float32(2*i+1)
	}
	putFloats(a.Bytes(), va)
	putFloats(b.Bytes(), vb)
	p, err := dev.Pipeline("vector_add")
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := dev.NewCommandBuffer()
	err = cb.Dispatch(p, metal.Size3{X: (n + 127) / 128, Y: 1, Z: 1}, metal.Size3{X: 128, Y: 1, Z: 1},
		metal.Arg{Index: 0, Buffer: a}, metal.Arg{Index: 1, Buffer: b}, metal.Arg{Index: 2, Buffer: out}, metal.Arg{Index: 3, Bytes: u32(n)})
	if err != nil {
		t.Fatal(err)
	}
	cb.Commit()
	tm, err := cb.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := floats(out.Bytes())
	for i := range got {
		if got[i] != float32(3*i+1) {
			t.Fatalf("out[%d] = %v, want %v", i, got[i], 3*i+1)
		}
	}
	if stats, ok := cuda.Stats(dev); ok {
		t.Logf("GPU time %v; NVRTC: %d compiles in %v", tm.GPUTime(), stats.Compiles, stats.CompileTime)
	}
}
