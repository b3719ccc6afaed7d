//go:build linux || darwin

package emu_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/laya-metal/laya/internal/half"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// Kernels of the corpus written in the style of MLX's and llama.cpp's
// families (steel GEMM, binary ops, complex numbers, dequantizing
// matrix-vector products...). Each one exposed an emulator gap once; the
// expected values are computed here in Go from the inputs.

// cpInts returns small integer values in [lo, hi]: products and sums of
// them are exact in float32 and half, so any summation order gives the
// same result and the comparison can be exact.
func cpInts(n int, seed uint64, lo, hi int) []float32 {
	out := pseudo(n, seed, 0, 1)
	for i := range out {
		out[i] = float32(lo + int(out[i]*float32(hi-lo+1)))
	}
	return out
}

func TestCorpusSteelGEMM(t *testing.T) {
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "steel_gemm.metal", sc)
		for _, c := range []struct {
			kernel   string
			half     bool
			bm, bn   int
			m, n, k  int
			aligned  bool
			scale    float32
			useScale bool
		}{
			{"steel_gemm_float32_bm32_bn32_bk16_wm2_wn2", false, 32, 32, 64, 64, 32, true, 1, false},
			{"steel_gemm_float32_bm32_bn32_bk16_wm2_wn2", false, 32, 32, 50, 40, 48, false, 0.5, true},
			{"steel_gemm_float32_bm64_bn32_bk16_wm2_wn2", false, 64, 32, 70, 33, 16, false, 2, true},
			{"steel_gemm_float16_bm32_bn32_bk16_wm2_wn2", true, 32, 32, 64, 32, 32, true, 0.25, true},
			{"steel_gemm_float16_bm64_bn32_bk16_wm2_wn2", true, 64, 32, 37, 45, 32, false, 1, false},
		} {
			a := cpInts(c.m*c.k, 11, -4, 4)
			b := cpInts(c.k*c.n, 12, -4, 4)
			var ba, bb, bd Buffer
			if c.half {
				ba, bb, bd = f16Buffer(t, d, a), f16Buffer(t, d, b), f16Buffer(t, d, make([]float32, c.m*c.n))
			} else {
				ba, bb, bd = f32Buffer(t, d, a), f32Buffer(t, d, b), f32Buffer(t, d, make([]float32, c.m*c.n))
			}
			tilesM, tilesN := (c.m+c.bm-1)/c.bm, (c.n+c.bn-1)/c.bn
			params := cpU32Bytes(uint32(c.m), uint32(c.n), uint32(c.k), uint32(c.k), uint32(c.n), uint32(c.n), uint32(tilesN), uint32(tilesM), uint32(c.k/16))
			consts := []Constant{{Index: 200, Value: c.aligned}, {Index: 201, Value: c.aligned}}
			if c.useScale {
				consts = append(consts, Constant{Index: 300, Value: c.scale})
			}
			// One threadgroup more than needed in x: it must leave early.
			cpDispatch(t, d, c.kernel, consts, Size3{X: tilesN + 1, Y: tilesM, Z: 1}, Size3{X: 128, Y: 1, Z: 1},
				Arg{Index: 0, Buffer: ba}, Arg{Index: 1, Buffer: bb}, Arg{Index: 3, Buffer: bd}, Arg{Index: 4, Bytes: params})
			bad := 0
			for i := 0; i < c.m && bad < 3; i++ {
				for j := 0; j < c.n && bad < 3; j++ {
					want := 0.0
					for p := 0; p < c.k; p++ {
						want += float64(a[i*c.k+p]) * float64(b[p*c.n+j])
					}
					want *= float64(c.scale)
					var got float64
					if c.half {
						got = float64(half.Float16ToFloat32(binary.LittleEndian.Uint16(bd.Bytes()[2*(i*c.n+j):])))
					} else {
						got = float64(math.Float32frombits(binary.LittleEndian.Uint32(bd.Bytes()[4*(i*c.n+j):])))
					}
					if got != want {
						t.Errorf("%s %s %dx%dx%d: D[%d,%d] = %v, want %v", sc, c.kernel, c.m, c.n, c.k, i, j, got, want)
						bad++
					}
				}
			}
		}
	}
}

// pyRem is Python's remainder (the sign of the divisor), which MLX's
// Remainder computes.
func pyRem(x, y float64) float64 {
	r := math.Mod(x, y)
	if r != 0 && (r < 0) != (y < 0) {
		r += y
	}
	return r
}

func TestCorpusMLXOps(t *testing.T) {
	xs := []float32{7, -7, 7, -7, 5.5, -5.5, 9, 0}
	ys := []float32{3, 3, -3, -3, 2, 2, 4, 5}
	const n = 8
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "mlx_ops.metal", sc)
		for _, c := range []struct {
			kernel string
			elem   string
			want   func(x, y float64) float64
		}{
			{"vvremint32", "i32", pyRem},
			{"vvremuint32", "u32", math.Mod},
			{"vvremfloat32", "f32", pyRem},
			{"vvremfloat16", "f16", pyRem},
			{"vvmulint32", "i32", func(x, y float64) float64 { return x * y }},
			{"vvmulfloat16", "f16", func(x, y float64) float64 { return x * y }},
		} {
			a, b := xs, ys
			if c.elem == "u32" {
				a, b = []float32{7, 8, 9, 10, 11, 12, 13, 14}, []float32{3, 3, 4, 4, 5, 5, 6, 6}
			}
			if c.elem == "i32" || c.elem == "u32" {
				a, b = cpIntVals(a), cpIntVals(b)
			}
			ba, bb, bc := cpTyped(t, d, c.elem, a), cpTyped(t, d, c.elem, b), cpTyped(t, d, c.elem, make([]float32, n))
			cpDispatch(t, d, c.kernel, nil, Size3{X: 2, Y: 1, Z: 1}, Size3{X: 4, Y: 1, Z: 1}, Arg{Index: 0, Buffer: ba}, Arg{Index: 1, Buffer: bb}, Arg{Index: 2, Buffer: bc})
			got := cpReadTyped(bc, c.elem, n)
			for i := range n {
				if w := c.want(float64(a[i]), float64(b[i])); got[i] != w {
					t.Errorf("%s %s(%v, %v) = %v, want %v", sc, c.kernel, a[i], b[i], got[i], w)
				}
			}
		}

		// Strided 2-D access through array parameters: a is read
		// transposed (strides {1, 4}), b broadcast along rows ({0, 1}).
		const rows, cols = 3, 4
		a := cpInts(rows*cols, 3, -9, 9)
		b := cpInts(cols, 4, -9, 9)
		ba, bb, bc := f32Buffer(t, d, a), f32Buffer(t, d, b), f32Buffer(t, d, make([]float32, rows*cols))
		u64 := func(vs ...uint64) []byte {
			out := make([]byte, 8*len(vs))
			for i, v := range vs {
				binary.LittleEndian.PutUint64(out[8*i:], v)
			}
			return out
		}
		// elem_to_loc_2 reads strides[1] for x (column) and strides[0] for y (row).
		cpDispatch(t, d, "gmulfloat32_2", nil, Size3{X: 1, Y: rows, Z: 1}, Size3{X: cols, Y: 1, Z: 1},
			Arg{Index: 0, Buffer: ba}, Arg{Index: 1, Buffer: bb}, Arg{Index: 2, Buffer: bc},
			Arg{Index: 3, Bytes: u64(cols, 1)}, Arg{Index: 4, Bytes: u64(0, 1)})
		got := readF32(bc, rows*cols)
		for y := range rows {
			for x := range cols {
				if w := a[y*cols+x] * b[x]; got[y*cols+x] != w {
					t.Errorf("%s gmulfloat32_2 [%d,%d] = %v, want %v", sc, y, x, got[y*cols+x], w)
				}
			}
		}

		// DivMod returns metal::array<T, 2>.
		for _, c := range []struct {
			kernel, elem string
			a, b         []float32
			q, r         []float64
		}{
			{"vvdivmodint32", "i32", []float32{7, -7, 9, -9}, []float32{2, 2, -4, -4}, []float64{3, -3, -2, 2}, []float64{1, 1, -3, -1}},
			{"vvdivmodfloat32", "f32", []float32{7, -7, 9.5, -9.5}, []float32{2, 2, -4, -4}, []float64{3, -3, -2, 2}, []float64{1, 1, -2.5, -1.5}},
		} {
			ba, bb := cpTyped(t, d, c.elem, c.a), cpTyped(t, d, c.elem, c.b)
			bq, br := cpTyped(t, d, c.elem, make([]float32, 4)), cpTyped(t, d, c.elem, make([]float32, 4))
			cpDispatch(t, d, c.kernel, nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 4, Y: 1, Z: 1}, Arg{Index: 0, Buffer: ba}, Arg{Index: 1, Buffer: bb}, Arg{Index: 2, Buffer: bq}, Arg{Index: 3, Buffer: br})
			q, r := cpReadTyped(bq, c.elem, 4), cpReadTyped(br, c.elem, 4)
			for i := range 4 {
				if q[i] != c.q[i] || r[i] != c.r[i] {
					t.Errorf("%s %s(%v, %v) = (%v, %v), want (%v, %v)", sc, c.kernel, c.a[i], c.b[i], q[i], r[i], c.q[i], c.r[i])
				}
			}
		}

		// complex_fma: out = a*a + b, re = real(out).
		ca := []float32{1, 2, 3, -1, 0.5, 0.25}
		cb := []float32{-1, 1, 2, 0, 4, -4}
		bca, bcb, bco, bre := f32Buffer(t, d, ca), f32Buffer(t, d, cb), f32Buffer(t, d, make([]float32, 6)), f32Buffer(t, d, make([]float32, 3))
		cpDispatch(t, d, "complex_fma", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 3, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bca}, Arg{Index: 1, Buffer: bcb}, Arg{Index: 2, Buffer: bco}, Arg{Index: 3, Buffer: bre})
		co, re := readF32(bco, 6), readF32(bre, 3)
		for i := range 3 {
			ar, ai := float64(ca[2*i]), float64(ca[2*i+1])
			wr, wi := ar*ar-ai*ai+float64(cb[2*i]), 2*ar*ai+float64(cb[2*i+1])
			if float64(co[2*i]) != wr || float64(co[2*i+1]) != wi || float64(re[i]) != wr {
				t.Errorf("%s complex_fma[%d] = %v%+vi (re %v), want %v%+vi", sc, i, co[2*i], co[2*i+1], re[i], wr, wi)
			}
		}
	}
}

func cpIntVals(vs []float32) []float32 {
	out := make([]float32, len(vs))
	for i, v := range vs {
		out[i] = float32(math.Trunc(float64(v)))
	}
	return out
}

// cpTyped makes a buffer of vs converted to elem (i32, u32, f32 or f16).
func cpTyped(t testing.TB, d Device, elem string, vs []float32) Buffer {
	t.Helper()
	switch elem {
	case "f32":
		return f32Buffer(t, d, vs)
	case "f16":
		return f16Buffer(t, d, vs)
	}
	b, err := d.NewBuffer(4 * len(vs))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b.Bytes()[4*i:], uint32(int32(v)))
	}
	return b
}

func cpReadTyped(b Buffer, elem string, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		switch elem {
		case "f32":
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b.Bytes()[4*i:])))
		case "f16":
			out[i] = float64(half.Float16ToFloat32(binary.LittleEndian.Uint16(b.Bytes()[2*i:])))
		case "i32":
			out[i] = float64(int32(binary.LittleEndian.Uint32(b.Bytes()[4*i:])))
		case "u32":
			out[i] = float64(binary.LittleEndian.Uint32(b.Bytes()[4*i:]))
		}
	}
	return out
}

func TestCorpusGGMLStyle(t *testing.T) {
	u64 := func(vs ...uint64) []byte {
		out := make([]byte, 8*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint64(out[8*i:], v)
		}
		return out
	}
	newBuf := func(t *testing.T, d Device, n int) Buffer {
		b, err := d.NewBuffer(n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "ggml_style.metal", sc)

		// get_rows from q8_0 blocks: 3 source rows of 64 values (2 blocks),
		// gathered by the indices {2, 0, 2, 1}, scaled by the constant.
		const srcRows, rowLen, blockBytes = 3, 64, 34
		q := newBuf(t, d, srcRows*2*blockBytes)
		deq := make([]float64, srcRows*rowLen)
		for r := 0; r < srcRows; r++ {
			for b := 0; b < 2; b++ {
				off := (r*2 + b) * blockBytes
				scale := float32(0.5 * float64(1+r+b)) // exact in half
				binary.LittleEndian.PutUint16(q.Bytes()[off:], half.Float32ToFloat16(scale))
				for i := 0; i < 32; i++ {
					v := int8((r*37+b*11+i*5)%51 - 25)
					q.Bytes()[off+2+i] = byte(v)
					deq[r*rowLen+b*32+i] = float64(v) * float64(scale)
				}
			}
		}
		idx := []uint32{2, 0, 2, 1}
		bidx := cpU32Buffer(t, d, idx)
		out := f32Buffer(t, d, make([]float32, len(idx)*rowLen))
		args := append(cpU32Bytes(rowLen/16, 0), u64(2*blockBytes, 4, rowLen*4)...)
		cpDispatch(t, d, "kernel_get_rows_q8_0", []Constant{{Index: 600, Value: float32(-2)}}, Size3{X: len(idx), Y: 1, Z: 1}, Size3{X: 3, Y: 1, Z: 1},
			Arg{Index: 0, Bytes: args}, Arg{Index: 1, Buffer: q}, Arg{Index: 2, Buffer: bidx}, Arg{Index: 3, Buffer: out})
		got := readF32(out, len(idx)*rowLen)
		for i, r := range idx {
			for c := 0; c < rowLen; c++ {
				if w := -2 * deq[int(r)*rowLen+c]; float64(got[i*rowLen+c]) != w {
					t.Fatalf("%s kernel_get_rows_q8_0 [%d,%d] = %v, want %v", sc, i, c, got[i*rowLen+c], w)
				}
			}
		}
		// The same through half4x4 "blocks".
		hv := cpInts(srcRows*rowLen, 5, -30, 30)
		hb := f16Buffer(t, d, hv)
		args = append(cpU32Bytes(rowLen/16, 0), u64(rowLen*2, 4, rowLen*4)...)
		cpDispatch(t, d, "kernel_get_rows_f16", []Constant{{Index: 600, Value: float32(0.5)}}, Size3{X: len(idx), Y: 1, Z: 1}, Size3{X: 2, Y: 1, Z: 1},
			Arg{Index: 0, Bytes: args}, Arg{Index: 1, Buffer: hb}, Arg{Index: 2, Buffer: bidx}, Arg{Index: 3, Buffer: out})
		got = readF32(out, len(idx)*rowLen)
		for i, r := range idx {
			for c := 0; c < rowLen; c++ {
				if w := 0.5 * hv[int(r)*rowLen+c]; got[i*rowLen+c] != w {
					t.Fatalf("%s kernel_get_rows_f16 [%d,%d] = %v, want %v", sc, i, c, got[i*rowLen+c], w)
				}
			}
		}

		// mul_mv: 6 rows of 256, two rows per threadgroup, 2 simdgroups.
		const mvRows, mvCols = 6, 256
		m := cpInts(mvRows*mvCols, 6, -3, 3)
		v := cpInts(mvCols, 7, -3, 3)
		for _, c := range []struct {
			kernel string
			half   bool
		}{{"kernel_mul_mv_f16_f32_4", true}, {"kernel_mul_mv_f32_f32_4", false}} {
			var bm Buffer
			rowBytes := mvCols * 4
			if c.half {
				bm, rowBytes = f16Buffer(t, d, m), mvCols*2
			} else {
				bm = f32Buffer(t, d, m)
			}
			bv, bo := f32Buffer(t, d, v), f32Buffer(t, d, make([]float32, mvRows))
			kargs := append(cpU32Bytes(mvCols, mvRows), u64(uint64(rowBytes))...)
			kargs = append(kargs, cpU32Bytes(mvCols, 0)...)
			cpDispatch(t, d, c.kernel, nil, Size3{X: mvRows / 2, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1},
				Arg{Index: 0, Bytes: kargs}, Arg{Index: 1, Buffer: bm}, Arg{Index: 2, Buffer: bv}, Arg{Index: 3, Buffer: bo}, Arg{Index: 0, ThreadgroupBytes: 64})
			got := readF32(bo, mvRows)
			for r := 0; r < mvRows; r++ {
				want := 0.0
				for k := 0; k < mvCols; k++ {
					want += float64(m[r*mvCols+k]) * float64(v[k])
				}
				if float64(got[r]) != want {
					t.Errorf("%s %s row %d = %v, want %v", sc, c.kernel, r, got[r], want)
				}
			}
		}

		// mul_mm 8x8 with K = 24.
		const kk = 24
		a := cpInts(8*kk, 8, -4, 4)
		b := cpInts(kk*8, 9, -4, 4)
		ba, bb, bc := f16Buffer(t, d, a), f32Buffer(t, d, b), f32Buffer(t, d, make([]float32, 64))
		cpDispatch(t, d, "kernel_mul_mm_8x8", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 32, Y: 1, Z: 1},
			Arg{Index: 0, Buffer: ba}, Arg{Index: 1, Buffer: bb}, Arg{Index: 2, Buffer: bc}, Arg{Index: 3, Bytes: cpU32Bytes(kk)}, Arg{Index: 0, ThreadgroupBytes: 8 * kk * 6})
		gotC := readF32(bc, 64)
		for i := 0; i < 8; i++ {
			for j := 0; j < 8; j++ {
				want := 0.0
				for p := 0; p < kk; p++ {
					want += float64(a[i*kk+p]) * float64(b[p*8+j])
				}
				if float64(gotC[i*8+j]) != want {
					t.Errorf("%s kernel_mul_mm_8x8 [%d,%d] = %v, want %v", sc, i, j, gotC[i*8+j], want)
				}
			}
		}

		// argsort: 3 rows of 13 distinct values, padded to 16 threads.
		const sortRows, sortCols, sortPad = 3, 13, 16
		xs := make([]float32, sortRows*sortCols)
		for i := range xs {
			xs[i] = float32((i*7919)%101) - 50
		}
		bx := f32Buffer(t, d, xs)
		for _, order := range []string{"asc", "desc"} {
			bdst := cpU32Buffer(t, d, make([]uint32, sortRows*sortCols))
			cpDispatch(t, d, "kernel_argsort_f32_i32_"+order, nil, Size3{X: 1, Y: sortRows, Z: 1}, Size3{X: sortPad, Y: 1, Z: 1},
				Arg{Index: 0, Buffer: bx}, Arg{Index: 1, Buffer: bdst}, Arg{Index: 2, Bytes: u64(sortCols)}, Arg{Index: 3, Bytes: u64(sortPad)}, Arg{Index: 0, ThreadgroupBytes: 4 * sortPad})
			perm := cpReadU32(bdst, sortRows*sortCols)
			for r := 0; r < sortRows; r++ {
				row := xs[r*sortCols : (r+1)*sortCols]
				seen := map[uint32]bool{}
				for c := 0; c < sortCols; c++ {
					p := perm[r*sortCols+c]
					if p >= sortCols || seen[p] {
						t.Fatalf("%s argsort %s row %d: %v is not a permutation", sc, order, r, perm[r*sortCols:(r+1)*sortCols])
					}
					seen[p] = true
					if c > 0 {
						prev, cur := row[perm[r*sortCols+c-1]], row[p]
						if order == "asc" && prev > cur || order == "desc" && prev < cur {
							t.Fatalf("%s argsort %s row %d: not sorted at %d: %v then %v", sc, order, r, c, prev, cur)
						}
					}
				}
			}
		}
	}
}

func TestCorpusMLXScan(t *testing.T) {
	const rows, n = 2, 300 // 300 is not a multiple of N_READS * threads
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "mlx_scan.metal", sc)
		for _, c := range []struct {
			kernel  string
			elem    string
			in      []float32
			threads int
			want    func(row []float32) []float64
		}{
			{"contig_scan_true_CumSum_int32", "i32", cpInts(rows*n, 21, -50, 50), 64, func(r []float32) []float64 {
				out, s := make([]float64, len(r)), 0.0
				for i, v := range r {
					s += float64(v)
					out[i] = s
				}
				return out
			}},
			{"contig_scan_false_CumSum_int32", "i32", cpInts(rows*n, 22, -50, 50), 96, func(r []float32) []float64 {
				out, s := make([]float64, len(r)), 0.0
				for i, v := range r {
					out[i] = s
					s += float64(v)
				}
				return out
			}},
			// Products of ±1, ±2 and 0 stay exact; the zeros reset nothing.
			{"contig_scan_true_CumProd_float32", "f32", cpProdVals(rows * n), 64, func(r []float32) []float64 {
				out, s := make([]float64, len(r)), 1.0
				for i, v := range r {
					s *= float64(v)
					out[i] = s
				}
				return out
			}},
			{"contig_scan_false_CumMax_float32", "f32", pseudo(rows*n, 23, -100, 100), 32, func(r []float32) []float64 {
				out, m := make([]float64, len(r)), math.Inf(-1)
				for i, v := range r {
					out[i] = m
					m = math.Max(m, float64(v))
				}
				return out
			}},
		} {
			bin, bout := cpTyped(t, d, c.elem, c.in), cpTyped(t, d, c.elem, make([]float32, rows*n))
			u64 := make([]byte, 8)
			binary.LittleEndian.PutUint64(u64, n)
			cpDispatch(t, d, c.kernel, nil, Size3{X: rows, Y: 1, Z: 1}, Size3{X: c.threads, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bin}, Arg{Index: 1, Buffer: bout}, Arg{Index: 2, Bytes: u64})
			got := cpReadTyped(bout, c.elem, rows*n)
			for r := 0; r < rows; r++ {
				want := c.want(c.in[r*n : (r+1)*n])
				for i, w := range want {
					if g := got[r*n+i]; g != w {
						t.Errorf("%s %s row %d [%d] = %v, want %v", sc, c.kernel, r, i, g, w)
						break
					}
				}
			}
		}

		// The bool CumProd: the running AND of each row.
		in := make([]byte, rows*n)
		for i := range in {
			if i%n != 170+40*(i/n) {
				in[i] = 1
			}
		}
		bin, err := d.NewBuffer(len(in))
		if err != nil {
			t.Fatal(err)
		}
		copy(bin.Bytes(), in)
		bout, err := d.NewBuffer(len(in))
		if err != nil {
			t.Fatal(err)
		}
		u64 := make([]byte, 8)
		binary.LittleEndian.PutUint64(u64, n)
		cpDispatch(t, d, "contig_scan_true_CumProd_bool_", nil, Size3{X: rows, Y: 1, Z: 1}, Size3{X: 64, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bin}, Arg{Index: 1, Buffer: bout}, Arg{Index: 2, Bytes: u64})
		for r := 0; r < rows; r++ {
			acc := byte(1)
			for i := 0; i < n; i++ {
				acc &= in[r*n+i]
				if g := bout.Bytes()[r*n+i]; g != acc {
					t.Errorf("%s bool cumprod row %d [%d] = %d, want %d", sc, r, i, g, acc)
					break
				}
			}
		}
	}
}

func cpProdVals(n int) []float32 {
	vals := []float32{1, -1, 1, 1, 2, 1, -1, 1, 1, 0.5, 1, 1}
	out := make([]float32, n)
	for i := range out {
		out[i] = vals[(i*7)%len(vals)]
	}
	out[n/2+17] = 0
	return out
}

func TestCorpusConditional(t *testing.T) {
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "conditional.metal", sc)
		for _, c := range []struct {
			kernel string
			want   []uint32
		}{
			// The emulator is Metal 3.2: the first branch is compiled.
			{"which_branch", []uint32{310, 310, 310}},
			{"guarded_header_kernel", []uint32{0, 7, 14}},
		} {
			out := cpU32Buffer(t, d, make([]uint32, 3))
			cpDispatch(t, d, c.kernel, nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 3, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out})
			if got := cpReadU32(out, 3); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s %s = %v, want %v", sc, c.kernel, got, c.want)
			}
		}
		x, y := f32Buffer(t, d, []float32{1, -2.5}), f32Buffer(t, d, make([]float32, 2))
		cpDispatch(t, d, "scale_f32", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 2, Y: 1, Z: 1}, Arg{Index: 0, Buffer: x}, Arg{Index: 1, Buffer: y})
		if got := readF32(y, 2); got[0] != 3 || got[1] != -7.5 {
			t.Errorf("%s scale_f32 = %v, want [3 -7.5]", sc, got)
		}
		// Instantiated under #if defined(EMU_TEST_HAS_BF16), which is false.
		if _, err := d.Pipeline("scale_bf16_guarded"); !errors.Is(err, ErrPipeline) || !strings.Contains(err.Error(), "conditional.metal:57") {
			t.Errorf("%s Pipeline(scale_bf16_guarded) = %v, want ErrPipeline naming conditional.metal:57", sc, err)
		}
	}

	// With the host's macros the other branches are compiled.
	const path = "testdata/corpus/conditional.metal"
	d := openEmu(t, emu.Options{Sources: testSource(t, path), Defines: []string{"EMU_TEST_HAS_BF16", "EMU_TEST_OLD=1"}, Workers: 2}, path+"|defines")
	x, err := d.NewBuffer(4)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(x.Bytes(), uint16(math.Float32bits(1.5)>>16))
	binary.LittleEndian.PutUint16(x.Bytes()[2:], uint16(math.Float32bits(-0.375)>>16))
	y, err := d.NewBuffer(4)
	if err != nil {
		t.Fatal(err)
	}
	cpDispatch(t, d, "scale_bf16_guarded", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 2, Y: 1, Z: 1}, Arg{Index: 0, Buffer: x}, Arg{Index: 1, Buffer: y})
	for i, w := range []float32{4.5, -1.125} {
		if g := math.Float32frombits(uint32(binary.LittleEndian.Uint16(y.Bytes()[2*i:])) << 16); g != w {
			t.Errorf("scale_bf16_guarded[%d] = %v, want %v", i, g, w)
		}
	}
	if _, err := emu.Open(emu.Options{Sources: testSource(t, path), Defines: []string{"1BAD"}}); !errors.Is(err, ErrShaderCompile) {
		t.Errorf("emu.Open with define 1BAD: err = %v, want ErrShaderCompile", err)
	}
}

func TestCorpusMLXAtomic(t *testing.T) {
	const groups, threads = 8, 64
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "mlx_atomic.metal", sc)

		// int32 sums into 3 slots.
		in := cpInts(groups*threads, 31, -1000, 1000)
		bin := cpTyped(t, d, "i32", in)
		out := cpU32Buffer(t, d, make([]uint32, 3))
		cpDispatch(t, d, "all_reduce_sum_int32", nil, Size3{X: groups, Y: 1, Z: 1}, Size3{X: threads, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bin}, Arg{Index: 1, Buffer: out}, Arg{Index: 2, Bytes: cpU32Bytes(3)})
		want := make([]int32, 3)
		for i, v := range in {
			want[(i/threads)%3] += int32(v)
		}
		for s, w := range want {
			if g := int32(cpReadU32(out, 3)[s]); g != w {
				t.Errorf("%s all_reduce_sum_int32 slot %d = %d, want %d", sc, s, g, w)
			}
		}

		// float32 and half maxima of negative values, from -inf.
		neg := pseudo(groups*threads, 32, -500, -1)
		for _, c := range []struct {
			kernel, elem string
		}{{"all_reduce_max_float32", "f32"}, {"all_reduce_max_float16", "f16"}} {
			bin := cpTyped(t, d, c.elem, neg)
			inf := float32(math.Inf(-1))
			out := cpTyped(t, d, c.elem, []float32{inf, inf, inf, inf})
			cpDispatch(t, d, c.kernel, nil, Size3{X: groups, Y: 1, Z: 1}, Size3{X: threads, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bin}, Arg{Index: 1, Buffer: out}, Arg{Index: 2, Bytes: cpU32Bytes(2)})
			vals := cpReadTyped(bin, c.elem, len(neg)) // as rounded into the buffer
			want := []float64{math.Inf(-1), math.Inf(-1)}
			for i, v := range vals {
				want[(i/threads)%2] = math.Max(want[(i/threads)%2], v)
			}
			got := cpReadTyped(out, c.elem, 4)
			// The half version packs two slots into one uint; the other two
			// values must stay -inf.
			if got[0] != want[0] || got[1] != want[1] || !math.IsInf(got[2], -1) || !math.IsInf(got[3], -1) {
				t.Errorf("%s %s = %v, want %v then -Inf -Inf", sc, c.kernel, got, want)
			}
		}

		// uint8 sums, four to a uint, wrapping like the GPU.
		b8, err := d.NewBuffer(groups * threads)
		if err != nil {
			t.Fatal(err)
		}
		want8 := make([]byte, 4)
		for i := range b8.Bytes() {
			v := byte(i*13 + 7)
			b8.Bytes()[i] = v
			want8[(i/threads)%4] += v
		}
		o8 := cpU32Buffer(t, d, []uint32{0})
		cpDispatch(t, d, "all_reduce_sum_uint8", nil, Size3{X: groups, Y: 1, Z: 1}, Size3{X: threads, Y: 1, Z: 1}, Arg{Index: 0, Buffer: b8}, Arg{Index: 1, Buffer: o8}, Arg{Index: 2, Bytes: cpU32Bytes(4)})
		if got := o8.Bytes()[:4]; string(got) != string(want8) {
			t.Errorf("%s all_reduce_sum_uint8 = %v, want %v", sc, got, want8)
		}

		// int64 through simd_shuffle_down.
		b64, err := d.NewBuffer(8 * threads)
		if err != nil {
			t.Fatal(err)
		}
		var sums, maxs [2]int64
		maxs[0], maxs[1] = math.MinInt64, math.MinInt64
		for i := 0; i < threads; i++ {
			v := int64(i*i*977)<<20 - int64(i)*(1<<40)
			binary.LittleEndian.PutUint64(b64.Bytes()[8*i:], uint64(v))
			sums[i/32] += v
			maxs[i/32] = max(maxs[i/32], v)
		}
		for _, c := range []struct {
			kernel string
			want   [2]int64
		}{{"simd_reduce_sum_int64", sums}, {"simd_reduce_max_int64", maxs}} {
			o64, err := d.NewBuffer(16)
			if err != nil {
				t.Fatal(err)
			}
			cpDispatch(t, d, c.kernel, nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: threads, Y: 1, Z: 1}, Arg{Index: 0, Buffer: b64}, Arg{Index: 1, Buffer: o64})
			for s := 0; s < 2; s++ {
				if g := int64(binary.LittleEndian.Uint64(o64.Bytes()[8*s:])); g != c.want[s] {
					t.Errorf("%s %s simdgroup %d = %d, want %d", sc, c.kernel, s, g, c.want[s])
				}
			}
		}
	}
}

// threefry2x32 is the hash of mlx_random.metal, written out in Go.
func threefry2x32(key [2]uint32, count [2]uint32) [2]uint32 {
	rot := [2][4]uint32{{13, 15, 26, 6}, {17, 29, 16, 24}}
	ks := [3]uint32{key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDA}
	x, y := count[0]+ks[0], count[1]+ks[1]
	for i := 0; i < 5; i++ {
		for _, r := range rot[i%2] {
			x += y
			y = y<<r | y>>(32-r)
			y ^= x
		}
		x += ks[(i+1)%3]
		y += ks[(i+2)%3] + uint32(i) + 1
	}
	return [2]uint32{x, y}
}

func TestCorpusMLXRandom(t *testing.T) {
	keys := []uint32{1, 2, 0xdeadbeef, 0x12345678, 0, 0xffffffff}
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "mlx_random.metal", sc)
		for _, c := range []struct {
			rows        int
			odd         bool
			bytesPerKey int
			nKeys       int
		}{{3, true, 20, 3}, {2, false, 16, 3}} {
			bk := cpU32Buffer(t, d, keys)
			out, err := d.NewBuffer(c.nKeys * c.bytesPerKey)
			if err != nil {
				t.Fatal(err)
			}
			oddByte := []byte{0}
			if c.odd {
				oddByte[0] = 1
			}
			bpk := make([]byte, 8)
			binary.LittleEndian.PutUint64(bpk, uint64(c.bytesPerKey))
			cpDispatch(t, d, "random_bits", nil, Size3{X: 1, Y: c.rows, Z: 1}, Size3{X: c.nKeys, Y: 1, Z: 1},
				Arg{Index: 0, Buffer: bk}, Arg{Index: 1, Buffer: out}, Arg{Index: 2, Bytes: oddByte}, Arg{Index: 3, Bytes: bpk})
			want := make([]byte, c.nKeys*c.bytesPerKey)
			half := c.rows
			if c.odd {
				half--
			}
			for k := 0; k < c.nKeys; k++ {
				for y := 0; y < c.rows; y++ {
					drop := c.odd && y == half
					hi := uint32(y + c.rows)
					if drop {
						hi = 0
					}
					v := threefry2x32([2]uint32{keys[2*k], keys[2*k+1]}, [2]uint32{uint32(y), hi})
					binary.LittleEndian.PutUint32(want[k*c.bytesPerKey+4*y:], v[0])
					if !drop {
						binary.LittleEndian.PutUint32(want[k*c.bytesPerKey+4*(y+c.rows):], v[1])
					}
				}
			}
			if got := out.Bytes()[:len(want)]; string(got) != string(want) {
				t.Errorf("%s random_bits rows=%d odd=%v:\n got %v\nwant %v", sc, c.rows, c.odd, got, want)
			}
		}
	}
}

func TestCorpusPacked(t *testing.T) {
	const n = 5
	x := cpInts(4*n, 41, -8, 8)
	scale, bias := float32(1.5), []float32{0.5, -1, 2, 0.25}
	hh := []float32{0.5, 0.25}
	dir := []float32{1, -2, 0.5}
	dims := []int32{4, 5, 6}
	tri := cpInts(3*n, 42, -5, 5)
	params := cpF32Bytes(append([]float32{scale}, bias...)...)
	for _, h := range hh {
		params = binary.LittleEndian.AppendUint16(params, half.Float32ToFloat16(h))
	}
	params = append(params, cpF32Bytes(dir...)...)
	params = append(params, cpU32Bytes(n)...)
	if len(params) != 40 {
		t.Fatalf("params are %d bytes, want 40", len(params))
	}
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "packed.metal", sc)
		bx, bo, bt := f32Buffer(t, d, x), f32Buffer(t, d, make([]float32, n)), f32Buffer(t, d, tri)
		cpDispatch(t, d, "packed_params", nil, Size3{X: 2, Y: 1, Z: 1}, Size3{X: 4, Y: 1, Z: 1},
			Arg{Index: 0, Buffer: bx}, Arg{Index: 1, Buffer: bo}, Arg{Index: 2, Bytes: params},
			Arg{Index: 3, Bytes: cpU32Bytes(uint32(dims[0]), uint32(dims[1]), uint32(dims[2]))}, Arg{Index: 4, Buffer: bt})
		got, gotTri := readF32(bo, n), readF32(bt, 3*n)
		w := []float64{float64(dir[0]), float64(dir[1]), float64(dir[2]), float64(hh[0] + hh[1])}
		for i := 0; i < n; i++ {
			want := float64(dims[0]*100 + dims[1]*10 + dims[2])
			for k := 0; k < 4; k++ {
				want += (float64(x[4*i+k])*float64(scale) + float64(bias[k])) * w[k]
			}
			if math.Abs(float64(got[i])-want) > 1e-4 {
				t.Errorf("%s packed_params out[%d] = %v, want %v", sc, i, got[i], want)
			}
			for k := 0; k < 3; k++ {
				if wt := tri[3*i+k]*2 + dir[k]; gotTri[3*i+k] != wt {
					t.Errorf("%s packed_params tri[%d][%d] = %v, want %v", sc, i, k, gotTri[3*i+k], wt)
				}
			}
		}
	}
}

func TestCorpusBoolVectors(t *testing.T) {
	const n = 64
	x := pseudo(n, 51, -1, 1)
	a := pseudo(4*n, 52, -2, 2)
	b := pseudo(4*n, 53, -2, 2)
	for i := 0; i < 4*n; i += 9 {
		b[i] = a[i] // some equal lanes
	}
	a[5] = float32(math.NaN())
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "boolvec.metal", sc)
		bx := f32Buffer(t, d, x)
		mask, err := d.NewBuffer(n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range mask.Bytes() {
			mask.Bytes()[i] = 1
		}
		cpDispatch(t, d, "bool_mask_and", nil, Size3{X: n / 16, Y: 1, Z: 1}, Size3{X: 16, Y: 1, Z: 1}, Arg{Index: 0, Buffer: bx}, Arg{Index: 1, Buffer: mask})
		for i, v := range x {
			if want := byte(b2u(v >= 0)); mask.Bytes()[i] != want {
				t.Errorf("%s bool_mask_and byte %d = %d, want %d (x = %v)", sc, i, mask.Bytes()[i], want, v)
			}
		}

		ba, bb := f32Buffer(t, d, a), f32Buffer(t, d, b)
		lt, err := d.NewBuffer(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		picked, flags := f32Buffer(t, d, make([]float32, 4*n)), cpU32Buffer(t, d, make([]uint32, n))
		cpDispatch(t, d, "bool_relations", nil, Size3{X: n / 32, Y: 1, Z: 1}, Size3{X: 32, Y: 1, Z: 1},
			Arg{Index: 0, Buffer: ba}, Arg{Index: 1, Buffer: bb}, Arg{Index: 2, Buffer: lt}, Arg{Index: 3, Buffer: picked}, Arg{Index: 4, Buffer: flags})
		gotPicked, gotFlags := readF32(picked, 4*n), cpReadU32(flags, n)
		for i := 0; i < n; i++ {
			var m [4]bool
			allM, anyM, anyNotM, anyEq := true, false, false, false
			for k := 0; k < 4; k++ {
				av, bv := a[4*i+k], b[4*i+k]
				m[k] = av < bv
				allM, anyM, anyNotM = allM && m[k], anyM || m[k], anyNotM || !m[k]
				if k < 3 && av == bv {
					anyEq = true
				}
				if want := byte(b2u(m[k] || av != av)); lt.Bytes()[4*i+k] != want {
					t.Errorf("%s bool_relations lt[%d][%d] = %d, want %d", sc, i, k, lt.Bytes()[4*i+k], want)
				}
				want := av
				if m[k] {
					want = bv
				}
				if g := gotPicked[4*i+k]; g != want && !(g != g && want != want) {
					t.Errorf("%s bool_relations picked[%d][%d] = %v, want %v", sc, i, k, g, want)
				}
			}
			want := uint32(b2u(allM) | b2u(anyM)<<1 | b2u(anyNotM)<<2 | b2u(m[0] && m[1])<<3 | b2u(anyEq)<<4 | b2u(m[3])<<5 | 1<<6)
			if gotFlags[i] != want {
				t.Errorf("%s bool_relations flags[%d] = %07b, want %07b", sc, i, gotFlags[i], want)
			}
		}
	}
}

func TestCorpusMLXBF16Math(t *testing.T) {
	x := make([]float32, 32)
	for i := range x {
		x[i] = cpBF16(float32(i)*0.53 - 8.1)
	}
	bfBytes := make([]byte, 64)
	for i, v := range x {
		binary.LittleEndian.PutUint16(bfBytes[2*i:], uint16(math.Float32bits(v)>>16))
	}
	bf := func(f float64) float64 { return float64(cpBF16(float32(f))) }
	var sum, maxv float64 = 0, math.Inf(-1)
	for _, v := range x {
		sum += float64(v)
		maxv = math.Max(maxv, float64(v))
	}
	for _, sc := range emu.Schedules {
		d := openCorpus(t, "mlx_bf16math.metal", sc)
		in, err := d.NewBuffer(64)
		if err != nil {
			t.Fatal(err)
		}
		copy(in.Bytes(), bfBytes)
		out := f32Buffer(t, d, make([]float32, 32*12))
		cpDispatch(t, d, "bf16_math", nil, Size3{X: 1, Y: 1, Z: 1}, Size3{X: 32, Y: 1, Z: 1}, Arg{Index: 0, Buffer: in}, Arg{Index: 1, Buffer: out})
		got := readF32(out, 32*12)
		for i := 0; i < 32; i++ {
			a, b := float64(x[i]), float64(x[(i+1)%32])
			frac, exp := math.Frexp(a)
			next := float64(math.Nextafter32(float32(a), float32(b)))
			down, fill := float64(x[i]), -1.0
			if i < 31 {
				down = float64(x[i+1])
			}
			if i >= 2 {
				fill = float64(x[i-2])
			}
			want := []float64{
				math.Abs(a), bf(math.Exp(a)), bf(math.Atan2(a, b)), bf(a*b + a), bf(math.Max(math.Max(a, b), 0.5)),
				bf(math.Max(math.Min(a, b), math.Min(math.Max(a, b), 0.5))), frac + float64(exp)*100, a * 8, bf(next),
				down, bf(sum), bf(fill + maxv),
			}
			for k, w := range want {
				g := float64(got[12*i+k])
				// exp and atan2 may differ from Go's by one float ulp before
				// rounding to bfloat: allow one bfloat step there.
				tol := 0.0
				if k == 1 || k == 2 {
					tol = math.Abs(w) / 128
				}
				if math.Abs(g-w) > tol {
					t.Errorf("%s bf16_math lane %d result %d = %v, want %v (a=%v b=%v)", sc, i, k, g, w, a, b)
				}
			}
		}
	}
}
