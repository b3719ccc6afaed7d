package stats

import (
	"math"
	"testing"
)

// TestPercentileMatchesNumpyLinear holds Percentile to numpy.percentile's
// answers (linear interpolation), computed by hand from its definition.
func TestPercentileMatchesNumpyLinear(t *testing.T) {
	for _, tc := range []struct {
		xs      []float64
		p, want float64
	}{
		// numpy.percentile([1,2,3,4,10], [50, 95, 99]) = 3.0, 8.8, 9.76
		{[]float64{1, 2, 3, 4, 10}, 50, 3}, {[]float64{1, 2, 3, 4, 10}, 95, 8.8}, {[]float64{1, 2, 3, 4, 10}, 99, 9.76},
		{[]float64{1, 2, 3, 4, 10}, 0, 1}, {[]float64{1, 2, 3, 4, 10}, 100, 10},
		// numpy.percentile(range(1, 11), [50, 95, 99]) = 5.5, 9.55, 9.91
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50, 5.5}, {[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 95, 9.55},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 9.91},
		{[]float64{7}, 95, 7},
		{nil, 50, 0},
	} {
		if got := Percentile(tc.xs, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tc.xs, tc.p, got, tc.want)
		}
	}
}
