//go:build linux || darwin

package emu_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"

	"github.com/laya-metal/laya/internal/half"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// The corpus (testdata/corpus/*.metal) holds kernels written the way MLX,
// llama.cpp and Apple's samples write MSL, one feature family per file.
// Every expected value here is computed independently in Go (exactly, or in
// float64 with a stated tolerance), and every kernel runs under all three
// schedules.

// openCorpus opens one emulator device per corpus file and schedule.
func openCorpus(t testing.TB, file string, s emu.Schedule) Device {
	t.Helper()
	path := "testdata/corpus/" + file
	return openEmu(t, emu.Options{Schedule: s, Sources: testSource(t, path), Workers: 2}, path)
}

// cpDispatch runs one kernel and fails the test on any error.
func cpDispatch(t testing.TB, d Device, kernel string, constants []Constant, groups, threads Size3, args ...Arg) {
	t.Helper()
	p, err := d.Pipeline(kernel, constants...)
	if err != nil {
		t.Fatalf("%s: %v", kernel, err)
	}
	if err := run(t, d, func(cb CommandBuffer) error { return cb.Dispatch(p, groups, threads, args...) }); err != nil {
		t.Fatalf("%s: %v", kernel, err)
	}
}

func cpU32Buffer(t testing.TB, d Device, vs []uint32) Buffer {
	t.Helper()
	b, err := d.NewBuffer(4 * len(vs))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b.Bytes()[4*i:], v)
	}
	return b
}

func cpReadU32(b Buffer, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b.Bytes()[4*i:])
	}
	return out
}

func cpU32Bytes(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func cpF32Bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// cpBF16 rounds to bfloat16 by round-to-nearest-even, independently of the
// emulator's code, by exact arithmetic on the float64 value.
func cpBF16(f float32) float32 {
	if f != f || math.IsInf(float64(f), 0) || f == 0 {
		return f
	}
	exp := math.Floor(math.Log2(math.Abs(float64(f))))
	ulp := math.Exp2(exp - 7) // bfloat16 keeps 8 significant bits
	q := float64(f) / ulp
	r := math.RoundToEven(q)
	return float32(r * ulp)
}

func TestCorpusAtomics(t *testing.T) {
	const n, nbins, tg = 4096, 37, 64
	values := make([]uint32, n)
	s := uint32(12345)
	for i := range values {
		s = s*1664525 + 1013904223
		values[i] = s >> 22 // 0..1023
	}
	// Independent reference.
	bins := make([]uint32, nbins)
	sub, minv, maxv := int32(0), int32(math.MaxInt32), int32(math.MinInt32)
	and, or, xor, fsum, maxu, sumOld := ^uint32(0), uint32(0), uint32(0), 0.0, uint32(0), uint64(0)
	for _, v := range values {
		bins[v%nbins]++
		sub -= int32(v)
		minv, maxv = min(minv, int32(v)-500), max(maxv, int32(v)-500)
		and &^= 1 << (v % 32)
		or |= 1 << (v % 32)
		xor ^= v
		fsum += float64(v % 64)
		maxu = max(maxu, v)
		sumOld += uint64(v)
	}
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "atomics.metal", sc)
		bv := cpU32Buffer(t, d, values)
		bbins := cpU32Buffer(t, d, make([]uint32, nbins))
		bints := cpU32Buffer(t, d, []uint32{0, uint32(math.MaxInt32), 1 << 31})
		const initial = 77
		buints := cpU32Buffer(t, d, []uint32{^uint32(0), 0, 0, 0, initial, 0})
		bf := f32Buffer(t, d, []float32{0})
		cpDispatch(t, d, "atomic_device_ops", nil, Size3{X: (n + tg - 1) / tg, Y: 1, Z: 1}, Size3{X: tg, Y: 1, Z: 1},
			Arg{Index: 0, Buffer: bv}, Arg{Index: 1, Buffer: bbins}, Arg{Index: 2, Buffer: bints},
			Arg{Index: 3, Buffer: buints}, Arg{Index: 4, Buffer: bf}, Arg{Index: 5, Bytes: cpU32Bytes(nbins)})
		// The grid has n rounded up to whole groups: the extra threads read
		// past values' n entries, so n is a multiple of tg here.
		if got := cpReadU32(bbins, nbins); fmt.Sprint(got) != fmt.Sprint(bins) {
			t.Errorf("%s: histogram %v, want %v", sc, got, bins)
		}
		gi := cpReadU32(bints, 3)
		if int32(gi[0]) != sub || int32(gi[1]) != minv || int32(gi[2]) != maxv {
			t.Errorf("%s: sub/min/max = %d %d %d, want %d %d %d", sc, int32(gi[0]), int32(gi[1]), int32(gi[2]), sub, minv, maxv)
		}
		gu := cpReadU32(buints, 6)
		if gu[0] != and || gu[1] != or || gu[2] != xor || gu[3] != maxu {
			t.Errorf("%s: and/or/xor/cas-max = %#x %#x %#x %d, want %#x %#x %#x %d", sc, gu[0], gu[1], gu[2], gu[3], and, or, xor, maxu)
		}
		// exchange: old values handed out + the last one left = all + initial.
		if got := uint64(gu[5]) + uint64(gu[4]); uint32(got) != uint32(sumOld+initial) {
			t.Errorf("%s: exchange chain sums to %d, want %d", sc, uint32(got), uint32(sumOld+initial))
		}
		// Sums of integers below 2^24 are exact in float32 in any order.
		if got := readF32(bf, 1)[0]; float64(got) != fsum {
			t.Errorf("%s: atomic_float sum %v, want %v", sc, got, fsum)
		}

		const groups = 9
		out := cpU32Buffer(t, d, make([]uint32, 2*groups))
		cpDispatch(t, d, "atomic_threadgroup_tickets", nil, Size3{X: groups, Y: 1, Z: 1}, Size3{X: 96, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out})
		for g, v := range cpReadU32(out, 2*groups) {
			want := uint32(96)
			if g%2 == 1 {
				want = 96 * 95 / 2
			}
			if v != want {
				t.Errorf("%s: tickets[%d] = %d, want %d", sc, g, v, want)
			}
		}
	}
}

func TestCorpusTemplates(t *testing.T) {
	const n = 45
	in := pseudo(n, 7, -4, 4)
	aff := cpF32Bytes(1.5, -0.25)
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "templates.metal", sc)
		for _, c := range []struct {
			kernel string
			per    int
			elem   string
		}{
			{"affine_f32_1", 1, "f32"}, {"affine_f32_2", 2, "f32"}, {"affine_f16_4", 4, "f16"}, {"affine_bf16_2", 2, "bf16"},
		} {
			var bin, bout Buffer
			var want []float64
			switch c.elem {
			case "f32":
				bin, bout = f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, n))
				for _, x := range in {
					want = append(want, float64(float32(x*1.5)-0.25))
				}
			case "f16":
				bin, bout = f16Buffer(t, d, in), f16Buffer(t, d, make([]float32, n))
				for i := range in {
					x := half.Float16ToFloat32(binary.LittleEndian.Uint16(bin.Bytes()[2*i:]))
					want = append(want, float64(half.Float16ToFloat32(half.Float32ToFloat16(float32(x*1.5)-0.25))))
				}
			case "bf16":
				var err error
				if bin, err = d.NewBuffer(2 * n); err != nil {
					t.Fatal(err)
				}
				if bout, err = d.NewBuffer(2 * n); err != nil {
					t.Fatal(err)
				}
				for i, x := range in {
					xb := cpBF16(x)
					binary.LittleEndian.PutUint16(bin.Bytes()[2*i:], uint16(math.Float32bits(xb)>>16))
					want = append(want, float64(cpBF16(float32(xb*1.5)-0.25)))
				}
			}
			groups := (n + 8*c.per - 1) / (8 * c.per)
			cpDispatch(t, d, c.kernel, nil, Size3{X: groups, Y: 1, Z: 1}, Size3{X: 8, Y: 1, Z: 1},
				Arg{Index: 0, Buffer: bin}, Arg{Index: 1, Buffer: bout}, Arg{Index: 2, Bytes: aff}, Arg{Index: 3, Bytes: cpU32Bytes(n)})
			for i, w := range want {
				var got float32
				switch c.elem {
				case "f32":
					got = readF32(bout, n)[i]
				case "f16":
					got = half.Float16ToFloat32(binary.LittleEndian.Uint16(bout.Bytes()[2*i:]))
				case "bf16":
					got = math.Float32frombits(uint32(binary.LittleEndian.Uint16(bout.Bytes()[2*i:])) << 16)
				}
				if float64(got) != w {
					t.Errorf("%s %s: out[%d] = %v, want %v", sc, c.kernel, i, got, w)
					break
				}
			}
		}

		const rows, cols = 3, 200
		x := pseudo(rows*cols, 9, -100, 100)
		for i := range x {
			x[i] = float32(math.Round(float64(x[i]))) // integers: sums are exact in any order
		}
		bx := f32Buffer(t, d, x)
		bo := f32Buffer(t, d, make([]float32, rows))
		cpDispatch(t, d, "reduce_sum_64", nil, Size3{X: rows, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bx}, Arg{Index: 1, Buffer: bo}, Arg{Index: 2, Bytes: cpU32Bytes(cols)})
		for r := 0; r < rows; r++ {
			want := 0.0
			for c := 0; c < cols; c++ {
				want += float64(x[r*cols+c])
			}
			if got := readF32(bo, rows)[r]; float64(got) != want {
				t.Errorf("%s: reduce_sum_64 row %d = %v, want %v", sc, r, got, want)
			}
		}
		cpDispatch(t, d, "reduce_max_32", nil, Size3{X: rows, Y: 1, Z: 1}, Size3{X: 32, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bx}, Arg{Index: 1, Buffer: bo}, Arg{Index: 2, Bytes: cpU32Bytes(cols)})
		for r := 0; r < rows; r++ {
			want := float32(math.Inf(-1))
			for c := 0; c < cols; c++ {
				want = max(want, x[r*cols+c])
			}
			if got := readF32(bo, rows)[r]; got != want {
				t.Errorf("%s: reduce_max_32 row %d = %v, want %v", sc, r, got, want)
			}
		}
		// [[max_total_threads_per_threadgroup(32)]] is the pipeline's limit.
		p, err := d.Pipeline("reduce_max_32")
		if err != nil {
			t.Fatal(err)
		}
		if p.MaxThreadsPerThreadgroup() != 32 {
			t.Errorf("reduce_max_32: MaxThreadsPerThreadgroup = %d, want 32", p.MaxThreadsPerThreadgroup())
		}
		cb, _ := d.NewCommandBuffer()
		if err := cb.Dispatch(p, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bx}, Arg{Index: 1, Buffer: bo}, Arg{Index: 2, Bytes: cpU32Bytes(cols)}); !errors.Is(err, ErrInvalidDispatch) {
			t.Errorf("64 threads for a 32-thread kernel: err = %v, want ErrInvalidDispatch", err)
		}

		// scale_rows_f16: 2 rows of 3 half4; args {int n; ulong row_bytes;
		// float scale} is 24 bytes (4 of padding after n and after scale).
		hx := pseudo(24, 11, -8, 8)
		bhx, bhy := f16Buffer(t, d, hx), f16Buffer(t, d, make([]float32, 24))
		args := append(append(cpU32Bytes(3, 0), binary.LittleEndian.AppendUint64(nil, 24)...), cpF32Bytes(0.5)...)
		args = append(args, 0, 0, 0, 0)
		cpDispatch(t, d, "scale_rows_f16", nil, Size3{X: 2, Y: 1, Z: 1}, Size3{X: 32, Y: 1, Z: 1},
			Arg{Index: 0, Bytes: args}, Arg{Index: 1, Buffer: bhx}, Arg{Index: 2, Buffer: bhy})
		for i := 0; i < 24; i++ {
			x := half.Float16ToFloat32(binary.LittleEndian.Uint16(bhx.Bytes()[2*i:]))
			got := half.Float16ToFloat32(binary.LittleEndian.Uint16(bhy.Bytes()[2*i:]))
			if want := half.Float16ToFloat32(half.Float32ToFloat16(x * 0.5)); got != want {
				t.Errorf("%s: scale_rows_f16[%d] = %v, want %v", sc, i, got, want)
			}
		}

		bf := cpU32Buffer(t, d, make([]uint32, 10))
		cpDispatch(t, d, "renamed_fill", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 10, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bf})
		for i, v := range cpReadU32(bf, 10) {
			if v != uint32(3*i) {
				t.Errorf("%s: renamed_fill[%d] = %d", sc, i, v)
			}
		}
		if _, err := d.Pipeline("fill_impl"); !errors.Is(err, ErrPipeline) {
			t.Errorf("a host_name kernel is also found by its function name: err = %v", err)
		}
	}
}

func TestCorpusParams(t *testing.T) {
	const rows, cols, tgx, tgy = 5, 11, 4, 2
	x := pseudo(rows*cols*2, 3, -2, 2)
	bias := pseudo(cols, 4, -1, 1)
	// Params{uint rows, cols; float alpha; uint2 stride}: uint2 is 8-byte
	// aligned, so 4 bytes of padding follow alpha (24 bytes in all).
	params := append(cpU32Bytes(rows, cols), cpF32Bytes(0.5)...)
	params = append(params, 0, 0, 0, 0)
	params = append(params, cpU32Bytes(2, 2*cols)...)
	gx, gy := (cols+tgx-1)/tgx, (rows+tgy-1)/tgy
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "params.metal", sc)
		for _, c := range []struct {
			name    string
			consts  []Constant
			bias    bool
			scale   bool
			addWant float64
		}{
			{"no constants", nil, false, false, 1000},
			{"bias", []Constant{{Index: 200, Value: true}}, true, false, 0},
			{"bias+scale+values", []Constant{{Index: 200, Value: true}, {Index: 10, Value: true}, {Index: 11, Value: int32(-3)},
				{Index: 12, Value: int32(-2)}, {Index: 13, Value: float32(0.25)}}, true, true, -4.75},
		} {
			bx := f32Buffer(t, d, x)
			n := rows*cols*2 + gx*tgx*gy*tgy*6
			bo := f32Buffer(t, d, make([]float32, n))
			args := []Arg{{Index: 0, Buffer: bx}, {Index: 2, Bytes: params}, {Index: 4, Buffer: bo}}
			if c.bias {
				args = append(args, Arg{Index: 1, Buffer: f32Buffer(t, d, bias)})
			}
			if c.scale {
				args = append(args, Arg{Index: 3, Buffer: f32Buffer(t, d, []float32{-2})})
			}
			cpDispatch(t, d, "params_2d", c.consts, Size3{X: gx, Y: gy, Z: 1}, Size3{X: tgx, Y: tgy, Z: 1}, args...)
			got := readF32(bo, n)
			for r := 0; r < rows; r++ {
				for col := 0; col < cols; col++ {
					i := r*2*cols + col*2
					v := float32(x[i] * 0.5)
					if c.bias {
						v += bias[col]
					}
					if c.scale {
						v *= -2
					}
					want := float64(v + float32(c.addWant))
					if c.addWant == 1000 {
						want = float64(v + 1000)
					}
					if float64(got[i]) != want {
						t.Errorf("%s %s: out[%d,%d] = %v, want %v", sc, c.name, r, col, got[i], want)
					}
				}
			}
			for gyi := 0; gyi < rows; gyi++ {
				for gxi := 0; gxi < cols; gxi++ {
					rec := got[rows*cols*2+(gyi*gx*tgx+gxi)*6:][:6]
					lin := (gyi%tgy)*tgx + gxi%tgx
					want := []float32{float32(gxi % tgx), float32(gyi % tgy), float32(gxi / tgx), float32(gyi / tgy), 32, float32(lin % 4)}
					if fmt.Sprint(rec) != fmt.Sprint(want) {
						t.Errorf("%s: builtins of thread (%d,%d) = %v, want %v", sc, gxi, gyi, rec, want)
					}
				}
			}
		}
		p, err := d.Pipeline("params_2d")
		if err != nil {
			t.Fatal(err)
		}
		if p.MaxThreadsPerThreadgroup() != 256 {
			t.Errorf("params_2d: MaxThreadsPerThreadgroup = %d, want 256", p.MaxThreadsPerThreadgroup())
		}
		if _, err := d.Pipeline("params_2d", Constant{Index: 12, Value: int32(40000)}); !errors.Is(err, ErrPipeline) {
			t.Errorf("40000 for a short constant: err = %v, want ErrPipeline", err)
		}

		a, b := cpU32Buffer(t, d, []uint32{1, 2, 3}), cpU32Buffer(t, d, []uint32{10, 20, 30})
		out := cpU32Buffer(t, d, make([]uint32, 3))
		// b is buffer(0); a and c take the free indices 1 and 2.
		cpDispatch(t, d, "implicit_indices", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 3, Y: 1, Z: 1},
			Arg{Index: 0, Buffer: b}, Arg{Index: 1, Buffer: a}, Arg{Index: 2, Buffer: out})
		if got := cpReadU32(out, 3); fmt.Sprint(got) != "[11 22 33]" {
			t.Errorf("%s: implicit_indices = %v", sc, got)
		}
	}
}

func TestCorpusThreadgroupMemory(t *testing.T) {
	const groups = 3
	in := pseudo(groups*64, 5, -1, 1)
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "tgmem.metal", sc)
		bi := f32Buffer(t, d, in)
		bo := f32Buffer(t, d, make([]float32, groups*64+groups))
		cpDispatch(t, d, "tg_forms", nil, Size3{X: groups, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bi}, Arg{Index: 1, Buffer: bo})
		got := readF32(bo, groups*64+groups)
		for g := 0; g < groups; g++ {
			for tid := 0; tid < 64; tid++ {
				tr := in[g*64+(tid%8)*8+tid/8]
				want := tr + float32(tid/8)*100 + float32(tid%4+1)*1000 + 0.5
				if got[g*64+tid] != want {
					t.Errorf("%s: group %d thread %d = %v, want %v", sc, g, tid, got[g*64+tid], want)
				}
			}
			if got[groups*64+g] != 28*8 {
				t.Errorf("%s: group %d struct array result %v, want 224", sc, g, got[groups*64+g])
			}
		}
	}
}

func TestCorpusLibrary(t *testing.T) {
	xs := []float32{0.75, -1.5, 2.5, -0.3, 3.5, 1.0 / 3, -2.5, 100.25}
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "library.metal", sc)
		bi := f32Buffer(t, d, xs)
		bo := f32Buffer(t, d, make([]float32, 24*len(xs)))
		cpDispatch(t, d, "library_float", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: len(xs), Y: 1, Z: 1}, Arg{Index: 0, Buffer: bi}, Arg{Index: 1, Buffer: bo})
		got := readF32(bo, 24*len(xs))
		for i, x := range xs {
			x64 := float64(x)
			b2 := func(c bool) float64 {
				if c {
					return 1
				}
				return 0
			}
			sel := float64(-x)
			if -x < 0 {
				sel = 9
			}
			sign := 0.0
			if x > 0 {
				sign = 1
			} else if x < 0 {
				sign = -1
			}
			want := []float64{
				1 + b2(x > 0), sel, math.Max(-1, math.Min(1, x64)), 1.5, float64(float32(math.FMA(x64, 3, 0.5))),
				math.Max(0, math.Min(1, x64)), sign, x64 - math.Floor(x64), math.RoundToEven(x64),
				float64(float32(math.Exp(x64))), math.Sqrt(math.Abs(x64)), math.Tanh(x64),
				b2(x > -100 && -x > -100), 1, 0,
				math.MaxFloat32, 65504, 1.0 / 1024, float64(math.Float32frombits(0x7f7f0000)),
				float64(cpBF16(x)), float64(cpBF16(cpBF16(x) * cpBF16(x*0.5))),
				x64, 1.875, b2(x > 0),
			}
			for j, w := range want {
				g := float64(got[24*i+j])
				tol := 0.0
				if j >= 9 && j <= 11 {
					tol = 4e-7 * math.Abs(w) // libm-accurate transcendental, one float rounding
				}
				if g != w && !(math.Abs(g-w) <= tol) {
					t.Errorf("%s: x=%v slot %d = %v, want %v", sc, x, j, g, w)
				}
			}
		}

		us := []uint32{1, 0x80000000, 0xdeadbeef, 12345, 0xffff0000, 999, 0x00f0f000, 7}
		bu := cpU32Buffer(t, d, us)
		bou := cpU32Buffer(t, d, make([]uint32, 12*len(us)))
		cpDispatch(t, d, "library_int", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: len(us), Y: 1, Z: 1}, Arg{Index: 0, Buffer: bu}, Arg{Index: 1, Buffer: bou})
		gotu := cpReadU32(bou, 12*len(us))
		for i, x := range us {
			s := int32(x) - 1000
			ex := int32(uint32(s)>>3&31) << 27 >> 27 // 5 bits, sign-extended
			lo, hi := x&0xffff, x>>16
			want := []uint32{
				uint32(bits.OnesCount32(x)), uint32(bits.LeadingZeros32(x)), uint32(bits.TrailingZeros32(x)),
				(x >> 4) & 0xff, uint32(ex), uint32((uint64(x) * 0x9e3779b9) >> 32), uint32((int64(s) * -123457) >> 32),
				x&^(7<<8) | 5<<8, bits.RotateLeft32(x, 7), bits.Reverse32(x),
				uint32(bits.LeadingZeros16(uint16(lo))) + 100*uint32(bits.OnesCount16(uint16(hi))), hi | lo<<16,
			}
			for j, w := range want {
				if gotu[12*i+j] != w {
					t.Errorf("%s: x=%#x int slot %d = %#x, want %#x", sc, x, j, gotu[12*i+j], w)
				}
			}
		}
	}
}

func TestCorpusSIMD(t *testing.T) {
	const threads, nf, nu = 64, 20, 8
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "simd.metal", sc)
		bf := f32Buffer(t, d, make([]float32, threads*nf))
		bu := cpU32Buffer(t, d, make([]uint32, threads*nu))
		cpDispatch(t, d, "simd_extras", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: threads, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bf}, Arg{Index: 1, Buffer: bu})
		gf, gu := readF32(bf, threads*nf), cpReadU32(bu, threads*nu)
		var ballot uint32
		for l := 0; l < 32; l += 3 {
			ballot |= 1 << l
		}
		for tid := 0; tid < threads; tid++ {
			l := tid % 32
			base := l &^ 3
			first := -1.0
			if l >= 5 {
				first = 0
				if l == 5 {
					first = 1
				}
			}
			fillDown := float64(l + 4)
			if l+4 >= 32 {
				fillDown = float64(l+4-32) + 100
			}
			fillUp := float64(l - 4)
			if l < 4 {
				fillUp = float64(32-4+l) + 100
			}
			idx, seg := l%8, l-l%8
			fill8 := float64(seg + idx + 2)
			if idx+2 >= 8 {
				fill8 = float64(seg+idx+2-8) + 100
			}
			qdown := float64(l)
			if l&3 < 3 {
				qdown = float64(l + 1)
			}
			qany := 0.0
			if base == 4 {
				qany = 1
			}
			wantF := []float64{
				first, 1, 1, float64((l + 5) % 32), float64((l + 29) % 32), fillDown, fillUp, fill8,
				float64(4*base + 6), float64(base + 2), float64(base + 3), float64(l ^ 1), qdown, float64(l & 3),
				float64(base + 3), float64(l + 1), qany, 31 * 32 / 2, float64(b2u(l&3 == 0)), 10,
			}
			for j, w := range wantF {
				if g := float64(gf[tid*nf+j]); g != w {
					t.Errorf("%s: thread %d float slot %d = %v, want %v", sc, tid, j, g, w)
				}
			}
			wantU := []uint32{ballot, 0xffff, 0x100, 0, 1 + 4, 0xf, 24, uint32(0xfffffff9)}
			for j, w := range wantU {
				if g := gu[tid*nu+j]; g != w {
					t.Errorf("%s: thread %d uint slot %d = %#x, want %#x", sc, tid, j, g, w)
				}
			}
		}

		a := make([]float32, 64)
		b := make([]float32, 64)
		for i := range a {
			a[i] = float32(i%7) - 3
			b[i] = float32(i%5) - 2
		}
		ba, bb := f32Buffer(t, d, a), f16Buffer(t, d, b)
		bd, be := f32Buffer(t, d, make([]float32, 64)), f32Buffer(t, d, make([]float32, 64))
		cpDispatch(t, d, "simdgroup_mm", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 32, Y: 1, Z: 1},
			Arg{Index: 0, Buffer: ba}, Arg{Index: 1, Buffer: bb}, Arg{Index: 2, Buffer: bd}, Arg{Index: 3, Buffer: be})
		gd, ge := readF32(bd, 64), readF32(be, 64)
		for r := 0; r < 8; r++ {
			for c := 0; c < 8; c++ {
				want := float32(0)
				for k := 0; k < 8; k++ {
					want += a[r*8+k] * b[k*8+c]
				}
				if gd[r*8+c] != want || ge[r*8+c] != want+1 {
					t.Errorf("%s: simdgroup matrix [%d,%d] = %v / %v, want %v / %v", sc, r, c, gd[r*8+c], ge[r*8+c], want, want+1)
				}
			}
		}
	}
}

func b2u(c bool) int {
	if c {
		return 1
	}
	return 0
}

func TestCorpusMatrix(t *testing.T) {
	var src [16]float32 // column-major: src[c*4+r] = m[c][r]
	for i := range src {
		src[i] = float32(i%5) - 1.5
	}
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "library.metal", sc)
		bs := f16Buffer(t, d, src[:])
		bo := f32Buffer(t, d, make([]float32, 20))
		cpDispatch(t, d, "library_matrix", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 1, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bs}, Arg{Index: 1, Buffer: bo})
		got := readF32(bo, 20)
		v := [4]float32{1, 2, 3, 4}
		var mv, vm [4]float32
		for r := 0; r < 4; r++ {
			for c := 0; c < 4; c++ {
				mv[r] += src[c*4+r] * v[c]
				vm[c] += v[r] * src[c*4+r]
			}
		}
		// d = 3I; e has columns (1,2) and (3,4): d*e = 3e.
		want := append(append(append(mv[:], vm[:]...), src[4:8]...), 3, 6, 9, 12, 1, 3, 6, 8)
		for i, w := range want {
			if got[i] != w {
				t.Errorf("%s: matrix slot %d = %v, want %v", sc, i, got[i], w)
			}
		}
	}
}

// TestCorpusUnsupported: MSL the emulator does not run is a compile error
// naming the file, line and feature, never a crash or a silent wrong answer.
func TestCorpusUnsupported(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"texture", "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(texture2d<float, access::read> t [[texture(0)]], device float* o [[buffer(0)]]) {}\n", "u.metal:3: textures (texture2d)"},
		{"tensor header", "#include <metal_stdlib>\n#include <metal_tensor>\n", "u.metal:2: #include <metal_tensor>: Metal 4 tensors"},
		{"ray tracing", "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* o [[buffer(0)]],\n  raytracing::instance_acceleration_structure s [[buffer(1)]]) {}\n", "u.metal:4: ray tracing"},
		{"fragment", "#include <metal_stdlib>\nfragment float4 fs(float4 p [[position]]) { return p; }\n", "u.metal:2"},
	}
	for _, c := range cases {
		_, err := emu.Open(emu.Options{Sources: []KernelSource{{Name: "u.metal", Text: c.src}}})
		if !errors.Is(err, ErrShaderCompile) || !errors.Is(err, errors.ErrUnsupported) || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrShaderCompile and errors.ErrUnsupported naming %q", c.name, err, c.want)
		}
	}
	// A C++ error in a kernel names the .metal line through clang.
	_, err := emu.Open(emu.Options{Sources: []KernelSource{{Name: "bad.metal", Text: "#include <metal_stdlib>\nkernel void k(device float* o [[buffer(0)]]) {\n  o[0] = undefined_name;\n}\n"}}})
	if !errors.Is(err, ErrShaderCompile) || !strings.Contains(err.Error(), "bad.metal:3") {
		t.Errorf("undefined name: err = %v, want ErrShaderCompile naming bad.metal:3", err)
	}
}
