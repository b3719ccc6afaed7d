package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// TestRope holds the rotation to the float64 formula of HF ModernBERT's
// apply_rotary_pos_emb (rotate_half). Angles are rounded to float32 the way
// PyTorch rounds them, so the reference does too; a second check against
// unrounded float64 angles bounds the whole float32 error.
func TestRope(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const batch, seqLen, heads, headDim = 2, 300, 2, 8
	for _, theta := range []float64{10000, 160000} {
		s := New().NewStream()
		width := heads * headDim
		xv := randomValues(rng, batch*seqLen*3*width)
		qkv := s.FromHost(batch*seqLen, 3*width, xv)
		s.Rope(qkv, backend.RopeParams{Layout: backend.Layout{SeqLen: seqLen}, Heads: heads, HeadDim: headDim, Theta: theta})
		got := read(t, s, qkv)
		for _, float32Angles := range []bool{true, false} {
			want := make([]float64, len(xv))
			for i, v := range xv {
				want[i] = float64(v)
			}
			half := headDim / 2
			for r := range batch * seqLen {
				pos := r % seqLen
				for h := range 2 * heads { // q and k heads; v untouched
					base := r*3*width + h*headDim
					for j := range half {
						invFreq := math.Pow(theta, -float64(2*j)/headDim)
						angle := float64(pos) * invFreq
						if float32Angles {
							angle = float64(float32(pos) * float32(1/float32(math.Pow(theta, float64(float32(2*j)/headDim)))))
						}
						a, b := float64(xv[base+j]), float64(xv[base+half+j])
						want[base+j] = a*math.Cos(angle) - b*math.Sin(angle)
						want[base+half+j] = b*math.Cos(angle) + a*math.Sin(angle)
					}
				}
			}
			tol := 1e-6
			if !float32Angles {
				tol = 1e-4 // float32 angles near position 300 are off by ~1e-5
			}
			checkClose(t, fmt.Sprintf("theta %v float32 angles %v", theta, float32Angles), got, want, tol)
		}
	}
}

// attentionRef is a naive float64 attention with the masks of
// backend.AttentionParams.
func attentionRef(qkv []float32, p backend.AttentionParams) []float64 {
	width := p.Heads * p.HeadDim
	out := make([]float64, len(p.Lengths)*p.SeqLen*width)
	at := func(b, pos, part, h, d int) float64 {
		return float64(qkv[(b*p.SeqLen+pos)*3*width+part*width+h*p.HeadDim+d])
	}
	for b, n := range p.Lengths {
		for h := range p.Heads {
			for i := range n {
				var weights []float64
				var keys []int
				top := math.Inf(-1)
				for j := range n {
					if p.Sliding && (j-i > p.Radius || i-j > p.Radius) {
						continue
					}
					var sc float64
					for d := range p.HeadDim {
						sc += at(b, i, 0, h, d) * at(b, j, 1, h, d)
					}
					sc *= float64(p.Scale)
					weights, keys = append(weights, sc), append(keys, j)
					top = max(top, sc)
				}
				var sum float64
				for w := range weights {
					weights[w] = math.Exp(weights[w] - top)
					sum += weights[w]
				}
				for d := range p.HeadDim {
					var acc float64
					for w, j := range keys {
						acc += weights[w] / sum * at(b, j, 2, h, d)
					}
					out[(b*p.SeqLen+i)*width+h*p.HeadDim+d] = acc
				}
			}
		}
	}
	return out
}

// attentionPath is one way Attention can run: the SIMD kernels (simd set)
// or the portable path over one GEMM tile kernel.
type attentionPath struct {
	name string
	simd attentionFunc
	tile gemmTileFunc
}

// attentionPaths lists the SIMD attention where this build and CPU have
// one, then the portable path over each GEMM tile kernel.
func attentionPaths(t testing.TB) []attentionPath {
	var paths []attentionPath
	if attnSIMD != nil {
		paths = append(paths, attentionPath{name: "simd", simd: attnSIMD, tile: gemmTile})
	} else {
		t.Logf("no SIMD attention in this build or on this CPU: testing the portable path only")
	}
	for _, k := range gemmKernels(t) {
		paths = append(paths, attentionPath{name: "portable-" + k.name, tile: k.tile})
	}
	return paths
}

// use makes Attention run path until the test ends.
func (path attentionPath) use(t testing.TB) {
	saved := attnSIMD
	attnSIMD = path.simd
	t.Cleanup(func() { attnSIMD = saved })
	useGemmTile(t, path.tile)
}

// attentionShapes hit the edges of both paths: query blocks of 48 (and the
// SIMD path's 24 and 12) and tiles of 6 queries, key tiles of 64 and
// vectors of 16, lengths 1, 2, 31, 33, 93, 200 below SeqLen, sliding
// windows that start or end inside a block or cover the row, radius 0,
// and head dims 2 … 80 (a ragged 16-lane vector, two 64-wide tiles).
var attentionShapes = []backend.AttentionParams{
	{Layout: backend.Layout{SeqLen: 9, Lengths: []int{9}}, Heads: 1, HeadDim: 4},
	{Layout: backend.Layout{SeqLen: 20, Lengths: []int{20, 7, 1}}, Heads: 3, HeadDim: 8},
	{Layout: backend.Layout{SeqLen: 40, Lengths: []int{40, 23}}, Heads: 2, HeadDim: 6, Sliding: true, Radius: 8},
	{Layout: backend.Layout{SeqLen: 12, Lengths: []int{12, 5}}, Heads: 2, HeadDim: 4, Sliding: true, Radius: 0},
	{Layout: backend.Layout{SeqLen: 10, Lengths: []int{10}}, Heads: 2, HeadDim: 4, Sliding: true, Radius: 64}, // window wider than the row
	{Layout: backend.Layout{SeqLen: 100, Lengths: []int{100, 49, 48, 47, 1}}, Heads: 2, HeadDim: 64},
	{Layout: backend.Layout{SeqLen: 100, Lengths: []int{100, 49, 48, 47}}, Heads: 2, HeadDim: 17 + 1, Sliding: true, Radius: 10},
	{Layout: backend.Layout{SeqLen: 150, Lengths: []int{150, 97}}, Heads: 1, HeadDim: 8, Sliding: true, Radius: 30},
	{Layout: backend.Layout{SeqLen: 210, Lengths: []int{1, 2, 31, 33, 93, 200}}, Heads: 2, HeadDim: 2},
	{Layout: backend.Layout{SeqLen: 210, Lengths: []int{1, 2, 31, 33, 93, 200}}, Heads: 3, HeadDim: 16, Sliding: true, Radius: 64},
	{Layout: backend.Layout{SeqLen: 96, Lengths: []int{93, 31, 33}}, Heads: 2, HeadDim: 64, Sliding: true, Radius: 1},
	{Layout: backend.Layout{SeqLen: 95, Lengths: []int{93, 2}}, Heads: 2, HeadDim: 80},
	{Layout: backend.Layout{SeqLen: 201, Lengths: []int{200, 65}}, Heads: 1, HeadDim: 80, Sliding: true, Radius: 64},
	{Layout: backend.Layout{SeqLen: 93, Lengths: []int{93}}, Heads: 12, HeadDim: 64, Sliding: true, Radius: 92}, // the window just covers the row
	{Layout: backend.Layout{SeqLen: 1030, Lengths: []int{1030}}, Heads: 1, HeadDim: 64},                         // a long context: many key tiles
	{Layout: backend.Layout{SeqLen: 700, Lengths: []int{1, 700, 3, 1, 17, 2}}, Heads: 2, HeadDim: 16},           // one long row among short ones
	{Layout: backend.Layout{SeqLen: 1030, Lengths: []int{1025, 700}}, Heads: 1, HeadDim: 32, Sliding: true, Radius: 128},
}

func TestAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, path := range attentionPaths(t) {
		for _, p := range attentionShapes {
			t.Run(fmt.Sprintf("%s/L%d_b%d_h%d_dh%d_sliding%v_r%d", path.name, p.SeqLen, len(p.Lengths), p.Heads, p.HeadDim, p.Sliding, p.Radius), func(t *testing.T) {
				path.use(t)
				p.Scale = float32(1 / math.Sqrt(float64(p.HeadDim)))
				s := New().NewStream()
				rows, width := len(p.Lengths)*p.SeqLen, p.Heads*p.HeadDim
				xv := randomValues(rng, rows*3*width)
				out := s.New(rows, width)
				// Padded query rows must come back as zeros (as in the
				// reference) even where the buffer held something.
				dirty := make([]float32, rows*width)
				for i := range dirty {
					dirty[i] = float32(math.NaN())
				}
				copy(out.(*tensor).data, dirty)
				s.Attention(out, s.FromHost(rows, 3*width, xv), p)
				want := attentionRef(xv, p)
				checkClose(t, "attention", read(t, s, out), want, 1e-5)

				// The same batch packed: the real rows back to back.
				var packedIn []float32
				var packedWant []float64
				for b, n := range p.Lengths {
					packedIn = append(packedIn, xv[b*p.SeqLen*3*width:(b*p.SeqLen+n)*3*width]...)
					packedWant = append(packedWant, want[b*p.SeqLen*width:(b*p.SeqLen+n)*width]...)
				}
				pp := p
				pp.Packed = true
				tokens := len(packedIn) / (3 * width)
				packedOut := s.New(tokens, width)
				s.Attention(packedOut, s.FromHost(tokens, 3*width, packedIn), pp)
				checkClose(t, "packed attention", read(t, s, packedOut), packedWant, 1e-5)
			})
		}
	}
}

// TestAttentionWorkers runs the SIMD attention with 1, 2 and 16 workers
// (query blocks of 48, 24, 12): the answers may not depend on the split.
func TestAttentionWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p := backend.AttentionParams{Layout: backend.Layout{SeqLen: 100, Lengths: []int{93, 100, 7}}, Heads: 3, HeadDim: 64, Scale: 0.125, Sliding: true, Radius: 20}
	rows, width := len(p.Lengths)*p.SeqLen, p.Heads*p.HeadDim
	xv := randomValues(rng, rows*3*width)
	var first []float32
	for _, workers := range []int{1, 2, 16} {
		be := New()
		be.workers = workers
		s := be.NewStream()
		out := s.New(rows, width)
		s.Attention(out, s.FromHost(rows, 3*width, xv), p)
		got := read(t, s, out)
		if first == nil {
			first = got
			checkClose(t, "attention", got, attentionRef(xv, p), 1e-5)
			continue
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
				t.Fatalf("%d workers: [%d] = %v, 1 worker %v", workers, i, got[i], first[i])
			}
		}
	}
}

func TestAttentionRejects(t *testing.T) {
	for _, p := range []backend.AttentionParams{
		{Layout: backend.Layout{SeqLen: 4, Lengths: []int{5}}, Heads: 1, HeadDim: 2},    // length past the row
		{Layout: backend.Layout{SeqLen: 4, Lengths: []int{0}}, Heads: 1, HeadDim: 2},    // empty row
		{Layout: backend.Layout{SeqLen: 4, Lengths: []int{4, 4}}, Heads: 1, HeadDim: 2}, // more rows than qkv has
		{Layout: backend.Layout{SeqLen: 4, Lengths: []int{4}}, Heads: 2, HeadDim: 2},    // width mismatch
		{Layout: backend.Layout{SeqLen: 4, Lengths: []int{4}}, Heads: 1, HeadDim: 2, Sliding: true, Radius: -1},
	} {
		s := New().NewStream()
		s.Attention(s.New(4, 2), s.New(4, 6), p)
		if s.Err() == nil {
			t.Errorf("%+v: no error", p)
		}
	}
}

// actFeaturesUpstream emulates upstream's padded computation in float32:
// logits padded to kmax slots with −1e4, softmax over all slots, entropy with
// log(clamp(p, 1e-9)), topk(2) over the slots.
func actFeaturesUpstream(real []float32, kmax int) [4]float64 {
	z := make([]float32, kmax)
	for i := range z {
		z[i] = -1e4
	}
	copy(z, real)
	top := z[0]
	for _, v := range z {
		top = max(top, v)
	}
	p := make([]float32, kmax)
	var sum float32
	for i, v := range z {
		p[i] = float32(math.Exp(float64(v - top)))
		sum += p[i]
	}
	var ent float32
	top1, top2 := float32(-1), float32(-1)
	for i := range p {
		p[i] /= sum
		ent -= p[i] * float32(math.Log(float64(max(p[i], 1e-9))))
		if p[i] > top1 {
			top1, top2 = p[i], top1
		} else if p[i] > top2 {
			top2 = p[i]
		}
	}
	k := float32(max(2, len(real)))
	return [4]float64{float64(top1), float64(top1 - top2), float64(ent / float32(math.Log(float64(k)))), float64(k / 255)}
}

func TestActFeatures(t *testing.T) {
	tests := [][]float32{
		{0.3},                       // one option: top2 = 0 from a padded slot
		{1, 1},                      // tie
		{-2.25, -0.94, -0.96, -3.1}, // from tiny-en's debug row
		{5, -5, 0, 2, 2, 1, -1, 3, 0.5, 0.25, -0.25, 4},
		{30, -30, 0}, // saturated: p below the 1e-9 clamp
	}
	s := New().NewStream()
	var all []float32
	counts := make([]int, len(tests))
	const d = 3
	cls := make([]float32, len(tests)*d)
	for b, z := range tests {
		all = append(all, z...)
		counts[b] = len(z)
		for c := range d {
			cls[b*d+c] = float32(10*b + c)
		}
	}
	out := s.New(len(tests), d+4)
	s.ActFeatures(out, s.FromHost(len(tests), d, cls), s.FromHost(len(all), 1, all), counts)
	got := read(t, s, out)
	for b, z := range tests {
		row := got[b*(d+4) : (b+1)*(d+4)]
		for c := range d {
			if row[c] != cls[b*d+c] {
				t.Errorf("row %d: cls[%d] = %v, want %v", b, c, row[c], cls[b*d+c])
			}
		}
		want := actFeaturesUpstream(z, max(2, len(z))+3)
		checkClose(t, fmt.Sprintf("row %d features", b), row[d:], want[:], 1e-6)
	}
	s.ActFeatures(out, s.FromHost(len(tests), d, cls), s.FromHost(len(all), 1, all), append(counts[:len(counts)-1:len(counts)-1], 0))
	if s.Err() == nil {
		t.Error("a row without logits: no error")
	}
}
