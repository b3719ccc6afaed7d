package metal

import "math"

// The float64 reference of layernorm (kernels/layernorm.metal), kept in a test
// file: only the tests compare against it.

// layerNormRef is LayerNorm in float64.
func layerNormRef(in, weight, bias []float32, rows, cols int, eps float32) []float64 {
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
