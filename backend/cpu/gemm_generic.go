//go:build purego || !(amd64 || arm64)

package cpu

import "github.com/laya-metal/laya/backend"

// simdGemmTile reports that this build has no SIMD tile kernel: the purego
// tag or a GOARCH without one runs gemmTileGo.
func simdGemmTile() gemmTileFunc { return nil }

// simdGemmTiles lists no kernels.
func simdGemmTiles() []gemmKernel { return nil }

// simdWiden: this build widens in Go.
func simdWiden(dst []float32, src []uint16, dtype backend.DType) bool { return false }

// simdGELU: this build evaluates GELU in Go.
func simdGELU(out, in, gate []float32) bool { return false }

// simdGemmOuter: no outer-product kernel in this build.
func simdGemmOuter() outerKernelFunc { return nil }

// outerKernelOfCPU: no outer-product kernel in this build.
func outerKernelOfCPU() outerKernelFunc { return nil }

// prefetchL2: no prefetch hints in this build.
func prefetchL2(p *byte, n int) {}

// simdPackX: this build packs in Go.
func simdPackX(dst, x []float32, idx *[outerNR]int32, k0, k1, cols int) bool { return false }
