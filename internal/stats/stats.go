// Package stats holds the summary statistics the benchmarks report, so that
// laya-bench and laya snake compute them one way.
package stats

import "math"

// Percentile of sorted (ascending) by linear interpolation between order
// statistics: numpy.percentile's default, which upstream's benchmarks use.
// It is 0 for no values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := float64(len(sorted)-1) * p / 100
	lo := int(math.Floor(k))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(k-float64(lo))
}
