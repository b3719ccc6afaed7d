//go:build !purego

package cpu

import "github.com/laya-metal/laya/backend"

// simdGemmTile returns the NEON tile kernel: Advanced SIMD is part of every
// arm64 (ARMv8-A) CPU, so there is nothing to detect.
func simdGemmTile() gemmTileFunc { return gemmTileNEON }

// simdGemmTiles lists the SIMD tile kernels (tests and benchmarks).
func simdGemmTiles() []gemmKernel { return []gemmKernel{{name: "neon", tile: gemmTileNEON, lanes: 8}} }

// dot3x4NEON sets c[4r+q] = Σ_k x_r[k]·w_q[k] over groups×8 floats of the
// rows and then, when tail is non-nil, over its 8-float rows (x0, x1, x2, w0,
// w1, w2, w3 in that order). It rounds exactly as dot3x4AVX2; see
// gemm_arm64.s.
//
//go:noescape
func dot3x4NEON(x0, x1, x2, w0, w1, w2, w3 *float32, groups int, tail *[7][8]float32, c *[12]float32)

// gemmTileNEON is the gemmTileFunc over dot3x4NEON, blocked like
// gemmTileAVX2 (ragged blocks repeat the tile's last row). NEON has no masked
// load, so the last k mod 8 floats of each row are copied into zero-padded
// rows that the kernel runs as one more group: the zeros add 0·0 to the lanes
// past the tail, as the AVX2 kernel's masked loads do, so arm64 and amd64
// give the same bits.
func gemmTileNEON(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, m0, m1, n0, n1, k int) {
	groups, rem := k/8, k%8
	xRow := func(i int) []float32 { i = min(i, m1-1); return x[i*ldx : i*ldx+k] }
	wRow := func(j int) []float32 { j = min(j, n1-1); return w[j*ldw : j*ldw+k] }
	// Rows 0–2 hold the X tails, 3–6 the W tails; only their first rem
	// floats are ever written, the rest stay zero.
	var pad [7][8]float32
	var tail *[7][8]float32
	if rem > 0 {
		tail = &pad
	}
	var c [12]float32
	for j := n0; j < n1; j += 4 {
		ws := [4][]float32{wRow(j), wRow(j + 1), wRow(j + 2), wRow(j + 3)}
		if rem > 0 {
			for q, row := range ws {
				copy(pad[3+q][:], row[8*groups:])
			}
		}
		cols := min(4, n1-j)
		for i := m0; i < m1; i += 3 {
			xs := [3][]float32{xRow(i), xRow(i + 1), xRow(i + 2)}
			if rem > 0 {
				for r, row := range xs {
					copy(pad[r][:], row[8*groups:])
				}
			}
			dot3x4NEON(&xs[0][0], &xs[1][0], &xs[2][0], &ws[0][0], &ws[1][0], &ws[2][0], &ws[3][0], groups, tail, &c)
			for r := range min(3, m1-i) {
				copy(y[(i+r)*ldy+j:(i+r)*ldy+j+cols], c[4*r:4*r+cols])
			}
		}
	}
}

//go:noescape
func cvtF16NEON(dst *float32, src *uint16, n int)

//go:noescape
func cvtBF16NEON(dst *float32, src *uint16, n int)

// simdWiden widens 8 values at a time with NEON (widen_arm64.s; every arm64
// CPU has it), the last len mod 8 in Go.
func simdWiden(dst []float32, src []uint16, dtype backend.DType) bool {
	dst = dst[:len(src)]
	n := len(src) &^ 7
	if n > 0 {
		if dtype == backend.F16 {
			cvtF16NEON(&dst[0], &src[0], n)
		} else {
			cvtBF16NEON(&dst[0], &src[0], n)
		}
	}
	widenGo(dst[n:], src[n:], dtype)
	return true
}

// simdGELU: arm64 evaluates GELU in Go.
func simdGELU(out, in, gate []float32) bool { return false }

// simdGemmOuter: arm64 has no outer-product kernel yet (NEON runs the dot
// kernel at every M).
func simdGemmOuter() outerKernelFunc { return nil }

// outerKernelOfCPU: no outer-product kernel in this build.
func outerKernelOfCPU() outerKernelFunc { return nil }

// prefetchL2: no prefetch hints on arm64 yet.
func prefetchL2(p *byte, n int) {}

// simdPackX: arm64 packs in Go.
func simdPackX(dst, x []float32, idx *[outerNR]int32, k0, k1, cols int) bool { return false }
