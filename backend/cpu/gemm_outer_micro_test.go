//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"testing"
	"unsafe"
)

// BenchmarkOuterMicro times the outer-product micro-kernel alone on one
// core at several K: operands hot (B, K·192 bytes, in L1 or L2), storing
// transposed into a 3072-wide Y (its 48 destination rows 12 KiB apart), and
// with A rotating through a 12 MiB W (from L3 or DRAM).
func BenchmarkOuterMicro(b *testing.B) {
	kern := simdGemmOuter()
	if kern == nil {
		b.Skip("no AVX-512")
	}
	// The kernel's prefetches go to its own B, as outerFill's last group
	// does: a nil pf would send them to unmapped addresses near 0.
	pf := func(bt []float32) *byte { return (*byte)(unsafe.Pointer(&bt[0])) }
	for _, k := range []int{128, 256, 512, 1024} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			a := make([]float32, outerMR*k)
			bt := make([]float32, k*outerNR)
			c := make([]float32, outerMR*outerNR)
			var ap [outerMR]*float32
			for r := range ap {
				ap[r] = &a[r*k]
			}
			for b.Loop() {
				kern(&ap, &bt[0], k, &c[0], outerNR, outerMR, outerNR, nil, pf(bt), pf(bt))
			}
			b.ReportMetric(2*float64(outerMR*outerNR*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("K=%d/transposed", k), func(b *testing.B) {
			a := make([]float32, outerMR*k)
			bt := make([]float32, k*outerNR)
			c := make([]float32, 3072*outerNR)
			idx := make([]int32, outerNR)
			for j := range idx {
				idx[j] = int32(j * 3072)
			}
			var ap [outerMR]*float32
			for r := range ap {
				ap[r] = &a[r*k]
			}
			for b.Loop() {
				kern(&ap, &bt[0], k, &c[0], 0, outerMR, outerNR, &idx[0], pf(bt), pf(bt))
			}
			b.ReportMetric(2*float64(outerMR*outerNR*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("K=%d/coldA", k), func(b *testing.B) {
			const n = 3072
			a := make([]float32, n*k)
			bt := make([]float32, k*outerNR)
			c := make([]float32, outerMR*outerNR)
			var ap [outerMR]*float32
			i := 0
			for b.Loop() {
				i0 := (i % (n / outerMR)) * outerMR
				i++
				for r := range ap {
					ap[r] = &a[(i0+r)*k]
				}
				kern(&ap, &bt[0], k, &c[0], outerNR, outerMR, outerNR, nil, pf(bt), pf(bt))
			}
			b.ReportMetric(2*float64(outerMR*outerNR*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkPackTile packs one 48-token tile's 64 k (packChunkK, the unit
// packedX.ensure claims) from rows of a 1024-wide X, by the transposes and
// by the gathers they replace.
func BenchmarkPackTile(b *testing.B) {
	const ldx, k = 1024, 1024
	x := make([]float32, 860*ldx)
	rows := make([]int, outerNR)
	for j := range rows {
		rows[j] = 5 + 17*j
	}
	dst := make([]float32, k*outerNR)
	for _, gathers := range []bool{false, true} {
		name := "transposes"
		if gathers {
			name = "gathers"
		}
		b.Run(name, func(b *testing.B) {
			defer func(old bool) { packByGathers = old }(packByGathers)
			packByGathers = gathers
			k0 := 0
			for b.Loop() {
				packTile(dst, x, ldx, rows, k0, k0+packChunkK)
				k0 = (k0 + packChunkK) % k
			}
			b.ReportMetric(float64(outerNR*packChunkK)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gfloat/s")
		})
	}
}

// BenchmarkOuterSweep times the micro-kernel as outerFill drives it on one
// group: every 8-row block of a 128-row F32 panel against each of a group's
// Xᵀ tiles (B from L2), stored transposed into a staging block. Against
// the FMA peak (scripts/bench/amx-probe's "fma" line) it tells how much of a
// GEMM's time the kernel itself could still give back: at K = 1024 and
// 768 it ran at the peak. Keeping B in L1 (K blocks of 64–256 k, with the
// A rows in place or packed) measured slower than this loop, and a packed
// A block or a PREFETCHT0 of B ahead no faster (measurements:
// docs/perf-log.md).
func BenchmarkOuterSweep(b *testing.B) {
	kern := simdGemmOuter()
	if kern == nil {
		b.Skip("no AVX-512")
	}
	const nrows = 128
	for _, k := range []int{768, 1024, 2624} {
		for _, tiles := range []int{1, 2} {
			b.Run(fmt.Sprintf("K=%d/tiles=%d", k, tiles), func(b *testing.B) {
				sweep := outerSweep(kern, nrows, k, tiles)
				for b.Loop() {
					sweep()
				}
				b.ReportMetric(2*float64(nrows*tiles*outerNR*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
