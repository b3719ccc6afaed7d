//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// TestAttnTileArgsLayout holds attnTileArgs to the offsets the assembly
// reads it at (the ARG_ defines of attn_avx512_amd64.s).
func TestAttnTileArgsLayout(t *testing.T) {
	var a attnTileArgs
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"a", unsafe.Offsetof(a.a), 0},
		{"b", unsafe.Offsetof(a.b), 48},
		{"ldb", unsafe.Offsetof(a.ldb), 56},
		{"k", unsafe.Offsetof(a.k), 64},
		{"c", unsafe.Offsetof(a.c), 72},
		{"ldc", unsafe.Offsetof(a.ldc), 80},
		{"rows", unsafe.Offsetof(a.rows), 88},
		{"scale", unsafe.Offsetof(a.scale), 96},
		{"mask", unsafe.Offsetof(a.mask), 120},
	} {
		if f.got != f.want {
			t.Errorf("attnTileArgs.%s at %d, the assembly reads %d", f.name, f.got, f.want)
		}
	}
}

func needAttnAVX512(t *testing.T) {
	if !hasAttnAVX512 {
		t.Skip("no AVX-512F on this CPU")
	}
}

// TestAttnTile holds the tile kernel to a float64 product for every row
// count and the column counts at its vector edges: C = scale·A·B within a
// k-term float32 sum's error, and nothing stored outside the rows and
// columns asked for.
func TestAttnTile(t *testing.T) {
	needAttnAVX512(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range []int{0, 1, 2, 7, 64, 93, 300} {
		for rows := 1; rows <= attnTileRows; rows++ {
			for _, cols := range []int{1, 15, 16, 17, 31, 33, 48, 63, 64} {
				name := fmt.Sprintf("k%d/rows%d/cols%d", k, rows, cols)
				const lda, ldb, ldc = 310, 70, 67
				a := randomValues(rng, rows*lda)
				// B exactly k rows of ldb, ending at cols: a read past a
				// masked column would leave the slice's own values alone but
				// is caught by the guard below only if stored; the end of
				// the buffer makes an overread fault.
				b := randomValues(rng, max(k-1, 0)*ldb+cols)
				c := make([]float32, (attnTileRows+1)*ldc)
				const guard = 12345
				for i := range c {
					c[i] = guard
				}
				var args attnTileArgs
				for r := range args.a {
					args.a[r] = &a[min(r, rows-1)*lda]
					args.scale[r] = float32(r+1) * 0.5
				}
				if k > 0 {
					args.b = &b[0]
				} else {
					args.b = &c[0] // never read
				}
				args.ldb, args.k, args.c, args.ldc, args.rows = ldb, k, &c[0], ldc, rows
				args.setCols(cols)
				attnTileAVX512(&args)
				for r := range attnTileRows + 1 {
					for j := range ldc {
						got := c[r*ldc+j]
						if r >= rows || j >= cols {
							if got != guard {
								t.Fatalf("%s: c[%d][%d] = %v: stored outside the tile", name, r, j, got)
							}
							continue
						}
						var want, bound float64
						for kk := range k {
							prod := float64(a[r*lda+kk]) * float64(b[kk*ldb+j])
							want += prod
							bound += math.Abs(prod)
						}
						s := float64(args.scale[r])
						want *= s
						if d := math.Abs(float64(got) - want); d > float64(k+1)*0x1p-24*bound*s+1e-30 {
							t.Fatalf("%s: c[%d][%d] = %v, want %v", name, r, j, got, want)
						}
					}
				}
			}
		}
	}
}

// TestSoftmaxExpAVX512 holds the softmax kernel's exp to math.Exp over a
// dense sweep of [−104, 0] (every 61st float32 there: 18 million values,
// through the subnormal results below e^−87.3 to 0 below e^−103.3): each
// float32 result is math.Exp's rounded, or the float32 next to it at a
// rounding tie (the float64 polynomial is within ~1e-13 relative), and
// such ties are rare. The row's first value is 0, so the max is 0 and the
// subtraction exact.
func TestSoftmaxExpAVX512(t *testing.T) {
	needAttnAVX512(t)
	const step = 61
	lo, hi := uint32(1<<31), math.Float32bits(-104) // −0 … −104
	var row []float32
	xs := make([]float32, 0, 16)
	var differ, total int
	check := func() {
		row = append(row[:0], 0)
		row = append(row, xs...)
		sum := softmaxExpAVX512(&row[0], len(row))
		want := 1.0
		for i, x := range xs {
			e := math.Exp(float64(x))
			want += e
			got, w32 := row[i+1], float32(e)
			total++
			if got != w32 {
				differ++
				if d := int64(math.Float32bits(got)) - int64(math.Float32bits(w32)); d != 1 && d != -1 {
					t.Fatalf("exp(%v) = %v (%#x), math.Exp's %v (%#x)", x, got, math.Float32bits(got), w32, math.Float32bits(w32))
				}
			}
		}
		if math.Abs(sum-want) > 1e-13*want {
			t.Fatalf("sum = %v, want %v", sum, want)
		}
		xs = xs[:0]
	}
	for bits := lo; bits <= hi; bits += step {
		xs = append(xs, math.Float32frombits(bits))
		if len(xs) == 15 {
			check()
		}
	}
	xs = append(xs, -104, -103.97, -87.34, -87.33, -1e-30, -1000, float32(math.Inf(-1)))
	check()
	if differ > total/100000 {
		t.Errorf("%d of %d float32 exps differ from math.Exp's rounding", differ, total)
	}
	t.Logf("%d of %d float32 exps an ulp from math.Exp's rounding", differ, total)
}

// TestSoftmaxExpRows checks the max subtraction, the ragged lengths of the
// masked tail, and that nothing past row[n−1] is written.
func TestSoftmaxExpRows(t *testing.T) {
	needAttnAVX512(t)
	rng := rand.New(rand.NewPCG(23, 24))
	for n := 1; n <= 70; n++ {
		buf := make([]float32, n+17)
		for i := range buf {
			buf[i] = float32(rng.NormFloat64() * 8)
		}
		in := append([]float32(nil), buf...)
		sum := softmaxExpAVX512(&buf[0], n)
		top := float32(math.Inf(-1))
		for _, v := range in[:n] {
			top = max(top, v)
		}
		var want float64
		for i, v := range in[:n] {
			e := math.Exp(float64(v - top))
			want += e
			if d := math.Abs(float64(buf[i]) - e); d > 0x1p-24*e {
				t.Fatalf("n %d: row[%d] = %v, want %v", n, i, buf[i], e)
			}
		}
		if math.Abs(sum-want) > 1e-13*want {
			t.Fatalf("n %d: sum %v, want %v", n, sum, want)
		}
		for i := n; i < len(buf); i++ {
			if buf[i] != in[i] {
				t.Fatalf("n %d: row[%d] written", n, i)
			}
		}
	}
}

// TestPackKT checks the forms of the Kᵀ packing against the definition —
// the AVX-512 one with its 16-key blocks by transposes and by gathers, and
// Go's — for key counts around the 16 lanes, and that the padding columns
// [n, ldk) are left alone.
func TestPackKT(t *testing.T) {
	needAttnAVX512(t)
	rng := rand.New(rand.NewPCG(25, 26))
	saved := packKTByGathers
	defer func() { packKTByGathers = saved }()
	for _, n := range []int{1, 2, 15, 16, 17, 31, 32, 33, 93, 100} {
		for _, dh := range []int{2, 16, 64, 80} {
			const heads = 3
			p := backend.AttentionParams{Layout: backend.Layout{SeqLen: n + 3, Lengths: []int{n, n + 3}}, Heads: heads, HeadDim: dh}
			width := heads * dh
			qkv := randomValues(rng, 2*p.SeqLen*3*width)
			ldk := (p.SeqLen + 15) &^ 15
			for _, h := range []int{0, heads - 1} {
				for _, form := range []string{"transposes", "gathers", "go"} {
					kt := make([]float32, dh*ldk)
					for i := range kt {
						kt[i] = -7
					}
					if form != "go" {
						packKTByGathers = form == "gathers"
						packKT(kt, attnRow{start: 0, size: p.SeqLen, n: n, ldk: ldk}, qkv, h, p)
					} else {
						packKTGo(kt, ldk, qkv[width+h*dh:], 3*width, n, dh)
					}
					for d := range dh {
						for j := range ldk {
							want := float32(-7)
							if j < n {
								want = qkv[j*3*width+width+h*dh+d]
							}
							if got := kt[d*ldk+j]; got != want {
								t.Fatalf("%s n %d dh %d head %d: kt[%d][%d] = %v, want %v", form, n, dh, h, d, j, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkAttnKernels measures the attention's AVX-512 kernels alone, hot
// in L1: the tile at QKᵀ's shape (6 queries × 64 keys, k = head dim 64) and
// PV's (6 queries × 64 head dims, k = 93 keys), in GFLOP/s; the softmax
// row (93 scores) and the Kᵀ packing (93 keys × 64) in ns per value.
func BenchmarkAttnKernels(b *testing.B) {
	if !hasAttnAVX512 {
		b.Skip("no AVX-512F on this CPU")
	}
	rng := rand.New(rand.NewPCG(27, 28))
	for _, c := range []struct {
		name string
		k    int
	}{{"tile/qk/k64", 64}, {"tile/pv/k93", 93}} {
		b.Run(c.name, func(b *testing.B) {
			const ld = 96
			a := randomValues(rng, attnTileRows*ld)
			bm := randomValues(rng, c.k*ld)
			out := make([]float32, attnTileRows*ld)
			var args attnTileArgs
			for r := range args.a {
				args.a[r] = &a[r*ld]
				args.scale[r] = 1
			}
			args.b, args.ldb, args.k, args.c, args.ldc, args.rows = &bm[0], ld, c.k, &out[0], ld, attnTileRows
			args.setCols(attnTileCols)
			for b.Loop() {
				attnTileAVX512(&args)
			}
			flops := 2 * float64(attnTileRows*attnTileCols*c.k)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	b.Run("softmax/93", func(b *testing.B) {
		row := randomValues(rng, 93)
		work := make([]float32, len(row))
		for b.Loop() {
			copy(work, row)
			softmaxExpAVX512(&work[0], len(work))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(row)), "ns/value")
	})
	for _, gathers := range []bool{false, true} {
		name := map[bool]string{false: "transposes", true: "gathers"}[gathers]
		b.Run("packKT/93x64/"+name, func(b *testing.B) {
			saved := packKTByGathers
			packKTByGathers = gathers
			defer func() { packKTByGathers = saved }()
			const n, heads, dh = 93, 12, 64
			p := backend.AttentionParams{Heads: heads, HeadDim: dh}
			qkv := randomValues(rng, n*3*heads*dh)
			kt := make([]float32, dh*96)
			for b.Loop() {
				packKT(kt, attnRow{size: n, n: n, ldk: 96}, qkv, 0, p)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n*dh), "ns/value")
		})
	}
}
