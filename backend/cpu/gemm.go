package cpu

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// The GEMM computes Y = X·Wᵀ with W in PyTorch's [N, K] layout, so every
// output is a dot product of two contiguous K-rows: a float32 W needs no
// packing, it already is the Wᵀ panel a column-major B would have been
// packed into, and the micro-kernels vectorise along K. A W stored as F16 or
// BF16 (weights used as stored, see weight.go) is widened one panel of
// gemmPanel rows at a time into the worker's scratch while the panel is
// packed, right before its tiles use it: it is never widened as a whole.
//
// Micro-kernels (gemmTile picks one when the package loads):
//   - gemm_outer_avx512_amd64.s: AVX-512F, outer-product shaped (an 8×48
//     block of Yᵀ in 24 ZMM accumulators, W scalars broadcast, Xᵀ packed),
//     for every Linear and GeGLU where the CPU has AVX-512F (gemm_outer.go:
//     layout, blocking, its k-order rounding, why at every M);
//   - gemm_avx512_amd64.s: AVX-512F, a 6×4 block of Y in 24 ZMM
//     accumulators of 16 lanes, 6 X rows in 6 more, W rows streamed through
//     the 31st (chosen when the CPU and OS have AVX-512F);
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
// Rounding (of the dot kernels; the outer-product kernel's is one fused
// multiply-add per k in k order, gemm_outer.go): gemmTileGo adds the products of one output in k order in one
// float32 accumulator. The 8-lane SIMD kernels give lane l the products
// k ≡ l mod 8 in k order, each added with a fused multiply-add, and fold the
// 8 lanes as ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)). That is the order
// AVX2's VHADDPS yields and the fewest roundings per product; the NEON
// kernel copies it, so AVX2 and arm64 answer bit for bit alike. The AVX-512
// kernel has 16 lanes (k ≡ l mod 16), adds lane l+8 to lane l, then folds
// the 8 as above (TestGemmSIMDLaneOrder checks each kernel against its
// scalar model). Against the Go kernel the answers move in the last bits
// only; all stay within the float32 bound of a k-term sum, and the SIMD ones
// are usually the closer to the float64 sum.
//
// Work split: the output is cut into units of one W panel (gemmPanel rows,
// fewer when the workers need more units) × a block of X rows (every row
// for a half W unless the workers need more units; gemmUnitPlan). Workers
// of the persistent pool (pool.go) take units from an atomic counter,
// row-block-major, so a panel's rows are packed once per unit and stay in
// L2 while the unit sweeps its X rows in tiles of gemmTileM; bias and
// activation are applied to the unit's block while it is still in cache.
// gemmTileM is a multiple of every SIMD block height (3, 4 and 6), so only
// the last tile of X has a ragged block.
const (
	gemmPanel = 64
	gemmTileM = 48
	gemmUnitM = 4 * gemmTileM
)

// gemmTileFunc fills y[i·ldy+j] = Σ_kk x[i·ldx+kk]·w[j·ldw+kk] for i in
// [m0, m1), j in [n0, n1), kk < k (k ≥ 1). Strides are in floats.
type gemmTileFunc func(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, m0, m1, n0, n1, k int)

// gemmKernel is a named tile kernel; lanes is its SIMD width (the k ≡ l
// mod lanes classes of its rounding), 0 for the Go kernel.
//
// An outer-product kernel (gemm_outer.go) sets outer, and lanes = 1: each
// output is one accumulator taking one fused multiply-add per k. Its tile
// is the dot kernel it runs beside (Attention).
type gemmKernel struct {
	name  string
	tile  gemmTileFunc
	lanes int
	outer outerKernelFunc
}

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
	// The LayerNorm that made x, if it is still recorded, goes with this
	// Linear (norm.go).
	norm := s.takeNorm(x)
	if !s.ok("linear", dst, x, weight, bias) || !s.check(backend.CheckLinear(dst, x, weight, bias, act)) {
		return // the stream has failed: the LayerNorm is dropped with the rest
	}
	m, k, n := x.Rows(), x.Cols(), weight.Rows()
	op := &linearOp{dst: dst.(*tensor), x: data(x), w: weightOf(weight), bias: data(bias), m: m, n: n, k: k, act: act, norm: norm}
	if act == backend.Identity && bias == nil && n%2 == 0 {
		// Possibly the input of a GeGLU: run it with the next operation.
		s.pending = op
		return
	}
	s.be.runLinear(op)
}

// linearOp is a recorded Linear.
type linearOp struct {
	dst     *tensor
	x, bias []float32
	w       matrix
	m, n, k int
	act     backend.Activation
	// discardY: dst was discarded before the fused operation that reads
	// it ran (Stream.Discard), so the outer-product path need not store
	// it; the dot kernels store it anyway.
	discardY bool
	// rope: a Rope of dst recorded right after this Linear (Stream.Rope),
	// run with it (gemmRope). Such a Linear fuses with nothing else.
	rope *ropeOp
	// norm: the LayerNorm that made x, recorded right before this Linear
	// (Stream.Linear): run first, or inside the GEMM's packing where it
	// can be (fusableNorm).
	norm *normOp
}

// fusedOp is a Linear fused with the GeGLU or the residual Add that reads
// its output, recorded but not yet run: the next operation (or Read) runs
// it first, so that a Discard of the Linear's output right after it can
// still spare storing that output.
type fusedOp struct {
	op    *linearOp
	geglu bool
	dst   []float32 // the GeGLU's output or the Add's sum
	a     []float32 // the Add's other addend
}

// runPending runs the recorded fused operation or Linear, if any.
func (s *Stream) runPending() {
	if f := s.fused; f != nil {
		s.fused = nil
		if f.geglu {
			s.be.gemmGeGLU(f.op, f.dst)
		} else {
			s.be.gemmResidual(f.op, f.dst, f.a)
		}
	}
	if op := s.pending; op != nil {
		s.pending = nil
		s.be.runLinear(op)
	}
	if n := s.norm; n != nil {
		s.norm = nil
		s.be.layerNormRows(n)
	}
}

// runLinear runs a recorded Linear, with the LayerNorm and the Rope
// recorded on it if any.
func (b *Backend) runLinear(op *linearOp) {
	norm := b.fusableNorm(op, nil, op.dst.data)
	if op.rope != nil {
		b.gemmRope(op, norm)
		return
	}
	if norm != nil {
		kern, _ := useOuter(op.m, op.k) // fusableNorm found it
		b.gemmOuterUnits(kern, op.dst.data, b.packXNorm(norm), op.w, op.bias, op.n, op.act, true, 0, nil, nil, nil)
		return
	}
	b.gemmW(op.dst.data, op.x, op.w, op.bias, op.m, op.n, op.k, op.act)
}

// gemm computes y[m, n] = act(Σ_k x[m, k]·w[n, k] + bias[n]) for a float32 w.
func (b *Backend) gemm(y, x, w, bias []float32, m, n, k int, act backend.Activation) {
	b.gemmW(y, x, matrix{f32: w, ld: k}, bias, m, n, k, act)
}

// gemmW computes y[m, n] = act(Σ_k x[m, k]·w[n, k] + bias[n]).
func (b *Backend) gemmW(y, x []float32, w matrix, bias []float32, m, n, k int, act backend.Activation) {
	b.gemmRows(y, x, w, bias, nil, m, n, k, act)
}

// gemmRows is gemmW for the rows of x and y listed in rows (distinct, in
// [0, m)); nil means every row. The other rows of y are not written (a
// batch's padding rows need no projection). The outer-product kernel runs
// it where there is one (gemm_outer.go), else the dot kernels.
func (b *Backend) gemmRows(y, x []float32, w matrix, bias []float32, rows []int, m, n, k int, act backend.Activation) {
	count := m
	if rows != nil {
		count = len(rows)
	}
	if count == 0 || n == 0 {
		return
	}
	if kern, ok := useOuter(m, k); ok {
		b.gemmOuterW(kern, y, x, w, bias, rows, m, n, k, act, true, nil)
		return
	}
	if rows != nil {
		// The dot kernels take contiguous rows: gather, run, scatter
		// (through pooled buffers, every value of which is written first).
		xb, yb := getScratch(count*k), getScratch(count*n)
		defer putScratch(xb)
		defer putScratch(yb)
		xs, ys := *xb, *yb
		for i, r := range rows {
			copy(xs[i*k:], x[r*k:r*k+k])
		}
		b.gemmW(ys, xs, w, bias, count, n, k, act)
		for i, r := range rows {
			copy(y[r*n:r*n+n], ys[i*n:])
		}
		return
	}
	fill := gemmTile
	if k == 0 {
		// An empty sum: the SIMD kernels take row pointers, and a
		// zero-width row has none.
		fill = gemmTileGo
	}
	b.forEachGemmUnit(m, n, k, gemmPanel, widenedPanels(w, 1), func(n0, n1, mu0, mu1 int, _ [2]int, scratch *[]float32) {
		wp, ldw := w.panel(n0, n1, k, scratch)
		fillRows(fill, y[n0:], n, x, k, wp, ldw, mu0, mu1, n1-n0)
		if bias != nil || act != backend.Identity {
			for r := mu0; r < mu1; r++ {
				biasActivate(y[r*n+n0:r*n+n1], bias, n0, act)
			}
		}
	})
}

// gemmResidual runs op (a Linear without bias or activation into y) and
// out = a + y in one pass: a unit adds its block of y to a's while the block
// is in cache. y is written as the unfused Linear writes it, and each sum is
// the one float32 addition Add makes, so the answers are the unfused ones
// bit for bit.
func (b *Backend) gemmResidual(op *linearOp, out, a []float32) {
	y, x, w, m, n, k := op.dst.data, op.x, op.w, op.m, op.n, op.k
	norm := b.fusableNorm(op, nil, y, out)
	add := func(r0, r1, n0, n1 int) {
		for r := r0; r < r1; r++ {
			addSlices(out[r*n+n0:r*n+n1], a[r*n+n0:r*n+n1], y[r*n+n0:r*n+n1])
		}
	}
	if k == 0 || m == 0 || n == 0 {
		b.gemmW(y, x, w, nil, m, n, k, backend.Identity)
		b.parallelFor(m, 8, func(lo, hi int) { add(lo, hi, 0, n) })
		return
	}
	if kern, ok := useOuter(m, k); ok {
		b.gemmOuterUnits(kern, y, b.packInput(norm, x, k, nil, m), w, nil, n, backend.Identity, !op.discardY, 0, nil, func(r, n0 int, v []float32) {
			addSlices(out[r*n+n0:r*n+n0+len(v)], a[r*n+n0:r*n+n0+len(v)], v)
		}, func(r, n0, n1 int) {
			prefetchL2((*byte)(unsafe.Pointer(&out[r*n+n0])), (n1-n0)*4)
			if &out[0] != &a[0] {
				prefetchL2((*byte)(unsafe.Pointer(&a[r*n+n0])), (n1-n0)*4)
			}
		})
		return
	}
	b.forEachGemmUnit(m, n, k, gemmPanel, widenedPanels(w, 1), func(n0, n1, mu0, mu1 int, _ [2]int, scratch *[]float32) {
		wp, ldw := w.panel(n0, n1, k, scratch)
		fillRows(gemmTile, y[n0:], n, x, k, wp, ldw, mu0, mu1, n1-n0)
		add(mu0, mu1, n0, n1)
	})
}

// biasActivate is a unit's epilogue on one row's columns [n0, n0+len(row)):
// row += bias[n0:] (when there is a bias), then the activation, in place.
func biasActivate(row, bias []float32, n0 int, act backend.Activation) {
	if bias != nil {
		// One float32 add per value either way, so the same bits; the Go
		// loop ran scalar, 1 % of a ten-question multilingual request's CPU
		// time (the decision head's first layer, every row, has biases).
		b := bias[n0 : n0+len(row)]
		if !addSIMD(row, row, b) {
			for j, v := range b {
				row[j] += v
			}
		}
	}
	if act != backend.Identity {
		activate(row, row, act)
	}
}

// forEachGemmUnit splits rows [0, m) and columns [0, cols) into work units
// and hands them out to the workers: unit(n0, n1, mu0, mu1, next, scratch)
// covers columns [n0, n1) of rows [mu0, mu1). widened is how many panels
// a unit widens at once (widenedPanels: 0 for a float32 W), each worker's
// scratch widened·panel·k float32 (nil for a float32 W). The plain Linear
// and the fused GeGLU both split their work this way.
//
// Rows go in blocks of gemmUnitM for a float32 W; a unit of a half W spans
// every row, so that each panel is widened once per call; columns go in
// panels of widest (gemmPanel for the dot kernels, outerPanel for the
// outer-product one). When that leaves fewer than gemmUnitsPerWorker units
// per worker (16 cores), the rows are halved first (while blocks stay at
// least two tiles), then the panels (down to 16): every worker then takes
// several units, so one that runs slow (another tenant on its core, a
// GeGLU's 41 panels on 16 workers) delays the join by a fraction of its
// share instead of a whole one. Rows first, because a narrow panel streams
// all of X once more per panel, and a half panel widened once more per row
// block costs a few per cent (gemmUnitPlan). The units go row-block-major,
// so the workers sweep every panel against one block of X while it is in
// their L2.
//
// With gemmPrefetch on, a worker claims its next unit before it runs the
// current one, so that the unit can prefetch the next one's W panel while
// it computes: next is that panel's column range when it differs from the
// current one's, else [0, 0) (nothing to fetch, as always with it off).
func (b *Backend) forEachGemmUnit(m, cols, k, widest, widened int, unit func(n0, n1, mu0, mu1 int, next [2]int, scratch *[]float32)) {
	b.forEachAlignedUnit(m, cols, k, widest, widened, 0, unit)
}

// forEachAlignedUnit is forEachGemmUnit with every unit's columns starting
// and ending at multiples of align (or at cols), so that an epilogue that
// needs whole groups of align columns (a fused Rope: whole heads) finds
// them in one unit; 0 asks for nothing. It runs nothing and returns false
// when the plan's panels are not multiples of align (many workers at few
// rows narrow them to 16 or 32 columns); a column-split tail unit whose
// half would not be aligned stays whole.
func (b *Backend) forEachAlignedUnit(m, cols, k, widest, widened, align int, unit func(n0, n1, mu0, mu1 int, next [2]int, scratch *[]float32)) bool {
	workers := b.workerCount()
	halfW := widened > 0
	panel, unitM := gemmUnitPlan(m, cols, widest, halfW, workers)
	if !alignedPanel(panel, align) {
		return false
	}
	plan := newUnitPlan(m, cols, panel, unitM, workers)
	plan.align = align
	units := plan.units()
	var next atomic.Int64
	b.parallelFor(min(units, workers), 1, func(_, _ int) {
		var scratch *[]float32
		if halfW {
			scratch = getScratch(widened * panel * k)
			defer putScratch(scratch)
		}
		// Claiming ahead can leave one more unit on a worker at the end,
		// so it is done only when the prefetch that needs it is on.
		ahead := gemmPrefetch
		u := int(next.Add(1) - 1)
		for u < units {
			following := -1
			n0, n1, mu0, mu1 := plan.unit(u)
			var nextPanel [2]int
			if ahead {
				following = int(next.Add(1) - 1)
				if following < units {
					if f0, f1, _, _ := plan.unit(following); f0 != n0 {
						nextPanel = [2]int{f0, f1}
					}
				}
			}
			if n0 < n1 { // a narrow unit's second half is empty
				unit(n0, n1, mu0, mu1, nextPanel, scratch)
			}
			if !ahead {
				following = int(next.Add(1) - 1)
			}
			u = following
		}
	})
	return true
}

// alignedPanel reports whether panels of panel columns hold whole groups
// of align columns (align 0: no groups asked for).
func alignedPanel(panel, align int) bool { return align == 0 || panel%align == 0 }

// alignedPlan reports whether gemmOuterAligned's plan for an m-row GEMM
// into cols columns of w, on this backend's workers, keeps groups of align
// columns whole: forEachAlignedUnit's test, before anything is packed.
func (b *Backend) alignedPlan(m, cols int, w matrix, align int) bool {
	panel, _ := gemmUnitPlan(m, cols, outerPanel, widenedPanels(w, 1) > 0, b.workerCount())
	return alignedPanel(panel, align)
}

// unitPlan numbers a GEMM's work units (forEachGemmUnit): panels of panel
// columns × row blocks of unitM rows, row-block-major, except that the last
// tail units are each split into two of half the columns, numbered after
// the others. The workers claim units in order, and they finish their last
// ones at different times (a core shared with another tenant, a unit's W
// from DRAM): with whole units left for the end, the first worker done
// waited for the others a few per cent of every GEMM's time (two workers,
// ten questions: 3–4 % of the English GEMMs', whose Wo units are ~4 ms
// each). Columns rather than rows, because the
// two halves of a column split widen and read W once between them, where
// row halves would each widen the whole panel (at one question W is most
// of a unit's cost).
type unitPlan struct {
	m, cols, panel, unitM int
	panels, whole, tail   int
	align                 int // a split's halves start at multiples of it too (forEachAlignedUnit); 0: none
}

func newUnitPlan(m, cols, panel, unitM, workers int) unitPlan {
	p := unitPlan{m: m, cols: cols, panel: panel, unitM: unitM, panels: (cols + panel - 1) / panel}
	all := p.panels * ((m + unitM - 1) / unitM)
	if workers > 1 && panel >= 2*outerMR {
		p.tail = min(workers, all)
	}
	p.whole = all - p.tail
	return p
}

// units is the number of units.
func (p unitPlan) units() int { return p.whole + 2*p.tail }

// unit returns unit u's columns [n0, n1) and rows [mu0, mu1).
func (p unitPlan) unit(u int) (n0, n1, mu0, mu1 int) {
	split := u >= p.whole
	half := 0
	if split {
		u, half = p.whole+(u-p.whole)/2, (u-p.whole)%2
	}
	n0 = (u % p.panels) * p.panel
	n1 = min(n0+p.panel, p.cols)
	mu0 = (u / p.panels) * p.unitM
	mu1 = min(mu0+p.unitM, p.m)
	if split {
		// The first half a multiple of the micro-kernel's block rows, so
		// that neither half has a ragged block the whole did not. (A unit
		// narrower than two blocks keeps its columns; its second half is
		// empty.)
		step := outerMR
		if p.align > 0 {
			step = lcm(outerMR, p.align)
		}
		mid := min(n0+(n1-n0+2*step-1)/(2*step)*step, n1)
		if half == 0 {
			n1 = mid
		} else {
			n0 = mid
		}
	}
	return n0, n1, mu0, mu1
}

// lcm is the least common multiple of a and b (both ≥ 1).
func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// widenedPanels is forEachGemmUnit's widened for w: 0 for a float32 W (its
// rows are read in place), else the panels a unit holds widened at once.
func widenedPanels(w matrix, panels int) int {
	if w.f32 != nil {
		return 0
	}
	return panels
}

// gemmUnitsPerWorker is how many units per worker forEachGemmUnit aims
// for when it splits rows and panels.
const gemmUnitsPerWorker = 4

// gemmUnitPlan picks a GEMM's panel width (widest, halved while too few
// units) and rows per unit (a multiple of gemmTileM, or all m) for workers
// workers; see forEachGemmUnit.
//
// A panel wider than gemmPanel is taken only where it needs no more row
// blocks than gemmPanel would: the wide panel's gain was measured on units
// of every row (outerPanel), and splitting rows to make up its fewer units
// widens each panel once more per block instead. So where the workers
// need the rows split (16 workers at ten questions) the plan is
// gemmPanel's.
func gemmUnitPlan(m, cols, widest int, halfW bool, workers int) (panel, unitM int) {
	panel, unitM = splitUnits(m, cols, widest, halfW, workers)
	if widest > gemmPanel {
		if p, u := gemmUnitPlan(m, cols, widest/2, halfW, workers); u > unitM {
			return p, u
		}
	}
	return panel, unitM
}

// splitUnits is gemmUnitPlan's split for one starting panel width.
func splitUnits(m, cols, widest int, halfW bool, workers int) (panel, unitM int) {
	panel, unitM = widest, max(m, 1)
	if !halfW {
		unitM = min(unitM, gemmUnitM)
	}
	units := func() int { return ((cols + panel - 1) / panel) * ((m + unitM - 1) / unitM) }
	for units() < gemmUnitsPerWorker*workers {
		switch {
		case unitM >= 4*gemmTileM:
			unitM = (unitM/2 + gemmTileM - 1) / gemmTileM * gemmTileM
		case panel > 16:
			panel /= 2
		default:
			return panel, unitM
		}
	}
	return panel, unitM
}

// fillRows runs fill over rows [mu0, mu1) in gemmTileM-row tiles, for the
// ncols columns of the panel wp (row stride ldw) into y (row stride ldy).
func fillRows(fill gemmTileFunc, y []float32, ldy int, x []float32, k int, wp []float32, ldw, mu0, mu1, ncols int) {
	for m0 := mu0; m0 < mu1; m0 += gemmTileM {
		fill(y, ldy, x, k, wp, ldw, m0, min(m0+gemmTileM, mu1), 0, ncols, k)
	}
}

// scratchPools hold the workers' panel and attention buffers by size class:
// pool c holds buffers of capacity 2^c floats. One pool for every size let
// a request for a large buffer take a small one and drop it (and the next
// small request allocate again), so buffers were allocated and zeroed all
// through a forward.
var scratchPools [64]sync.Pool

func getScratch(n int) *[]float32 {
	c := bits.Len(uint(max(n, 1) - 1))
	if p, _ := scratchPools[c].Get().(*[]float32); p != nil {
		*p = (*p)[:n]
		return p
	}
	buf := make([]float32, n, 1<<c)
	return &buf
}

func putScratch(p *[]float32) {
	c := bits.Len(uint(cap(*p) - 1))
	if cap(*p) == 1<<c {
		scratchPools[c].Put(p)
	}
}

// gemmTileGo is the portable gemmTileFunc.
func gemmTileGo(y []float32, ldy int, x []float32, ldx int, w []float32, ldw int, m0, m1, n0, n1, k int) {
	xr := func(i int) []float32 { return x[i*ldx : i*ldx+k] }
	wr := func(j int) []float32 { return w[j*ldw : j*ldw+k] }
	var c [8]float32
	i := m0
	for ; i+2 <= m1; i += 2 {
		x0, x1 := xr(i), xr(i+1)
		j := n0
		for ; j+4 <= n1; j += 4 {
			dot2x4(x0, x1, wr(j), wr(j+1), wr(j+2), wr(j+3), &c)
			copy(y[i*ldy+j:i*ldy+j+4], c[0:4])
			copy(y[(i+1)*ldy+j:(i+1)*ldy+j+4], c[4:8])
		}
		for ; j < n1; j++ {
			y[i*ldy+j] = dot(x0, wr(j))
			y[(i+1)*ldy+j] = dot(x1, wr(j))
		}
	}
	for ; i < m1; i++ {
		x0 := xr(i)
		for j := n0; j < n1; j++ {
			y[i*ldy+j] = dot(x0, wr(j))
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

// dot is a float32 dot product summed in k order in one accumulator, as
// dot2x4 sums each of its outputs: every output of gemmTileGo rounds the
// same way wherever it falls in the blocking (a fused GeGLU tiles the
// columns differently from a plain Linear and must give the same bits).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for k := range a {
		s += a[k] * b[k]
	}
	return s
}

// gemmGeGLU runs op (y = x·wᵀ, n = 2I columns: value then gate) and dst =
// GELU(y[:, :I])·y[:, I:] in one pass: a unit computes value columns
// [n0, n1) and gate columns [I+n0, I+n1) into y, then their GeGLU while they
// are in cache. y is written as the unfused Linear writes it, so the
// projection stays readable.
func (b *Backend) gemmGeGLU(op *linearOp, dst []float32) {
	b.gemmGeGLURows(op, dst, nil)
}

// gemmGeGLURows is gemmGeGLU for the rows listed in rows (distinct, in
// [0, op.m)); nil means every row. The other rows of op.dst and dst are not
// written.
func (b *Backend) gemmGeGLURows(op *linearOp, dst []float32, rows []int) {
	y, x, w, m, k := op.dst.data, op.x, op.w, op.m, op.k
	norm := b.fusableNorm(op, rows, y, dst)
	count := m
	if rows != nil {
		count = len(rows)
	}
	if count == 0 || op.n == 0 {
		return
	}
	if kern, ok := useOuter(m, k); ok {
		b.gemmOuterGeGLU(kern, op, dst, rows, norm)
		return
	}
	if rows != nil {
		// The dot kernels take contiguous rows: gather, run, scatter
		// (through pooled buffers, every value of which is written first).
		inner := op.n / 2
		xb, yb, db := getScratch(count*k), getScratch(count*op.n), getScratch(count*inner)
		defer putScratch(xb)
		defer putScratch(yb)
		defer putScratch(db)
		xs, ys, ds := *xb, *yb, *db
		for i, r := range rows {
			copy(xs[i*k:], x[r*k:r*k+k])
		}
		sub := *op
		sub.dst, sub.x, sub.m = &tensor{rows: count, cols: op.n, data: ys}, xs, count
		b.gemmGeGLU(&sub, ds)
		for i, r := range rows {
			copy(y[r*op.n:r*op.n+op.n], ys[i*op.n:])
			copy(dst[r*inner:r*inner+inner], ds[i*inner:])
		}
		return
	}
	inner := op.n / 2
	b.forEachGemmUnit(m, inner, k, gemmPanel, widenedPanels(w, 1), func(n0, n1, mu0, mu1 int, _ [2]int, scratch *[]float32) {
		for _, off := range [2]int{0, inner} {
			wp, ldw := w.panel(off+n0, off+n1, k, scratch)
			fillRows(gemmTile, y[off+n0:], op.n, x, k, wp, ldw, mu0, mu1, n1-n0)
		}
		for r := mu0; r < mu1; r++ {
			value := y[r*op.n+n0 : r*op.n+n1]
			gate := y[r*op.n+inner+n0 : r*op.n+inner+n1]
			gegluSlice(dst[r*inner+n0:r*inner+n1], value, gate)
		}
	})
}
