package metal

// The float64 reference of gemm (kernels/gemm.metal), kept in a test
// file: only the tests compare against it.

// gemmRef is Y = X·Wᵀ (+ bias) in float64.
func gemmRef(x, w, bias []float64, m, n, kd int) []float64 {
	y := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for c := 0; c < kd; c++ {
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
