package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// TestLayerNormFusedWithLinear holds a LayerNorm taken into the next
// Linear's packing (norm.go) to the same operations run one after the other
// (a Read of the LayerNorm's output in between forces its pass): the
// Linear's and its fused epilogue's outputs and the LayerNorm's own output,
// bit for bit, on every kernel, at worker counts that split tiles between
// workers or not, for the encoder's and the decision head's sequences
// (Rope, GeGLU, a residual Add, a Linear with bias and activation) and for
// a Linear writing the LayerNorm's input (which must not fuse).
func TestLayerNormFusedWithLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	type tensors struct{ x, normed, out, extra backend.Tensor }
	const heads, headDim = 2, 16
	const d = heads * headDim
	cases := []struct {
		name string
		bias bool // the LayerNorm's
		n    int  // the Linear's output width
		run  func(s *Stream, ts tensors, w, wb backend.Tensor, m int)
	}{
		{"plain", false, 3 * d, func(s *Stream, ts tensors, w, _ backend.Tensor, _ int) {
			s.Linear(ts.out, ts.normed, w, nil, backend.Identity)
		}},
		{"rope", true, 3 * d, func(s *Stream, ts tensors, w, _ backend.Tensor, m int) {
			s.Linear(ts.out, ts.normed, w, nil, backend.Identity)
			backend.Discard(s, ts.normed)
			s.Rope(ts.out, backend.RopeParams{Layout: backend.Layout{SeqLen: m}, Heads: heads, HeadDim: headDim, Theta: 10000})
		}},
		{"geglu", false, 2 * d, func(s *Stream, ts tensors, w, _ backend.Tensor, _ int) {
			s.Linear(ts.out, ts.normed, w, nil, backend.Identity)
			backend.Discard(s, ts.normed)
			s.GeGLU(ts.extra, ts.out)
			backend.Discard(s, ts.out)
		}},
		{"residual", true, d, func(s *Stream, ts tensors, w, _ backend.Tensor, _ int) {
			s.Linear(ts.out, ts.normed, w, nil, backend.Identity)
			s.Add(ts.extra, ts.extra, ts.out)
		}},
		{"bias-relu", true, 3 * d, func(s *Stream, ts tensors, w, wb backend.Tensor, _ int) {
			s.Linear(ts.out, ts.normed, w, wb, backend.ReLU)
		}},
		{"writes-its-input", false, d, func(s *Stream, ts tensors, w, _ backend.Tensor, _ int) {
			s.Linear(ts.x, ts.normed, w, nil, backend.Identity)
		}},
	}
	for _, kernel := range gemmKernels(t) {
		for _, c := range cases {
			for _, m := range []int{1, 50, 97} {
				for _, workers := range []int{1, 2, 3, 16} {
					t.Run(fmt.Sprintf("%s/%s/m=%d/workers=%d", kernel.name, c.name, m, workers), func(t *testing.T) {
						useGemmKernel(t, kernel)
						be := New()
						be.workers = workers
						w := uploadRandom(t, be, backend.F16, c.n, d, rng)
						wb := uploadRandom(t, be, backend.F32, 1, c.n, rng)
						nw := uploadRandom(t, be, backend.F32, 1, d, rng)
						var nb backend.Tensor
						if c.bias {
							nb = uploadRandom(t, be, backend.F32, 1, d, rng)
						}
						xv, ev := randomValues(rng, m*d), randomValues(rng, m*d)
						run := func(split bool) [4][]float32 {
							s := be.NewStream().(*Stream)
							ts := tensors{x: s.FromHost(m, d, xv), normed: s.New(m, d), out: s.New(m, c.n), extra: s.FromHost(m, d, ev)}
							s.LayerNorm(ts.normed, ts.x, nw, nb, 1e-5)
							if split {
								read(t, s, ts.normed) // runs the LayerNorm pass
							}
							c.run(s, ts, w, wb, m)
							return [4][]float32{read(t, s, ts.x), read(t, s, ts.normed), read(t, s, ts.out), read(t, s, ts.extra)}
						}
						got, want := run(false), run(true)
						for i, name := range []string{"x", "normed", "out", "extra"} {
							for j := range want[i] {
								if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
									t.Fatalf("%s[%d]: fused %v, one by one %v", name, j, got[i][j], want[i][j])
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestFusableNorm checks when a Linear takes its LayerNorm into its packing:
// never where what the GEMM writes overlaps the LayerNorm's input or output
// (units would store rows that others still normalise or pack), nor for a
// subset of rows (the others would never be normalised) or a GEMM of no
// output columns (it runs no unit); then it runs the pass instead, so the
// output is there all the same.
func TestFusableNorm(t *testing.T) {
	if _, ok := useOuter(4, 8); !ok {
		t.Skip("no outer-product kernel in this build or on this CPU")
	}
	be := New()
	const m, d = 4, 8
	ones := make([]float32, d)
	for i := range ones {
		ones[i] = 1
	}
	for _, c := range []struct {
		name string
		outs func(x, normed, other []float32) [][]float32
		rows []int
		n    int // the Linear's output width
		want bool
	}{
		{"apart", func(_, _, o []float32) [][]float32 { return [][]float32{o} }, nil, d, true},
		{"writes its input", func(x, _, o []float32) [][]float32 { return [][]float32{o, x[d:]} }, nil, d, false},
		{"writes its output", func(_, n, o []float32) [][]float32 { return [][]float32{n[:1], o} }, nil, d, false},
		{"a subset of rows", func(_, _, o []float32) [][]float32 { return [][]float32{o} }, []int{0, 2}, d, false},
		{"no output columns", func(_, _, o []float32) [][]float32 { return [][]float32{o} }, nil, 0, false},
	} {
		x := make([]float32, m*d)
		for i := range x {
			x[i] = float32(i % 5)
		}
		normed, other := &tensor{rows: m, cols: d, data: make([]float32, m*d)}, make([]float32, m*d)
		op := &linearOp{m: m, n: c.n, k: d, norm: &normOp{dst: normed, x: x, w: ones, eps: 1e-5, m: m, d: d}}
		got := be.fusableNorm(op, c.rows, c.outs(x, normed.data, other)...) != nil
		if got != c.want || op.norm != nil {
			t.Errorf("%s: fused %v (norm left %v), want %v", c.name, got, op.norm != nil, c.want)
		}
		if !c.want && normed.data[d] == 0 {
			t.Errorf("%s: not fused, and the LayerNorm pass did not run", c.name)
		}
	}
}

// BenchmarkFusedPrologue times an encoder layer's two GEMMs that a
// LayerNorm feeds, at ten multilingual questions (862 packed rows, d = 768,
// F16 weights): LayerNorm → qkv Linear → RoPE, and LayerNorm → Wi Linear →
// GeGLU, fused as the forward records them (norm.go, rope.go) and one
// operation at a time (each LayerNorm and Linear run before the next
// operation is recorded). Compare the two in one run: go test -bench
// FusedPrologue -count 10 -cpu 2 ./backend/cpu.
func BenchmarkFusedPrologue(b *testing.B) {
	rng := rand.New(rand.NewPCG(91, 92))
	const rows, d, inner, heads = 862, 768, 1152, 12
	lengths := []int{86, 86, 86, 86, 86, 86, 86, 86, 86, 88}
	be := New()
	wqkv := uploadRandom(b, be, backend.F16, 3*d, d, rng)
	wi := uploadRandom(b, be, backend.F16, 2*inner, d, rng)
	nw := uploadRandom(b, be, backend.F32, 1, d, rng)
	xv := randomValues(rng, rows*d)
	for _, fused := range []bool{true, false} {
		b.Run(map[bool]string{true: "fused", false: "one-by-one"}[fused], func(b *testing.B) {
			s := be.NewStream().(*Stream)
			x, normed := s.FromHost(rows, d, xv), s.New(rows, d)
			qkv, up, act := s.New(rows, 3*d), s.New(rows, 2*inner), s.New(rows, inner)
			step := func() {
				if !fused {
					s.runPending()
				}
			}
			for b.Loop() {
				s.LayerNorm(normed, x, nw, nil, 1e-5)
				step()
				s.Linear(qkv, normed, wqkv, nil, backend.Identity)
				backend.Discard(s, normed)
				step()
				s.Rope(qkv, backend.RopeParams{Layout: backend.Layout{SeqLen: 88, Packed: true, Lengths: lengths}, Heads: heads, HeadDim: d / heads, Theta: 160000})
				s.LayerNorm(normed, x, nw, nil, 1e-5)
				step()
				s.Linear(up, normed, wi, nil, backend.Identity)
				backend.Discard(s, normed)
				s.GeGLU(act, up)
				backend.Discard(s, up)
				s.runPending()
			}
			if err := s.Err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
