package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// TestRopeFusedWithLinear holds a Rope recorded right after the Linear that
// makes its qkv (run in the GEMM's epilogue where the units hold whole
// heads, else after it) to the same Linear and Rope run one after the other
// (a Read in between forces the Linear to run alone): bit for bit, on every
// kernel, for worker counts whose unit plans split tails, narrow panels
// below a head (the unfused fallback) or do neither, padded and packed.
func TestRopeFusedWithLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	cases := []struct {
		heads, headDim, k int
		lengths           []int
		seqLen            int
		packed            bool
		dtype             backend.DType
	}{
		{12, 64, 96, []int{86, 86, 86, 86, 86, 86, 86, 86, 86, 86}, 86, true, backend.F16},
		{12, 64, 96, []int{93}, 93, false, backend.F32},
		{4, 16, 40, []int{5, 17, 3}, 17, false, backend.F32},
		{4, 16, 40, []int{5, 17, 3}, 17, true, backend.BF16},
		{3, 24, 33, []int{50, 1}, 50, true, backend.F16},
		{2, 8, 16, []int{1}, 1, false, backend.F32},
	}
	for _, kernel := range gemmKernels(t) {
		for _, c := range cases {
			for _, workers := range []int{1, 2, 3, 16} {
				name := fmt.Sprintf("%s/h%dx%d/rows%v/packed=%v/%v/workers=%d", kernel.name, c.heads, c.headDim, c.lengths, c.packed, c.dtype, workers)
				t.Run(name, func(t *testing.T) {
					useGemmKernel(t, kernel)
					be := New()
					be.workers = workers
					width := c.heads * c.headDim
					rows := len(c.lengths) * c.seqLen
					if c.packed {
						rows = 0
						for _, n := range c.lengths {
							rows += n
						}
					}
					w := uploadRandom(t, be, c.dtype, 3*width, c.k, rng)
					xv := randomValues(rng, rows*c.k)
					p := backend.RopeParams{Layout: backend.Layout{SeqLen: c.seqLen, Packed: c.packed}, Heads: c.heads, HeadDim: c.headDim, Theta: 160000}
					if c.packed {
						p.Lengths = c.lengths // a padded batch's Rope takes none
					}

					s := be.NewStream().(*Stream)
					x, qkv := s.FromHost(rows, c.k, xv), s.New(rows, 3*width)
					s.Linear(qkv, x, w, nil, backend.Identity)
					s.Rope(qkv, p)
					if s.pending == nil || s.pending.rope == nil {
						t.Fatal("the Rope was not recorded on the pending Linear")
					}
					got := read(t, s, qkv)

					ref := be.NewStream().(*Stream)
					x2, qkv2 := ref.FromHost(rows, c.k, xv), ref.New(rows, 3*width)
					ref.Linear(qkv2, x2, w, nil, backend.Identity)
					read(t, ref, qkv2) // runs the Linear alone
					ref.Rope(qkv2, p)
					want := read(t, ref, qkv2)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("row %d col %d: fused %v, unfused %v", i/(3*width), i%(3*width), got[i], want[i])
						}
					}
				})
			}
		}
	}
}

// TestGemmOuterAlignedPlans checks which plans run the fused Rope in the
// epilogue: whole 64-column heads at ten questions on 2 and 16 workers
// (the tail units split at a head), but not a one-row GEMM on 16 workers,
// whose panels narrow to 16 columns (gemmRope then runs the Rope pass).
func TestGemmOuterAlignedPlans(t *testing.T) {
	kern := outerBlockGo
	for _, c := range []struct {
		m, workers int
		want       bool
	}{{862, 2, true}, {862, 16, true}, {93, 2, true}, {1, 16, false}} {
		be := New()
		be.workers = c.workers
		const k, n, align = 16, 3 * 768, 64
		w := matrix{f32: make([]float32, n*k), ld: k}
		x, y := make([]float32, c.m*k), make([]float32, c.m*n)
		seen := make([]int, n)
		ran := be.gemmOuterAligned(kern, y, be.packX(x, k, k, nil, c.m), w, nil, n, backend.Identity, align, func(r, n0 int, v []float32) {
			if n0%align != 0 || len(v)%align != 0 {
				t.Errorf("m=%d workers=%d: a unit of columns [%d, %d)", c.m, c.workers, n0, n0+len(v))
			}
			if r == 0 {
				for j := n0; j < n0+len(v); j++ {
					seen[j]++
				}
			}
		})
		if ran != c.want {
			t.Errorf("m=%d workers=%d: ran %v, want %v", c.m, c.workers, ran, c.want)
		}
		// gemmRope asks alignedPlan before it packs anything.
		if got := be.alignedPlan(c.m, n, w, align); got != c.want {
			t.Errorf("m=%d workers=%d: alignedPlan %v, want %v", c.m, c.workers, got, c.want)
		}
		for j, times := range seen {
			if want := map[bool]int{true: 1, false: 0}[c.want]; times != want {
				t.Fatalf("m=%d workers=%d: column %d of row 0 seen %d times, want %d", c.m, c.workers, j, times, want)
			}
		}
	}
}
