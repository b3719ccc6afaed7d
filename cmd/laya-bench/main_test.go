package main

import (
	"encoding/json"
	"math"
	"testing"
)

func TestPercentileMatchesNumpyLinear(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 10}
	// numpy.percentile([1,2,3,4,10], [50, 95, 99]) = 3.0, 8.8, 9.76
	for _, tc := range []struct{ p, want float64 }{{50, 3}, {95, 8.8}, {99, 9.76}, {0, 1}, {100, 10}} {
		if got := percentile(sorted, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestRequestIsValidJSONWithOrderedQuestions(t *testing.T) {
	for _, long := range []bool{false, true} {
		var req struct {
			State     json.RawMessage            `json:"state"`
			Questions map[string]json.RawMessage `json:"questions"`
		}
		if err := json.Unmarshal(request(7, long), &req); err != nil {
			t.Fatalf("long=%v: %v", long, err)
		}
		if len(req.Questions) != 7 {
			t.Errorf("long=%v: %d questions, want 7", long, len(req.Questions))
		}
	}
}
