package gpu

import (
	"fmt"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/metal"
)

// Fused sequences (fuse.go) against the CPU backend, which runs every
// operation on its own: with and without backend.Discard, reading every
// tensor the sequence writes, so a fusion that skips a store nobody
// discarded fails here.
func fuseCases() []opCase {
	const rows, k, n = 37, 48, 70
	var cases []opCase
	add := func(name string, tol float64, run func(be backend.Backend, s backend.Stream) (backend.Tensor, error)) {
		cases = append(cases, opCase{name, tol, run})
	}
	for _, dt := range []backend.DType{backend.F32, backend.F16} {
		for _, discard := range []bool{false, true} {
			for _, read := range []string{"normed", "y"} {
				if discard && read == "normed" {
					continue
				}
				add(fmt.Sprintf("layerNorm+linear/%s/discard=%v/read=%s", dt, discard, read), 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
					w, err := upload(be, "w", dt, n, k, 1, -0.3, 0.3)
					if err != nil {
						return nil, err
					}
					lw, err := upload(be, "lw", dt, 1, k, 2, 0.5, 1.5)
					if err != nil {
						return nil, err
					}
					lb, err := upload(be, "lb", dt, 1, k, 3, -0.5, 0.5)
					if err != nil {
						return nil, err
					}
					x := s.FromHost(rows, k, random(rows*k, 4, -2, 3))
					normed, y := s.New(rows, k), s.New(rows, n)
					s.LayerNorm(normed, x, lw, lb, 1e-5)
					s.Linear(y, normed, w, nil, backend.GELU)
					if discard {
						backend.Discard(s, normed)
					}
					if read == "normed" {
						return normed, nil
					}
					return y, nil
				})
			}
			for _, read := range []string{"proj", "x"} {
				if discard && read == "proj" {
					continue
				}
				add(fmt.Sprintf("linear+residual/%s/discard=%v/read=%s", dt, discard, read), 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
					w, err := upload(be, "w", dt, n, k, 5, -0.3, 0.3)
					if err != nil {
						return nil, err
					}
					b, err := upload(be, "b", dt, 1, n, 6, -1, 1)
					if err != nil {
						return nil, err
					}
					a := s.FromHost(rows, k, random(rows*k, 7, -2, 2))
					x := s.FromHost(rows, n, random(rows*n, 8, -2, 2))
					proj := s.New(rows, n)
					s.Linear(proj, a, w, b, backend.ReLU)
					s.Add(x, proj, x) // operands swapped: x = proj + x
					if discard {
						backend.Discard(s, proj)
					}
					if read == "proj" {
						return proj, nil
					}
					return x, nil
				})
			}
		}
		// The whole MLP block as the encoder records it.
		add("layerNorm+linear+geglu/"+dt.String(), 4e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			wi, err := upload(be, "wi", dt, 2*n, k, 9, -0.3, 0.3)
			if err != nil {
				return nil, err
			}
			wo, err := upload(be, "wo", dt, k, n, 10, -0.3, 0.3)
			if err != nil {
				return nil, err
			}
			lw, err := upload(be, "lw", dt, 1, k, 11, 0.5, 1.5)
			if err != nil {
				return nil, err
			}
			x := s.FromHost(rows, k, random(rows*k, 12, -2, 2))
			normed, up, act, proj := s.New(rows, k), s.New(rows, 2*n), s.New(rows, n), s.New(rows, k)
			s.LayerNorm(normed, x, lw, nil, 1e-5)
			s.Linear(up, normed, wi, nil, backend.Identity)
			backend.Discard(s, normed)
			s.GeGLU(act, up)
			backend.Discard(s, up)
			s.Linear(proj, act, wo, nil, backend.Identity)
			s.Add(x, x, proj)
			backend.Discard(s, proj)
			return x, nil
		})
	}
	// A residual that is also the GEMM's input must not fuse.
	add("linear+residual/into its input", 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
		w, err := upload(be, "w", backend.F32, k, k, 13, -0.3, 0.3)
		if err != nil {
			return nil, err
		}
		x, proj := s.FromHost(rows, k, random(rows*k, 14, -2, 2)), s.New(rows, k)
		s.Linear(proj, x, w, nil, backend.Identity)
		s.Add(x, x, proj)
		backend.Discard(s, proj)
		return x, nil
	})
	// An in-place LayerNorm cannot be a prologue (its input is gone).
	add("layerNorm in place+linear", 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
		w, err := upload(be, "w", backend.F32, n, k, 15, -0.3, 0.3)
		if err != nil {
			return nil, err
		}
		lw, err := upload(be, "lw", backend.F32, 1, k, 16, 0.5, 1.5)
		if err != nil {
			return nil, err
		}
		x, y := s.FromHost(rows, k, random(rows*k, 17, -2, 2)), s.New(rows, n)
		s.LayerNorm(x, x, lw, nil, 1e-5)
		s.Linear(y, x, w, nil, backend.Identity)
		backend.Discard(s, x)
		return y, nil
	})
	for _, discard := range []bool{false, true} {
		for _, read := range []string{"qkv", "out"} {
			if discard && read == "qkv" {
				continue
			}
			for _, headDim := range []int{32, 96} { // 96: the row kernel, RoPE unfused
				add(fmt.Sprintf("rope+attention/dh=%d/discard=%v/read=%s", headDim, discard, read), 4e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
					const seqLen, heads = 45, 2
					qkv := s.FromHost(2*seqLen, 3*heads*headDim, random(2*seqLen*3*heads*headDim, 18, -2, 2))
					out := s.New(2*seqLen, heads*headDim)
					s.Rope(qkv, backend.RopeParams{Layout: backend.Layout{SeqLen: seqLen}, Heads: heads, HeadDim: headDim, Theta: 10000})
					s.Attention(out, qkv, backend.AttentionParams{Layout: backend.Layout{SeqLen: seqLen, Lengths: []int{45, 30}}, Heads: heads, HeadDim: headDim,
						Scale: 0.2, Sliding: true, Radius: 16})
					if discard {
						backend.Discard(s, qkv)
					}
					if read == "qkv" {
						return qkv, nil
					}
					return out, nil
				})
			}
		}
	}
	return cases
}

func TestFusedOpsMatchCPU(t *testing.T) { runOpCases(t, emulator(t), fuseCases()) }

// Split-K (Backend.SetSplitK) through the stream: the fused GEMMs of an
// encoder MLP block and a residual projection, K long enough to split,
// against the CPU backend, reading every tensor written.
func TestSplitKMatchesCPU(t *testing.T) {
	be := emulator(t)
	be.SetSplitK(1 << 10) // any grid this small splits
	defer be.SetSplitK(0)
	const rows, d, inner = 37, 600, 40
	if s := metal.GemmSplitSlices(rows, 2*inner, d, true, 1<<10); s < 2 {
		t.Fatalf("the test shape does not split (%d slices)", s)
	}
	var cases []opCase
	for _, dt := range []backend.DType{backend.F32, backend.F16} {
		for _, read := range []string{"x", "act"} {
			// 1e-5: two orders of a 600-term float32 sum (the CPU
			// outer-product kernel's one fused multiply-add per k; the
			// split-K slices here), each within ~600 half-ulps of exact;
			// 4e-6 held only for the CPU's dot-kernel lane order.
			cases = append(cases, opCase{"layerNorm+linear+geglu+residual/" + dt.String() + "/read=" + read, 1e-5, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
				wi, err := upload(be, "wi", dt, 2*inner, d, 21, -0.1, 0.1)
				if err != nil {
					return nil, err
				}
				wo, err := upload(be, "wo", dt, d, inner, 22, -0.3, 0.3)
				if err != nil {
					return nil, err
				}
				wp, err := upload(be, "wp", dt, d, d, 23, -0.05, 0.05)
				if err != nil {
					return nil, err
				}
				b, err := upload(be, "b", dt, 1, d, 24, -1, 1)
				if err != nil {
					return nil, err
				}
				lw, err := upload(be, "lw", dt, 1, d, 25, 0.5, 1.5)
				if err != nil {
					return nil, err
				}
				x := s.FromHost(rows, d, random(rows*d, 26, -2, 2))
				a := s.FromHost(rows, d, random(rows*d, 27, -1, 1))
				normed, up, act, proj := s.New(rows, d), s.New(rows, 2*inner), s.New(rows, inner), s.New(rows, d)
				s.Linear(proj, a, wp, b, backend.Identity) // K = 600: split, bias in the reduction
				s.Add(x, x, proj)
				backend.Discard(s, proj)
				s.LayerNorm(normed, x, lw, nil, 1e-5)
				s.Linear(up, normed, wi, nil, backend.Identity) // K = 600, LayerNorm prologue: split
				backend.Discard(s, normed)
				s.GeGLU(act, up)
				backend.Discard(s, up)
				s.Linear(proj, act, wo, nil, backend.Identity) // K = 40: not split
				s.Add(x, x, proj)
				backend.Discard(s, proj)
				if read == "act" {
					return act, nil
				}
				return x, nil
			}})
		}
	}
	runOpCases(t, be, cases)
}
