package metal

import "math"

// The float64 reference of attention (kernels/attention.metal), kept in a test
// file: only the tests compare against it.

// attentionRef is Attention in float64: scores, softmax and the weighted
// sum of values, with zeros on padded query rows.
func attentionRef(qkv []float32, lengths []int, a AttentionShape) []float64 {
	width := a.Heads * a.HeadDim
	stride := 3 * width
	out := make([]float64, a.Batch*a.SeqLen*width)
	scores := make([]float64, a.SeqLen)
	for b := range a.Batch {
		n := lengths[b]
		for h := range a.Heads {
			at := func(pos, part, d int) float64 {
				return float64(qkv[(b*a.SeqLen+pos)*stride+part*width+h*a.HeadDim+d])
			}
			for i := range n {
				first, last := 0, n-1
				if a.Sliding {
					first, last = max(first, i-a.Radius), min(last, i+a.Radius)
				}
				top := math.Inf(-1)
				for j := first; j <= last; j++ {
					s := 0.0
					for d := range a.HeadDim {
						s += at(i, 0, d) * at(j, 1, d)
					}
					scores[j] = s * float64(a.Scale)
					top = max(top, scores[j])
				}
				sum := 0.0
				for j := first; j <= last; j++ {
					scores[j] = math.Exp(scores[j] - top)
					sum += scores[j]
				}
				o := out[(b*a.SeqLen+i)*width+h*a.HeadDim:]
				for d := range a.HeadDim {
					v := 0.0
					for j := first; j <= last; j++ {
						v += scores[j] * at(j, 2, d)
					}
					o[d] = v / sum
				}
			}
		}
	}
	return out
}
