//go:build !purego

package cpu

import (
	"sync"
	"sync/atomic"

	sysCPU "golang.org/x/sys/cpu"

	"github.com/laya-metal/laya/backend"
)

// The AVX-512 attention (attn_avx512_amd64.s), for padded and packed
// batches alike. Per (batch row, head) Kᵀ is packed once, [HeadDim][ldk]
// (keys contiguous, ldk the row's length rounded up to 16; packKT: 16×16
// transposes for whole blocks of 16 keys, a gather of the last keys per
// row of Kᵀ), by the first of the head's jobs to run, and shared by the
// head's query blocks. Jobs are (row, head, block of
// 12–48 queries: attnQueryBlock), spread over the worker pool; per job:
//
//	S = Scale · Q·Kᵀ   attnTileAVX512: 6 queries × 64 keys per call, Q's
//	                    values broadcast, Kᵀ's rows 16-lane vectors
//	P = e^(S − max)     softmaxExpAVX512 per query over its window: the max
//	                    in float32, the exp in float64 lanes (expNonPositive's
//	                    polynomial: the float32 it rounds to is math.Exp's
//	                    but at rare rounding ties, TestSoftmaxExpAVX512),
//	                    the sum in float64
//	O = (P·V) / sum     attnTileAVX512 again: 6 queries × 64 of the head dim,
//	                    P's values broadcast, V's rows (already vectors along
//	                    the head dim) loaded in place, 1/sum as the row scale
//
// A sliding window's block only sees keys [i0 − Radius, i1 + Radius): the
// key tiles outside are skipped, the keys inside but outside a query's
// window get probability 0. No horizontal reductions in either product:
// each output is one float32 FMA chain in key (or head-dim) order, so the
// answers do not depend on the block size or the worker count
// (TestAttentionWorkers). The scale is applied where the
// portable path applies it, fl(fl(Σ)·Scale), so the two paths round the
// scores alike up to the order of the sums.

// attnTileArgs are attnTileAVX512's arguments; the assembly reads them at
// the offsets TestAttnTileArgsLayout checks.
type attnTileArgs struct {
	a     [6]*float32 // A rows, k floats each (broadcast); a missing row repeats one
	b     *float32    // B: k rows of ldb floats, up to 64 columns read (masked)
	ldb   int         // floats
	k     int         // ≥ 0
	c     *float32    // C: rows rows of ldc floats, the masked columns stored
	ldc   int         // floats
	rows  int         // 1 … 6
	scale [6]float32  // per-row factor of the stored sums
	mask  [4]uint16   // columns 16v … 16v+15 of vector v
}

// setCols sets the column masks for the first cols (1 … 64) columns.
func (a *attnTileArgs) setCols(cols int) {
	for v := range a.mask {
		live := min(max(cols-16*v, 0), 16)
		a.mask[v] = uint16(1<<live - 1)
	}
}

//go:noescape
func attnTileAVX512(args *attnTileArgs)

// softmaxExpAVX512 sets row[j] = float32(e^(row[j] − max)) for j < n (n ≥ 1)
// and returns the sum of the exps in float64.
//
//go:noescape
func softmaxExpAVX512(row *float32, n int) float64

// hasAttnAVX512: the kernels use AVX-512F only (VSCALEFPD, VRNDSCALEPD,
// masked moves, VEXTRACTF64X4).
var hasAttnAVX512 = sysCPU.X86.HasAVX512F

// attnTileRows and attnTileCols are the tile's shape.
const (
	attnTileRows = 6
	attnTileCols = 64
)

// attentionSIMD runs Attention with the AVX-512 kernels; see the comment
// at the top of this file. The caller has checked p against the tensors.
func (b *Backend) attentionSIMD(out, qkv []float32, p backend.AttentionParams) {
	batch, dh := len(p.Lengths), p.HeadDim
	// Per batch row: where it starts in tensor rows and how many it has
	// (SeqLen, padded; its length, packed: backend.AttentionParams), where
	// its heads' Kᵀ start in the buffer (each [dh][ldk], ldk its length
	// rounded up to 16: a packed batch of one long row and many short ones
	// packs no more than its keys), and its first job.
	rows := make([]attnRow, batch)
	start, ktSize, maxLDK := 0, 0, 0
	for r, n := range p.Lengths {
		rows[r] = attnRow{start: r * p.SeqLen, size: p.SeqLen, n: n}
		if p.Packed {
			rows[r] = attnRow{start: start, size: n, n: n}
		}
		rows[r].ldk = (n + 15) &^ 15
		rows[r].kt = ktSize
		start += n
		ktSize += p.Heads * dh * rows[r].ldk
		maxLDK = max(maxLDK, rows[r].ldk)
	}
	qb := attnQueryBlock(batch*p.Heads, p.SeqLen, b.workerCount(), p.Sliding)
	jobs := 0
	for r := range rows {
		rows[r].job = jobs
		jobs += p.Heads * ((rows[r].size + qb - 1) / qb)
	}
	ktBuf := attnKTCache.get(ktSize)
	defer attnKTCache.put(ktBuf)
	kt := *ktBuf
	// Each head's Kᵀ is packed by the first job of the head to run (the
	// others of the head wait for it): no pass and no barrier of its own.
	// The workers claim jobs one at a time: rows differ in length, and a
	// static split of the jobs left one worker waiting for the other for
	// 10–19 % of the attention's time at ten questions on two workers.
	// A row's jobs go block-major, so the jobs
	// claimed at the same time are of different heads and seldom wait on
	// one another's packing.
	packed := make([]sync.Once, batch*p.Heads)
	var claimed atomic.Int64
	b.parallelFor(min(jobs, b.workerCount()), 1, func(_, _ int) {
		scratch := attnScoresCache.get(qb*maxLDK + qb)
		defer attnScoresCache.put(scratch)
		r := 0
		for job := int(claimed.Add(1) - 1); job < jobs; job = int(claimed.Add(1) - 1) {
			for r+1 < batch && rows[r+1].job <= job {
				r++ // jobs are claimed in increasing order
			}
			row := rows[r]
			blk, h := (job-row.job)/p.Heads, (job-row.job)%p.Heads
			if blk*qb >= row.n {
				// Padded queries only: no keys needed.
				attendBlockSIMD(out, qkv, nil, row, h, blk*qb, qb, p, *scratch)
				continue
			}
			headKT := kt[row.kt+h*dh*row.ldk : row.kt+(h+1)*dh*row.ldk]
			packed[r*p.Heads+h].Do(func() { packKT(headKT, row, qkv, h, p) })
			attendBlockSIMD(out, qkv, headKT, row, h, blk*qb, qb, p, *scratch)
		}
	})
}

//go:noescape
func packKTAVX512(kt *float32, ldk int, k *float32, stride, n, dh int)

// packKTTAVX512 packs 16·n16 keys × 16·dh16 dims by in-register
// transposes (n16, dh16 ≥ 1); see attn_avx512_amd64.s.
//
//go:noescape
func packKTTAVX512(kt *float32, ldk int, k *float32, stride, n16, dh16 int)

// packKTByGathers sends every key to the gathers (tests and benchmarks
// compare the two).
var packKTByGathers = false

// attnRow is one batch row of an attention batch.
type attnRow struct {
	start, size, n int // first tensor row, tensor rows (padded: SeqLen, packed: n), real tokens
	ldk, kt        int // its Kᵀ's row stride and offset in the Kᵀ buffer
	job            int // its first job
}

// packKT writes Kᵀ of head h of batch row row, kt[d·ldk + j] = K_j[d] for
// the row's keys j < row.n: whole blocks of 16 keys by in-register
// transposes where the head dim is a multiple of 16 (packKTTAVX512; by the
// gathers alone the packing was 12 % of the attention's time at ten
// questions on one core, and a head of 93 keys took 1.27–1.56 against
// 1.02–1.04 µs, BenchmarkAttnKernels), the rest by gathers (packKTAVX512)
// where the offsets of 16 keys fit the gather's int32 lanes, else in Go.
func packKT(kt []float32, row attnRow, qkv []float32, h int, p backend.AttentionParams) {
	ldk := row.ldk
	width := p.Heads * p.HeadDim
	stride, dh := 3*width, p.HeadDim
	base := row.start*stride + width + h*dh
	n := row.n
	kt = kt[:dh*ldk]
	if 16*stride <= 1<<28 {
		_ = qkv[base+(n-1)*stride+dh-1] // the last value read
		_ = kt[(dh-1)*ldk+n-1]          // the last value written
		j := 0
		if n16 := n / 16; n16 > 0 && dh%16 == 0 && !packKTByGathers {
			packKTTAVX512(&kt[0], ldk, &qkv[base], stride, n16, dh/16)
			j = 16 * n16
		}
		if j < n {
			packKTAVX512(&kt[j], ldk, &qkv[base+j*stride], stride, n-j, dh)
		}
		return
	}
	packKTGo(kt, ldk, qkv[base:], stride, n, dh)
}

// packKTGo sets kt[d·ldk + j] = k[j·stride + d] for j < n, d < dh.
func packKTGo(kt []float32, ldk int, qkv []float32, stride, n, dh int) {
	base := 0
	j := 0
	// Four keys at a time: four sequential reads, four stores per column.
	for ; j+4 <= n; j += 4 {
		k0 := qkv[base+j*stride : base+j*stride+dh]
		k1 := qkv[base+(j+1)*stride : base+(j+1)*stride+dh]
		k2 := qkv[base+(j+2)*stride : base+(j+2)*stride+dh]
		k3 := qkv[base+(j+3)*stride : base+(j+3)*stride+dh]
		for d := range k0 {
			col := kt[d*ldk+j : d*ldk+j+4]
			col[0], col[1], col[2], col[3] = k0[d], k1[d], k2[d], k3[d]
		}
	}
	for ; j < n; j++ {
		k := qkv[base+j*stride : base+j*stride+dh]
		for d, v := range k {
			kt[d*ldk+j] = v
		}
	}
}

// attendBlockSIMD computes head h of batch row row for queries [i0, i0+qb)
// into out; kt is the head's packed Kᵀ. scratch holds qb scores rows (of
// up to row.ldk each) and then qb row scales.
func attendBlockSIMD(out, qkv, kt []float32, row attnRow, h, i0, qb int, p backend.AttentionParams, scratch []float32) {
	ldk := row.ldk
	width := p.Heads * p.HeadDim
	stride, dh := 3*width, p.HeadDim
	n, rowBase := row.n, row.start
	i1, j0, j1 := queryBlock(out, width, h, dh, rowBase, i0, min(i0+qb, row.size), n, p)
	if i0 >= i1 {
		return
	}
	qrows, nk := i1-i0, j1-j0
	lds := (nk + 15) &^ 15
	scores := scratch[:qrows*lds]
	inv := scratch[len(scratch)-qb:][:qrows]

	// S = Scale · Q·Kᵀ over the block's keys.
	var args attnTileArgs
	args.ldb, args.k, args.ldc = ldk, dh, lds
	for r := range args.scale {
		args.scale[r] = p.Scale
	}
	for r0 := 0; r0 < qrows; r0 += attnTileRows {
		args.rows = min(attnTileRows, qrows-r0)
		for r := range args.a {
			q := (rowBase+i0+r0+min(r, args.rows-1))*stride + h*dh
			args.a[r] = &qkv[q : q+dh][0]
		}
		for c0 := 0; c0 < nk; c0 += attnTileCols {
			cols := min(attnTileCols, nk-c0)
			args.setCols(cols)
			_ = kt[(dh-1)*ldk+j0+c0+cols-1] // the last B value read
			args.b = &kt[j0+c0]
			_ = scores[(r0+args.rows-1)*lds+c0+cols-1] // the last C value stored
			args.c = &scores[r0*lds+c0]
			attnTileAVX512(&args)
		}
	}

	// P = e^(S − max) over each query's window, 0 outside it.
	for r := range qrows {
		i := i0 + r
		srow := scores[r*lds : r*lds+nk]
		first, last := 0, nk-1 // in block key coordinates
		if p.Sliding {
			first, last = max(first, i-p.Radius-j0), min(last, i+p.Radius-j0)
		}
		sum := softmaxExpAVX512(&srow[first : last+1][0], last-first+1)
		clear(srow[:first])
		clear(srow[last+1:])
		inv[r] = float32(1 / sum)
	}

	// O = P·V, each row times its 1/sum.
	args.ldb, args.k, args.ldc = stride, nk, width
	v0 := (rowBase+j0)*stride + 2*width + h*dh
	for r0 := 0; r0 < qrows; r0 += attnTileRows {
		args.rows = min(attnTileRows, qrows-r0)
		for r := range args.a {
			rr := r0 + min(r, args.rows-1)
			args.a[r] = &scores[rr*lds : rr*lds+nk][0]
			args.scale[r] = inv[rr]
		}
		for c0 := 0; c0 < dh; c0 += attnTileCols {
			cols := min(attnTileCols, dh-c0)
			args.setCols(cols)
			_ = qkv[v0+(nk-1)*stride+c0+cols-1]
			args.b = &qkv[v0+c0]
			o := (rowBase+i0+r0)*width + h*dh + c0
			_ = out[o+(args.rows-1)*width+cols-1]
			args.c = &out[o]
			attnTileAVX512(&args)
		}
	}
}

// pickAttnSIMD returns the AVX-512 attention when the CPU has AVX-512F.
func pickAttnSIMD() attentionFunc {
	if hasAttnAVX512 {
		return (*Backend).attentionSIMD
	}
	return nil
}

// attnQueryBlock is the number of queries per SIMD attention job: 48 (24
// for a sliding window, whose blocks then see fewer keys outside their
// queries' windows: ~5 % faster at 512 tokens, radius 64), halved (down to
// 12) while the jobs of heads (batch rows × heads) would leave the workers
// fewer than four each, so that one 93-token question keeps 16 workers
// busy. A multiple of attnTileRows.
func attnQueryBlock(heads, seqLen, workers int, sliding bool) int {
	qb := 48
	if sliding {
		qb = 24
	}
	for qb > 12 && heads*((seqLen+qb-1)/qb) < 4*workers {
		qb /= 2
	}
	return qb
}

// scratchCache is a pool of float32 buffers of one use (the SIMD
// attention's packed Kᵀ, its workers' scores), apart from the GEMM's panels
// and from each other so that one use's sizes don't displace the other's.
type scratchCache struct{ pool sync.Pool }

var (
	attnKTCache     scratchCache
	attnScoresCache scratchCache
)

// get returns a buffer of n floats (its contents undefined).
func (c *scratchCache) get(n int) *[]float32 {
	if p, _ := c.pool.Get().(*[]float32); p != nil && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	buf := make([]float32, n)
	return &buf
}

func (c *scratchCache) put(p *[]float32) { c.pool.Put(p) }
