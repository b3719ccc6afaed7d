//go:build purego || !amd64

package cpu

// This build runs the element-wise operations as the Go loops of ops.go
// and attention.go.

func layerNormStatsSIMD(in []float32) (mean, sq float64, ok bool)         { return 0, 0, false }
func layerNormApplySIMD(out, in, w, b []float32, mean, rstd float64) bool { return false }
func addSIMD(out, x, y []float32) bool                                    { return false }
func ropeSIMD(row, cs []float32, heads, headDim int) bool                 { return false }
