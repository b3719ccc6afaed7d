//go:build !unix

package tokenizer

// processCPU is not measured here; cpu-ms/op reads 0.
func processCPU() float64 { return 0 }
