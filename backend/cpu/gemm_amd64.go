//go:build !purego

package cpu

import sysCPU "golang.org/x/sys/cpu"

// simdGemmTile returns the AVX2+FMA tile kernel, or nil when the CPU (or
// the OS, which must save the YMM state; x/sys/cpu checks both) lacks it.
func simdGemmTile() gemmTileFunc {
	if sysCPU.X86.HasAVX2 && sysCPU.X86.HasFMA {
		return gemmTileAVX2
	}
	return nil
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
func gemmTileAVX2(y, x, w []float32, m0, m1, n0, n1, n, k int) {
	xRow := func(i int) *float32 { return &x[min(i, m1-1)*k] }
	wRow := func(j int) *float32 { return &w[min(j, n1-1)*k] }
	var c [12]float32
	for j := n0; j < n1; j += 4 {
		w0, w1, w2, w3 := wRow(j), wRow(j+1), wRow(j+2), wRow(j+3)
		cols := min(4, n1-j)
		for i := m0; i < m1; i += 3 {
			dot3x4AVX2(xRow(i), xRow(i+1), xRow(i+2), w0, w1, w2, w3, k, &c)
			for r := range min(3, m1-i) {
				copy(y[(i+r)*n+j:(i+r)*n+j+cols], c[4*r:4*r+cols])
			}
		}
	}
}
