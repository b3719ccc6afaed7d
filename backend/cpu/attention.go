package cpu

import (
	"math"

	"github.com/laya-metal/laya/backend"
)

// ropeKey names one cos/sin table.
type ropeKey struct {
	theta   float64
	headDim int
}

// ropeTable returns cos and sin for positions [0, seqLen) as one slice
// [seqLen][2][headDim/2] (cos then sin), cached per (theta, headDim) and
// grown on demand.
//
// The values are rounded where HF transformers' ModernBertRotaryEmbedding
// (default rope) rounds them in float32:
//
//	inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim))
//	freqs    = inv_freq.float() @ position_ids.float()
//	cos, sin = cat(freqs, freqs).cos(), .sin()
//
// Each float32 operation here is done in float64 and rounded to float32,
// which is the correctly rounded float32 result that PyTorch's kernels also
// give (or are within an ulp of).
func (b *Backend) ropeTable(theta float64, headDim, seqLen int) []float32 {
	half := headDim / 2
	key := ropeKey{theta, headDim}
	b.mu.Lock()
	defer b.mu.Unlock()
	table := b.ropes[key]
	if len(table) >= seqLen*2*half {
		return table
	}
	n := max(seqLen, 512)
	table = make([]float32, n*2*half)
	base := float64(float32(theta))
	invFreq := make([]float32, half)
	for j := range invFreq {
		exponent := float32(float32(2*j) / float32(headDim))
		invFreq[j] = float32(1 / float64(float32(math.Pow(base, float64(exponent)))))
	}
	for p := range n {
		row := table[p*2*half : (p+1)*2*half]
		for j, f := range invFreq {
			angle := float64(float32(p) * f)
			row[j] = float32(math.Cos(angle))
			row[half+j] = float32(math.Sin(angle))
		}
	}
	b.ropes[key] = table
	return table
}

// Rope implements backend.Stream.
func (s *Stream) Rope(qkv backend.Tensor, p backend.RopeParams) {
	if !s.ok("rope", qkv) || !s.check(backend.CheckRope(qkv, p)) {
		return
	}
	width := p.Heads * p.HeadDim
	half := p.HeadDim / 2
	table := s.be.ropeTable(p.Theta, p.HeadDim, p.SeqLen)
	x := data(qkv)
	s.be.parallelFor(qkv.Rows(), 16, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			pos := r % p.SeqLen
			cs := table[pos*2*half : (pos+1)*2*half]
			cos, sin := cs[:half], cs[half:]
			// q and k heads sit side by side: 2·H heads of Dh values.
			row := x[r*3*width : r*3*width+2*width]
			for h := range 2 * p.Heads {
				lo := row[h*p.HeadDim : h*p.HeadDim+half]
				hi := row[h*p.HeadDim+half : (h+1)*p.HeadDim]
				for j := range lo {
					a, b := lo[j], hi[j]
					lo[j] = a*cos[j] - b*sin[j]
					hi[j] = b*cos[j] + a*sin[j]
				}
			}
		}
	})
}

// Attention implements backend.Stream. Work is spread over (batch row,
// head) pairs. Scores and the softmax are float32 values with float64 sums.
func (s *Stream) Attention(dst, qkv backend.Tensor, p backend.AttentionParams) {
	if !s.ok("attention", dst, qkv) || !s.check(backend.CheckAttention(dst, qkv, p)) {
		return
	}
	batch := len(p.Lengths)
	out, in := data(dst), data(qkv)
	s.be.parallelFor(batch*p.Heads, 1, func(lo, hi int) {
		scores := make([]float32, p.SeqLen)
		acc := make([]float32, p.HeadDim)
		for job := lo; job < hi; job++ {
			attendHead(out, in, job/p.Heads, job%p.Heads, p, scores, acc)
		}
	})
}

// attendHead computes one head of one batch row.
func attendHead(out, qkv []float32, b, h int, p backend.AttentionParams, scores, acc []float32) {
	width := p.Heads * p.HeadDim
	stride := 3 * width
	n := p.Lengths[b]
	rowBase := b * p.SeqLen
	head := func(pos, part int) []float32 {
		at := (rowBase+pos)*stride + part*width + h*p.HeadDim
		return qkv[at : at+p.HeadDim]
	}
	for i := range p.SeqLen {
		o := out[(rowBase+i)*width+h*p.HeadDim : (rowBase+i)*width+(h+1)*p.HeadDim]
		if i >= n {
			clear(o) // padded query: never read
			continue
		}
		first, last := 0, n-1
		if p.Sliding {
			first, last = max(first, i-p.Radius), min(last, i+p.Radius)
		}
		q := head(i, 0)
		top := float32(math.Inf(-1))
		for j := first; j <= last; j++ {
			sc := dot(q, head(j, 1)) * p.Scale
			scores[j] = sc
			top = max(top, sc)
		}
		var sum float64
		for j := first; j <= last; j++ {
			e := float32(math.Exp(float64(scores[j] - top)))
			scores[j] = e
			sum += float64(e)
		}
		clear(acc)
		for j := first; j <= last; j++ {
			wgt := scores[j]
			v := head(j, 2)
			for d, vd := range v {
				acc[d] += wgt * vd
			}
		}
		inv := float32(1 / sum)
		for d, a := range acc {
			o[d] = a * inv
		}
	}
}
