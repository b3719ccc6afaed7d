package cpu

import "github.com/laya-metal/laya/backend"

// The GEMM computes Y = X·Wᵀ with W in PyTorch's [N, K] layout, so every
// output is a dot product of two contiguous K-rows: W needs no packing, it
// already is the Wᵀ panel a column-major B would have been packed into, and
// the micro-kernels vectorise along K.
//
// Micro-kernels (gemmTile picks one when the package loads):
//   - gemm_amd64.s: AVX2+FMA, a 3×4 block of Y in 12 YMM accumulators of 8
//     lanes, X rows in 3 more, W rows streamed through the 16th;
//   - gemm_arm64.s: NEON FMLA, the same 3×4 block and the same 8 lanes, each
//     accumulator split over two V registers (24 of the 32);
//   - gemmTileGo below: portable scalar Go, the fallback for other CPUs and
//     GOARCHes and for the purego build tag, and the reference in tests. It
//     keeps a 2×4 block in 8 float32 accumulators: on amd64 Go code is scalar
//     SSE with 16 XMM registers, and 8 accumulators + 6 operands fit without
//     spills (Sapphire Rapids, GOAMD64=v1: 2×4 ≈ 8.5 GFLOP/s per core, 4×4
//     and 3×4 ≈ 4.8, they spill).
//
// Rounding: gemmTileGo adds the products of one output in k order in one
// float32 accumulator. The SIMD kernels give lane l the products k ≡ l mod 8
// in k order, each added with a fused multiply-add, and fold the 8 lanes as
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)). That is the order
// AVX2's VHADDPS yields and the fewest roundings per product; the NEON
// kernel copies it, so amd64 and arm64 answer bit for bit alike
// (TestGemmSIMDLaneOrder checks both against a scalar model). Against the Go
// kernel the answers move in the last bits only; both stay within the
// float32 bound of a k-term sum, and the SIMD one is usually the closer to
// the float64 sum.
//
// Cache blocking: the work is cut into tiles of gemmTileN W rows × gemmTileM
// X rows, numbered N-tile-major and handed to workers in contiguous ranges,
// so a worker sweeps all of X against one W panel (≤ 64×K floats, in L2)
// before moving on and every W byte is read from memory about once.
// gemmTileM is a multiple of both SIMD block heights (3 and 4), so only the
// last tile of X has a ragged block.
const (
	gemmTileN = 64
	gemmTileM = 48
)

// gemmTileFunc fills y[m0:m1, n0:n1] of y = x·wᵀ (y is [·, n], x and w are
// [·, k], k ≥ 1).
type gemmTileFunc func(y, x, w []float32, m0, m1, n0, n1, n, k int)

// gemmTile is the tile kernel Linear runs: the SIMD one when this CPU has it
// (simdGemmTile, per GOARCH), else gemmTileGo. Tests swap it to check both.
var gemmTile = pickGemmTile()

func pickGemmTile() gemmTileFunc {
	if tile := simdGemmTile(); tile != nil {
		return tile
	}
	return gemmTileGo
}

// Linear implements backend.Stream.
func (s *Stream) Linear(dst, x, weight, bias backend.Tensor, act backend.Activation) {
	if !s.ok("linear", dst, x, weight, bias) || !s.check(backend.CheckLinear(dst, x, weight, bias, act)) {
		return
	}
	m, k, n := x.Rows(), x.Cols(), weight.Rows()
	s.be.gemm(data(dst), data(x), data(weight), data(bias), m, n, k, act)
}

// gemm computes y[m, n] = act(Σ_k x[m, k]·w[n, k] + bias[n]).
func (b *Backend) gemm(y, x, w, bias []float32, m, n, k int, act backend.Activation) {
	fill := gemmTile
	if k == 0 {
		// An empty sum: the SIMD kernels take row pointers, and a
		// zero-width row has none.
		fill = gemmTileGo
	}
	tilesN := (n + gemmTileN - 1) / gemmTileN
	tilesM := (m + gemmTileM - 1) / gemmTileM
	b.parallelFor(tilesN*tilesM, 1, func(lo, hi int) {
		for tile := lo; tile < hi; tile++ {
			n0 := (tile / tilesM) * gemmTileN
			m0 := (tile % tilesM) * gemmTileM
			fill(y, x, w, m0, min(m0+gemmTileM, m), n0, min(n0+gemmTileN, n), n, k)
		}
	})
	if bias == nil && act == backend.Identity {
		return
	}
	b.parallelFor(m, 16, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := y[r*n : r*n+n]
			if bias != nil {
				for j := range row {
					row[j] += bias[j]
				}
			}
			activate(row, row, act)
		}
	})
}

// gemmTileGo is the portable gemmTileFunc.
func gemmTileGo(y, x, w []float32, m0, m1, n0, n1, n, k int) {
	xr := func(i int) []float32 { return x[i*k : i*k+k] }
	wr := func(j int) []float32 { return w[j*k : j*k+k] }
	var c [8]float32
	i := m0
	for ; i+2 <= m1; i += 2 {
		x0, x1 := xr(i), xr(i+1)
		j := n0
		for ; j+4 <= n1; j += 4 {
			dot2x4(x0, x1, wr(j), wr(j+1), wr(j+2), wr(j+3), &c)
			copy(y[i*n+j:i*n+j+4], c[0:4])
			copy(y[(i+1)*n+j:(i+1)*n+j+4], c[4:8])
		}
		for ; j < n1; j++ {
			y[i*n+j] = dot(x0, wr(j))
			y[(i+1)*n+j] = dot(x1, wr(j))
		}
	}
	for ; i < m1; i++ {
		x0 := xr(i)
		for j := n0; j < n1; j++ {
			y[i*n+j] = dot(x0, wr(j))
		}
	}
}

// dot2x4 is the micro-kernel: c[4r+q] = x_r · w_q.
func dot2x4(x0, x1, w0, w1, w2, w3 []float32, c *[8]float32) {
	n := len(x0)
	x1 = x1[:n]
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	for k := range x0 {
		a0, a1 := x0[k], x1[k]
		b0, b1, b2, b3 := w0[k], w1[k], w2[k], w3[k]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
	}
	*c = [8]float32{c00, c01, c02, c03, c10, c11, c12, c13}
}

// dot is a float32 dot product with four partial sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	k := 0
	for ; k+4 <= len(a); k += 4 {
		s0 += a[k] * b[k]
		s1 += a[k+1] * b[k+1]
		s2 += a[k+2] * b[k+2]
		s3 += a[k+3] * b[k+3]
	}
	for ; k < len(a); k++ {
		s0 += a[k] * b[k]
	}
	return (s0 + s1) + (s2 + s3)
}
