//go:build darwin

package metal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// These tests run the system device on a real Apple GPU (scripts/maccheck/mac-check.sh
// runs them with -run Device). Each compares the GPU's output with a Go
// reference computed here in float64.

// sysTestHeader is included by both test units: it exercises the #include
// inlining that the Metal runtime compiler cannot do itself.
const sysTestHeader = `#pragma once
#include <metal_stdlib>
using namespace metal;

inline float sys_test_scaled(float x, float scale) { return x * scale; }
`

const sysTestAddSource = `#include "systest.h"

constant float add_scale [[function_constant(0)]];

// out = a + add_scale * b over n elements (ragged grid: guard on n).
kernel void sys_test_add(device const float* a [[buffer(0)]],
                         device const float* b [[buffer(1)]],
                         device float* out [[buffer(2)]],
                         constant uint& n [[buffer(3)]],
                         uint gid [[thread_position_in_grid]]) {
    if (gid < n) {
        out[gid] = a[gid] + sys_test_scaled(b[gid], add_scale);
    }
}
`

const sysTestRowSumSource = `#include "systest.h"

// One threadgroup per row; the tree reduction needs a power-of-two
// threadgroup and threadgroup memory sized by setThreadgroupMemoryLength.
kernel void sys_test_row_sum(device const float* in [[buffer(0)]],
                             device float* out [[buffer(1)]],
                             constant uint& cols [[buffer(2)]],
                             threadgroup float* partial [[threadgroup(0)]],
                             uint row [[threadgroup_position_in_grid]],
                             uint tid [[thread_index_in_threadgroup]],
                             uint tg [[threads_per_threadgroup]]) {
    float s = 0.0f;
    for (uint c = tid; c < cols; c += tg) {
        s += in[row * cols + c];
    }
    partial[tid] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint stride = tg / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            partial[tid] += partial[tid + stride];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid == 0) {
        out[row] = partial[0];
    }
}
`

func sysTestSources() []KernelSource {
	return []KernelSource{
		{Name: "systest.h", Text: sysTestHeader},
		{Name: "sys_add.metal", Text: sysTestAddSource},
		{Name: "sys_rowsum.metal", Text: sysTestRowSumSource},
	}
}

func openSysTestDevice(t testing.TB, sources []KernelSource) *systemDevice {
	t.Helper()
	dev, err := OpenSystem(SystemOptions{Sources: sources})
	if err != nil {
		t.Fatalf("OpenSystem: %v", err)
	}
	t.Cleanup(func() {
		if err := dev.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return dev.(*systemDevice)
}

func sysF32Bytes(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func sysBytesF32(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return xs
}

func sysU32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func sysRandom(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64())
	}
	return xs
}

func sysUpload(t testing.TB, dev Device, xs []float32) Buffer {
	t.Helper()
	buf, err := dev.NewBuffer(4 * len(xs))
	if err != nil {
		t.Fatal(err)
	}
	copy(buf.Bytes(), sysF32Bytes(xs))
	return buf
}

func TestDeviceOpen(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	if dev.Name() == "" {
		t.Error("device has no name")
	}
	if got := dev.LanguageVersion(); got != DefaultMSLVersion {
		t.Errorf("compiled as MSL %s, want %s", got, DefaultMSLVersion)
	}
	if got := strings.Join(dev.Kernels(), ","); got != "sys_test_add,sys_test_row_sum" {
		t.Errorf("kernels %s", got)
	}
	t.Logf("device %q, MSL %s, page %d B, threadgroup memory %d B, max buffer %d MiB",
		dev.Name(), dev.LanguageVersion(), dev.pageSize, dev.maxTGMemory, dev.maxBufferLen>>20)
}

func TestDeviceVectorAdd(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	for _, tt := range []struct {
		n, threads int
		scale      float32
	}{{1, 32, 1}, {1000, 256, -0.5}, {4097, 1024, 3}, {33, 32, 0}} {
		t.Run(fmt.Sprintf("n=%d/tg=%d", tt.n, tt.threads), func(t *testing.T) {
			p, err := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: tt.scale})
			if err != nil {
				t.Fatal(err)
			}
			a, b := sysRandom(tt.n, 1), sysRandom(tt.n, 2)
			bufA, bufB := sysUpload(t, dev, a), sysUpload(t, dev, b)
			out, err := dev.NewBuffer(4 * tt.n)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { bufA.Release(); bufB.Release(); out.Release() }()
			cb, err := dev.NewCommandBuffer()
			if err != nil {
				t.Fatal(err)
			}
			threads := min(tt.threads, p.MaxThreadsPerThreadgroup())
			groups := (tt.n + threads - 1) / threads
			if err := cb.Dispatch(p, Size3{groups, 1, 1}, Size3{threads, 1, 1},
				Arg{Index: 0, Buffer: bufA}, Arg{Index: 1, Buffer: bufB}, Arg{Index: 2, Buffer: out},
				Arg{Index: 3, Bytes: sysU32(uint32(tt.n))}); err != nil {
				t.Fatal(err)
			}
			if err := cb.Commit(); err != nil {
				t.Fatal(err)
			}
			timing, err := cb.Wait(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := sysBytesF32(out.Bytes())
			maxErr := 0.0
			for i := range got {
				want := float64(a[i]) + float64(tt.scale)*float64(b[i])
				maxErr = max(maxErr, math.Abs(float64(got[i])-want))
			}
			// One rounding of a product and a sum of O(1) values.
			if maxErr > 1e-5 {
				t.Errorf("max |err| = %g", maxErr)
			}
			if timing.GPUTime() <= 0 || timing.GPUTime() > time.Second {
				t.Errorf("GPU time %v (start %v, end %v)", timing.GPUTime(), timing.GPUStart, timing.GPUEnd)
			}
			t.Logf("max |err| %.3g, GPU %v", maxErr, timing.GPUTime())
		})
	}
}

// TestDeviceBarrierChain runs add → Barrier → row sum in one concurrent
// encoder: without the barrier the second dispatch may read stale data.
func TestDeviceBarrierChain(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	const rows, cols = 37, 1000
	add, err := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(2)})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := dev.Pipeline("sys_test_row_sum")
	if err != nil {
		t.Fatal(err)
	}
	a, b := sysRandom(rows*cols, 3), sysRandom(rows*cols, 4)
	bufA, bufB := sysUpload(t, dev, a), sysUpload(t, dev, b)
	tmp, _ := dev.NewBuffer(4 * rows * cols)
	out, _ := dev.NewBuffer(4 * rows)
	for _, named := range []bool{false, true} {
		clear(out.Bytes())
		cb, err := dev.NewCommandBuffer()
		if err != nil {
			t.Fatal(err)
		}
		if err := cb.Dispatch(add, Size3{(rows*cols + 255) / 256, 1, 1}, Size3{256, 1, 1},
			Arg{Index: 0, Buffer: bufA}, Arg{Index: 1, Buffer: bufB}, Arg{Index: 2, Buffer: tmp},
			Arg{Index: 3, Bytes: sysU32(rows * cols)}); err != nil {
			t.Fatal(err)
		}
		if named {
			cb.Barrier(tmp)
		} else {
			cb.Barrier()
		}
		const tg = 128
		if err := cb.Dispatch(sum, Size3{rows, 1, 1}, Size3{tg, 1, 1},
			Arg{Index: 0, Buffer: tmp}, Arg{Index: 1, Buffer: out}, Arg{Index: 2, Bytes: sysU32(cols)},
			Arg{Index: 0, ThreadgroupBytes: 4 * tg}); err != nil {
			t.Fatal(err)
		}
		if err := cb.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := cb.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := sysBytesF32(out.Bytes())
		for r := range rows {
			want := 0.0
			for c := range cols {
				want += float64(a[r*cols+c]) + 2*float64(b[r*cols+c])
			}
			// float32 partial sums of 1000 O(1) terms.
			if d := math.Abs(float64(got[r]) - want); d > 1e-3 {
				t.Errorf("named=%v row %d: got %g, want %g (|err| %g)", named, r, got[r], want, d)
			}
		}
	}
}

func TestDeviceCompileErrorNamesFileAndLine(t *testing.T) {
	sources := append(sysTestSources(), KernelSource{Name: "sys_broken.metal", Text: "#include \"systest.h\"\n\nkernel void sys_broken(device float* x [[buffer(0)]]) {\n    x[0] = no_such_identifier;\n}\n"})
	_, err := OpenSystem(SystemOptions{Sources: sources})
	if !errors.Is(err, ErrShaderCompile) {
		t.Fatalf("err = %v, want ErrShaderCompile", err)
	}
	if !strings.Contains(err.Error(), "sys_broken.metal:4") {
		t.Errorf("compile error does not point at sys_broken.metal:4:\n%v", err)
	}
}

func TestDevicePipelineErrors(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	if _, err := dev.Pipeline("no_such_kernel"); !errors.Is(err, ErrPipeline) {
		t.Errorf("unknown kernel: err = %v, want ErrPipeline", err)
	}
	// sys_test_add declares a function constant it cannot run without.
	if _, err := dev.Pipeline("sys_test_add"); !errors.Is(err, ErrPipeline) {
		t.Errorf("missing function constant: err = %v, want ErrPipeline", err)
	}
	p1, err := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	p3, _ := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(2)})
	if p1 != p2 || p1 == p3 {
		t.Errorf("pipeline cache: same constants gave %p/%p, other constants %p", p1, p2, p3)
	}
	if p1.ThreadExecutionWidth() != 32 || p1.MaxThreadsPerThreadgroup() < 256 {
		t.Logf("unusual pipeline limits: width %d, max threads %d", p1.ThreadExecutionWidth(), p1.MaxThreadsPerThreadgroup())
	}
}

func TestDeviceDispatchErrors(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	p, err := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := dev.NewBuffer(64)
	released, _ := dev.NewBuffer(64)
	released.Release()
	released.Release() // a second Release is a no-op
	cb, err := dev.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"too many threads":   cb.Dispatch(p, Size3{1, 1, 1}, Size3{p.MaxThreadsPerThreadgroup() + 1, 1, 1}, Arg{Index: 0, Buffer: buf}),
		"released buffer":    cb.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, Buffer: released}),
		"offset past end":    cb.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, Buffer: buf, Offset: 64}),
		"huge threadgroup":   cb.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, ThreadgroupBytes: 1 << 20}),
		"foreign buffer":     cb.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, Buffer: sysTestBuffer{64}}),
		"oversized setBytes": cb.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 3, Bytes: make([]byte, 5000)}),
	} {
		if !errors.Is(err, ErrInvalidDispatch) {
			t.Errorf("%s: err = %v, want ErrInvalidDispatch", name, err)
		}
	}
	if _, err := cb.Wait(context.Background()); !errors.Is(err, ErrInvalidDispatch) {
		t.Errorf("Wait before Commit: err = %v", err)
	}
	cb.Barrier(sysTestBuffer{4})
	if err := cb.Commit(); !errors.Is(err, ErrInvalidDispatch) {
		t.Errorf("Commit after a bad Barrier: err = %v, want ErrInvalidDispatch", err)
	}
	if err := cb.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}); !errors.Is(err, ErrInvalidDispatch) {
		t.Errorf("Dispatch after Commit: err = %v", err)
	}
}

func TestDeviceNoCopyBuffer(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	page := dev.pageSize
	// A page-aligned region inside a larger allocation, as an mmap'd
	// checkpoint would be.
	backing := make([]byte, 3*page)
	off := (page - int(uintptr(unsafe.Pointer(&backing[0])))%page) % page
	aligned := backing[off : off+page+100 : off+2*page]
	for i := range aligned {
		aligned[i] = byte(i * 7)
	}
	b, err := dev.NewBufferWithBytes(aligned)
	if err != nil {
		t.Fatal(err)
	}
	sb := b.(*systemBuffer)
	if !sb.NoCopy() || &sb.Bytes()[0] != &aligned[0] || b.Len() != len(aligned) {
		t.Errorf("page-aligned data was copied (noCopy=%v) or has length %d", sb.NoCopy(), b.Len())
	}
	// Misaligned by one byte: must copy, and the copy must be exact.
	c, err := dev.NewBufferWithBytes(aligned[1:200])
	if err != nil {
		t.Fatal(err)
	}
	if c.(*systemBuffer).NoCopy() || string(c.Bytes()) != string(aligned[1:200]) {
		t.Error("misaligned data was not copied faithfully")
	}
	// The GPU reads the wrapped memory: row-sum the first 64 floats.
	floats := unsafe.Slice((*float32)(unsafe.Pointer(&aligned[0])), 64)
	for i := range floats {
		floats[i] = float32(i)
	}
	sum, _ := dev.Pipeline("sys_test_row_sum")
	out, _ := dev.NewBuffer(4)
	cb, _ := dev.NewCommandBuffer()
	if err := cb.Dispatch(sum, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, Buffer: b}, Arg{Index: 1, Buffer: out},
		Arg{Index: 2, Bytes: sysU32(64)}, Arg{Index: 0, ThreadgroupBytes: 4 * 32}); err != nil {
		t.Fatal(err)
	}
	if err := cb.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sysBytesF32(out.Bytes())[0]; got != 64*63/2 {
		t.Errorf("GPU sum over no-copy buffer = %g, want %d", got, 64*63/2)
	}
}

func TestDeviceWaitContext(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	p, _ := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	const n = 1 << 20
	a, _ := dev.NewBuffer(4 * n)
	cb, _ := dev.NewCommandBuffer()
	for range 50 {
		if err := cb.Dispatch(p, Size3{n / 256, 1, 1}, Size3{256, 1, 1}, Arg{Index: 0, Buffer: a}, Arg{Index: 1, Buffer: a},
			Arg{Index: 2, Buffer: a}, Arg{Index: 3, Bytes: sysU32(n)}); err != nil {
			t.Fatal(err)
		}
		cb.Barrier(a)
	}
	if err := cb.Commit(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cb.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: err = %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cb.Wait(ctx); err != nil {
		t.Errorf("second Wait: %v", err)
	}
}

func TestDeviceClose(t *testing.T) {
	dev, err := OpenSystem(SystemOptions{Sources: sysTestSources()})
	if err != nil {
		t.Fatal(err)
	}
	sd := dev.(*systemDevice)
	p, _ := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	buf, _ := dev.NewBuffer(1024)
	committed, _ := dev.NewCommandBuffer()
	if err := committed.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, Buffer: buf}, Arg{Index: 1, Buffer: buf},
		Arg{Index: 2, Buffer: buf}, Arg{Index: 3, Bytes: sysU32(32)}); err != nil {
		t.Fatal(err)
	}
	if err := committed.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.NewCommandBuffer(); err != nil { // never committed
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := sd.ledger.len(); n != 0 {
		t.Errorf("%d objects still owned after Close", n)
	}
	if err := dev.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := dev.NewBuffer(16); !errors.Is(err, ErrDeviceClosed) {
		t.Errorf("NewBuffer after Close: err = %v", err)
	}
	if _, err := committed.Wait(context.Background()); err != nil {
		t.Errorf("Wait after Close on work Close waited for: %v", err)
	}
}

// TestDeviceLeakCheck opens and closes the device and runs many command
// buffers; the ledger must end empty (every object released once).
func TestDeviceLeakCheck(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	p, _ := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	buf, _ := dev.NewBuffer(4 * 256)
	base := dev.ledger.len()
	for range 200 {
		cb, err := dev.NewCommandBuffer()
		if err != nil {
			t.Fatal(err)
		}
		if err := cb.Dispatch(p, Size3{1, 1, 1}, Size3{256, 1, 1}, Arg{Index: 0, Buffer: buf}, Arg{Index: 1, Buffer: buf},
			Arg{Index: 2, Buffer: buf}, Arg{Index: 3, Bytes: sysU32(256)}); err != nil {
			t.Fatal(err)
		}
		if err := cb.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := cb.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := dev.ledger.len(); got != base {
		t.Errorf("ledger holds %d objects after 200 command buffers, want %d", got, base)
	}
}

func BenchmarkDeviceDispatchEncode(b *testing.B) {
	dev := openSysTestDevice(b, sysTestSources())
	p, _ := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	buf, _ := dev.NewBuffer(4 * 1024)
	n := sysU32(1024)
	cb, _ := dev.NewCommandBuffer()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%4096 == 4095 { // keep one command buffer from growing without bound
			cb.Commit()
			cb.Wait(context.Background())
			cb, _ = dev.NewCommandBuffer()
		}
		cb.Dispatch(p, Size3{4, 1, 1}, Size3{256, 1, 1}, Arg{Index: 0, Buffer: buf}, Arg{Index: 1, Buffer: buf},
			Arg{Index: 2, Buffer: buf}, Arg{Index: 3, Bytes: n})
	}
	b.StopTimer()
	cb.Commit()
	cb.Wait(context.Background())
}

func BenchmarkDeviceRoundTrip(b *testing.B) {
	dev := openSysTestDevice(b, sysTestSources())
	p, _ := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	buf, _ := dev.NewBuffer(4 * 1024)
	n := sysU32(1024)
	var gpu time.Duration
	for b.Loop() {
		cb, _ := dev.NewCommandBuffer()
		cb.Dispatch(p, Size3{4, 1, 1}, Size3{256, 1, 1}, Arg{Index: 0, Buffer: buf}, Arg{Index: 1, Buffer: buf},
			Arg{Index: 2, Buffer: buf}, Arg{Index: 3, Bytes: n})
		cb.Commit()
		t, err := cb.Wait(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		gpu += t.GPUTime()
	}
	b.ReportMetric(float64(gpu.Nanoseconds())/float64(b.N), "gpu-ns/op")
}
