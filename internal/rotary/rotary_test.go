package rotary

import (
	"math"
	"testing"
)

// The table must hold the float32 angles of HF's rotary embedding, not
// float64 ones: position 300 at inv_freq 1 is 300 rad either way, but at
// other frequencies the rounded angle differs by more than cos can hide.
func TestRopeTableRoundsLikeTorch(t *testing.T) {
	const headDim, seqLen = 64, 4096
	table := Table(160000, headDim, seqLen)
	if table[0] != 1 || table[headDim/2] != 0 {
		t.Fatalf("position 0: cos %v sin %v, want 1 and 0", table[0], table[headDim/2])
	}
	p, j := seqLen-1, 3
	invFreq := float32(1 / float64(float32(math.Pow(160000, float64(float32(2*j)/headDim)))))
	angle := float64(float32(p) * invFreq)
	if got, want := table[p*headDim+j], float32(math.Cos(angle)); got != want {
		t.Errorf("cos at p=%d j=%d = %v, want %v", p, j, got, want)
	}
	exact := float64(p) / math.Pow(160000, float64(2*j)/headDim)
	if math.Abs(math.Cos(exact)-math.Cos(angle)) < 1e-7 {
		t.Logf("float32 and float64 angles agree here; the check above is still exact")
	}
}
