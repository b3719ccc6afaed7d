//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// withSIMDOps runs f with the element-wise kernels on or off.
func withSIMDOps(t testing.TB, on bool, f func()) {
	saved := simdOps
	simdOps = on && hasOpsAVX512
	defer func() { simdOps = saved }()
	f()
}

func needOpsAVX512(t *testing.T) {
	if !hasOpsAVX512 {
		t.Skip("no AVX-512F on this CPU")
	}
}

// TestElementwiseSIMD holds the AVX-512 Add and Rope to the Go loops bit for
// bit (the same float32 operations), and LayerNorm to them within an ulp
// (its float64 sums run in another order), on widths around the 16-lane
// vectors, in place and not, with and without bias.
func TestElementwiseSIMD(t *testing.T) {
	needOpsAVX512(t)
	// The SIMD forms must be the ones running (or the comparisons below
	// compare the Go loops with themselves).
	one := []float32{1, 2}
	if _, _, ok := layerNormStatsSIMD(one); !ok || !layerNormApplySIMD(one, one, one, nil, 0, 1) ||
		!addSIMD(one, one, one) || !ropeSIMD(one, one, 1, 2) {
		t.Fatal("an AVX-512 element-wise kernel does not run on this AVX-512 CPU")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	run := func(on bool, f func(s backend.Stream) backend.Tensor) []float32 {
		var got []float32
		withSIMDOps(t, on, func() {
			s := New().NewStream()
			got = read(t, s, f(s))
		})
		return got
	}
	same := func(t *testing.T, what string, got, want []float32, ulps uint32) {
		t.Helper()
		differ := 0
		for i := range want {
			g, w := math.Float32bits(got[i]), math.Float32bits(want[i])
			if g == w {
				continue
			}
			differ++
			if d := max(g, w) - min(g, w); d > ulps || (got[i] < 0) != (want[i] < 0) {
				t.Fatalf("%s[%d] = %v, Go loop %v", what, i, got[i], want[i])
			}
		}
		if differ > len(want)/100 {
			t.Errorf("%s: %d of %d values differ from the Go loop's", what, differ, len(want))
		}
	}
	for _, cols := range []int{1, 2, 15, 16, 17, 31, 33, 64, 100, 768, 1024} {
		rows := 5
		x := randomValues(rng, rows*cols)
		y := randomValues(rng, rows*cols)
		for i := 0; i < len(x); i += cols {
			x[i] += 30 // rows off zero: the mean matters
		}
		w := randomValues(rng, cols)
		bias := randomValues(rng, cols)
		t.Run(fmt.Sprintf("add/%d", cols), func(t *testing.T) {
			f := func(s backend.Stream) backend.Tensor {
				a, b := s.FromHost(rows, cols, x), s.FromHost(rows, cols, y)
				s.Add(b, a, b) // in place
				return b
			}
			same(t, "add", run(true, f), run(false, f), 0)
		})
		for _, withBias := range []bool{false, true} {
			t.Run(fmt.Sprintf("layerNorm/%d/bias%v", cols, withBias), func(t *testing.T) {
				f := func(s backend.Stream) backend.Tensor {
					a := s.FromHost(rows, cols, x)
					var b backend.Tensor
					if withBias {
						b = s.FromHost(1, cols, bias)
					}
					dst := s.New(rows, cols)
					s.LayerNorm(dst, a, s.FromHost(1, cols, w), b, 1e-5)
					return dst
				}
				same(t, "layerNorm", run(true, f), run(false, f), 1)
			})
		}
	}
	for _, headDim := range []int{2, 4, 30, 32, 34, 64, 80, 128} {
		t.Run(fmt.Sprintf("rope/%d", headDim), func(t *testing.T) {
			const heads, seqLen = 3, 40
			x := randomValues(rng, 2*seqLen*3*heads*headDim)
			f := func(s backend.Stream) backend.Tensor {
				qkv := s.FromHost(2*seqLen, 3*heads*headDim, x)
				s.Rope(qkv, backend.RopeParams{Layout: backend.Layout{SeqLen: seqLen}, Heads: heads, HeadDim: headDim, Theta: 160000})
				return qkv
			}
			same(t, "rope", run(true, f), run(false, f), 0)
		})
	}
}

// BenchmarkElementwise measures LayerNorm, Add and Rope per 93-token row
// (ns/row) at the encoders' widths, "new" the AVX-512 kernels, "old" the Go
// loops, side by side, on one worker.
func BenchmarkElementwise(b *testing.B) {
	rng := rand.New(rand.NewPCG(43, 44))
	const rows = 93
	for _, m := range []struct {
		name     string
		d, heads int
	}{{"english", 1024, 16}, {"multilingual", 768, 12}} {
		x := randomValues(rng, rows*3*m.d)
		w := randomValues(rng, m.d)
		for _, op := range []string{"layerNorm", "add", "rope"} {
			for _, on := range []bool{true, false} {
				name := map[bool]string{true: "new", false: "old"}[on]
				b.Run(fmt.Sprintf("%s/%s/%s", op, m.name, name), func(b *testing.B) {
					if on && !hasOpsAVX512 {
						b.Skip("no AVX-512F")
					}
					withSIMDOps(b, on, func() {
						be := New()
						be.workers = 1
						s := be.NewStream()
						var f func()
						switch op {
						case "layerNorm":
							a, dst, wt := s.FromHost(rows, m.d, x[:rows*m.d]), s.New(rows, m.d), s.FromHost(1, m.d, w)
							// A LayerNorm runs with the next operation (norm.go):
							// run it now, so each iteration times its own.
							f = func() { s.LayerNorm(dst, a, wt, nil, 1e-5); s.(*Stream).runPending() }
						case "add":
							a, c := s.FromHost(rows, m.d, x[:rows*m.d]), s.New(rows, m.d)
							f = func() { s.Add(c, a, c) }
						case "rope":
							qkv := s.FromHost(rows, 3*m.d, x)
							p := backend.RopeParams{Layout: backend.Layout{SeqLen: rows}, Heads: m.heads, HeadDim: 64, Theta: 160000}
							f = func() { s.Rope(qkv, p) }
						}
						for b.Loop() {
							f()
						}
						if err := s.Err(); err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
					})
				})
			}
		}
	}
}
