// Package kernelref holds the float64 references of the kernels in package
// kernels: what each kernel computes, written the plain way in float64 from
// the float32 values the kernel reads. The kernel tests of package metal
// hold every kernel to them, and the self-test a Metal device runs when a
// backend opens it (metal.SelfTest) holds a canary of every kernel family to
// them, so a GPU that miscomputes is refused instead of answering wrong.
//
// The functions take the kernels' operands as plain slices and sizes; they
// know nothing of devices or buffers.
package kernelref

import "math"

// Activation values, as metal.Activation numbers them.
const (
	ActIdentity = 0
	ActGELU     = 1
	ActReLU     = 2
)

// Gelu is the exact erf GELU.
func Gelu(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

func activate(x float64, act int) float64 {
	switch act {
	case ActGELU:
		return Gelu(x)
	case ActReLU:
		return max(x, 0)
	}
	return x
}

// Activate is activate_f32: act applied to every value.
func Activate(in []float32, act int) []float64 {
	out := make([]float64, len(in))
	for i, v := range in {
		out[i] = activate(float64(v), act)
	}
	return out
}

// Geglu is geglu_f32: rows of [a | b], each inner wide, to GELU(a)·b.
func Geglu(in []float32, rows, inner int) []float64 {
	out := make([]float64, rows*inner)
	for r := range rows {
		for c := range inner {
			out[r*inner+c] = Gelu(float64(in[r*2*inner+c])) * float64(in[r*2*inner+inner+c])
		}
	}
	return out
}

// ActFeatures is act_features_f32: per batch row its CLS vector, then the
// top-1 probability, the margin to the second, the normalised entropy and
// the option count over 255, of the softmax of its counts[b] logits.
func ActFeatures(cls, logits []float32, counts []int, dim int) []float64 {
	out := make([]float64, 0, len(counts)*(dim+4))
	for b, k := range counts {
		for _, v := range cls[b*dim : (b+1)*dim] {
			out = append(out, float64(v))
		}
		z := logits[:k]
		logits = logits[k:]
		top := math.Inf(-1)
		for _, v := range z {
			top = max(top, float64(v))
		}
		sum := 0.0
		for _, v := range z {
			sum += math.Exp(float64(v) - top)
		}
		var top1, top2, ent float64
		for _, v := range z {
			p := math.Exp(float64(v)-top) / sum
			ent -= p * math.Log(max(p, 1e-9))
			switch {
			case p > top1:
				top1, top2 = p, top1
			case p > top2:
				top2 = p
			}
		}
		kk := float64(max(2, k))
		out = append(out, top1, top1-top2, ent/math.Log(kk), kk/255)
	}
	return out
}

// VectorAdd is vector_add_f32.
func VectorAdd(a, b []float32) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = float64(a[i]) + float64(b[i])
	}
	return out
}

// GatherRows is gather_rows_*: the rows of table (cols wide) named by index.
func GatherRows(table []float32, index []uint32, cols int) []float64 {
	out := make([]float64, 0, len(index)*cols)
	for _, r := range index {
		for _, v := range table[int(r)*cols : int(r+1)*cols] {
			out = append(out, float64(v))
		}
	}
	return out
}

// Gemm is Y = X·Wᵀ (+ bias): X [m, kd], W [n, kd], bias nil or [n].
func Gemm(x, w, bias []float64, m, n, kd int) []float64 {
	y := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for c := range kd {
				s += x[i*kd+c] * w[j*kd+c]
			}
			if bias != nil {
				s += bias[j]
			}
			y[i*n+j] = s
		}
	}
	return y
}

// GemmEpilogue is Gemm followed by the GEMM kernels' epilogue: act on
// every element of Y and, when geglu, GELU(Y[:, :n/2])·Y[:, n/2:] as
// gated [m, n/2].
func GemmEpilogue(x, w, bias []float64, m, n, kd, act int, geglu bool) (y, gated []float64) {
	y = Gemm(x, w, bias, m, n, kd)
	for i, v := range y {
		y[i] = activate(v, act)
	}
	if geglu {
		inner := n / 2
		for r := range m {
			for c := range inner {
				gated = append(gated, Gelu(y[r*n+c])*y[r*n+inner+c])
			}
		}
	}
	return y, gated
}

// LayerNorm is layernorm_f32 (biased variance); bias may be nil.
func LayerNorm(in, weight, bias []float32, rows, cols int, eps float32) []float64 {
	out := make([]float64, rows*cols)
	for r := range rows {
		row := in[r*cols : (r+1)*cols]
		mean := 0.0
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(cols)
		variance := 0.0
		for _, v := range row {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		rstd := 1 / math.Sqrt(variance/float64(cols)+float64(eps))
		for c, v := range row {
			y := (float64(v) - mean) * rstd * float64(weight[c])
			if bias != nil {
				y += float64(bias[c])
			}
			out[r*cols+c] = y
		}
	}
	return out
}

// Rope is rope_f32 over the float32 table: the split-half rotation of the
// q and k parts of qkv [rows, 3·heads·headDim], row r at position r mod
// seqLen; the v part is copied.
func Rope(qkv, table []float32, rows, seqLen, heads, headDim int) []float64 {
	out := make([]float64, len(qkv))
	for i, v := range qkv {
		out[i] = float64(v)
	}
	half, stride := headDim/2, 3*heads*headDim
	for r := range rows {
		cs := table[(r%seqLen)*headDim:]
		for h := range 2 * heads {
			x := out[r*stride+h*headDim:]
			for j := range half {
				a, b := x[j], x[j+half]
				c, s := float64(cs[j]), float64(cs[half+j])
				x[j], x[j+half] = a*c-b*s, b*c+a*s
			}
		}
	}
	return out
}

// Softmax is softmax_f32 over rows of cols values.
func Softmax(in []float32, rows, cols int) []float64 {
	out := make([]float64, rows*cols)
	for r := range rows {
		row := in[r*cols : (r+1)*cols]
		rowMax := math.Inf(-1)
		for _, v := range row {
			rowMax = math.Max(rowMax, float64(v))
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(float64(v) - rowMax)
		}
		for c, v := range row {
			out[r*cols+c] = math.Exp(float64(v)-rowMax) / sum
		}
	}
	return out
}

// AttentionShape has the fields of metal.AttentionShape, so that one
// converts to the other.
type AttentionShape struct {
	Batch, SeqLen, Heads, HeadDim int
	Scale                         float32
	Sliding                       bool
	Radius                        int
}

// Attention is attention_f32 and attention_flash_f32 without RoPE: scores,
// softmax and the weighted sum of values per head, keys j < lengths[b]
// (and |i−j| ≤ Radius when Sliding), zeros on padded query rows.
func Attention(qkv []float32, lengths []int, a AttentionShape) []float64 {
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
