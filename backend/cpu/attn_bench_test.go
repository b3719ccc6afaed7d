package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// BenchmarkAttention measures Attention at the encoders' shapes (English:
// 16 heads of 64; multilingual: 12 of 64; ModernBERT's local layers slide a
// window of radius 64), one 93-token question, a 512-token one, and 10
// questions of 86 tokens padded to 93 (and packed, back to back), on every path this machine runs:
// "new" the SIMD kernels (attn_amd64.go), "old" the portable path over the
// GEMM tile kernel Linear picks (the code before them), side by side.
// GFLOP/s counts the two products, 4·queries·keys·Dh per head, of the keys
// each query sees.
func BenchmarkAttention(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	var paths []attentionPath
	if attnSIMD != nil {
		paths = append(paths, attentionPath{name: "new", simd: attnSIMD, tile: gemmTile})
	}
	paths = append(paths, attentionPath{name: "old", tile: gemmTile})
	for _, c := range []struct {
		name    string
		heads   int
		seqLen  int
		lengths []int
		sliding bool
		packed  bool
	}{
		{name: "english/global/93", heads: 16, seqLen: 93, lengths: []int{93}},
		{name: "english/sliding/93", heads: 16, seqLen: 93, lengths: []int{93}, sliding: true},
		{name: "multilingual/global/93", heads: 12, seqLen: 93, lengths: []int{93}},
		{name: "multilingual/sliding/93", heads: 12, seqLen: 93, lengths: []int{93}, sliding: true},
		{name: "english/global/512", heads: 16, seqLen: 512, lengths: []int{512}},
		{name: "english/sliding/512", heads: 16, seqLen: 512, lengths: []int{512}, sliding: true},
		{name: "multilingual/global/10x86", heads: 12, seqLen: 93, lengths: repeat(86, 10)},
		{name: "english/global/10x86", heads: 16, seqLen: 93, lengths: repeat(86, 10)},
		{name: "multilingual/sliding/10x86/packed", heads: 12, seqLen: 86, lengths: repeat(86, 10), sliding: true, packed: true},
	} {
		for _, path := range paths {
			b.Run(fmt.Sprintf("%s/%s", c.name, path.name), func(b *testing.B) {
				path.use(b)
				const dh, radius = 64, 64
				s := New().NewStream()
				width, rows := c.heads*dh, len(c.lengths)*c.seqLen
				if c.packed {
					rows = 0
					for _, n := range c.lengths {
						rows += n
					}
				}
				qkv := s.FromHost(rows, 3*width, randomValues(rng, rows*3*width))
				out := s.New(rows, width)
				p := backend.AttentionParams{Layout: backend.Layout{SeqLen: c.seqLen, Lengths: c.lengths, Packed: c.packed},
					Heads: c.heads, HeadDim: dh, Scale: 0.125, Sliding: c.sliding, Radius: radius}
				for b.Loop() {
					s.Attention(out, qkv, p)
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				keys := 0
				for _, n := range c.lengths {
					for i := range n {
						lo, hi := 0, n-1
						if c.sliding {
							lo, hi = max(0, i-radius), min(n-1, i+radius)
						}
						keys += hi - lo + 1
					}
				}
				flops := 4 * float64(keys) * dh * float64(c.heads)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}
