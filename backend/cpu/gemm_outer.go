package cpu

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// The outer-product GEMM. Linear's Y[t][n] = Σ_k X[t][k]·W[n][k] is computed
// as Yᵀ = W·Xᵀ: the W rows (the stored rows of an F32 W, or the rows of the
// panel widened into worker scratch) are the A operand, read in place, one
// scalar per k broadcast to all lanes; Xᵀ is the B operand, packed once per
// GEMM call into k-major tiles of outerNR tokens (b[k·outerNR + j] =
// X[token j][k], zero past the last token). The micro-kernel
// (gemm8x48AVX512, gemm_outer_avx512_amd64.s) keeps an outerMR × outerNR
// block of Yᵀ in 24 ZMM accumulators for the whole K loop and writes it
// transposed (an in-register 8×16 transpose, then one masked store of 8
// floats per token at the token's row offset), so the kernel needs no
// horizontal reductions and no K blocking. outerFill has it store into a
// small staging block, and each token's row is copied from there into
// whichever Y row the caller asked for (a row subset skips padding rows of
// a batch). BLIS and MKL kernels are shaped this way (Van Zee & van de
// Geijn, "BLIS: A Framework for Rapidly Instantiating BLAS Functionality",
// 2015, §3).
//
// Rounding: every output starts at 0 and takes one fused multiply-add per
// k, in k order: y = fma(x[K−1], w[K−1], … fma(x[0], w[0], 0)). It does not
// depend on the lanes, the tile, the panel, K or M (TestGemmSIMDLaneOrder
// with lanes = 1 and TestGemmOuterRagged pin it bit for bit). It differs from the dot kernels' lane order in the
// last bits, so where this kernel exists it runs every GEMM of Linear
// and GeGLU whatever M (see gemmOuter): the rounding of a row never
// depends on its batch.
//
// Blocking: a work unit (forEachGemmUnit) is one W panel of up to
// outerPanel rows (a GeGLU's: a value and a gate panel of half that) × a
// range of tokens. Inside it the tokens go in groups of tiles that fit
// beside the panel in L2 (outerL2Bytes); for each group, each block of
// outerMR panel rows (32 KiB at K = 1024) sweeps the group's tiles, which
// stream from L2: per k the kernel reads 3 B vectors and 8 A scalars for
// 24 FMAs. While a group computes, its kernel calls prefetch the next
// group's tiles into L2, and when it is done the unit's epilogue (bias,
// activation, residual add, GeGLU) runs on the group's rows while they are
// in cache (outerFill).
//
// Why 8 × 48 and not 12 × 32: 11 loads per 24 FMAs instead of 14, 8 A row
// pointers that fit the 14 free general registers beside the k offset and
// the B pointer (12 would not, with the counter), and an 8-row transpose
// (TRANS8) for the store. 12 × 32 would stream a third less of B from L2,
// but B from L2 measured free here (BenchmarkOuterMicro: K = 1024, B in
// L2, as fast as K = 256, B in L1), so it was not built to compare.
const (
	outerMR = 8
	outerNR = 48
)

// outerPanel is the widest W panel (Yᵀ rows) of an outer-product work unit.
// Each group of Xᵀ tiles comes into L2 once per unit and is then swept by
// every outerMR-row block of the panel, so a wider panel reads X from L3
// fewer times per FLOP: 128 rows against 64 measured 2–9 % faster on every
// encoder shape (F16 panels widened lazily, 862 tokens, one core,
// interleaved best-of-5 sweeps, on a 2-core and a 16-core machine
// alike; 192 and 256 were no better on the whole and widen
// more per unit). gemmUnitPlan still halves it when the workers need more
// units, and keeps gemmPanel's plan where 128 rows would need more row
// blocks (16 workers at ten questions).
const outerPanel = 128

// A work unit of a float32 W spans gemmUnitM rows, and outerFill needs its
// first token to start a tile.
var _ = [1]struct{}{}[gemmUnitM%outerNR]

// outerL2Bytes is the budget for one group of packed tiles (two tiles at
// K = 1024). Of 200 KiB, 384 KiB, 1 MiB and 2 MiB, 384 KiB measured best on
// a machine of 2 MiB L2 a core (1–12 % over 1 MiB on every English
// shape at 93 and 860 rows; one worker, thread CPU time).
var outerL2Bytes = 384 << 10

// outerKernelFunc is the micro-kernel's contract (gemm8x48AVX512's
// comment): C = A·B for an outerMR × outerNR block, rows × cols of it
// stored, row-major (idx == nil) or transposed through idx.
type outerKernelFunc func(a *[outerMR]*float32, b *float32, k int, c *float32, ldc, rows, cols int, idx *int32, pf, pfw *byte)

// gemmOuter is the outer-product kernel Linear uses, nil where this build or
// CPU has none or the dot kernels were asked for (LAYA_CPU_GEMM=dot; see
// simdGemmOuter for the measurements that made it the default). Tests swap
// it.
//
// It runs at every M, though the dot kernel is faster for few rows: a
// row's bits must not depend on how many rows its call has, or a request
// answered alone and inside a batch could round differently
// (TestPredictBatchMatchesPredict requires byte-identical JSON), and the
// two kernels round differently. The dot kernel takes about half the time
// at 1–4 rows, and from ~16 rows on the lead changes with the row count
// (one worker, thread CPU time; the table is in docs/perf-log.md). The
// GEMMs of a few rows (the decision head's pruned layers) are a small part
// of a request; the encoder's 93 or more are not.
//
// Alone, on hot weights, it beats the dot kernel at the encoders' shapes
// (BenchmarkGEMM). Inside the real forward at two workers it takes less
// CPU time than the dot kernel, with no clear gain in wall time; at 16
// cores, once the units were split for many workers, it won clearly
// (simdGemmOuter). The F16 widening (cvtF16AVX512: the weights stream from
// DRAM) is the same for both.
//
// gemmPrefetch: prefetching the next unit's W panel (outerFill) measured no
// faster with one or two workers and cold F16 weights (BenchmarkLayerCold,
// "+prefetch"): the hardware prefetchers keep up with one core's share of
// DRAM. It stays off until a many-core machine shows a gain. What does pay
// is the kernel prefetching the next 8-row block of the panel itself, a
// line every four k of the block's first call (outerFill's nextW): the
// hardware prefetchers stop at 4 KiB pages, two F16 rows of the English
// model; the first group of a one-question GEMM is all of it, and every
// row comes from DRAM. The same rows prefetched from the lazy widening,
// ahead of the kernel, measured nothing (measurements: docs/perf-log.md).
var (
	gemmOuter    = simdGemmOuter()
	gemmPrefetch = false
)

// noPrefetchNextBlock turns outerFill's prefetch of the next block's
// stored rows off (BenchmarkLayerCold's -blockahead compares).
var noPrefetchNextBlock = false

// useOuter reports whether a GEMM of m rows in all, k deep, runs on the
// outer-product kernel, and returns it.
func useOuter(m, k int) (outerKernelFunc, bool) {
	kern := gemmOuter
	if kern == nil || k == 0 || !outerFits(m, k) {
		return nil, false
	}
	return kern, true
}

// packedX is Xᵀ packed for the outer-product kernel: tiles of outerNR
// tokens, token j of the packed order being X row rows[j].
//
// The tiles are packed lazily, by the work units that need them, in pieces
// of (tile, packChunkK k) that any worker may claim: no parallel pass of its
// own before the GEMM's, so a GEMM costs one dispatch and one barrier, as
// on the dot kernels. (With a pass of its own, the outer kernel ran narrow
// GEMMs at half the dot kernel's GFLOP/s on a 16-core machine, see
// simdGemmOuter; whether that pass was the cause is not yet measured.) A
// unit about to use tile t packs every piece of t no one has claimed, then
// waits for the pieces others are packing (they are being packed right now
// by running goroutines, so the wait ends).
type packedX struct {
	tiles []float32 // len(rows)/outerNR rounded up, × k × outerNR
	rows  []int     // X (and Y) row of each packed token
	k     int

	x      []float32
	ldx    int
	chunks int            // pieces per tile
	piece  []atomic.Int32 // per (tile, piece): 0 free, 1 being packed, 2 packed
	ready  []atomic.Bool  // per tile: every piece packed
	norm   *packNorm      // the LayerNorm that makes x, run tile by tile (norm.go); nil: x is ready
}

// packTileK is how many k the Go packer transposes at a time: 64 k of 48
// tokens (12 KiB) stay in L1 while each token's 64 floats are scattered.
const packTileK = 64

// packChunkK is the k range of one packing piece: 48 tokens × 64 k, 12 KiB
// of gathers, about a microsecond.
const packChunkK = 64

// packX prepares rows of x (row stride ldx, k wide; rows nil = [0, m)) for
// packing for the outer-product kernel; the tiles are packed by ensure.
func (b *Backend) packX(x []float32, ldx, k int, rows []int, m int) *packedX {
	if rows == nil {
		rows = make([]int, m)
		for i := range rows {
			rows[i] = i
		}
	}
	for _, r := range rows {
		// The gathers address rows by offsets: one outside would read
		// outside x.
		if r < 0 || r >= m {
			panic(fmt.Sprintf("cpu: GEMM row %d outside [0, %d)", r, m))
		}
	}
	tiles := (len(rows) + outerNR - 1) / outerNR
	chunks := (k + packChunkK - 1) / packChunkK
	px := &packedX{rows: rows, k: k, x: x, ldx: ldx, chunks: chunks,
		piece: make([]atomic.Int32, tiles*chunks), ready: make([]atomic.Bool, tiles)}
	px.tiles = packBuffer(tiles * k * outerNR)
	return px
}

// ensure returns once tile t is packed, packing the pieces of it no other
// goroutine has claimed.
func (px *packedX) ensure(t int) {
	if px.ready[t].Load() {
		return
	}
	k := px.k
	if px.norm != nil {
		px.ensureNormed(t)
	}
	claimAll(px.piece[t*px.chunks:(t+1)*px.chunks], func(c int) {
		packTile(px.tiles[t*k*outerNR:(t+1)*k*outerNR], px.x, px.ldx, px.rows[t*outerNR:min((t+1)*outerNR, len(px.rows))],
			c*packChunkK, min((c+1)*packChunkK, k))
	})
	px.ready[t].Store(true)
}

// claimAll runs do(c) for each piece c of states that no other goroutine
// has claimed (0 free → 1 being done → 2 done), then returns once every
// piece is done: the others are being done right now by running
// goroutines, so the wait ends.
func claimAll(states []atomic.Int32, do func(c int)) {
	for c := range states {
		if states[c].Load() == 0 && states[c].CompareAndSwap(0, 1) {
			do(c)
			states[c].Store(2)
		}
	}
	for c := range states {
		for spins := 0; states[c].Load() != 2; spins++ {
			if spins >= 64 {
				runtime.Gosched()
			}
		}
	}
}

// packTile writes dst[kk·outerNR + j] = x[rows[j]·ldx + kk] for kk in
// [k0, k1), zero for j ≥ len(rows): by AVX-512 gathers where there are
// some (simdPackX), else in Go.
func packTile(dst, x []float32, ldx int, rows []int, k0, k1 int) {
	var idx [outerNR]int32
	for j, r := range rows {
		idx[j] = int32(r * ldx)
	}
	if len(rows) > 0 {
		// The last float a gather reads, so that a short x panics here.
		_ = x[slices.Max(rows)*ldx+k1-1]
		_ = dst[k1*outerNR-1]
	}
	if simdPackX(dst, x, &idx, k0, k1, len(rows)) {
		return
	}
	for b0 := k0; b0 < k1; b0 += packTileK {
		b1 := min(b0+packTileK, k1)
		for j, r := range rows {
			src := x[r*ldx+b0 : r*ldx+b1]
			d := dst[b0*outerNR+j:]
			for kk, v := range src {
				d[kk*outerNR] = v
			}
		}
		for j := len(rows); j < outerNR; j++ {
			for kk := b0; kk < b1; kk++ {
				dst[kk*outerNR+j] = 0
			}
		}
	}
}

// packFree holds free packed-Xᵀ buffers, by capacity, smallest first: at
// most one per GEMM that ran at once. Not the shared scratchPool: there the
// few-MiB pack buffers and the KiB-sized panel and attention buffers took
// each other's places, so most GEMMs of a forward allocated (and zeroed) a
// fresh pack buffer, and a GC empties a sync.Pool anyway.
var packFree struct {
	sync.Mutex
	bufs [][]float32
}

// packBuffer returns a buffer of n floats for a packed Xᵀ.
func packBuffer(n int) []float32 {
	packFree.Lock()
	defer packFree.Unlock()
	for i, buf := range packFree.bufs {
		if cap(buf) >= n {
			packFree.bufs = slices.Delete(packFree.bufs, i, i+1)
			return buf[:n]
		}
	}
	if len(packFree.bufs) > 0 {
		// Drop the smallest: the list converges to the largest size.
		packFree.bufs = packFree.bufs[1:]
	}
	return make([]float32, n)
}

// release gives px's buffer back to packFree.
func (px *packedX) release() {
	packFree.Lock()
	defer packFree.Unlock()
	i, _ := slices.BinarySearchFunc(packFree.bufs, cap(px.tiles), func(buf []float32, c int) int { return cap(buf) - c })
	packFree.bufs = slices.Insert(packFree.bufs, i, px.tiles[:0])
}

// outerPart is one W panel of a work unit for outerFill: its nrows rows
// (wp, row stride ldw). widen, when not nil, fills rows
// [r0, r1) of wp (a half W's panel scratch): each block of outerMR rows is
// widened right before the first group uses it, so the kernel reads it
// from L1 instead of from a whole widened panel in L2 (measured 0–8 %
// faster than widening the panel first on 13 of 16 F16 shapes).
//
// stored, when not nil, is the panel's rows as the weight stores them (F16,
// BF16 or F32), stride bytes a row: outerFill prefetches each block's
// successor from there while the block's first kernel call runs.
type outerPart struct {
	wp     []float32
	ldw    int
	widen  func(r0, r1 int)
	stored []byte
	stride int
}

// outerPartOf is the outerPart of w's rows [n0, n1): the panel (in place
// or widened lazily into scratch) and its stored rows.
func outerPartOf(w matrix, n0, n1, k int, scratch *[]float32) outerPart {
	wp, ldw, widen := w.panelLazy(n0, n1, k, scratch)
	es := 2
	if w.f32 != nil {
		es = 4
	}
	return outerPart{wp: wp, ldw: ldw, widen: widen, stored: w.rowBytes(n0, n1, k), stride: w.ld * es}
}

// outerFill computes each part's panel (all nrows rows) against packed
// tokens [t0, t1) (t0 a multiple of outerNR), a group of tiles at a time:
// every part's blocks sweep the group while it is in L2, then epilogue
// runs on the group's packed tokens [j0, j1), whose results of every part
// (st.row) are then final, while they are still in cache: it stores them
// into Y (or, for an output nobody reads, does not) and runs what the GEMM
// feeds (bias, activation, residual add, GeGLU). At most two parts.
// A GeGLU unit passes its value and gate panels as two parts, so its
// GeGLU reads both halves of a group hot: run over a whole unit's rows
// instead, it read them back from L3 or DRAM, at about twice the cost per
// value (BenchmarkGeGLURows, 862 rows of 128 unit columns).
//
// touch, when not nil, prefetches the epilogue's destinations of packed
// token j (its Y row's columns, a residual's row).
//
// ahead is memory (the next panel's stored W rows) to prefetch into L2
// while the kernels run, a slice of it before each kernel call, so that the
// next panel's DRAM latency hides behind this panel's FMAs.
func outerFill(kern outerKernelFunc, px *packedX, parts []outerPart, nrows, t0, t1 int, ahead []byte, epilogue func(j0, j1 int, st *outerStaged), touch func(j int)) {
	k := px.k
	if len(parts) > len(outerStaged{}.bufs) {
		panic(fmt.Sprintf("cpu: outerFill of %d parts", len(parts)))
	}
	for _, p := range parts {
		// The last float the kernel reads, so that a short panel
		// panics here instead of being overrun. (It writes only the
		// staging block, sized here.)
		_ = p.wp[(nrows-1)*p.ldw+k-1]
	}
	tileFloats := k * outerNR
	group := min(outerMaxGroup, max(1, outerL2Bytes/(4*tileFloats)))
	first, last := t0/outerNR, (t1+outerNR-1)/outerNR
	// The kernels store into a group's staging block, a row of ldS floats
	// per token and part (outerStaged says why).
	ldS := outerStageStride(nrows)
	stage := getScratch(len(parts) * group * outerNR * ldS)
	defer putScratch(stage)
	st := outerStaged{ld: ldS, n: nrows}
	for part := range parts {
		st.bufs[part] = (*stage)[part*group*outerNR*ldS : (part+1)*group*outerNR*ldS]
	}
	var stageOff [outerNR]int32
	for j := range stageOff {
		stageOff[j] = int32(j * ldS)
	}
	calls := len(parts) * ((nrows + outerMR - 1) / outerMR) * (last - first)
	step := (len(ahead)/max(calls, 1) + 63) &^ 63
	var a [outerMR]*float32
	// Each kernel call prefetches outerPrefetch(k) bytes of the next
	// group's tiles into L2, call i of a group from byte i·that on, so
	// that the group's first block does not wait on L3 for every line of
	// it; once past the next group (or at the last one) it prefetches its
	// own tile, already in cache. Why: a sweep that streams 18 tiles from
	// L3 ran 7–8 % slower than one on 2 hot tiles (K = 768, one core), and
	// with the prefetch the encoder's 860-row GEMMs were never slower and
	// mostly faster (measurements: docs/perf-log.md).
	pfBytes := outerPrefetch(k)
	var tally *kernelTally
	if kernelTime.on.Load() {
		tally = &kernelTally{}
		defer tally.flush()
	}
	for g0 := first; g0 < last; g0 += group {
		g1 := min(g0+group, last)
		for t := g0; t < g1; t++ {
			px.ensure(t)
		}
		var nextTiles []float32
		if g1 < last {
			ng1 := min(g1+group, last)
			for t := g1; t < ng1; t++ {
				// Prefetching a tile no one packed yet would fetch lines
				// about to be rewritten; packing it here moves that work
				// one group earlier, it does not add any.
				px.ensure(t)
			}
			nextTiles = px.tiles[g1*tileFloats : ng1*tileFloats]
		}
		call := 0
		// touch asks for the epilogue's destination rows of this group's
		// tokens, a few rows before each of the group's kernel calls, so
		// that the epilogue's stores (and the residual add's loads) find
		// their lines in L2 instead of waiting on L3 or DRAM for each. Y
		// of a ten-question request is megabytes (multilingual qkv: 7.9
		// MB), so the rows a group writes are cold: without the touches
		// the epilogue's copies into Y, residual adds and GeGLUs took
		// nearly a tenth of a ten-question request's CPU samples, about
		// half that with them. PREFETCHW instead (lines fetched ready to
		// be written) moved the same stall into the prefetches. The
		// GeGLU's output rows are not touched (it paid nothing); the
		// residual's input rows are (measurements: docs/perf-log.md).
		tj0, tj1 := max(g0*outerNR, t0), min(g1*outerNR, t1)
		perCall := 0
		if touch != nil {
			groupCalls := len(parts) * ((nrows + outerMR - 1) / outerMR) * (g1 - g0)
			perCall = (tj1 - tj0 + groupCalls - 1) / groupCalls
		}
		for part, p := range parts {
			ps := st.bufs[part]
			for i0 := 0; i0 < nrows; i0 += outerMR {
				rows := min(outerMR, nrows-i0)
				if p.widen != nil && g0 == first {
					p.widen(i0, i0+rows)
				}
				for r := range a {
					a[r] = &p.wp[min(i0+r, nrows-1)*p.ldw] // missing rows repeat the last
				}
				// The next block's stored rows, which the first group reads
				// (widens, or reads in place) right after this block: from
				// DRAM, where every weight of a request is, unless
				// prefetched. The kernel's second stream (pfw), so that they
				// do not take the place of the next group's tiles: when one
				// stream served both, a unit of many groups (ten questions)
				// left W to the hardware prefetchers, which stop at 4 KiB
				// pages (two F16 rows of the English model), and widened
				// cold rows (measurements: docs/perf-log.md). outerPrefetch(k)
				// bytes a call is one call's worth for 8 F16 rows, two for
				// F32 ones. After a part's last block comes the next part's
				// first (a GeGLU's gate half); after the last one, nothing
				// (pfw repeats pf).
				var nextW []byte
				if g0 == first && !noPrefetchNextBlock {
					switch {
					case p.stored != nil && i0+outerMR < nrows:
						nextW = p.stored[(i0+outerMR)*p.stride : min((i0+2*outerMR)*p.stride, len(p.stored))]
					case part+1 < len(parts) && parts[part+1].stored != nil:
						q := parts[part+1]
						nextW = q.stored[:min(outerMR*q.stride, len(q.stored))]
					}
				}
				for t := g0; t < g1; t++ {
					if len(ahead) > 0 && gemmPrefetch {
						n := min(step, len(ahead))
						prefetchL2(&ahead[0], n)
						ahead = ahead[n:]
					}
					cols := min(outerNR, t1-t*outerNR)
					pf := (*byte)(unsafe.Pointer(&px.tiles[t*tileFloats]))
					if off := call * pfBytes / 4; off < len(nextTiles) {
						pf = (*byte)(unsafe.Pointer(&nextTiles[off]))
						call++
					}
					pfw := pf
					if len(nextW) > 0 {
						pfw = &nextW[0]
						nextW = nextW[min(pfBytes, len(nextW)):]
					}
					for range perCall {
						if tj0 < tj1 {
							touch(tj0)
							tj0++
						}
					}
					var start time.Time
					if tally != nil {
						start = time.Now()
					}
					kern(&a, &px.tiles[t*tileFloats], k, &ps[(t-g0)*outerNR*ldS+i0], 0, rows, cols, &stageOff[0], pf, pfw)
					if tally != nil {
						tally.add(k, time.Since(start))
					}
				}
			}
		}
		st.first = g0 * outerNR
		epilogue(max(g0*outerNR, t0), min(g1*outerNR, t1), &st)
	}
}

// outerStaged is a group's results in outerFill's staging block.
//
// The micro-kernel stores each token's outerMR outputs there, not into the
// token's Y row, and the epilogue copies the group's rows into Y once the
// panel is done with them. Stored straight into Y, every kernel call wrote
// 48 lines in 48 rows of Y, a row stride apart: at the English attention
// projections' 1,024 and 3,072 columns (4 and 12 KiB) all 48 lines fall
// into one L1 set (12 ways), at 2,304 and 768 into four, and each call's
// stores touched 48 pages. BenchmarkOuterMicro, one core, K = 256, on a
// 16-core machine: 49–117 GFLOP/s storing into 3,072-wide rows, 157–169 into a
// contiguous block. The staged rows are outerStageStride apart, a line more
// than the rows' width, so that consecutive tokens' lines fall into
// different sets.
type outerStaged struct {
	bufs  [2][]float32 // per part
	ld, n int          // row stride, row length (the panel's rows)
	first int          // the packed token of the block's first row
}

// row returns packed token j's results of part.
func (st *outerStaged) row(part, j int) []float32 {
	s := (j - st.first) * st.ld
	return st.bufs[part][s : s+st.n : s+st.n]
}

// outerMaxGroup caps a group at 8 tiles (at small K outerL2Bytes would
// allow hundreds), so that the staging block stays small; every encoder
// shape's group is 1 or 2 tiles.
const outerMaxGroup = 8

// outerStageStride is the staging block's row stride for a panel of nrows.
func outerStageStride(nrows int) int { return (nrows+15)&^15 + 16 }

// outerPrefetch is how many bytes of prefetch one kernel call of depth k
// issues (gemm8x48AVX512's pf: a line per loop of four k).
func outerPrefetch(k int) int { return k / 4 * 64 }

// outerFits reports whether the outer-product path can address x (m × k):
// the packing gathers' offsets are int32. Y is addressed by Go indices (the
// kernel stores into a staging block, outerStaged), so its width does not
// matter.
func outerFits(m, k int) bool { return m*k <= math.MaxInt32 }

// gemmOuterW is gemmW (for the rows listed, nil = all) on the
// outer-product kernel. keepY false leaves y unwritten (an output the
// stream was told nobody reads: Discard). after, when not nil, is the
// unit's epilogue on each of its rows r, given the row's values of columns
// [n0, n0+len(v)) after bias and activation, while they are in cache
// (gemmResidual's add).
func (b *Backend) gemmOuterW(kern outerKernelFunc, y, x []float32, w matrix, bias []float32, rows []int, m, n, k int, act backend.Activation, keepY bool, after func(r, n0 int, v []float32)) {
	b.gemmOuterUnits(kern, y, b.packX(x, k, k, rows, m), w, bias, n, act, keepY, 0, nil, after, nil)
}

// gemmOuterAligned is gemmOuterW storing y, with units of whole groups of
// align columns (forEachAlignedUnit) and before run on each row's values
// of a unit (as after is) before they are stored: gemmRope's rotation. It
// returns false, having done nothing, where the plan's panels are not
// multiples of align.
func (b *Backend) gemmOuterAligned(kern outerKernelFunc, y []float32, px *packedX, w matrix, bias []float32, n int, act backend.Activation, align int, before func(r, n0 int, v []float32)) bool {
	return b.gemmOuterUnits(kern, y, px, w, bias, n, act, true, align, before, nil, nil)
}

// gemmOuterUnits is gemmOuterW and gemmOuterAligned on Xᵀ packed (or to be
// packed) in px, which it releases.
func (b *Backend) gemmOuterUnits(kern outerKernelFunc, y []float32, px *packedX, w matrix, bias []float32, n int, act backend.Activation, keepY bool, align int, before, after func(r, n0 int, v []float32), touchRow func(r, n0, n1 int)) bool {
	defer px.release()
	k := px.k
	return b.forEachAlignedUnit(len(px.rows), n, k, outerPanel, widenedPanels(w, 1), align, func(n0, n1, mu0, mu1 int, next [2]int, scratch *[]float32) {
		parts := [1]outerPart{outerPartOf(w, n0, n1, k, scratch)}
		var touch func(j int) // nil where the epilogue writes nothing of its own
		if keepY || touchRow != nil {
			touch = func(j int) {
				r := px.rows[j]
				if keepY {
					prefetchL2((*byte)(unsafe.Pointer(&y[r*n+n0])), (n1-n0)*4)
				}
				if touchRow != nil {
					touchRow(r, n0, n1)
				}
			}
		}
		outerFill(kern, px, parts[:], n1-n0, mu0, mu1, w.rowBytes(next[0], next[1], k), func(j0, j1 int, st *outerStaged) {
			for j := j0; j < j1; j++ {
				r, v := px.rows[j], st.row(0, j)
				biasActivate(v, bias, n0, act) // a no-op without either
				if before != nil {
					before(r, n0, v)
				}
				if keepY {
					copy(y[r*n+n0:r*n+n1], v)
				}
				if after != nil {
					after(r, n0, v)
				}
			}
		}, touch)
	})
}

// gemmOuterGeGLU is gemmGeGLU on the outer-product kernel; op.discardY
// leaves op.dst unwritten.
func (b *Backend) gemmOuterGeGLU(kern outerKernelFunc, op *linearOp, dst []float32, rows []int, norm *normOp) {
	y, x, w, k := op.dst.data, op.x, op.w, op.k
	inner := op.n / 2
	px := b.packInput(norm, x, k, rows, op.m)
	defer px.release()
	// A unit's value and gate panels are outerPanel/2 rows each: both
	// sweep every group of Xᵀ tiles, so a group serves outerPanel W rows as
	// in a plain Linear, and both widened halves fit the scratch of one
	// outerPanel-row panel.
	b.forEachGemmUnit(len(px.rows), inner, k, outerPanel/2, widenedPanels(w, 2), func(n0, n1, mu0, mu1 int, next [2]int, scratch *[]float32) {
		var parts [2]outerPart
		for half, off := range [2]int{0, inner} {
			var sub *[]float32
			if scratch != nil {
				// Each half widens into its own half of the scratch.
				s := (*scratch)[half*(n1-n0)*k : (half+1)*(n1-n0)*k]
				sub = &s
			}
			parts[half] = outerPartOf(w, off+n0, off+n1, k, sub)
		}
		outerFill(kern, px, parts[:], n1-n0, mu0, mu1, w.rowBytes(next[0], next[1], k), func(j0, j1 int, st *outerStaged) {
			for j := j0; j < j1; j++ {
				r, value, gate := px.rows[j], st.row(0, j), st.row(1, j)
				if !op.discardY {
					copy(y[r*op.n+n0:r*op.n+n1], value)
					copy(y[r*op.n+inner+n0:r*op.n+inner+n1], gate)
				}
				gegluSlice(dst[r*inner+n0:r*inner+n1], value, gate)
			}
		}, nil) // touching dst (and y) here measured no faster (outerFill)
	})
}
