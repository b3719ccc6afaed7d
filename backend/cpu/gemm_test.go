package cpu

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// gemmKernels lists the portable kernel, the outer-product path on its Go
// reference kernel (outerBlockGo: the packing, tiling and transposed
// stores on every machine) and, where this build and CPU have them, the
// SIMD outer-product kernel and the SIMD dot kernels, so each is tested on
// every machine that runs it.
func gemmKernels(t testing.TB) []gemmKernel {
	kernels := []gemmKernel{{name: "go", tile: gemmTileGo}, {name: "outer-go", tile: gemmTileGo, outer: outerBlockGo, lanes: 1}}
	if outer := outerKernelOfCPU(); outer != nil {
		kernels = append(kernels, gemmKernel{name: "avx512-outer", tile: pickGemmTile(), outer: outer, lanes: 1})
	}
	if simd := simdGemmTiles(); len(simd) > 0 {
		kernels = append(kernels, simd...)
	} else {
		t.Logf("no SIMD GEMM kernel in this build or on this CPU: testing the Go kernels only")
	}
	return kernels
}

// useGemmTile makes Linear and Attention run the dot kernel tile at every
// M (no outer-product path) until the test ends.
func useGemmTile(t testing.TB, tile gemmTileFunc) {
	useGemmKernel(t, gemmKernel{tile: tile})
}

// useGemmKernel makes Linear run kernel until the test ends: its
// outer-product kernel when it has one, else its dot kernel.
func useGemmKernel(t testing.TB, kernel gemmKernel) {
	savedTile, savedOuter := gemmTile, gemmOuter
	gemmTile, gemmOuter = kernel.tile, kernel.outer
	t.Cleanup(func() { gemmTile, gemmOuter = savedTile, savedOuter })
}

// outerBlockGo is the outer-product micro-kernel's contract written out in
// Go (gemm8x48AVX512's comment), each sum rounded as documented: one exact
// fused multiply-add per k, in k order.
func outerBlockGo(a *[outerMR]*float32, b *float32, k int, c *float32, ldc, rows, cols int, idx *int32, _, _ *byte) {
	bs := unsafe.Slice(b, k*outerNR)
	var offs []int32
	if idx != nil {
		offs = unsafe.Slice(idx, outerNR)
	}
	for i := range rows {
		ar := unsafe.Slice(a[i], k)
		for j := range cols {
			var sum float32
			for kk := range k {
				sum = fma32(ar[kk], bs[kk*outerNR+j], sum)
			}
			at := i*ldc + j
			if offs != nil {
				at = i + int(offs[j])
			}
			*(*float32)(unsafe.Add(unsafe.Pointer(c), 4*at)) = sum
		}
	}
}

// gemmShapes hit every tail: M, N, K not multiples of the 3×4 / 2×4 blocks
// or of the 8-float SIMD groups, K = 1, single rows and columns, shapes that
// spill one row or column into a second 48×64 tile, and a full-width K.
var gemmShapes = []struct{ m, n, k int }{
	{1, 1, 1}, {1, 5, 3}, {3, 1, 1}, {6, 8, 1}, {2, 4, 8}, {3, 4, 7},
	{4, 5, 9}, {5, 3, 16}, {7, 9, 17}, {10, 13, 33}, {47, 65, 130},
	{49, 67, 71}, {50, 64, 8}, {93, 70, 1027}, {100, 130, 64},
	// K split into AVX-512 blocks of 1536: one block and a bit, a ragged
	// third block.
	{7, 9, 1537}, {13, 6, 3100},
}

var activations = []backend.Activation{backend.Identity, backend.GELU, backend.ReLU}

// runGemm runs the backend's gemm (tiles, workers, bias and activation pass)
// with tile as the kernel.
func runGemm(t testing.TB, kernel gemmKernel, x, w, bias []float32, m, n, k int, act backend.Activation) []float32 {
	useGemmKernel(t, kernel)
	be := New()
	be.workers = 3 // an uneven split on any machine
	y := make([]float32, m*n)
	for i := range y {
		y[i] = float32(math.NaN()) // every output must be written
	}
	be.gemm(y, x, w, bias, m, n, k, act)
	return y
}

func smallInts(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.IntN(9) - 4)
	}
	return v
}

// TestGemmExactIntegers feeds small integers, whose products and sums are
// exact in float32 whatever the summation order or FMA, so every kernel must
// match the exact product bit for bit: a dropped, repeated or misplaced term
// in any tail shows up as a wrong integer.
func TestGemmExactIntegers(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, kernel := range gemmKernels(t) {
		for _, shape := range gemmShapes {
			m, n, k := shape.m, shape.n, shape.k
			x, w, bv := smallInts(rng, m*k), smallInts(rng, n*k), smallInts(rng, n)
			for _, act := range activations {
				for _, withBias := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%dx%dx%d/%v/bias=%v", kernel.name, m, n, k, act, withBias), func(t *testing.T) {
						var bias []float32
						if withBias {
							bias = bv
						}
						got := runGemm(t, kernel, x, w, bias, m, n, k, act)
						for i := range m {
							for j := range n {
								sum := 0
								for kk := range k {
									sum += int(x[i*k+kk]) * int(w[j*k+kk])
								}
								if withBias {
									sum += int(bias[j])
								}
								want := float32(sum)
								switch act {
								case backend.GELU:
									want = float32(geluRef(float64(sum)))
								case backend.ReLU:
									want = max(want, 0)
								}
								if g := got[i*n+j]; g != want {
									t.Fatalf("y[%d, %d] = %v, want %v", i, j, g, want)
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestGemmRoundoff holds every kernel to a float64 product on normal random
// data within the a-priori bound of a float32 sum of k products,
// (k+1)·2⁻²⁴·Σ|x·w| (Higham, Accuracy and Stability, §3.1), which holds for
// any summation order, fused or not.
func TestGemmRoundoff(t *testing.T) {
	runGemmShapes(t, gemmKernels(t), rand.New(rand.NewPCG(13, 14)), func(t *testing.T, _ gemmKernel, x, w, got []float32, m, n, k int) {
		for i := range m {
			for j := range n {
				var sum, abs float64
				for kk := range k {
					p := float64(x[i*k+kk]) * float64(w[j*k+kk])
					sum += p
					abs += math.Abs(p)
				}
				bound := float64(k+1) * 0x1p-24 * abs
				if d := math.Abs(float64(got[i*n+j]) - sum); !(d <= bound) {
					t.Fatalf("y[%d, %d] = %v, want %v ± %.3g", i, j, got[i*n+j], sum, bound)
				}
			}
		}
	})
}

// runGemmShapes runs each kernel on every gemmShapes shape, one subtest
// each, with normal random x and w drawn from rng in that order, and hands
// check the product y = x·wᵀ the kernel computed.
func runGemmShapes(t *testing.T, kernels []gemmKernel, rng *rand.Rand, check func(t *testing.T, kernel gemmKernel, x, w, got []float32, m, n, k int)) {
	for _, kernel := range kernels {
		for _, shape := range gemmShapes {
			m, n, k := shape.m, shape.n, shape.k
			t.Run(fmt.Sprintf("%s/%dx%dx%d", kernel.name, m, n, k), func(t *testing.T) {
				x, w := randomValues(rng, m*k), randomValues(rng, n*k)
				check(t, kernel, x, w, runGemm(t, kernel, x, w, nil, m, n, k, backend.Identity), m, n, k)
			})
		}
	}
}

// fma32 is a·b + c rounded once to float32. The float32 product is exact
// in float64 (48 significant bits); the sum is rounded to float64 with
// round-to-odd (round to nearest, and where that was inexact and landed
// on an even significand, the neighbour towards the exact sum), after which
// rounding to float32 is correct: 53 ≥ 24 + 2 bits (Boldo & Melquiond,
// "Emulation of FMA and correctly rounded sums: proved algorithms using
// rounding to odd", IEEE TC 2008). TestFMA32 checks it against big.Float.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	// TwoSum: e = (p + c) − s exactly.
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb)
	if e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// fma32Big is fma32 computed exactly in big.Float (float32 products and
// sums need under 400 bits): the independent reference for fma32.
func fma32Big(a, b, c float32) float32 {
	const prec = 512
	p := new(big.Float).SetPrec(prec).SetFloat64(float64(a))
	p.Mul(p, new(big.Float).SetPrec(prec).SetFloat64(float64(b)))
	p.Add(p, new(big.Float).SetPrec(prec).SetFloat64(float64(c)))
	f, _ := p.Float32()
	return f
}

// laneOrderDot is the documented rounding of the SIMD kernels, written out
// in scalar form: lane l of lanes (8 or 16) accumulates the products
// k ≡ l mod lanes in order with a fused multiply-add; 16 lanes are first
// folded to 8 (lane l+8 added to lane l), and the 8 are added as
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)). The 16-lane kernel cuts K into
// blocks of gemmKBlock16 and adds the blocks' sums in order.
//
// lanes = 1 is the outer-product kernels' order: one accumulator, one fused
// multiply-add per k in k order, no blocks.
func laneOrderDot(x, w []float32, lanes int) float32 {
	if lanes == 1 {
		var sum float32
		for kk := range x {
			sum = fma32(x[kk], w[kk], sum)
		}
		return sum
	}
	if lanes == 16 && len(x) > gemmKBlock16 {
		// The AVX-512 kernel sums K in blocks and adds them in order.
		sum := laneOrderDot(x[:gemmKBlock16], w[:gemmKBlock16], lanes)
		for k0 := gemmKBlock16; k0 < len(x); k0 += gemmKBlock16 {
			k1 := min(k0+gemmKBlock16, len(x))
			sum += laneOrderDot(x[k0:k1], w[k0:k1], lanes)
		}
		return sum
	}
	lane := make([]float32, lanes)
	for kk := range x {
		lane[kk%lanes] = fma32(x[kk], w[kk], lane[kk%lanes])
	}
	if lanes == 16 {
		for l := range 8 {
			lane[l] += lane[l+8]
		}
	}
	low := (lane[0] + lane[1]) + (lane[2] + lane[3])
	high := (lane[4] + lane[5]) + (lane[6] + lane[7])
	return low + high
}

// TestGemmSIMDLaneOrder pins each SIMD and outer-product kernel's rounding
// to laneOrderDot bit for bit, on every tail shape.
func TestGemmSIMDLaneOrder(t *testing.T) {
	var kernels []gemmKernel
	for _, k := range gemmKernels(t) {
		if k.lanes > 0 {
			kernels = append(kernels, k)
		}
	}
	runGemmShapes(t, kernels, rand.New(rand.NewPCG(15, 16)), func(t *testing.T, kernel gemmKernel, x, w, got []float32, m, n, k int) {
		for i := range m {
			for j := range n {
				want := laneOrderDot(x[i*k:i*k+k], w[j*k:j*k+k], kernel.lanes)
				if g := got[i*n+j]; math.Float32bits(g) != math.Float32bits(want) {
					t.Fatalf("y[%d, %d] = %v (%#08x), want %v (%#08x)", i, j, g, math.Float32bits(g), want, math.Float32bits(want))
				}
			}
		}
	})
}

func TestFMA32(t *testing.T) {
	one := float32(1)
	eps := float32(0x1p-23)
	for _, tt := range []struct{ a, b, c, want float32 }{
		{2, 3, 4, 10},
		// (1+ε)(1−ε) = 1 − ε²: rounding the product first gives 1, so
		// −1 + that is 0; fused it is −ε².
		{one + eps, one - eps, -1, -eps * eps},
		{-3, 0.5, 1.5, 0},
		// a·b = 2⁻²⁴ + 2⁻⁷⁰ (2⁴⁶+1 = (2²³+2¹²+1)(2²³−2¹²+1)), so a·b + 1
		// lies just above a float32 tie by a bit far below float64's
		// precision: rounding to float64 first and then to float32 would
		// give 1.
		{1 + 0x1p-11 + 0x1p-23, 0x1p-24 * (1 - 0x1p-11 + 0x1p-23), 1, 1 + 0x1p-23},
	} {
		for name, f := range map[string]func(a, b, c float32) float32{"fma32": fma32, "fma32Big": fma32Big} {
			if got := f(tt.a, tt.b, tt.c); got != tt.want {
				t.Errorf("%s(%v, %v, %v) = %v, want %v", name, tt.a, tt.b, tt.c, got, tt.want)
			}
		}
	}
	// Random operands over many binades, with sums that cancel.
	rng := rand.New(rand.NewPCG(31, 32))
	val := func() float32 {
		return float32((rng.Float64()*2 - 1) * math.Ldexp(1, rng.IntN(60)-30))
	}
	for range 20000 {
		a, b := val(), val()
		c := val()
		if rng.IntN(4) == 0 {
			c = -a * b * (1 + float32(rng.NormFloat64())*0x1p-20)
		}
		if got, want := fma32(a, b, c), fma32Big(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
}

// gemmKBlock16 is the AVX-512 kernel's K block (gemm_amd64.go).
const gemmKBlock16 = 1536

// TestGemmUnitPlan pins forEachGemmUnit's split: rows halved first (blocks
// of at least two tiles, a multiple of gemmTileM), then panels, until there
// are gemmUnitsPerWorker units per worker or nothing is left to split.
func TestGemmUnitPlan(t *testing.T) {
	for _, tt := range []struct {
		m, cols     int
		widest      int
		halfW       bool
		workers     int
		panel, rows int
	}{
		{855, 3072, 64, true, 2, 64, 855},  // 48 units: enough for 2 workers
		{860, 1024, 64, false, 2, 64, 192}, // a float32 W: gemmUnitM rows
		{855, 3072, 64, true, 16, 64, 432}, // 48 panels × 2 row blocks
		{855, 1024, 64, true, 16, 64, 240}, // 16 panels × 4 row blocks of 5 tiles
		{855, 768, 64, true, 16, 64, 144},  // 12 panels × 6 row blocks of 3 tiles
		{93, 3072, 64, true, 16, 32, 93},   // too few rows to split: 96 panels of 32
		{93, 768, 64, true, 16, 16, 93},    // 48 panels of 16, the narrowest
		{10, 1024, 64, true, 16, 16, 10},   // a decision head's few rows
		{1, 1, 64, true, 4, 16, 1},
		{855, 2304, 128, true, 2, 128, 855},  // the outer kernel's panels: 18 units
		{855, 768, 128, true, 2, 64, 855},    // 6 panels would need 2 row blocks: 64's plan
		{860, 1024, 128, false, 2, 128, 192}, // 8 panels × 5 row blocks
		{855, 3072, 128, true, 16, 64, 432},  // 128 would need 4 row blocks, 64 needs 2
		{93, 3072, 128, true, 16, 32, 93},    // no rows to split: halved as from 64
	} {
		panel, rows := gemmUnitPlan(tt.m, tt.cols, tt.widest, tt.halfW, tt.workers)
		if panel != tt.panel || rows != tt.rows {
			t.Errorf("gemmUnitPlan(%d, %d, %d, %v, %d) = panel %d, rows %d; want %d, %d",
				tt.m, tt.cols, tt.widest, tt.halfW, tt.workers, panel, rows, tt.panel, tt.rows)
		}
	}
	// Every plan covers the GEMM in whole tiles per unit (outerFill needs
	// each unit to start a tile).
	for _, m := range []int{1, 47, 48, 93, 200, 855, 4000} {
		for _, workers := range []int{1, 2, 16, 64} {
			for _, halfW := range []bool{false, true} {
				panel, rows := gemmUnitPlan(m, 2624, outerPanel, halfW, workers)
				if _, narrow := gemmUnitPlan(m, 2624, gemmPanel, halfW, workers); rows < narrow {
					t.Errorf("m %d, %d workers, half %v: %d rows per unit with %d-row panels, %d with %d", m, workers, halfW, rows, outerPanel, narrow, gemmPanel)
				}
				if rows != m && (rows%gemmTileM != 0 || rows > m) {
					t.Errorf("m %d, %d workers, half %v: %d rows per unit", m, workers, halfW, rows)
				}
				if panel != 16 && panel != 32 && panel != 64 && panel != 128 {
					t.Errorf("m %d, %d workers: panel %d", m, workers, panel)
				}
			}
		}
	}
}
