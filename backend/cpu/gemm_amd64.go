//go:build !purego

package cpu

import (
	"os"

	sysCPU "golang.org/x/sys/cpu"

	"github.com/laya-metal/laya/backend"
)

// simdGemmTile returns the best tile kernel this CPU runs: AVX-512F, else
// AVX2+FMA, else nil. x/sys/cpu reports a feature only when the OS also
// saves its register state (ZMM/opmask for AVX-512, YMM for AVX2).
func simdGemmTile() gemmTileFunc {
	if k := simdGemmTiles(); len(k) > 0 {
		return k[0].tile
	}
	return nil
}

// simdGemmTiles lists every SIMD tile kernel this CPU runs, best first, so
// tests and benchmarks cover each (an AVX-512 machine also runs AVX2).
func simdGemmTiles() []gemmKernel {
	var ks []gemmKernel
	if sysCPU.X86.HasAVX512F {
		ks = append(ks, gemmKernel{name: "avx512", tile: gemmTileAVX512, lanes: 16})
	}
	if sysCPU.X86.HasAVX2 && sysCPU.X86.HasFMA {
		ks = append(ks, gemmKernel{name: "avx2", tile: gemmTileAVX2, lanes: 8})
	}
	return ks
}

// dot3x4AVX2 sets c[4r+q] = Σ_k x_r[k]·w_q[k] for k in [0, k). It reads
// exactly k floats from each row (the last k mod 8 with masked loads), so the
// rows may end at the end of their slices.
//
//go:noescape
func dot3x4AVX2(x0, x1, x2, w0, w1, w2, w3 *float32, k int, c *[12]float32)

// gemmTileAVX2 is the gemmTileFunc over dot3x4AVX2. A ragged block repeats
// the tile's last X row or W row in its missing slots and drops their sums,
// so the kernel needs no tail variants. W blocks are the outer loop: their 4
// rows (16 KiB at K = 1024) stay in L1 while the X rows stream from L2.
func gemmTileAVX2(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, m0, m1, n0, n1, k int) {
	xRow := func(i int) *float32 { return &x[min(i, m1-1)*ldx] }
	wRow := func(j int) *float32 { return &w[min(j, n1-1)*ldw] }
	var c [12]float32
	for j := n0; j < n1; j += 4 {
		w0, w1, w2, w3 := wRow(j), wRow(j+1), wRow(j+2), wRow(j+3)
		cols := min(4, n1-j)
		for i := m0; i < m1; i += 3 {
			dot3x4AVX2(xRow(i), xRow(i+1), xRow(i+2), w0, w1, w2, w3, k, &c)
			for r := range min(3, m1-i) {
				copy(y[(i+r)*ldy+j:(i+r)*ldy+j+cols], c[4*r:4*r+cols])
			}
		}
	}
}

// dot6x4AVX512 sets c[4r+q] = Σ_k xs[r][k]·ws[q][k]; see
// gemm_avx512_amd64.s. It reads exactly k floats of each row.
//
//go:noescape
func dot6x4AVX512(xs *[6]*float32, ws *[4]*float32, k int, c *[24]float32)

// gemm6x4AVX512 runs blocks 6×4 blocks along W, storing into y (adding to
// it with acc ≠ 0); see gemm_avx512_amd64.s. It reads exactly k floats of
// each row.
//
//go:noescape
func gemm6x4AVX512(xs *[6]*float32, w *float32, ldw, blocks, k int, y *float32, ldy, rows, acc int)

// gemmKBlockAVX512 is the longest K the AVX-512 tile sums in one pass: 6 X
// rows of it (36 KiB) stay in a 48 KiB L1 beside the streaming W rows.
// Longer K (the MLP's output projection, K = 2624 in ModernBERT-large; the
// head's 4·d) is cut into blocks of this many, each block's sums added to
// Y in order: y = fl(fl(s₀) + s₁) + … (a multiple of 16, so the lanes of
// every block hold the same k mod 16 classes).
const gemmKBlockAVX512 = 1536

// gemmTileAVX512 is the gemmTileFunc over the AVX-512 6×4 kernel. X blocks
// are the outer loop: their 6 rows (24 KiB at K = 1024) stay in L1 while the
// W panel's rows stream from L2 past them (4 loads per 24 FMAs instead of 6
// the other way round). The whole blocks of 4 W rows run in one assembly
// call that stores into y itself; a ragged last block (n mod 4 columns)
// repeats its last W row, a ragged X block its last X row, and the repeats
// are not stored.
func gemmTileAVX512(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, m0, m1, n0, n1, k int) {
	var xs [6]*float32
	var ws [4]*float32
	var c [24]float32
	full := (n1 - n0) / 4
	for i := m0; i < m1; i += 6 {
		rows := min(6, m1-i)
		// The last element the calls store and read, so that a short
		// slice panics here instead of being overrun.
		_ = y[(i+rows-1)*ldy+n1-1]
		_ = w[(n1-1)*ldw+k-1]
		for k0 := 0; k0 < k; k0 += gemmKBlockAVX512 {
			kb := min(gemmKBlockAVX512, k-k0)
			acc := min(k0, 1)
			for r := range xs {
				xs[r] = &x[min(i+r, m1-1)*ldx+k0]
			}
			if full > 0 {
				gemm6x4AVX512(&xs, &w[n0*ldw+k0], ldw, full, kb, &y[i*ldy+n0], ldy, rows, acc)
			}
			if j := n0 + 4*full; j < n1 {
				for q := range ws {
					ws[q] = &w[min(j+q, n1-1)*ldw+k0]
				}
				dot6x4AVX512(&xs, &ws, kb, &c)
				for r := range rows {
					out := y[(i+r)*ldy+j : (i+r)*ldy+n1]
					for q := range out {
						if acc == 0 {
							out[q] = c[4*r+q]
						} else {
							out[q] += c[4*r+q]
						}
					}
				}
			}
		}
	}
}

//go:noescape
func cvtF16AVX512(dst *float32, src *uint16, n int)

//go:noescape
func cvtBF16AVX512(dst *float32, src *uint16, n int)

// hasAVX512Widen: VCVTPH2PS and VPMOVZXWD on ZMM need AVX-512F, the masked
// 16-bit tail loads AVX-512BW.
var hasAVX512Widen = sysCPU.X86.HasAVX512F && sysCPU.X86.HasAVX512BW

// simdWiden widens with AVX-512 when the CPU has it.
func simdWiden(dst []float32, src []uint16, dtype backend.DType) bool {
	if !hasAVX512Widen {
		return false
	}
	dst = dst[:len(src)]
	if dtype == backend.F16 {
		cvtF16AVX512(&dst[0], &src[0], len(src))
	} else {
		cvtBF16AVX512(&dst[0], &src[0], len(src))
	}
	return true
}

// gemm8x48AVX512 is the outer-product micro-kernel; see
// gemm_outer_avx512_amd64.s and gemm_outer.go.
//
//go:noescape
func gemm8x48AVX512(a *[8]*float32, b *float32, k int, c *float32, ldc, rows, cols int, idx *int32, pf, pfw *byte)

// simdGemmOuter returns the outer-product kernel where the CPU has
// AVX-512F (the kernel uses only AVX-512F instructions on ZMM) unless the
// dot kernels are asked for (LAYA_CPU_GEMM=dot), else nil: Linear then
// runs the dot kernels.
//
// It became the default once forEachGemmUnit split 16 workers' GEMMs into
// several units each (gemmUnitPlan). Before that, at 16 cores it was
// slower than the dot kernel end to end and far behind on the narrow GEMMs
// (English attention Wo at 93 rows, BenchmarkGEMM): its 48-token tiles left
// fewer, longer units than the workers. With the split, ten-question
// requests ran faster on it than on the dot kernel at 2 and at 16 cores
// (measurements: docs/perf-log.md).
func simdGemmOuter() outerKernelFunc {
	if os.Getenv("LAYA_CPU_GEMM") == "dot" {
		return nil
	}
	return outerKernelOfCPU()
}

// outerKernelOfCPU is the outer-product kernel this CPU runs, asked for or
// not (tests and benchmarks cover it either way), or nil.
func outerKernelOfCPU() outerKernelFunc {
	if sysCPU.X86.HasAVX512F {
		return gemm8x48AVX512
	}
	return nil
}

// prefetchL2 asks for the lines of [p, p+n) in L2 (n ≥ 1); see
// gemm_outer_avx512_amd64.s.
//
//go:noescape
func prefetchL2(p *byte, n int)

// packXAVX512 packs one tile of Xᵀ by gathers; see
// gemm_outer_avx512_amd64.s. k ≥ 1, 1 ≤ cols ≤ 48; idx has 48 entries.
//
//go:noescape
func packXAVX512(dst *float32, src *float32, idx *int32, k, cols int)

// packXTAVX512 packs a full tile's 16·k16 k by transposes; see
// gemm_outer_avx512_amd64.s. k16 ≥ 1; idx has 48 entries.
//
//go:noescape
func packXTAVX512(dst *float32, src *float32, idx *int32, k16 int)

// simdPackX packs with AVX-512 where the CPU has AVX-512F: a full tile's
// k in blocks of 16 by transposes, the rest (a tile's last k below 16, the
// last tile of a GEMM whose tokens do not fill it) by gathers.
func simdPackX(dst, x []float32, idx *[outerNR]int32, k0, k1, cols int) bool {
	if !sysCPU.X86.HasAVX512F {
		return false
	}
	if k16 := (k1 - k0) / 16; cols == outerNR && k16 > 0 && !packByGathers {
		packXTAVX512(&dst[k0*outerNR], &x[k0], &idx[0], k16)
		k0 += 16 * k16
	}
	if k0 < k1 {
		packXAVX512(&dst[k0*outerNR], &x[k0], &idx[0], k1-k0, cols)
	}
	return true
}

// packByGathers sends every tile to the gathers (tests and benchmarks
// compare the two).
var packByGathers = false
