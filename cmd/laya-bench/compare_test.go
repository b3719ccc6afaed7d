package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two gobench files whose B samples are exactly twice A's give ratio 2 with
// an interval that holds 2; names only one file has are left out.
func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	var a, b strings.Builder
	for i := range 9 {
		v := 1e6 * float64(10+i)
		a.WriteString("BenchmarkPredict/x/cpu/q=1-2\t1\t" + ftoa(v) + " ns/op\t1 q/s\n")
		b.WriteString("BenchmarkPredict/x/cpu/q=1-4\t1\t" + ftoa(2*v) + " ns/op\n")
	}
	a.WriteString("BenchmarkOnlyA\t1\t5 ns/op\n")
	pa, pb := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	os.WriteFile(pa, []byte(a.String()), 0o644)
	os.WriteFile(pb, []byte(b.String()), 0o644)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--compare", "--format", "json", pa, pb}, &out, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var got struct{ Results []compareResult }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != 1 {
		t.Fatalf("%d results, want 1: %+v", len(got.Results), got.Results)
	}
	r := got.Results[0]
	if r.Name != "BenchmarkPredict/x/cpu/q=1" || math.Abs(r.Ratio-2) > 1e-12 || r.RatioLow > 2 || r.RatioHigh < 2 || r.AMedianMS != 14 {
		t.Errorf("result %+v", r)
	}
}

func ftoa(v float64) string { b, _ := json.Marshal(v); return string(b) }

// A live comparison of a checkpoint with itself: ratios near 1, every pair
// timed, and a peak RSS on Linux.
func TestCompareLiveSameCheckpoint(t *testing.T) {
	ckpt := filepath.Join("..", "..", "testdata", "oracle", "checkpoints", "tiny-en")
	var out bytes.Buffer
	err := run(context.Background(), []string{"--compare", "--format", "json", "--questions", "1", "--runs", "4", "--warmup", "1",
		ckpt, "backend=cpu,model=" + ckpt}, &out, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var got struct{ Results []compareResult }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Results[0]
	if len(r.ASamplesMS) != 4 || len(r.BSamplesMS) != 4 || !(r.RatioLow <= r.Ratio && r.Ratio <= r.RatioHigh) || r.Ratio <= 0 {
		t.Errorf("result %+v", r)
	}
}

func TestCompareRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--compare", "only-one"},
		{"--compare", "backend=cpu", "backend=cpu"},
		{"--compare", "backend=cpu,size=3,model=x", "x"},
		{"--compare", "--format", "xml", "a", "b"},
		{"--compare", "compare_test.go", "backend=cpu,model=x"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &out); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestBootstrapCIHoldsTheStatistic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	lo, hi := bootstrapCI(rng, func(resample func([]float64) []float64) float64 {
		return median(resample(xs))
	})
	if !(lo <= 5 && 5 <= hi && lo >= 1 && hi <= 9) {
		t.Errorf("CI [%v, %v]", lo, hi)
	}
}
