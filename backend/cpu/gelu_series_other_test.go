//go:build purego || !amd64

package cpu

import "testing"

// checkGeluKernelSeries: this build has no AVX-512 GELU kernel whose
// constants to check.
func checkGeluKernelSeries(t *testing.T, a []float64, erfcx func(s float64) float64) {}
