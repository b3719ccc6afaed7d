package cpu

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// geluInputs are values across GeGLU's range and far beyond, and special
// values.
func geluInputs(rng *rand.Rand, n int) []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -1e-40, 1e-20, -3, 3, -5.3, -10, -14, -14.9, -20, 20, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), 0.7071, -0.7071, 0.70710677, 0.7071068}
	for len(xs) < n {
		switch len(xs) % 4 {
		case 0:
			xs = append(xs, float32(rng.NormFloat64()))
		case 1:
			xs = append(xs, float32(rng.NormFloat64()*4))
		case 2:
			xs = append(xs, float32((rng.Float64()*2-1)*20))
		default:
			if x := math.Float32frombits(rng.Uint32()); x == x {
				xs = append(xs, x)
			}
		}
	}
	return xs
}

// TestGeluSIMD holds geluSlice and gegluSlice (the SIMD kernel on CPUs that
// have one, at every length mod 16) to the correctly rounded GELU of a
// float64 reference through math.Erfc: never more than an ulp off, the same
// sign, and off at all in at most 1 value in 10,000; and the scalar gelu to
// the same.
func TestGeluSIMD(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	xs := geluInputs(rng, 200000)
	for _, n := range []int{1, 15, 16, 17, 33, len(xs)} {
		in := xs[:n]
		got := make([]float32, n+1)
		got[n] = 42
		geluSlice(got[:n], in)
		gate := make([]float32, n)
		for i := range gate {
			gate[i] = float32(rng.NormFloat64())
		}
		glu := make([]float32, n)
		gegluSlice(glu, in, gate)
		if got[n] != 42 {
			t.Fatalf("n=%d: geluSlice wrote past the end", n)
		}
		differ := 0
		for i, x := range in {
			want := float32(geluRef(float64(x)))
			for _, g := range []float32{got[i], gelu(x)} {
				if math.Float32bits(g) == math.Float32bits(want) || (g != g && want != want) {
					continue
				}
				differ++
				d := int64(math.Float32bits(g)) - int64(math.Float32bits(want))
				if (d != 1 && d != -1) || math.Signbit(float64(g)) != math.Signbit(float64(want)) {
					t.Fatalf("n=%d: gelu(%v) = %v (scalar %v), want %v", n, x, got[i], gelu(x), want)
				}
			}
			if w := got[i] * gate[i]; math.Float32bits(glu[i]) != math.Float32bits(w) && !(w != w && glu[i] != glu[i]) {
				t.Fatalf("n=%d: geglu(%v, %v) = %v, want %v", n, x, gate[i], glu[i], w)
			}
		}
		if differ > 2*n/10000 {
			t.Errorf("n=%d: %d results off the correctly rounded value", n, differ)
		}
		if n == len(xs) {
			t.Logf("%d of %d results (SIMD and scalar) an ulp off the correctly rounded value", differ, 2*n)
		}
	}
}

// TestGeluAVX512Constants recomputes the kernel's Chebyshev coefficients of
// erfcx (interpolation at 18 Chebyshev nodes of z = (a−3)/(a+3), a ∈
// [0, 10.5]) from math.Erfc and checks their accuracy, so the generated
// constants are reproducible.
func TestGeluAVX512Constants(t *testing.T) {
	erfcx := func(a float64) float64 {
		hi := a * a
		return math.Exp(hi) * (1 + math.FMA(a, a, -hi)) * math.Erfc(a)
	}
	const k, amax, n = 3.0, 10.5, 18
	z0, z1 := -1.0, (amax-k)/(amax+k)
	mid, half := (z0+z1)/2, (z1-z0)/2
	f := make([]float64, n)
	for j := range n {
		s := math.Cos(math.Pi * (float64(j) + 0.5) / n)
		z := mid + half*s
		f[j] = erfcx(k * (1 + z) / (1 - z))
	}
	c := make([]float64, n)
	for i := range n {
		var sum float64
		for j := range n {
			sum += f[j] * math.Cos(math.Pi*float64(i)*(float64(j)+0.5)/n)
		}
		c[i] = 2 * sum / n
	}
	c[0] /= 2
	if d := math.Abs(c[0] - 0.39137632526602761); d > 1e-15 {
		t.Errorf("c0 = %v", c[0])
	}
	if d := math.Abs(c[17] - -1.0941864698250154e-14); d > 1e-16 { // FMA contraction on arm64 moves it by 3e-17
		t.Errorf("c17 = %v", c[17])
	}
	worst := 0.0
	for i := range 20001 {
		a := amax * float64(i) / 20000
		s := ((a-k)/(a+k) - mid) / half
		var b1, b2 float64
		for j := n - 1; j >= 1; j-- {
			b1, b2 = 2*s*b1-b2+c[j], b1
		}
		worst = max(worst, math.Abs((s*b1-b2+c[0])/erfcx(a)-1))
	}
	if worst > 2e-13 {
		t.Errorf("series relative error %.3g", worst)
	}

	// The kernel evaluates the series as a polynomial in s by Horner's
	// rule: its coefficients, converted exactly (big floats) from c, and
	// rounded once.
	const prec = 300
	bf := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	tPrev, tCur := make([]*big.Float, n), make([]*big.Float, n) // T_{j−1}, T_j in s^k
	for kk := range n {
		tPrev[kk], tCur[kk] = bf(0), bf(0)
	}
	tPrev[0], tCur[1] = bf(1), bf(1)
	mono := make([]*big.Float, n)
	for kk := range n {
		mono[kk] = new(big.Float).SetPrec(prec).Mul(bf(c[0]), tPrev[kk])
		mono[kk].Add(mono[kk], new(big.Float).SetPrec(prec).Mul(bf(c[1]), tCur[kk]))
	}
	for j := 2; j < n; j++ {
		next := make([]*big.Float, n) // T_j = 2s·T_{j−1} − T_{j−2}
		for kk := range n {
			next[kk] = new(big.Float).SetPrec(prec).Neg(tPrev[kk])
			if kk > 0 {
				next[kk].Add(next[kk], new(big.Float).SetPrec(prec).Mul(bf(2), tCur[kk-1]))
			}
			mono[kk].Add(mono[kk], new(big.Float).SetPrec(prec).Mul(bf(c[j]), next[kk]))
		}
		tPrev, tCur = tCur, next
	}
	a := make([]float64, n)
	for kk := range n {
		a[kk], _ = mono[kk].Float64()
	}
	worst = 0
	for i := range 20001 {
		av := amax * float64(i) / 20000
		s := ((av-k)/(av+k) - mid) / half
		p := a[n-1]
		for kk := n - 2; kk >= 0; kk-- {
			p = math.FMA(p, s, a[kk])
		}
		worst = max(worst, math.Abs(p/erfcx(av)-1))
	}
	if worst > 2e-13 {
		t.Errorf("Horner form's relative error %.3g", worst)
	}
	checkGeluKernelSeries(t, a, func(s float64) float64 { // the kernel's own constants, where it has them
		return erfcx(k * (1 + (mid + half*s)) / (1 - (mid + half*s)))
	})
}

func BenchmarkGelu(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	in := make([]float32, 4096)
	for i := range in {
		in[i] = float32(rng.NormFloat64() * 2)
	}
	out := make([]float32, len(in))
	b.Run("slice", func(b *testing.B) {
		for b.Loop() {
			geluSlice(out, in)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in)), "ns/value")
	})
	// Inputs up to ±100, as BenchmarkGEMM's random operands give its
	// fused GeGLU (the real forward's are nearly all within ±5): past ~37
	// the kernel once computed e^(−a²) in float64's denormal range and
	// took a microcode assist per lane (18.7 against 3.1 ns per value;
	// wi-geglu at 860 rows took 2.2× the plain product's time).
	wide := make([]float32, len(in))
	for i := range wide {
		wide[i] = float32((rng.Float64()*2 - 1) * 100)
	}
	b.Run("wide", func(b *testing.B) {
		for b.Loop() {
			geluSlice(out, wide)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in)), "ns/value")
	})
	b.Run("scalar", func(b *testing.B) {
		for b.Loop() {
			for i, v := range in {
				out[i] = gelu(v)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in)), "ns/value")
	})
}

// BenchmarkGeGLURows runs the GeGLU as a work unit's epilogue does, row by
// row over 128 unit columns, on an English Wi output of 862 rows (18 MB:
// from L3 or DRAM, "cold") and on one row pair over and over (from L1,
// "hot"): why outerFill runs it per group of tiles, while the group's
// value and gate columns are still in cache.
func BenchmarkGeGLURows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const m, n, cols = 862, 5248, 128
	inner := n / 2
	y := make([]float32, m*n)
	for i := range y {
		y[i] = float32(rng.NormFloat64() * 2)
	}
	dst := make([]float32, m*inner)
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			for n0 := 0; n0 < inner; n0 += cols {
				n1 := min(n0+cols, inner)
				for r := range m {
					gegluSlice(dst[r*inner+n0:r*inner+n1], y[r*n+n0:r*n+n1], y[r*n+inner+n0:r*n+inner+n1])
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*m*inner), "ns/value")
	})
	b.Run("hot", func(b *testing.B) {
		for b.Loop() {
			for range m * inner / cols {
				gegluSlice(dst[:cols], y[:cols], y[cols:2*cols])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*m*inner), "ns/value")
	})
}
