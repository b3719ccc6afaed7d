//go:build linux || darwin

package metal

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/laya-metal/laya/weights"
)

// The emulator tests compile kernels with clang-19 (installed by .ci/run);
// compiled objects are cached, so only the first run pays for clang.

var emuDevices sync.Map // key -> Device

func openEmu(t testing.TB, opts EmulatorOptions, key string) Device {
	t.Helper()
	key += "|" + opts.Schedule.String()
	if d, ok := emuDevices.Load(key); ok {
		return d.(Device)
	}
	d, err := OpenEmulator(opts)
	if errors.Is(err, ErrNoClang) && runtime.GOOS == "darwin" {
		// Linux CI installs clang-19 and must run these; a Mac has the GPU
		// tests (device_kernels_darwin_test.go) instead.
		t.Skipf("emulator tests need clang 16+: %v", err)
	}
	if err != nil {
		t.Fatalf("OpenEmulator: %v", err)
	}
	emuDevices.Store(key, d)
	return d
}

func testSource(t testing.TB, file string) []KernelSource {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return []KernelSource{{Name: file, Text: string(b)}}
}

func f32Buffer(t testing.TB, d Device, vs []float32) Buffer {
	t.Helper()
	b, err := d.NewBuffer(4 * len(vs))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b.Bytes()[4*i:], math.Float32bits(v))
	}
	return b
}

func f16Buffer(t testing.TB, d Device, vs []float32) Buffer {
	t.Helper()
	b, err := d.NewBuffer(2 * len(vs))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		binary.LittleEndian.PutUint16(b.Bytes()[2*i:], weights.Float32ToFloat16(v))
	}
	return b
}

func readF32(b Buffer, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b.Bytes()[4*i:]))
	}
	return out
}

// pseudo gives reproducible values in [lo, hi).
func pseudo(n int, seed uint64, lo, hi float32) []float32 {
	out := make([]float32, n)
	s := seed
	for i := range out {
		s = s*6364136223846793005 + 1442695040888963407
		out[i] = lo + (hi-lo)*float32(s>>40)/float32(1<<24)
	}
	return out
}

func run(t testing.TB, d Device, encode func(cb CommandBuffer) error) error {
	t.Helper()
	cb, err := d.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if err := encode(cb); err != nil {
		t.Fatalf("encode: %v", err)
	}
	if err := cb.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = cb.Wait(context.Background())
	return err
}

// maxErr is the largest |got-want| / (abs + rel·|want|): ≤ 1 passes.
func maxErr(got []float32, want []float64, abs, rel float64) (float64, int) {
	worst, at := 0.0, -1
	for i := range want {
		e := math.Abs(float64(got[i])-want[i]) / (abs + rel*math.Abs(want[i]))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if e > worst {
			worst, at = e, i
		}
	}
	return worst, at
}

func TestVectorAddEmu(t *testing.T) {
	for _, s := range Schedules {
		d := openEmu(t, EmulatorOptions{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, n := range []int{1, 33, 1000, 4099} {
			a, b := pseudo(n, 1, -10, 10), pseudo(n, 2, -10, 10)
			ba, bb, bo := f32Buffer(t, d, a), f32Buffer(t, d, b), f32Buffer(t, d, make([]float32, n))
			if err := run(t, d, func(cb CommandBuffer) error { return VectorAdd(cb, k, ba, bb, bo, n) }); err != nil {
				t.Fatalf("%s n=%d: %v", s, n, err)
			}
			// One float32 rounding of the exact sum.
			if e, i := maxErr(readF32(bo, n), vectorAddRef(a, b), 0, 6e-8); e > 1 {
				t.Errorf("%s n=%d: element %d off by %.3g× tolerance", s, n, i, e)
			}
		}
	}
}

func TestSoftmaxEmu(t *testing.T) {
	const rows = 3
	for _, s := range Schedules {
		d := openEmu(t, EmulatorOptions{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, cols := range []int{1, 33, 1000, 4096} {
			in := pseudo(rows*cols, uint64(cols), -8, 8)
			want := softmaxRef(in, rows, cols)
			bin := f32Buffer(t, d, in)
			for _, threads := range []int{1, 32, 48, 96, 256, 1024, SoftmaxThreads(cols)} {
				bout := f32Buffer(t, d, make([]float32, rows*cols))
				err := run(t, d, func(cb CommandBuffer) error { return softmaxThreads(cb, k, bin, bout, rows, cols, threads) })
				if err != nil {
					t.Fatalf("%s cols=%d tg=%d: %v", s, cols, threads, err)
				}
				// fp32 exp and sums: a few ulp of the result, plus the
				// rounding of each thread's serial sum of cols/threads
				// terms (≈ √n ulp), plus an absolute floor for tiny values.
				rel := 2e-6 + 1.2e-7*math.Sqrt(float64(ceilDiv(cols, threads)))
				if e, i := maxErr(readF32(bout, rows*cols), want, 1e-9, rel); e > 1 {
					t.Errorf("%s cols=%d tg=%d: element %d off by %.3g× tolerance", s, cols, threads, i, e)
				}
			}
		}
	}
}

func TestGemmEmu(t *testing.T) {
	cases := []struct {
		m, n, k int
		in      GemmInput
		bias    bool
	}{
		{45, 70, 40, GemmF32, false},
		{45, 70, 40, GemmF16, true},
		{64, 96, 128, GemmF16, false},
		{64, 96, 128, GemmF32, true},
		{1, 33, 17, GemmF32, true},
		{1, 33, 17, GemmF16, false},
	}
	for _, s := range Schedules {
		d := openEmu(t, EmulatorOptions{Schedule: s}, "kernels")
		kern := NewKernels(d)
		for _, c := range cases {
			x, w := pseudo(c.m*c.k, 3, -1, 1), pseudo(c.n*c.k, 4, -1, 1)
			var bx, bw Buffer
			xr, wr := make([]float64, len(x)), make([]float64, len(w))
			if c.in == GemmF16 {
				bx, bw = f16Buffer(t, d, x), f16Buffer(t, d, w)
				// The reference sees the half-rounded inputs the kernel sees.
				for i := range x {
					xr[i] = float64(weights.Float16ToFloat32(binary.LittleEndian.Uint16(bx.Bytes()[2*i:])))
				}
				for i := range w {
					wr[i] = float64(weights.Float16ToFloat32(binary.LittleEndian.Uint16(bw.Bytes()[2*i:])))
				}
			} else {
				bx, bw = f32Buffer(t, d, x), f32Buffer(t, d, w)
				for i := range x {
					xr[i] = float64(x[i])
				}
				for i := range w {
					wr[i] = float64(w[i])
				}
			}
			var bb Buffer
			var br []float64
			if c.bias {
				b := pseudo(c.n, 5, -1, 1)
				bb = f32Buffer(t, d, b)
				for _, v := range b {
					br = append(br, float64(v))
				}
			}
			by := f32Buffer(t, d, make([]float32, c.m*c.n))
			err := run(t, d, func(cb CommandBuffer) error { return Gemm(cb, kern, c.in, bx, bw, bb, by, c.m, c.n, c.k) })
			if err != nil {
				t.Fatalf("%s %+v: %v", s, c, err)
			}
			// fp32 accumulation of k products of magnitude ≤ 1.
			if e, i := maxErr(readF32(by, c.m*c.n), gemmRef(xr, wr, br, c.m, c.n, c.k), 1e-6*float64(c.k), 1e-6); e > 1 {
				t.Errorf("%s %+v: element %d off by %.3g× tolerance", s, c, i, e)
			}
		}
	}
}

// A softmax with its reuse barrier removed must give a wrong answer under
// at least one schedule, or the schedules do not expose races.
func TestMissingBarrierDetected(t *testing.T) {
	const rows, cols, threads = 2, 1000, 256
	in := pseudo(rows*cols, 9, -8, 8)
	want := softmaxRef(in, rows, cols)
	failed := 0
	for _, s := range Schedules {
		d := openEmu(t, EmulatorOptions{Schedule: s, Sources: testSource(t, "testdata/softmax_racy.metal")}, "racy")
		p, err := d.Pipeline("softmax_racy_f32")
		if err != nil {
			t.Fatal(err)
		}
		bin, bout := f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, rows*cols))
		err = run(t, d, func(cb CommandBuffer) error {
			return cb.Dispatch(p, Size3{rows, 1, 1}, Size3{threads, 1, 1},
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
	d := openEmu(t, EmulatorOptions{Sources: testSource(t, "testdata/bugs.metal")}, "bugs")
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
			err = run(t, d, func(cb CommandBuffer) error { return cb.Dispatch(p, Size3{1, 1, 1}, Size3{64, 1, 1}, c.args...) })
			if !errors.Is(err, ErrKernelFault) {
				t.Fatalf("err = %v, want ErrKernelFault", err)
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
		if !errors.Is(err, ErrThreadgroupMemory) || !strings.Contains(err.Error(), "36000") {
			t.Fatalf("err = %v, want ErrThreadgroupMemory naming 36000 bytes", err)
		}
	})
	t.Run("uninit_read", func(t *testing.T) {
		p, err := d.Pipeline("uninit_read")
		if err != nil {
			t.Fatal(err)
		}
		if err := run(t, d, func(cb CommandBuffer) error {
			return cb.Dispatch(p, Size3{1, 1, 1}, Size3{64, 1, 1}, Arg{Index: 0, Buffer: out})
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
	d := openEmu(t, EmulatorOptions{ASan: true, Sources: testSource(t, "testdata/bugs.metal")}, "bugs-asan")
	const n = 40
	in, out := f32Buffer(t, d, make([]float32, n)), f32Buffer(t, d, make([]float32, n))
	p, err := d.Pipeline("oob_read")
	if err != nil {
		t.Fatal(err)
	}
	// In bounds first: the runner must also work.
	err = run(t, d, func(cb CommandBuffer) error {
		return cb.Dispatch(p, Size3{1, 1, 1}, Size3{64, 1, 1}, Arg{Index: 0, Buffer: in}, Arg{Index: 1, Buffer: out}, Arg{Index: 2, Bytes: u32s(n - 1)})
	})
	if err != nil {
		t.Fatalf("in-bounds run: %v", err)
	}
	err = run(t, d, func(cb CommandBuffer) error {
		return cb.Dispatch(p, Size3{1, 1, 1}, Size3{64, 1, 1}, Arg{Index: 0, Buffer: in}, Arg{Index: 1, Buffer: out}, Arg{Index: 2, Bytes: u32s(n)})
	})
	if !errors.Is(err, ErrKernelFault) || !strings.Contains(err.Error(), "testdata/bugs.metal:43") || !strings.Contains(err.Error(), "overflow") {
		t.Fatalf("err = %v, want a buffer overflow at testdata/bugs.metal:43", err)
	}
}

func TestEmulatorDispatchValidation(t *testing.T) {
	d := openEmu(t, EmulatorOptions{}, "kernels")
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
		{"unbound buffer", Size3{1, 1, 1}, Size3{8, 1, 1}, []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf}, {Index: 3, Bytes: u32s(8)}}},
		{"too many threads", Size3{1, 1, 1}, Size3{1025, 1, 1}, []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf}, {Index: 2, Buffer: buf}, {Index: 3, Bytes: u32s(8)}}},
		{"unknown index", Size3{1, 1, 1}, Size3{8, 1, 1}, []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf}, {Index: 2, Buffer: buf}, {Index: 3, Bytes: u32s(8)}, {Index: 7, Buffer: buf}}},
		{"offset past end", Size3{1, 1, 1}, Size3{8, 1, 1}, []Arg{{Index: 0, Buffer: buf, Offset: 32}, {Index: 1, Buffer: buf}, {Index: 2, Buffer: buf}, {Index: 3, Bytes: u32s(8)}}},
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
	d := openEmu(t, EmulatorOptions{}, "kernels")
	k := NewKernels(d)
	const rows, cols = 64, 4096
	in, out := f32Buffer(t, d, make([]float32, rows*cols)), f32Buffer(t, d, make([]float32, rows*cols))
	cb, _ := d.NewCommandBuffer()
	if err := softmaxThreads(cb, k, in, out, rows, cols, 1024); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cb.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestNewBufferWithBytesWraps(t *testing.T) {
	d := openEmu(t, EmulatorOptions{}, "kernels")
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

func TestEmulatorCompileErrorNamesLine(t *testing.T) {
	_, err := OpenEmulator(EmulatorOptions{Sources: []KernelSource{{Name: "bad.metal", Text: "kernel void k(device float* x [[buffer(0)]]) {\n  x[0] = undefined_name;\n}\n"}}})
	if !errors.Is(err, ErrShaderCompile) || !strings.Contains(err.Error(), "bad.metal:2") {
		t.Fatalf("err = %v, want ErrShaderCompile naming bad.metal:2", err)
	}
}

func BenchmarkEmuSoftmax(b *testing.B) {
	d := openEmu(b, EmulatorOptions{}, "kernels")
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
	d := openEmu(b, EmulatorOptions{}, "kernels")
	k := NewKernels(d)
	const m, n, kd = 32, 128, 128
	x, w := f16Buffer(b, d, pseudo(m*kd, 1, -1, 1)), f16Buffer(b, d, pseudo(n*kd, 2, -1, 1))
	y := f32Buffer(b, d, make([]float32, m*n))
	for b.Loop() {
		if err := run(b, d, func(cb CommandBuffer) error { return Gemm(cb, k, GemmF16, x, w, nil, y, m, n, kd) }); err != nil {
			b.Fatal(err)
		}
	}
}
