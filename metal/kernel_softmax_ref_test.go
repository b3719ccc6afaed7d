package metal

import "math"

// The float64 reference of softmax (kernels/softmax.metal), kept in a test
// file: only the tests compare against it.

// softmaxRef is the float64 row softmax.
func softmaxRef(in []float32, rows, cols int) []float64 {
	out := make([]float64, rows*cols)
	for r := 0; r < rows; r++ {
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
