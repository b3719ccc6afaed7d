//go:build purego || !(amd64 || arm64)

package cpu

// simdGemmTile reports that this build has no SIMD tile kernel: the purego
// tag or a GOARCH without one runs gemmTileGo.
func simdGemmTile() gemmTileFunc { return nil }
