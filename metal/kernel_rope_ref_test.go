package metal

// The float64 reference of rope (kernels/rope.metal), kept in a test
// file: only the tests compare against it.

// ropeRef is Rope in float64 over the float32 table.
func ropeRef(qkv, table []float32, rows, seqLen, heads, headDim int) []float64 {
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
