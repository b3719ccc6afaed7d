package gpu

import (
	"context"
	"testing"
)

func TestSizeClass(t *testing.T) {
	for _, c := range []struct{ n, want int }{{1, 4096}, {4096, 4096}, {4097, 5120}, {8192, 8192}, {8193, 10240}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<18}} {
		if got := sizeClass(c.n); got != c.want {
			t.Errorf("sizeClass(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// A second stream of the same shapes takes every buffer from the arena,
// and a reused buffer reads as zeros (New's promise) even though it held a
// former tensor's values (the plan device runs no kernel, but FromHost
// writes host memory: the second stream's tensor gets that buffer back).
func TestArenaReuseAndZeros(t *testing.T) {
	dev := NewPlanDevice(false)
	be := New("plan", dev)
	defer be.Close()
	ctx := context.Background()
	run := func(fill bool) []float32 {
		s := be.NewStream()
		defer s.Close()
		a := s.New(7, 9)
		if fill {
			b := s.FromHost(7, 9, random(63, 1, 1, 2))
			s.Add(a, b, b)
		}
		out := make([]float32, 63)
		if err := s.Read(ctx, a, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	run(true)
	before := be.BuffersAllocated()
	for i, v := range run(false) {
		if v != 0 {
			t.Fatalf("reused tensor element %d = %v, want 0", i, v)
		}
	}
	if got := be.BuffersAllocated() - before; got != 0 {
		t.Errorf("second stream allocated %d device buffers, want 0", got)
	}
}
