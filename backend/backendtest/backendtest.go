// Package backendtest is a conformance suite for implementations of
// backend.Backend, in the style of testing/fstest: a new backend runs
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func() (backend.Backend, error) { return mybackend.Open() })
//	}
//
// and gets every operation of backend.Stream checked against a float64
// reference written here, independently of any backend, on ragged shapes
// (1 row, odd widths, sizes that are no multiple of a kernel's tile, short
// and full attention rows, sliding windows at the edges), weights uploaded as
// F32, F16 and BF16, the in-place forms each operation allows, and every
// rejection of the op contracts (backend/contract.go): each refused operand
// must record an error wrapping backend.ErrShape (ErrDType, ErrForeignTensor
// where those apply) that names the operation, and the first error must
// stick and come back from Read.
//
// The suite holds backends to the model's accuracy needs, not to bit
// equality: tolerances are stated per operation, in units of float32
// rounding of the accumulations each one does.
package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// Run runs the suite as subtests of t on one backend from open, which it
// closes at the end. A backend that cannot be opened here (no device) is a
// failure: skip before calling Run if that is expected.
func Run(t *testing.T, open func() (backend.Backend, error)) {
	t.Helper()
	be, err := open()
	if err != nil {
		t.Fatalf("backendtest: open: %v", err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Errorf("backendtest: Close: %v", err)
		}
	})
	c := &suite{be: be}
	t.Run("NewFromHostRead", c.newFromHostRead)
	t.Run("Upload", c.upload)
	t.Run("Gather", c.gather)
	t.Run("LayerNorm", c.layerNorm)
	t.Run("Linear", c.linear)
	t.Run("Add", c.add)
	t.Run("Activate", c.activate)
	t.Run("Softmax", c.softmax)
	t.Run("GeGLU", c.geglu)
	t.Run("Rope", c.rope)
	t.Run("Attention", c.attention)
	t.Run("Packed", c.packed)
	t.Run("ActFeatures", c.actFeatures)
	t.Run("Rejections", c.rejections)
	t.Run("StickyError", c.stickyError)
	t.Run("ForeignAndClosed", c.foreignAndClosed)
}

type suite struct{ be backend.Backend }

// values gives n reproducible float32 values in [lo, hi) (an LCG; its top
// bits only).
func values(n int, seed uint64, lo, hi float32) []float32 {
	out := make([]float32, n)
	s := seed*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
	for i := range out {
		s = s*6364136223846793005 + 1442695040888963407
		out[i] = lo + (hi-lo)*float32(s>>40)/float32(1<<24)
	}
	return out
}

func wide(vs []float32) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = float64(v)
	}
	return out
}

// weight uploads vs as a [rows, cols] weight stored as dtype and returns it
// with the values the backend must see: vs rounded to dtype.
func (c *suite) weight(t *testing.T, name string, dtype backend.DType, rows, cols int, vs []float32) (backend.Tensor, []float64) {
	t.Helper()
	raw := weights.EncodeFloat32(nil, vs, dtype)
	w, err := c.be.Upload(name, dtype, rows, cols, raw)
	if err != nil {
		t.Fatalf("Upload %s (%v [%d, %d]): %v", name, dtype, rows, cols, err)
	}
	seen := make([]float32, len(vs))
	if err := weights.DecodeFloat32(seen, raw, dtype); err != nil {
		t.Fatal(err)
	}
	return w, wide(seen)
}

// read waits for s and returns t's values; a stream error fails the test.
func read(t *testing.T, s backend.Stream, x backend.Tensor) []float32 {
	t.Helper()
	out := make([]float32, x.Rows()*x.Cols())
	if err := s.Read(context.Background(), x, out); err != nil {
		t.Fatalf("Read: %v", err)
	}
	return out
}

// near fails the test where |got−want| > abs + rel·|want| (NaN never
// passes), naming the first bad element by row and column.
func near(t *testing.T, what string, got []float32, want []float64, cols int, abs, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range want {
		d := math.Abs(float64(got[i]) - want[i])
		if !(d <= abs+rel*math.Abs(want[i])) {
			if bad == 0 {
				t.Errorf("%s: [%d, %d] = %v, want %v (|Δ| %.3g > %.3g)", what, i/cols, i%cols, got[i], want[i], d, abs+rel*math.Abs(want[i]))
			}
			bad++
		}
	}
	if bad > 1 {
		t.Errorf("%s: %d of %d values off", what, bad, len(want))
	}
}

func (c *suite) newFromHostRead(t *testing.T) {
	s := c.be.NewStream()
	defer s.Close()
	for _, d := range [][2]int{{1, 1}, {3, 7}, {17, 129}} {
		z := s.New(d[0], d[1])
		if z.Rows() != d[0] || z.Cols() != d[1] {
			t.Errorf("New(%d, %d) is [%d, %d]", d[0], d[1], z.Rows(), z.Cols())
		}
		near(t, fmt.Sprintf("New(%d, %d) is zero", d[0], d[1]), read(t, s, z), make([]float64, d[0]*d[1]), d[1], 0, 0)
		vs := values(d[0]*d[1], uint64(d[1]), -3, 3)
		h := s.FromHost(d[0], d[1], vs)
		vs[0] = 99 // FromHost copies
		want := wide(vs)
		want[0] = float64(values(1, uint64(d[1]), -3, 3)[0])
		near(t, fmt.Sprintf("FromHost(%d, %d)", d[0], d[1]), read(t, s, h), want, d[1], 0, 0)
	}
}

// Uploads of every dtype hold the stored values exactly (widened to
// float32): checked through Gather, the one op that only copies.
func (c *suite) upload(t *testing.T) {
	for _, dtype := range []backend.DType{backend.F32, backend.F16, backend.BF16} {
		for _, d := range [][2]int{{1, 1}, {1, 13}, {5, 33}} {
			vs := values(d[0]*d[1], 7, -70000, 70000) // F16 overflows to ±inf beyond 65504
			for i := range vs {
				if i%3 == 1 {
					vs[i] *= 1e-9 // subnormal halves
				}
			}
			w, want := c.weight(t, "u", dtype, d[0], d[1], vs)
			s := c.be.NewStream()
			idx := make([]int32, d[0])
			for i := range idx {
				idx[i] = int32(i)
			}
			dst := s.New(d[0], d[1])
			s.Gather(dst, w, idx)
			got := read(t, s, dst)
			for i := range want {
				if math.Float64bits(float64(got[i])) != math.Float64bits(want[i]) && !(math.IsInf(want[i], 0) && float64(got[i]) == want[i]) {
					t.Errorf("%v [%d, %d]: element %d = %v, want exactly %v", dtype, d[0], d[1], i, got[i], want[i])
					break
				}
			}
			s.Close()
		}
	}
}

func (c *suite) gather(t *testing.T) {
	for _, dtype := range []backend.DType{backend.F32, backend.F16} {
		const rows, cols = 11, 37
		table, ref := c.weight(t, "table", dtype, rows, cols, values(rows*cols, 3, -2, 2))
		for _, idx := range [][]int32{{0}, {10, 0, 10, 3, 3}, {5, 4, 3, 2, 1, 0, 6, 7, 8, 9, 10, 1, 2}} {
			s := c.be.NewStream()
			dst := s.New(len(idx), cols)
			s.Gather(dst, table, idx)
			want := make([]float64, 0, len(idx)*cols)
			for _, r := range idx {
				want = append(want, ref[int(r)*cols:(int(r)+1)*cols]...)
			}
			near(t, fmt.Sprintf("%v table, index %v", dtype, idx), read(t, s, dst), want, cols, 0, 0)
			s.Close()
		}
	}
	// A stream tensor as the table (the type-embedding broadcast reads one).
	s := c.be.NewStream()
	defer s.Close()
	src := values(3*5, 4, -1, 1)
	table := s.FromHost(3, 5, src)
	dst := s.New(4, 5)
	s.Gather(dst, table, []int32{2, 2, 0, 1})
	want := append(append(append(wide(src[10:15]), wide(src[10:15])...), wide(src[0:5])...), wide(src[5:10])...)
	near(t, "stream-tensor table", read(t, s, dst), want, 5, 0, 0)
}

func layerNormRef(x, w, b []float64, rows, cols int, eps float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		mean := 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(cols)
		variance := 0.0
		for _, v := range row {
			variance += (v - mean) * (v - mean)
		}
		variance /= float64(cols)
		inv := 1 / math.Sqrt(variance+eps)
		for j, v := range row {
			o := (v - mean) * inv * w[j]
			if b != nil {
				o += b[j]
			}
			out[r*cols+j] = o
		}
	}
	return out
}

func (c *suite) layerNorm(t *testing.T) {
	for _, tc := range []struct {
		rows, cols int
		bias       bool
		inPlace    bool
		dtype      backend.DType
		eps        float32
	}{
		{1, 1, false, false, backend.F32, 1e-5},
		{3, 7, true, false, backend.F32, 1e-5},
		{5, 96, true, true, backend.F16, 1e-5},
		{2, 257, false, true, backend.BF16, 1e-12},
		{4, 1024, true, false, backend.F32, 0},
	} {
		name := fmt.Sprintf("%+v", tc)
		xs := values(tc.rows*tc.cols, uint64(tc.cols), -4, 4)
		xs[0] += 50 // an offset row: the mean must be subtracted before squaring
		w, wr := c.weight(t, "ln.weight", tc.dtype, 1, tc.cols, values(tc.cols, 5, 0.5, 1.5))
		var b backend.Tensor
		var br []float64
		if tc.bias {
			b, br = c.weight(t, "ln.bias", tc.dtype, 1, tc.cols, values(tc.cols, 6, -1, 1))
		}
		s := c.be.NewStream()
		x := s.FromHost(tc.rows, tc.cols, xs)
		dst := x
		if !tc.inPlace {
			dst = s.New(tc.rows, tc.cols)
		}
		s.LayerNorm(dst, x, w, b, tc.eps)
		// One column: x − mean = 0 exactly, so the output is the bias.
		want := layerNormRef(wide(xs), wr, br, tc.rows, tc.cols, float64(tc.eps))
		near(t, name, read(t, s, dst), want, tc.cols, 2e-5, 2e-5)
		s.Close()
	}
}

func act(a backend.Activation, v float64) float64 {
	switch a {
	case backend.GELU:
		return 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
	case backend.ReLU:
		return math.Max(v, 0)
	}
	return v
}

func (c *suite) linear(t *testing.T) {
	for _, tc := range []struct {
		m, k, n int
		dtype   backend.DType
		bias    bool
		act     backend.Activation
	}{
		{1, 1, 1, backend.F32, false, backend.Identity},
		{1, 13, 5, backend.F16, true, backend.GELU},
		{7, 13, 5, backend.F32, true, backend.ReLU},
		{7, 64, 70, backend.F16, false, backend.Identity},
		{33, 67, 70, backend.BF16, true, backend.GELU},
		{97, 96, 130, backend.F16, true, backend.GELU},
		{64, 128, 32, backend.F32, false, backend.ReLU},
	} {
		name := fmt.Sprintf("%+v", tc)
		xs := values(tc.m*tc.k, uint64(tc.k), -1, 1)
		w, wr := c.weight(t, "w", tc.dtype, tc.n, tc.k, values(tc.n*tc.k, uint64(tc.n), -1, 1))
		var b backend.Tensor
		var br []float64
		if tc.bias {
			b, br = c.weight(t, "b", tc.dtype, 1, tc.n, values(tc.n, 9, -1, 1))
		}
		s := c.be.NewStream()
		x := s.FromHost(tc.m, tc.k, xs)
		dst := s.New(tc.m, tc.n)
		s.Linear(dst, x, w, b, tc.act)
		want := make([]float64, tc.m*tc.n)
		for i := 0; i < tc.m; i++ {
			for j := 0; j < tc.n; j++ {
				sum := 0.0
				for l := 0; l < tc.k; l++ {
					sum += float64(xs[i*tc.k+l]) * wr[j*tc.k+l]
				}
				if br != nil {
					sum += br[j]
				}
				want[i*tc.n+j] = act(tc.act, sum)
			}
		}
		// float32 accumulation of K products of magnitude ≤ 1.
		near(t, name, read(t, s, dst), want, tc.n, 2e-6*float64(tc.k), 1e-5)
		s.Close()
	}
}

func (c *suite) add(t *testing.T) {
	for _, d := range [][2]int{{1, 1}, {3, 37}, {19, 768}} {
		for _, form := range []string{"new", "dst=a", "dst=b", "a=b"} {
			as, bs := values(d[0]*d[1], 1, -5, 5), values(d[0]*d[1], 2, -5, 5)
			s := c.be.NewStream()
			a := s.FromHost(d[0], d[1], as)
			b := s.FromHost(d[0], d[1], bs)
			want := make([]float64, len(as))
			for i := range as {
				want[i] = float64(as[i]) + float64(bs[i])
			}
			var dst backend.Tensor
			switch form {
			case "new":
				dst = s.New(d[0], d[1])
				s.Add(dst, a, b)
			case "dst=a":
				dst = a
				s.Add(a, a, b)
			case "dst=b":
				dst = b
				s.Add(b, a, b)
			case "a=b":
				dst = s.New(d[0], d[1])
				s.Add(dst, a, a)
				for i := range as {
					want[i] = 2 * float64(as[i])
				}
			}
			// One float32 rounding of the exact sum.
			near(t, fmt.Sprintf("%v %s", d, form), read(t, s, dst), want, d[1], 0, 6e-8)
			s.Close()
		}
	}
}

func (c *suite) activate(t *testing.T) {
	for _, a := range []backend.Activation{backend.Identity, backend.GELU, backend.ReLU} {
		for _, d := range [][2]int{{1, 1}, {3, 257}, {2, 5000}} {
			for _, inPlace := range []bool{false, true} {
				xs := values(d[0]*d[1], uint64(d[1]), -10, 10)
				xs[0] = 0
				s := c.be.NewStream()
				x := s.FromHost(d[0], d[1], xs)
				dst := x
				if !inPlace {
					dst = s.New(d[0], d[1])
				}
				s.Activate(dst, x, a)
				want := make([]float64, len(xs))
				for i, v := range xs {
					want[i] = act(a, float64(v))
				}
				// GELU: erf within an ulp and a few roundings; absolute floor
				// on the negative tail, where erf's error is ≈ ulp(1).
				near(t, fmt.Sprintf("%v %v in place %v", a, d, inPlace), read(t, s, dst), want, d[1], 1e-7, 1e-6)
				s.Close()
			}
		}
	}
}

func softmaxRef(x []float64, rows, cols int) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		for j, v := range row {
			out[r*cols+j] = math.Exp(v-mx) / sum
		}
	}
	return out
}

func (c *suite) softmax(t *testing.T) {
	for _, d := range [][2]int{{1, 1}, {3, 2}, {5, 33}, {2, 1000}, {1, 4099}} {
		for _, inPlace := range []bool{false, true} {
			xs := values(d[0]*d[1], uint64(d[1]), -8, 8)
			xs[len(xs)-1] = 80 // max-subtraction: exp(80) overflows float32
			if d[1] > 1 {
				xs[1] = -1e4 // a masked logit, as the scorer pads
			}
			s := c.be.NewStream()
			x := s.FromHost(d[0], d[1], xs)
			dst := x
			if !inPlace {
				dst = s.New(d[0], d[1])
			}
			s.Softmax(dst, x)
			near(t, fmt.Sprintf("%v in place %v", d, inPlace), read(t, s, dst), softmaxRef(wide(xs), d[0], d[1]), d[1], 1e-9, 3e-6)
			s.Close()
		}
	}
}

func (c *suite) geglu(t *testing.T) {
	for _, d := range [][2]int{{1, 1}, {3, 96}, {17, 33}, {5, 1152}} {
		rows, inner := d[0], d[1]
		xs := values(rows*2*inner, uint64(inner), -4, 4)
		s := c.be.NewStream()
		x := s.FromHost(rows, 2*inner, xs)
		dst := s.New(rows, inner)
		s.GeGLU(dst, x)
		want := make([]float64, rows*inner)
		for r := 0; r < rows; r++ {
			for j := 0; j < inner; j++ {
				want[r*inner+j] = act(backend.GELU, float64(xs[r*2*inner+j])) * float64(xs[r*2*inner+inner+j])
			}
		}
		near(t, fmt.Sprint(d), read(t, s, dst), want, inner, 4e-7, 2e-6)
		s.Close()
	}
}

// RopeRef rotates q and k as backend.RopeParams states, with inv_freq and
// the angle rounded to float32 as PyTorch computes them.
func RopeRef(qkv []float64, rows int, p backend.RopeParams) []float64 {
	out := append([]float64(nil), qkv...)
	width := p.Heads * p.HeadDim
	half := p.HeadDim / 2
	for r := 0; r < rows; r++ {
		pos := r % p.SeqLen
		for part := 0; part < 2; part++ { // q, k; v stays
			for h := 0; h < p.Heads; h++ {
				base := r*3*width + part*width + h*p.HeadDim
				for j := 0; j < half; j++ {
					inv := float32(1 / math.Pow(p.Theta, float64(2*j)/float64(p.HeadDim)))
					angle := float64(float32(pos) * inv)
					cos, sin := math.Cos(angle), math.Sin(angle)
					a, b := qkv[base+j], qkv[base+j+half]
					out[base+j] = a*cos - b*sin
					out[base+j+half] = b*cos + a*sin
				}
			}
		}
	}
	return out
}

func (c *suite) rope(t *testing.T) {
	for _, tc := range []struct {
		batch int
		p     backend.RopeParams
	}{
		{1, backend.RopeParams{Layout: backend.Layout{SeqLen: 1}, Heads: 1, HeadDim: 2, Theta: 10000}},
		{2, backend.RopeParams{Layout: backend.Layout{SeqLen: 7}, Heads: 3, HeadDim: 8, Theta: 10000}},
		{3, backend.RopeParams{Layout: backend.Layout{SeqLen: 19}, Heads: 2, HeadDim: 64, Theta: 160000}},
		{1, backend.RopeParams{Layout: backend.Layout{SeqLen: 40}, Heads: 1, HeadDim: 40, Theta: 10000}},
	} {
		rows, cols := tc.batch*tc.p.SeqLen, 3*tc.p.Heads*tc.p.HeadDim
		xs := values(rows*cols, uint64(cols), -2, 2)
		s := c.be.NewStream()
		qkv := s.FromHost(rows, cols, xs)
		s.Rope(qkv, tc.p)
		// Angles up to 39 rad: float32 sin/cos of them are within a few
		// ulp of the angle (≈ 4e-6 absolute at 39), times |x| ≤ 2·√2.
		near(t, fmt.Sprintf("batch %d %+v", tc.batch, tc.p), read(t, s, qkv), RopeRef(wide(xs), rows, tc.p), cols, 2e-5, 2e-6)
		s.Close()
	}
}

// AttentionRef is masked scaled-dot-product attention per
// backend.AttentionParams; padded query rows are zero.
func AttentionRef(qkv []float64, p backend.AttentionParams) []float64 {
	width := p.Heads * p.HeadDim
	out := make([]float64, len(p.Lengths)*p.SeqLen*width)
	for b, n := range p.Lengths {
		for h := 0; h < p.Heads; h++ {
			for i := 0; i < n; i++ {
				q := qkv[(b*p.SeqLen+i)*3*width+h*p.HeadDim:]
				scores := make([]float64, n)
				mx := math.Inf(-1)
				for j := 0; j < n; j++ {
					scores[j] = math.Inf(-1)
					if p.Sliding && (i-j > p.Radius || j-i > p.Radius) {
						continue
					}
					k := qkv[(b*p.SeqLen+j)*3*width+width+h*p.HeadDim:]
					dot := 0.0
					for d := 0; d < p.HeadDim; d++ {
						dot += q[d] * k[d]
					}
					scores[j] = float64(p.Scale) * dot
					mx = math.Max(mx, scores[j])
				}
				sum := 0.0
				for j := range scores {
					scores[j] = math.Exp(scores[j] - mx)
					sum += scores[j]
				}
				o := out[(b*p.SeqLen+i)*width+h*p.HeadDim:]
				for j := 0; j < n; j++ {
					v := qkv[(b*p.SeqLen+j)*3*width+2*width+h*p.HeadDim:]
					for d := 0; d < p.HeadDim; d++ {
						o[d] += scores[j] / sum * v[d]
					}
				}
			}
		}
	}
	return out
}

func (c *suite) attention(t *testing.T) {
	for _, p := range []backend.AttentionParams{
		{Layout: backend.Layout{SeqLen: 1, Lengths: []int{1}}, Heads: 1, HeadDim: 8, Scale: 0.35},
		{Layout: backend.Layout{SeqLen: 7, Lengths: []int{7, 3, 1}}, Heads: 2, HeadDim: 8, Scale: 0.35, Sliding: true, Radius: 2},
		{Layout: backend.Layout{SeqLen: 19, Lengths: []int{19, 11}}, Heads: 3, HeadDim: 64, Scale: 0.125},
		{Layout: backend.Layout{SeqLen: 33, Lengths: []int{20, 33}}, Heads: 1, HeadDim: 16, Scale: 0.25, Sliding: true, Radius: 4},
		{Layout: backend.Layout{SeqLen: 40, Lengths: []int{40}}, Heads: 2, HeadDim: 32, Scale: 0.18, Sliding: true, Radius: 64},
	} {
		rows, cols := len(p.Lengths)*p.SeqLen, 3*p.Heads*p.HeadDim
		xs := values(rows*cols, uint64(cols+p.SeqLen), -2, 2)
		s := c.be.NewStream()
		qkv := s.FromHost(rows, cols, xs)
		dst := s.New(rows, p.Heads*p.HeadDim)
		s.Attention(dst, qkv, p)
		near(t, fmt.Sprintf("%+v", p), read(t, s, dst), AttentionRef(wide(xs), p), p.Heads*p.HeadDim, 2e-6, 2e-5)
		s.Close()
	}
}

// packedRowsOf keeps the real rows of a right-padded [B·seqLen, cols]
// matrix: the packed layout of the same batch.
func packedRowsOf[T any](xs []T, lengths []int, seqLen, cols int) []T {
	var out []T
	for b, n := range lengths {
		out = append(out, xs[b*seqLen*cols:(b*seqLen+n)*cols]...)
	}
	return out
}

// packed runs Rope and Attention on packed batches (rows back to back, no
// padding) against the padded references' real rows, where the backend
// takes packed batches; elsewhere it checks they are refused.
func (c *suite) packed(t *testing.T) {
	cases := []backend.AttentionParams{
		{Layout: backend.Layout{SeqLen: 7, Lengths: []int{7, 3, 1}}, Heads: 2, HeadDim: 8, Scale: 0.35, Sliding: true, Radius: 2},
		{Layout: backend.Layout{SeqLen: 19, Lengths: []int{11, 19}}, Heads: 3, HeadDim: 64, Scale: 0.125},
		{Layout: backend.Layout{SeqLen: 33, Lengths: []int{20, 1, 33, 5}}, Heads: 1, HeadDim: 16, Scale: 0.25, Sliding: true, Radius: 4},
	}
	s := c.be.NewStream()
	takes := backend.PacksRows(s)
	s.Close()
	for _, p := range cases {
		padRows, cols, width := len(p.Lengths)*p.SeqLen, 3*p.Heads*p.HeadDim, p.Heads*p.HeadDim
		xs := values(padRows*cols, uint64(cols+p.SeqLen+1), -2, 2)
		rope := backend.RopeParams{Layout: backend.Layout{SeqLen: p.SeqLen}, Heads: p.Heads, HeadDim: p.HeadDim, Theta: 10000}
		packedRope := rope
		packedRope.Packed, packedRope.Lengths = true, p.Lengths
		packedAttn := p
		packedAttn.Packed = true
		in := packedRowsOf(xs, p.Lengths, p.SeqLen, cols)
		rows := len(in) / cols
		s := c.be.NewStream()
		qkv := s.FromHost(rows, cols, in)
		dst := s.New(rows, width)
		s.Rope(qkv, packedRope)
		if !takes {
			if err := s.Err(); !errors.Is(err, backend.ErrShape) {
				t.Errorf("%+v: packed Rope on a stream without PacksRows: err %v, want ErrShape", p, err)
			}
			s.Close()
			continue
		}
		roped := RopeRef(wide(xs), padRows, rope)
		near(t, fmt.Sprintf("packed rope %+v", packedRope), read(t, s, qkv), packedRowsOf(roped, p.Lengths, p.SeqLen, cols), cols, 2e-5, 2e-6)
		s.Attention(dst, qkv, packedAttn)
		want := packedRowsOf(AttentionRef(roped, p), p.Lengths, p.SeqLen, width)
		near(t, fmt.Sprintf("packed attention %+v", p), read(t, s, dst), want, width, 2e-6, 2e-5)
		s.Close()
	}
	if !takes {
		return
	}
	// A packed batch whose lengths do not add up to the rows is refused.
	s = c.be.NewStream()
	defer s.Close()
	qkv := s.New(10, 3*8)
	s.Attention(s.New(10, 8), qkv, backend.AttentionParams{Layout: backend.Layout{SeqLen: 7, Lengths: []int{7, 2}, Packed: true}, Heads: 1, HeadDim: 8, Scale: 1})
	if err := s.Err(); !errors.Is(err, backend.ErrShape) {
		t.Errorf("packed attention of 9 tokens over 10 rows: err %v, want ErrShape", err)
	}
}

// actFeaturesRef follows backend.Stream.ActFeatures' statement of upstream.
func actFeaturesRef(cls []float64, d int, logits []float64, counts []int) []float64 {
	var out []float64
	at := 0
	for b, k := range counts {
		z := logits[at : at+k]
		at += k
		p := softmaxRef(z, 1, k)
		kk := float64(max(2, k))
		ent := 0.0
		for _, v := range p {
			ent -= v * math.Log(math.Max(v, 1e-9))
		}
		ent /= math.Log(kk)
		top1, top2 := 0.0, 0.0
		for _, v := range p {
			if v > top1 {
				top1, top2 = v, top1
			} else if v > top2 {
				top2 = v
			}
		}
		out = append(out, cls[b*d:(b+1)*d]...)
		out = append(out, top1, top1-top2, ent, kk/255)
	}
	return out
}

func (c *suite) actFeatures(t *testing.T) {
	for _, tc := range []struct {
		d      int
		counts []int
	}{
		{1, []int{1}},
		{5, []int{2, 1, 7}},
		{768, []int{3, 12}},
		{13, []int{255, 2}},
	} {
		total := 0
		for _, k := range tc.counts {
			total += k
		}
		cs := values(len(tc.counts)*tc.d, uint64(tc.d), -1, 1)
		ls := values(total, uint64(total), -6, 6)
		ls[0] = ls[min(1, total-1)] // a tie for the top two
		s := c.be.NewStream()
		cls := s.FromHost(len(tc.counts), tc.d, cs)
		logits := s.FromHost(1, total, ls)
		dst := s.New(len(tc.counts), tc.d+4)
		s.ActFeatures(dst, cls, logits, tc.counts)
		near(t, fmt.Sprintf("d %d counts %v", tc.d, tc.counts), read(t, s, dst), actFeaturesRef(wide(cs), tc.d, wide(ls), tc.counts), tc.d+4, 1e-6, 1e-5)
		s.Close()
	}
}

// rejections runs each operation on operands its contract refuses, each on
// a fresh stream: the stream must record an error wrapping want that names
// the operation, and Read must return it.
func (c *suite) rejections(t *testing.T) {
	w8, _ := c.weight(t, "w", backend.F32, 3, 8, values(24, 1, -1, 1))
	row8, _ := c.weight(t, "row8", backend.F32, 1, 8, values(8, 2, -1, 1))
	row4, _ := c.weight(t, "row4", backend.F32, 1, 4, values(4, 3, -1, 1))
	two8, _ := c.weight(t, "two8", backend.F32, 2, 8, values(16, 4, -1, 1))
	rope := backend.RopeParams{Layout: backend.Layout{SeqLen: 3}, Heads: 2, HeadDim: 4, Theta: 10000}
	attn := backend.AttentionParams{Layout: backend.Layout{SeqLen: 3, Lengths: []int{3, 1}}, Heads: 2, HeadDim: 4, Scale: 0.5, Sliding: true, Radius: 1}
	withAttn := func(edit func(*backend.AttentionParams)) backend.AttentionParams {
		p := attn
		p.Lengths = append([]int(nil), attn.Lengths...)
		edit(&p)
		return p
	}
	withRope := func(edit func(*backend.RopeParams)) backend.RopeParams {
		p := rope
		edit(&p)
		return p
	}
	type env struct {
		s               backend.Stream
		x, sq, qkv, hds backend.Tensor // [4, 8], [3, 3], [6, 24], [6, 8]
	}
	cases := []struct {
		name string
		op   string // the contract's op name, which the error must carry
		run  func(e env)
		want error
	}{
		{"new zero rows", "new", func(e env) { e.s.New(0, 3) }, backend.ErrShape},
		{"new negative cols", "new", func(e env) { e.s.New(2, -1) }, backend.ErrShape},
		{"new over int32 elements", "new", func(e env) { e.s.New(1<<16, 1<<16) }, backend.ErrShape},
		{"fromHost short", "fromHost", func(e env) { e.s.FromHost(2, 3, make([]float32, 5)) }, backend.ErrShape},

		{"gather empty index", "gather", func(e env) { e.s.Gather(e.s.New(1, 8), w8, nil) }, backend.ErrShape},
		{"gather width", "gather", func(e env) { e.s.Gather(e.s.New(2, 7), w8, []int32{0, 1}) }, backend.ErrShape},
		{"gather index high", "gather", func(e env) { e.s.Gather(e.s.New(2, 8), w8, []int32{0, 3}) }, backend.ErrShape},
		{"gather index negative", "gather", func(e env) { e.s.Gather(e.s.New(1, 8), w8, []int32{-1}) }, backend.ErrShape},
		{"gather dst is the table", "gather", func(e env) { e.s.Gather(e.x, e.x, []int32{0, 1, 2, 3}) }, backend.ErrShape},
		{"gather nil table", "gather", func(e env) { e.s.Gather(e.x, nil, []int32{0}) }, backend.ErrShape},

		{"layerNorm dst", "layerNorm", func(e env) { e.s.LayerNorm(e.s.New(4, 7), e.x, row8, nil, 1e-5) }, backend.ErrShape},
		{"layerNorm weight rows", "layerNorm", func(e env) { e.s.LayerNorm(e.x, e.x, two8, nil, 1e-5) }, backend.ErrShape},
		{"layerNorm bias", "layerNorm", func(e env) { e.s.LayerNorm(e.x, e.x, row8, row4, 1e-5) }, backend.ErrShape},
		{"layerNorm eps negative", "layerNorm", func(e env) { e.s.LayerNorm(e.x, e.x, row8, nil, -1e-5) }, backend.ErrShape},
		{"layerNorm eps NaN", "layerNorm", func(e env) { e.s.LayerNorm(e.x, e.x, row8, nil, float32(math.NaN())) }, backend.ErrShape},
		{"layerNorm eps inf", "layerNorm", func(e env) { e.s.LayerNorm(e.x, e.x, row8, nil, float32(math.Inf(1))) }, backend.ErrShape},
		{"layerNorm nil weight", "layerNorm", func(e env) { e.s.LayerNorm(e.x, e.x, nil, nil, 1e-5) }, backend.ErrShape},

		{"linear K", "linear", func(e env) { e.s.Linear(e.s.New(4, 3), e.x, e.s.New(3, 7), nil, backend.Identity) }, backend.ErrShape},
		{"linear dst", "linear", func(e env) { e.s.Linear(e.s.New(4, 4), e.x, w8, nil, backend.Identity) }, backend.ErrShape},
		{"linear bias", "linear", func(e env) { e.s.Linear(e.s.New(4, 3), e.x, w8, row8, backend.Identity) }, backend.ErrShape},
		{"linear dst is x", "linear", func(e env) { e.s.Linear(e.sq, e.sq, e.s.New(3, 3), nil, backend.Identity) }, backend.ErrShape},
		{"linear dst is weight", "linear", func(e env) { e.s.Linear(e.sq, e.s.New(3, 3), e.sq, nil, backend.Identity) }, backend.ErrShape},
		{"linear activation", "linear", func(e env) { e.s.Linear(e.s.New(4, 3), e.x, w8, nil, backend.Activation(7)) }, backend.ErrShape},
		{"linear nil dst", "linear", func(e env) { e.s.Linear(nil, e.x, w8, nil, backend.Identity) }, backend.ErrShape},

		{"add a", "add", func(e env) { e.s.Add(e.x, e.s.New(4, 7), e.s.New(4, 8)) }, backend.ErrShape},
		{"add b", "add", func(e env) { e.s.Add(e.x, e.s.New(4, 8), e.s.New(8, 4)) }, backend.ErrShape},
		{"activate shape", "activate", func(e env) { e.s.Activate(e.s.New(4, 7), e.x, backend.ReLU) }, backend.ErrShape},
		{"activate unknown", "activate", func(e env) { e.s.Activate(e.x, e.x, backend.Activation(3)) }, backend.ErrShape},
		{"softmax shape", "softmax", func(e env) { e.s.Softmax(e.s.New(8, 4), e.x) }, backend.ErrShape},
		{"geglu cols", "geglu", func(e env) { e.s.GeGLU(e.s.New(4, 3), e.x) }, backend.ErrShape},
		{"geglu rows", "geglu", func(e env) { e.s.GeGLU(e.s.New(3, 4), e.x) }, backend.ErrShape},

		{"rope odd headDim", "rope", func(e env) {
			e.s.Rope(e.s.New(6, 3*2*3), withRope(func(p *backend.RopeParams) { p.HeadDim = 3 }))
		}, backend.ErrShape},
		{"rope zero seqLen", "rope", func(e env) { e.s.Rope(e.qkv, withRope(func(p *backend.RopeParams) { p.SeqLen = 0 })) }, backend.ErrShape},
		{"rope zero heads", "rope", func(e env) { e.s.Rope(e.qkv, withRope(func(p *backend.RopeParams) { p.Heads = 0 })) }, backend.ErrShape},
		{"rope cols", "rope", func(e env) { e.s.Rope(e.hds, rope) }, backend.ErrShape},
		{"rope rows", "rope", func(e env) { e.s.Rope(e.s.New(5, 24), rope) }, backend.ErrShape},
		{"rope theta zero", "rope", func(e env) { e.s.Rope(e.qkv, withRope(func(p *backend.RopeParams) { p.Theta = 0 })) }, backend.ErrShape},
		{"rope theta NaN", "rope", func(e env) { e.s.Rope(e.qkv, withRope(func(p *backend.RopeParams) { p.Theta = math.NaN() })) }, backend.ErrShape},
		{"rope theta inf", "rope", func(e env) { e.s.Rope(e.qkv, withRope(func(p *backend.RopeParams) { p.Theta = math.Inf(1) })) }, backend.ErrShape},

		{"attention radius", "attention", func(e env) {
			e.s.Attention(e.hds, e.qkv, withAttn(func(p *backend.AttentionParams) { p.Radius = -1 }))
		}, backend.ErrShape},
		{"attention zero headDim", "attention", func(e env) {
			e.s.Attention(e.hds, e.qkv, withAttn(func(p *backend.AttentionParams) { p.HeadDim = 0 }))
		}, backend.ErrShape},
		{"attention batch", "attention", func(e env) {
			e.s.Attention(e.hds, e.qkv, withAttn(func(p *backend.AttentionParams) { p.Lengths = []int{3} }))
		}, backend.ErrShape},
		{"attention no rows", "attention", func(e env) {
			e.s.Attention(e.hds, e.qkv, withAttn(func(p *backend.AttentionParams) { p.Lengths = nil }))
		}, backend.ErrShape},
		{"attention dst", "attention", func(e env) { e.s.Attention(e.s.New(6, 9), e.qkv, attn) }, backend.ErrShape},
		{"attention length zero", "attention", func(e env) {
			e.s.Attention(e.hds, e.qkv, withAttn(func(p *backend.AttentionParams) { p.Lengths[1] = 0 }))
		}, backend.ErrShape},
		{"attention length long", "attention", func(e env) {
			e.s.Attention(e.hds, e.qkv, withAttn(func(p *backend.AttentionParams) { p.Lengths[0] = 4 }))
		}, backend.ErrShape},
		{"attention nil qkv", "attention", func(e env) { e.s.Attention(e.hds, nil, attn) }, backend.ErrShape},

		{"actFeatures zero count", "actFeatures", func(e env) {
			e.s.ActFeatures(e.s.New(2, 12), e.s.New(2, 8), e.s.New(1, 5), []int{5, 0})
		}, backend.ErrShape},
		{"actFeatures logits", "actFeatures", func(e env) {
			e.s.ActFeatures(e.s.New(2, 12), e.s.New(2, 8), e.s.New(1, 4), []int{2, 3})
		}, backend.ErrShape},
		{"actFeatures counts", "actFeatures", func(e env) {
			e.s.ActFeatures(e.s.New(2, 12), e.s.New(2, 8), e.s.New(1, 5), []int{5})
		}, backend.ErrShape},
		{"actFeatures dst", "actFeatures", func(e env) {
			e.s.ActFeatures(e.s.New(2, 11), e.s.New(2, 8), e.s.New(1, 5), []int{2, 3})
		}, backend.ErrShape},
		{"actFeatures dst is cls", "actFeatures", func(e env) {
			cls := e.s.New(2, 12)
			e.s.ActFeatures(cls, cls, e.s.New(1, 5), []int{2, 3})
		}, backend.ErrShape},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := c.be.NewStream()
			defer s.Close()
			e := env{s: s, x: s.New(4, 8), sq: s.New(3, 3), qkv: s.New(6, 3*2*4), hds: s.New(6, 2*4)}
			if err := s.Err(); err != nil {
				t.Fatalf("valid operands: %v", err)
			}
			tc.run(e)
			err := s.Err()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.op) {
				t.Errorf("error %q does not name the operation %q", err, tc.op)
			}
			if rerr := s.Read(context.Background(), e.x, make([]float32, 32)); !errors.Is(rerr, tc.want) {
				t.Errorf("Read after the refusal: err = %v, want the recorded error", rerr)
			}
		})
	}
	t.Run("upload", func(t *testing.T) {
		for _, u := range []struct {
			name       string
			dtype      backend.DType
			rows, cols int
			size       int
			want       error
		}{
			{"short", backend.F16, 2, 3, 11, backend.ErrShape},
			{"long", backend.F32, 2, 3, 28, backend.ErrShape},
			{"zero rows", backend.F32, 0, 3, 0, backend.ErrShape},
			{"unknown dtype", backend.DType(99), 2, 3, 24, backend.ErrDType},
		} {
			if _, err := c.be.Upload("w", u.dtype, u.rows, u.cols, make([]byte, u.size)); !errors.Is(err, u.want) || !strings.Contains(err.Error(), "upload w") {
				t.Errorf("%s: err = %v, want %v naming the weight", u.name, err, u.want)
			}
		}
	})
	t.Run("read", func(t *testing.T) {
		s := c.be.NewStream()
		defer s.Close()
		x := s.New(4, 8)
		if err := s.Read(context.Background(), x, make([]float32, 31)); !errors.Is(err, backend.ErrShape) {
			t.Errorf("Read into 31 values of a [4, 8] tensor: err = %v, want ErrShape", err)
		}
	})
}

// stickyError: after the first error the stream records nothing more, and
// Read returns that first error.
func (c *suite) stickyError(t *testing.T) {
	s := c.be.NewStream()
	defer s.Close()
	x := s.FromHost(2, 2, []float32{1, 2, 3, 4})
	s.Linear(s.New(2, 2), x, s.New(3, 3), nil, backend.Identity) // K mismatch
	first := s.Err()
	if !errors.Is(first, backend.ErrShape) {
		t.Fatalf("err = %v, want ErrShape", first)
	}
	s.Softmax(x, s.New(5, 5))
	if err := s.Err(); err != first {
		t.Errorf("second error replaced the first: %v", err)
	}
	if err := s.Read(context.Background(), x, make([]float32, 4)); err != first {
		t.Errorf("Read err = %v, want the first error %v", err, first)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s2 := c.be.NewStream()
	defer s2.Close()
	y := s2.FromHost(1, 3, []float32{1, 2, 3})
	s2.Softmax(y, y)
	if err := s2.Read(ctx, y, make([]float32, 3)); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a canceled context: err = %v, want context.Canceled", err)
	}
}

// foreignTensor is a handle no backend made.
type foreignTensor struct{ rows, cols int }

func (f *foreignTensor) Rows() int { return f.rows }
func (f *foreignTensor) Cols() int { return f.cols }

func (c *suite) foreignAndClosed(t *testing.T) {
	s := c.be.NewStream()
	x := s.New(2, 4)
	s.Add(x, x, &foreignTensor{2, 4})
	if err := s.Err(); !errors.Is(err, backend.ErrForeignTensor) {
		t.Errorf("a foreign handle: err = %v, want ErrForeignTensor", err)
	}
	s.Close()
	closed := c.be.NewStream()
	closed.Close()
	closed.Softmax(closed.New(1, 2), closed.New(1, 2))
	if err := closed.Err(); !errors.Is(err, backend.ErrForeignTensor) {
		t.Errorf("an op on a closed stream: err = %v, want ErrForeignTensor", err)
	}
}
