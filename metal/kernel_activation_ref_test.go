package metal

import "math"

// The float64 reference of activation (kernels/activation.metal), kept in a test
// file: only the tests compare against it.

// geluRef is the exact erf GELU in float64.
func geluRef(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// activateRef is Activate in float64.
func activateRef(in []float32, act Activation) []float64 {
	out := make([]float64, len(in))
	for i, v := range in {
		x := float64(v)
		switch act {
		case ActGELU:
			x = geluRef(x)
		case ActReLU:
			x = max(x, 0)
		}
		out[i] = x
	}
	return out
}

// gegluRef is GeGLU in float64.
func gegluRef(in []float32, rows, inner int) []float64 {
	out := make([]float64, rows*inner)
	for r := range rows {
		for c := range inner {
			out[r*inner+c] = geluRef(float64(in[r*2*inner+c])) * float64(in[r*2*inner+inner+c])
		}
	}
	return out
}

// actFeaturesRef is ActFeatures in float64.
func actFeaturesRef(cls, logits []float32, counts []int, dim int) []float64 {
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
