package metal

// The float64 reference of gather (kernels/gather.metal), kept in a test
// file: only the tests compare against it.

// gatherRowsRef is GatherRows in float64 over a widened table.
func gatherRowsRef(table []float32, index []uint32, cols int) []float64 {
	out := make([]float64, 0, len(index)*cols)
	for _, r := range index {
		for _, v := range table[int(r)*cols : int(r+1)*cols] {
			out = append(out, float64(v))
		}
	}
	return out
}
