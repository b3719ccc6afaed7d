package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// TestResidualFusion holds Linear followed by Add(x, x, proj) — run as one
// pass (gemmResidual) — to the same two operations run apart (a Read in
// between flushes the pending Linear): x and proj must match bit for bit,
// with F32 and F16 weights, on ragged shapes, for x += proj and out = a +
// proj; and an Add whose destination is the Linear's input must not fuse
// (its units would overwrite rows others still read). Every kernel: the
// dot kernels and the outer-product one fuse the add in their own units.
func TestResidualFusion(t *testing.T) {
	for _, kernel := range gemmKernels(t) {
		t.Run(kernel.name, func(t *testing.T) {
			useGemmKernel(t, kernel)
			testResidualFusion(t)
		})
	}
}

func testResidualFusion(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ctx := context.Background()
	for _, sh := range []struct{ m, k, n int }{{1, 3, 2}, {7, 17, 66}, {93, 64, 130}, {50, 200, 32}} {
		for _, dtype := range []backend.DType{backend.F32, backend.F16} {
			for _, inPlace := range []bool{true, false} {
				name := fmt.Sprintf("%dx%dx%d/%v/inplace=%v", sh.m, sh.k, sh.n, dtype, inPlace)
				be := New()
				w := uploadRandom(t, be, dtype, sh.n, sh.k, rng)
				xv, av := randomValues(rng, sh.m*sh.k), randomValues(rng, sh.m*sh.n)
				run := func(flush bool) ([]float32, []float32) {
					s := be.NewStream()
					defer s.Close()
					x := s.FromHost(sh.m, sh.k, xv)
					a := s.FromHost(sh.m, sh.n, av)
					proj := s.New(sh.m, sh.n)
					dst := a
					if !inPlace {
						dst = s.New(sh.m, sh.n)
					}
					s.Linear(proj, x, w, nil, backend.Identity)
					if flush {
						if err := s.Read(ctx, proj, make([]float32, sh.m*sh.n)); err != nil {
							t.Fatal(err)
						}
					}
					s.Add(dst, a, proj)
					got, p := make([]float32, sh.m*sh.n), make([]float32, sh.m*sh.n)
					if err := s.Read(ctx, dst, got); err != nil {
						t.Fatal(err)
					}
					if err := s.Read(ctx, proj, p); err != nil {
						t.Fatal(err)
					}
					return got, p
				}
				fusedOut, fusedProj := run(false)
				apartOut, apartProj := run(true)
				for i := range fusedOut {
					if fusedOut[i] != apartOut[i] || fusedProj[i] != apartProj[i] {
						t.Fatalf("%s: at %d fused out %v proj %v, apart out %v proj %v", name, i, fusedOut[i], fusedProj[i], apartOut[i], apartProj[i])
					}
				}
				be.Close()
			}
		}
	}

	// dst is the Linear's input: the Add must run after the whole GEMM.
	be := New()
	defer be.Close()
	s := be.NewStream()
	defer s.Close()
	const n = 96
	w := uploadRandom(t, be, backend.F32, n, n, rng)
	xv := randomValues(rng, 4*n)
	x := s.FromHost(4, n, xv)
	proj := s.New(4, n)
	s.Linear(proj, x, w, nil, backend.Identity)
	s.Add(x, x, proj)
	got := make([]float32, 4*n)
	if err := s.Read(ctx, x, got); err != nil {
		t.Fatal(err)
	}
	wv := make([]float32, n*n)
	if err := s.Read(ctx, w, wv); err != nil {
		t.Fatal(err)
	}
	for r := range 4 {
		for j := range n {
			var dot float64
			for k := range n {
				dot += float64(xv[r*n+k]) * float64(wv[j*n+k])
			}
			if want := float64(xv[r*n+j]) + dot; abs(float64(got[r*n+j])-want) > 1e-4 {
				t.Fatalf("x += x·Wᵀ at [%d,%d] = %v, want %v", r, j, got[r*n+j], want)
			}
		}
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestDiscardFusedOutput: a Linear fused with its GeGLU or residual Add,
// whose output is discarded right after (as the encoder does), gives the
// GeGLU's and the Add's results bit for bit as without the Discard; on the
// outer-product path it leaves the discarded output unwritten (what the
// Discard is for), and a Discard of any other tensor changes nothing. The
// shapes include one of two groups of Xᵀ tiles (outerMaxGroup) and a row
// count that ends inside a tile.
func TestDiscardFusedOutput(t *testing.T) {
	ctx := context.Background()
	for _, kernel := range gemmKernels(t) {
		t.Run(kernel.name, func(t *testing.T) {
			useGemmKernel(t, kernel)
			rng := rand.New(rand.NewPCG(41, 42))
			for _, sh := range []struct{ m, k, n int }{{5, 24, 34}, {93, 64, 130}, {400, 64, 96}} {
				for _, geglu := range []bool{false, true} {
					name := fmt.Sprintf("%dx%dx%d/geglu=%v", sh.m, sh.k, sh.n, geglu)
					be := New()
					w := uploadRandom(t, be, backend.F16, sh.n, sh.k, rng)
					xv, av := randomValues(rng, sh.m*sh.k), randomValues(rng, sh.m*sh.n)
					sentinel := make([]float32, sh.m*sh.n)
					for i := range sentinel {
						sentinel[i] = -7
					}
					// discard: 0 none, 1 the Linear's output, 2 another tensor.
					run := func(discard int) (out, y []float32) {
						s := be.NewStream()
						defer s.Close()
						x := s.FromHost(sh.m, sh.k, xv)
						proj := s.FromHost(sh.m, sh.n, sentinel)
						other := s.FromHost(sh.m, sh.n, av)
						var dst backend.Tensor
						s.Linear(proj, x, w, nil, backend.Identity)
						if geglu {
							dst = s.New(sh.m, sh.n/2)
							s.GeGLU(dst, proj)
						} else {
							dst = s.FromHost(sh.m, sh.n, av)
							s.Add(dst, dst, proj)
						}
						switch discard {
						case 1:
							backend.Discard(s, proj)
						case 2:
							backend.Discard(s, other)
						}
						out, y = make([]float32, dst.Rows()*dst.Cols()), make([]float32, sh.m*sh.n)
						if err := s.Read(ctx, dst, out); err != nil {
							t.Fatal(err)
						}
						if err := s.Read(ctx, proj, y); err != nil {
							t.Fatal(err)
						}
						return out, y
					}
					wantOut, wantY := run(0)
					for _, discard := range []int{1, 2} {
						out, y := run(discard)
						for i := range out {
							if out[i] != wantOut[i] {
								t.Fatalf("%s discard=%d: out[%d] = %v, want %v", name, discard, i, out[i], wantOut[i])
							}
						}
						for i := range y {
							want := wantY[i]
							if discard == 1 && kernel.outer != nil {
								want = sentinel[i]
							}
							if y[i] != want {
								t.Fatalf("%s discard=%d: Linear output [%d] = %v, want %v", name, discard, i, y[i], want)
							}
						}
					}
					be.Close()
				}
			}
		})
	}
}
