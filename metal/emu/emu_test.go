//go:build linux || darwin

package emu_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// A softmax with its reuse barrier removed must give a wrong answer under
// at least one schedule, or the schedules do not expose races.
func TestMissingBarrierDetected(t *testing.T) {
	const rows, cols, threads = 2, 1000, 256
	in := pseudo(rows*cols, 9, -8, 8)
	want := softmaxRef(in, rows, cols)
	failed := 0
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s, Sources: testSource(t, "testdata/softmax_racy.metal")}, "racy")
		p, err := d.Pipeline("softmax_racy_f32")
		if err != nil {
			t.Fatal(err)
		}
		bin, bout := f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, rows*cols))
		err = run(t, d, func(cb CommandBuffer) error {
			return cb.Dispatch(p, Size3{X: rows, Y: 1, Z: 1}, Size3{X: threads, Y: 1, Z: 1},
				Arg{Index: 0, Buffer: bin}, Arg{Index: 1, Buffer: bout}, Arg{Index: 2, Bytes: u32s(cols)})
		})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if e, _ := maxErr(readF32(bout, rows*cols), want, 1e-9, 2e-6); e > 1 {
			failed++
			t.Logf("%s: wrong answer (worst error %.3g× tolerance), as it should be", s, e)
		}
	}
	if failed == 0 {
		t.Fatal("softmax without its reuse barrier gave the right answer under every schedule")
	}
}

func TestEmulatorDiagnostics(t *testing.T) {
	d := openEmu(t, emu.Options{Sources: testSource(t, "testdata/bugs.metal")}, "bugs")
	out := f32Buffer(t, d, make([]float32, 64))
	cases := []struct {
		kernel string
		args   []Arg
		want   []string
	}{
		{"divergent_barrier", []Arg{{Index: 0, Buffer: out}}, []string{"divergent threadgroup_barrier", "testdata/bugs.metal:8", "testdata/bugs.metal:10"}},
		{"early_return", []Arg{{Index: 0, Buffer: out}, {Index: 1, Bytes: u32s(20)}}, []string{"testdata/bugs.metal:19", "returned"}},
	}
	for _, c := range cases {
		t.Run(c.kernel, func(t *testing.T) {
			p, err := d.Pipeline(c.kernel)
			if err != nil {
				t.Fatal(err)
			}
			err = run(t, d, func(cb CommandBuffer) error {
				return cb.Dispatch(p, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1}, c.args...)
			})
			if !errors.Is(err, emu.ErrKernelFault) {
				t.Fatalf("err = %v, want emu.ErrKernelFault", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("too_much_threadgroup", func(t *testing.T) {
		_, err := d.Pipeline("too_much_threadgroup")
		if !errors.Is(err, emu.ErrThreadgroupMemory) || !strings.Contains(err.Error(), "36000") {
			t.Fatalf("err = %v, want emu.ErrThreadgroupMemory naming 36000 bytes", err)
		}
	})
	t.Run("uninit_read", func(t *testing.T) {
		p, err := d.Pipeline("uninit_read")
		if err != nil {
			t.Fatal(err)
		}
		if err := run(t, d, func(cb CommandBuffer) error {
			return cb.Dispatch(p, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out})
		}); err != nil {
			t.Fatal(err)
		}
		for i, v := range readF32(out, 64) {
			if i%2 == 0 && v != float32(i) {
				t.Errorf("out[%d] = %v, want %d", i, v, i)
			}
			if i%2 == 1 && !math.IsNaN(float64(v)) {
				t.Errorf("out[%d] = %v, want NaN (never-written threadgroup memory)", i, v)
			}
		}
	})
}

func TestEmulatorASanOutOfBounds(t *testing.T) {
	d := openEmu(t, emu.Options{ASan: true, Sources: testSource(t, "testdata/bugs.metal")}, "bugs-asan")
	const n = 40
	in, out := f32Buffer(t, d, make([]float32, n)), f32Buffer(t, d, make([]float32, n))
	p, err := d.Pipeline("oob_read")
	if err != nil {
		t.Fatal(err)
	}
	// In bounds first: the runner must also work.
	err = run(t, d, func(cb CommandBuffer) error {
		return cb.Dispatch(p, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1}, Arg{Index: 0, Buffer: in}, Arg{Index: 1, Buffer: out}, Arg{Index: 2, Bytes: u32s(n - 1)})
	})
	if err != nil {
		t.Fatalf("in-bounds run: %v", err)
	}
	err = run(t, d, func(cb CommandBuffer) error {
		return cb.Dispatch(p, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1}, Arg{Index: 0, Buffer: in}, Arg{Index: 1, Buffer: out}, Arg{Index: 2, Bytes: u32s(n)})
	})
	if !errors.Is(err, emu.ErrKernelFault) || !strings.Contains(err.Error(), "testdata/bugs.metal:43") || !strings.Contains(err.Error(), "overflow") {
		t.Fatalf("err = %v, want a buffer overflow at testdata/bugs.metal:43", err)
	}
}

func TestEmulatorDispatchValidation(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	p, err := d.Pipeline("vector_add")
	if err != nil {
		t.Fatal(err)
	}
	buf := f32Buffer(t, d, make([]float32, 8))
	cb, _ := d.NewCommandBuffer()
	cases := []struct {
		name            string
		groups, threads Size3
		args            []Arg
	}{
		{"unbound buffer", Size3{X: 1, Y: 1, Z: 1}, Size3{X: 8, Y: 1, Z: 1}, []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf}, {Index: 3, Bytes: u32s(8)}}},
		{"too many threads", Size3{X: 1, Y: 1, Z: 1}, Size3{X: 1025, Y: 1, Z: 1}, []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf}, {Index: 2, Buffer: buf}, {Index: 3, Bytes: u32s(8)}}},
		{"unknown index", Size3{X: 1, Y: 1, Z: 1}, Size3{X: 8, Y: 1, Z: 1}, []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf}, {Index: 2, Buffer: buf}, {Index: 3, Bytes: u32s(8)}, {Index: 7, Buffer: buf}}},
		{"offset past end", Size3{X: 1, Y: 1, Z: 1}, Size3{X: 8, Y: 1, Z: 1}, []Arg{{Index: 0, Buffer: buf, Offset: 32}, {Index: 1, Buffer: buf}, {Index: 2, Buffer: buf}, {Index: 3, Bytes: u32s(8)}}},
		// vector_add writes buffer(2) and only reads 0 and 1.
		{"write declared as read", Size3{X: 1, Y: 1, Z: 1}, Size3{X: 8, Y: 1, Z: 1}, []Arg{{Index: 0, Buffer: buf, Access: AccessRead}, {Index: 1, Buffer: buf, Access: AccessRead}, {Index: 2, Buffer: buf, Access: AccessRead}, {Index: 3, Bytes: u32s(8)}}},
		{"read declared as write", Size3{X: 1, Y: 1, Z: 1}, Size3{X: 8, Y: 1, Z: 1}, []Arg{{Index: 0, Buffer: buf, Access: AccessReadWrite}, {Index: 1, Buffer: buf}, {Index: 2, Buffer: buf, Access: AccessWrite}, {Index: 3, Bytes: u32s(8)}}},
	}
	for _, c := range cases {
		if err := cb.Dispatch(p, c.groups, c.threads, c.args...); !errors.Is(err, ErrInvalidDispatch) {
			t.Errorf("%s: err = %v, want ErrInvalidDispatch", c.name, err)
		}
	}
	if _, err := d.Pipeline("no_such_kernel"); !errors.Is(err, ErrPipeline) {
		t.Errorf("unknown kernel: err = %v, want ErrPipeline", err)
	}
	if _, err := d.Pipeline("gemm_f32", Constant{Index: 0, Value: float32(1)}); !errors.Is(err, ErrPipeline) {
		t.Errorf("float for a bool constant: err = %v, want ErrPipeline", err)
	}
}

func TestEmulatorWaitCanceled(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	k := NewKernels(d)
	const rows, cols = 64, 4096
	in, out := f32Buffer(t, d, make([]float32, rows*cols)), f32Buffer(t, d, make([]float32, rows*cols))
	cb, _ := d.NewCommandBuffer()
	if err := Softmax(cb, k, in, out, rows, cols); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cb.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestNewBufferWithBytesWraps(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	page := os.Getpagesize()
	m, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	b, err := d.NewBufferWithBytes(m)
	if err != nil {
		t.Fatal(err)
	}
	if &b.Bytes()[0] != &m[0] {
		t.Error("page-aligned whole-page memory was copied, want it wrapped")
	}
	odd, err := d.NewBufferWithBytes(m[1:100])
	if err != nil {
		t.Fatal(err)
	}
	if &odd.Bytes()[0] == &m[1] || odd.Len() != 99 {
		t.Error("unaligned memory must be copied into a buffer of the same length")
	}
}

// NewBufferNoCopy wraps by the system device's rule (metal.NoCopyLength)
// or fails with ErrNoCopy; it never copies.
func TestNewBufferNoCopy(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	nc, ok := d.(NoCopyDevice)
	if !ok {
		t.Fatalf("%T does not implement metal.NoCopyDevice", d)
	}
	page := os.Getpagesize()
	m, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	// A partial last page inside the allocation: wrapped, like an mmap'd
	// file whose last page is mapped whole.
	b, err := nc.NewBufferNoCopy(m[:page+100])
	if err != nil || &b.Bytes()[0] != &m[0] || b.Len() != page+100 {
		t.Errorf("partial last page within capacity: %v, want wrapped at the mapping", err)
	}
	for name, data := range map[string][]byte{
		"misaligned":           m[1:page],
		"page beyond capacity": m[: page+100 : page+100],
		"empty":                m[:0],
	} {
		if _, err := nc.NewBufferNoCopy(data); !errors.Is(err, ErrNoCopy) {
			t.Errorf("%s: err = %v, want ErrNoCopy", name, err)
		}
	}
	asan := openEmu(t, emu.Options{ASan: true, Sources: testSource(t, "testdata/bugs.metal")}, "bugs-asan")
	if _, err := asan.(NoCopyDevice).NewBufferNoCopy(m); !errors.Is(err, ErrNoCopy) {
		t.Errorf("ASan device: err = %v, want ErrNoCopy (its buffers are shared memory files)", err)
	}
}

func TestEmulatorCompileErrorNamesLine(t *testing.T) {
	_, err := emu.Open(emu.Options{Sources: []KernelSource{{Name: "bad.metal", Text: "kernel void k(device float* x [[buffer(0)]]) {\n  x[0] = undefined_name;\n}\n"}}})
	if !errors.Is(err, ErrShaderCompile) || !strings.Contains(err.Error(), "bad.metal:2") {
		t.Fatalf("err = %v, want ErrShaderCompile naming bad.metal:2", err)
	}
}

func BenchmarkEmuSoftmax(b *testing.B) {
	d := openEmu(b, emu.Options{}, "kernels")
	k := NewKernels(d)
	const rows, cols = 16, 1024
	in, out := f32Buffer(b, d, pseudo(rows*cols, 1, -4, 4)), f32Buffer(b, d, make([]float32, rows*cols))
	for b.Loop() {
		if err := run(b, d, func(cb CommandBuffer) error { return Softmax(cb, k, in, out, rows, cols) }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEmuGemmF16(b *testing.B) {
	d := openEmu(b, emu.Options{}, "kernels")
	k := NewKernels(d)
	const m, n, kd = 32, 128, 128
	x, w := f16Buffer(b, d, pseudo(m*kd, 1, -1, 1)), f16Buffer(b, d, pseudo(n*kd, 2, -1, 1))
	y := f32Buffer(b, d, make([]float32, m*n))
	for b.Loop() {
		if err := run(b, d, func(cb CommandBuffer) error {
			return EncodeGemm(cb, k, GemmOp{Input: GemmF16, X: x, W: w, Y: y, M: m, N: n, K: kd})
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// The emulator enforces the pipeline's thread limit (here the kernel's
// [[max_total_threads_per_threadgroup(64)]], not 1024) and counts the
// kernel's static threadgroup arrays toward the 32 KiB limit, through the
// same metal.CheckDispatch as the Apple GPU device.
func TestEmulatorDispatchLimits(t *testing.T) {
	d := openEmu(t, emu.Options{Sources: testSource(t, "testdata/limits.metal")}, "limits")
	out := f32Buffer(t, d, make([]float32, 128))
	limited, err := d.Pipeline("limited")
	if err != nil {
		t.Fatal(err)
	}
	if got := limited.MaxThreadsPerThreadgroup(); got != 64 {
		t.Fatalf("MaxThreadsPerThreadgroup = %d, want the kernel's 64", got)
	}
	if got := ClampThreads(limited, 256); got != 64 {
		t.Errorf("ClampThreads(256) = %d, want 64", got)
	}
	cb, _ := d.NewCommandBuffer()
	if err := cb.Dispatch(limited, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 128, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out}); !errors.Is(err, ErrInvalidDispatch) || !strings.Contains(err.Error(), "limit of 64") {
		t.Errorf("128 threads on a 64-thread pipeline: err = %v", err)
	}
	static, err := d.Pipeline("static_tg")
	if err != nil {
		t.Fatal(err)
	}
	err = cb.Dispatch(static, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 32, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out}, Arg{Index: 0, ThreadgroupBytes: 16384 + 16})
	if !errors.Is(err, ErrInvalidDispatch) || !errors.Is(err, emu.ErrThreadgroupMemory) || !strings.Contains(err.Error(), "16384 bytes of threadgroup arrays") {
		t.Errorf("16 KiB static + 16 KiB + 16 argument bytes: err = %v, want ErrThreadgroupMemory", err)
	}
	cb.Commit()
	cb.Wait(context.Background())
	if err := run(t, d, func(cb CommandBuffer) error {
		return cb.Dispatch(static, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 32, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out}, Arg{Index: 0, ThreadgroupBytes: 128})
	}); err != nil {
		t.Fatalf("within the limit: %v", err)
	}
	for i, v := range readF32(out, 32) {
		if v != float32(i)+1 {
			t.Fatalf("out[%d] = %v, want %d", i, v, i+1)
		}
	}
}
