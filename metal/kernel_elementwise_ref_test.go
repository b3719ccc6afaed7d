package metal

// The float64 reference of elementwise (kernels/elementwise.metal), kept in a test
// file: only the tests compare against it.

// vectorAddRef is VectorAdd in float64.
func vectorAddRef(a, b []float32) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = float64(a[i]) + float64(b[i])
	}
	return out
}
