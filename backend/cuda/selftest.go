//go:build linux

package cuda

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/laya-metal/laya/backend"
)

// SelfTest opens a backend with opts, runs two small GEMMs (one with bias
// and GELU, one plain), their sum and a sliding-window attention on it
// three times (kernel by kernel, then from a
// captured graph), on its streams (with refinement on, its reduced ones
// too; in a 16-bit precision, its wide FP32 ones too), checks them against
// a float64 reference computed here,
// and closes the backend. A caller choosing a backend (an "auto" choice)
// runs it first: it fails with the reason (ErrNoCUDA, ErrNoNVRTC,
// ErrNoCUBLAS, ErrUnsupportedGPU, ErrOutOfMemory, ErrSelfTest) where
// the cuda backend should not be picked.
func SelfTest(ctx context.Context, opts Options) error {
	be, err := Open(opts)
	if err != nil {
		return err
	}
	defer be.Close()
	const m, k, heads, dh = 5, 24, 2, 4
	n := 3 * heads * dh
	x := make([]float32, m*k)
	w := make([]float32, n*k)
	bias := make([]float32, n)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37)) * 0.5
	}
	for i := range w {
		w[i] = float32(math.Cos(float64(i)*0.11)) * 0.25
	}
	for i := range bias {
		bias[i] = float32(i%5) * 0.1
	}
	raw := func(v []float32) []byte {
		out := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
		}
		return out
	}
	wt, err := be.Upload("selftest.w", backend.F32, n, k, raw(w))
	if err != nil {
		return err
	}
	bt, err := be.Upload("selftest.b", backend.F32, 1, n, raw(bias))
	if err != nil {
		return err
	}
	// The float64 reference.
	qkv := make([]float64, m*n)
	for r := range m {
		for c := range n {
			s := float64(bias[c])
			for j := range k {
				s += float64(x[r*k+j]) * float64(w[c*k+j])
			}
			plain := s - float64(bias[c])
			qkv[r*n+c] = 0.5*s*(1+math.Erf(s/math.Sqrt2)) + plain
		}
	}
	p := backend.AttentionParams{Layout: backend.Layout{SeqLen: m, Lengths: []int{m}}, Heads: heads, HeadDim: dh,
		Scale: 0.5, Sliding: true, Radius: 1}
	width := heads * dh
	want := make([]float64, m*width)
	for i := range m {
		for h := range heads {
			var sc []float64
			var js []int
			for j := max(0, i-p.Radius); j <= min(m-1, i+p.Radius); j++ {
				var d float64
				for e := range dh {
					d += qkv[i*n+h*dh+e] * qkv[j*n+width+h*dh+e]
				}
				sc, js = append(sc, d*float64(p.Scale)), append(js, j)
			}
			mx := math.Inf(-1)
			for _, v := range sc {
				mx = max(mx, v)
			}
			var sum float64
			for a := range sc {
				sc[a] = math.Exp(sc[a] - mx)
				sum += sc[a]
			}
			for e := range dh {
				var acc float64
				for a, j := range js {
					acc += sc[a] / sum * qkv[j*n+2*width+h*dh+e]
				}
				want[i*width+h*dh+e] = acc
			}
		}
	}
	tol := 1e-5
	if opts.Precision != FP32 {
		tol = 2e-2
	}
	// With refinement on, the FP16 streams ReducedStream hands out are
	// checked too: answers taken from them are only re-run on near-ties.
	// So are the FP32 streams of a 16-bit precision (WideStream), to
	// float32's tolerance: the rows they answer have no other answer.
	type kind struct {
		name      string
		newStream func() backend.Stream
		tol       float64
	}
	kinds := []kind{{opts.Precision.String(), be.NewStream, tol}}
	if opts.refining() {
		kinds = append(kinds, kind{"fp16 first (refine)", func() backend.Stream {
			s, _ := be.(backend.Refiner).ReducedStream(math.MaxInt)
			return s
		}, tol})
	}
	if opts.Precision != FP32 {
		kinds = append(kinds, kind{"fp32 (wide)", be.(backend.Widener).WideStream, 1e-5})
	}
	for round := range 3 * len(kinds) {
		kd := kinds[round%len(kinds)]
		s := kd.newStream()
		xt := s.FromHost(m, k, x)
		// A GEMM with bias and GELU, and a plain one (in FP16X2 its two
		// products stay apart until the Add reads them).
		q, plain := s.New(m, n), s.New(m, n)
		s.Linear(q, xt, wt, bt, backend.GELU)
		s.Linear(plain, xt, wt, nil, backend.Identity)
		s.Add(q, q, plain)
		out := s.New(m, width)
		s.Attention(out, q, p)
		got := make([]float32, m*width)
		err := s.Read(ctx, out, got)
		s.Close()
		if err != nil {
			return err
		}
		for i, v := range want {
			if d := math.Abs(float64(got[i]) - v); !(d <= kd.tol*(1+math.Abs(v))) {
				return fmt.Errorf("%w: round %d (%s): attention output %d is %v, want %v", ErrSelfTest, round/len(kinds), kd.name, i, got[i], v)
			}
		}
	}
	return nil
}
