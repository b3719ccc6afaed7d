//go:build linux

package cuda

import (
	"encoding/binary"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/cudadrv"
)

// clWarps is a linear_cl block's warps as compiled (kernels.cu's
// LCL_WARPS, from the LCL_W16 tunable): bn/32 column groups of 32 columns
// times clWarps/4 row groups times 128/bn k-groups.
func (b *Backend) clWarps() int { return 8 << b.tunable("LCL_W16") }

// clChunk is the k of one of linear_cl's chunks of x (LCL_XC): a k-group
// takes every (128/bn)-th 16 of each chunk, so the chunk holds a whole
// number of rounds of the most k-groups (four, at bn = 32).
const clChunk = 64

// maxClusterSplits is the most blocks of a portable cluster: the most
// slices of k linear_cl splits a GEMM into.
const maxClusterSplits = 8

// clCols are the column tiles linear_cl takes, widest first.
var clCols = []int{128, 64, 32}

// gpcSMs is the multiprocessors a cluster may count on finding together in
// one of the GPU's processing clusters (a GPC: 16 to 18 on an H100 or
// H200), for a driver that does not say how many clusters run at once. A
// cluster's blocks run on one GPC, so clusters of s blocks fill about
// sms/gpcSMs·⌊gpcSMs/s⌋·s multiprocessors in one wave: five blocks a
// cluster leave one of sixteen idle, seven two.
const gpcSMs = 16

// clWaves is, for each cluster size s (index; 2 to maxClusterSplits), the
// linear_cl blocks that run at once in clusters of s, one a
// multiprocessor; 0 where the driver did not say (the gpcSMs estimate).
type clWaves [maxClusterSplits + 1]int

// wave is the blocks of clusters of s that run at once on sms
// multiprocessors: all of them for blocks of no cluster.
func (w *clWaves) wave(s, sms int) int {
	if s == 1 {
		return sms
	}
	if w != nil && w[s] > 0 {
		return w[s]
	}
	return max(1, sms/gpcSMs) * (gpcSMs / s) * s
}

// clusterWaves asks the driver (cuOccupancyMaxActiveClusters) how many
// clusters of each size of linear_cl blocks fn of shared bytes of dynamic
// shared memory run at once.
func clusterWaves(drv *cudadrv.Driver, fn uintptr, shared, warps int) (w clWaves) {
	if !drv.Has("cuOccupancyMaxActiveClusters") {
		return w
	}
	for s := 2; s <= maxClusterSplits; s++ {
		var attr launchAttr
		attr.id = launchAttrClusterDimension
		binary.LittleEndian.PutUint32(attr.value[0:], uint32(s))
		binary.LittleEndian.PutUint32(attr.value[4:], 1)
		binary.LittleEndian.PutUint32(attr.value[8:], 1)
		cfg := launchConfig{grid: [3]uint32{uint32(s * 64), 1, 1}, block: [3]uint32{uint32(32 * warps), 1, 1}, shared: uint32(shared),
			attrs: uintptr(unsafe.Pointer(&attr)), nattrs: 1}
		var n int32
		if drv.Call("cuOccupancyMaxActiveClusters", uintptr(unsafe.Pointer(&n)), fn, uintptr(unsafe.Pointer(&cfg))) == nil && n > 0 {
			w[s] = int(n) * s
		}
	}
	return w
}

// clPlan is how linear_cl runs a GEMM: the tile of output columns (bn), the
// slice of k each block of a cluster takes (kc, a multiple of 16), the
// cluster's blocks (splits), the tiles of bn columns and of 128 rows, and
// the dynamic shared memory a block.
type clPlan struct {
	bn, kc, splits, tilesN, tilesM, shared int
	// linear_wg's: the ring's chunks of x and the rows of x a block
	// multiplies (wgRowsPadded).
	ring, np int
}

// lclShared is a linear_cl block's dynamic shared memory for slices of kc,
// rows rows and bn columns: its operands, or, where more, its k-groups'
// float32 products (rows of bn + 8 floats) that meet there.
func lclShared(kc, rows, bn int) int {
	rp := (min(rows, 16*lmmaTiles) + 15) &^ 15
	kg := 128 / bn
	return max((bn+rp)*(kc+8)*2, kg*rp*(bn+8)*4)
}

// planLinearCl splits a GEMM of m rows, n output columns and depth k (a
// multiple of 16) into clusters of linear_cl blocks on a GPU of sms
// multiprocessors with sharedMax bytes of shared memory a block. Of the
// column tiles (cols, or each of clCols where cols is 0) and slices of k
// (one to maxClusterSplits a cluster) whose operands fit, it takes the
// plan whose blocks each do least: after its wait a block copies its
// slice of x (rows·kc) and multiplies it by its slice of the weight
// (bn·kc, on as many warps whatever bn), counted as kc·(rows + 2·bn), and,
// split, adds its share of the cluster's float32 products (rows·bn over
// the cluster's shared memory, counted twice: ncu put a quarter to two
// fifths of the kernel's samples there), all times the waves its clusters
// take (waves). Ties go to the wider tile, whose grid copies x fewer times.
// A first rule, for measurements on a GPU to revise. ok is false where no
// plan fits.
func planLinearCl(m, n, k, cols, sms, sharedMax int, waves *clWaves) (p clPlan, ok bool) {
	rp := (min(m, 16*lmmaTiles) + 15) &^ 15
	tilesM := (m + 16*lmmaTiles - 1) / (16 * lmmaTiles)
	best := 0
	for _, bn := range clCols {
		if cols != 0 && bn != cols {
			continue
		}
		tilesN := (n + bn - 1) / bn
		for s := 1; s <= maxClusterSplits; s++ {
			kc := (k/16 + s - 1) / s * 16
			splits := (k + kc - 1) / kc
			shared := lclShared(kc, m, bn)
			if splits != s || shared > sharedMax {
				continue
			}
			blocks := tilesN * splits * tilesM
			wave := waves.wave(splits, sms)
			work := kc * (rp + 2*bn)
			if splits > 1 {
				work += 2 * rp * bn
			}
			cost := (blocks + wave - 1) / wave * work
			if !ok || cost < best {
				p, best, ok = clPlan{bn: bn, kc: kc, splits: splits, tilesN: tilesN, tilesM: tilesM, shared: shared}, cost, true
			}
		}
	}
	return p, ok
}

// clLinear reports whether a Linear of m rows, depth k and weight w runs
// on linear_cl (Options.ClusterRows), and its plan: one fp16 term (FP16,
// and FP16X2's reduced streams), a resident weight, k a multiple of 16,
// and a GPU with thread block clusters.
func (s *stream) clLinear(m, k int, w *tensor) (clPlan, bool) {
	rows := s.be.opts.ClusterRows
	if rows == 0 || m > rows || s.prec != FP16 || w.s != nil || k%16 != 0 || !s.be.clusters {
		return clPlan{}, false
	}
	return planLinearCl(m, w.rows, k, s.be.opts.ClusterCols, s.be.sms, s.be.clShared(), &s.be.clWaves)
}

// clShared is the shared memory linear_cl may ask of a block here: all a
// block may opt in to (one block a multiprocessor: its grid is one wave).
func (b *Backend) clShared() int {
	if b.sharedOptin > 0 {
		return b.sharedOptin
	}
	return lmmaSharedLimit
}

// issueCl launches linear_cl on x's fp16 copy xh and the weight's wh, in
// clusters of the plan's splits.
func (lin *linearOp) issueCl(x *run, xh, wh uintptr) error {
	p := lin.clPlan
	var bp uintptr
	if lin.b != nil {
		bp = lin.b.addr
	}
	if x.tune {
		x.b.count(func(st *Stats) { st.GEMMOwn++ })
	}
	return x.l.launchCluster(x.b.drv, x.b.k.linearCl, [3]int{p.tilesN * p.splits, 1, p.tilesM}, 32*x.b.clWarps(), p.shared, x.cs.stream,
		p.splits, u64(lin.d.addr), u64(xh), u64(wh), u64(bp), i32(lin.m), i32(lin.k), i32(lin.n), uint64(lin.act),
		boolArg(lin.accumulate), boolArg(lin.halfOut), i32(p.kc), i32(p.bn))
}

// wgChunk is the k of one of linear_wg's chunks (kernels.cu's 64-wide
// swizzled rows: 128 bytes of fp16), wgCols its tile's output columns
// (LWG_BN, wgmma's 64 rows), wgRows the most rows of x a block takes
// (LWG_ROWS), wgCS its products' row in shared memory (LWG_CS floats).
const (
	wgChunk = 64
	wgCols  = 64
	wgRows  = 128
	wgCS    = 68
)

// wgRowsPadded is the rows of x a linear_wg block multiplies, np: m's rows
// of one tile rounded up to 32 (the kernel's instantiations 32 to 128).
func wgRowsPadded(m int) int { return (min(m, wgRows) + 31) &^ 31 }

// lwgShared is a linear_wg block's dynamic shared memory for slices of kc
// (a multiple of wgChunk), np rows of x of terms terms and a ring of r
// chunks of x: 1024 bytes to align the swizzled tiles, the weight's slice,
// the ring and the TMA's mbarriers (Options.WGTMA: one a chunk of the slice
// and one a slot), or, where more, the float32 products.
func lwgShared(kc, np, terms, r int) int {
	return 1024 + max(kc/wgChunk*wgCols*wgChunk*2+r*terms*np*wgChunk*2+8*(kc/wgChunk+r), np*wgCS*4)
}

// planLinearWg splits a GEMM of m rows, n output columns and depth k into
// clusters of linear_wg blocks, as planLinearCl does for linear_cl: tiles
// of wgCols columns, each cluster's blocks a slice of k a whole number of
// chunks, the whole of a block's weight slice in shared memory (sharedMax
// a block) with a ring of at least three chunks of x (all of the slice's
// chunks where they fit, up to maxRing, 0 for eight; terms, x's terms, in
// each slot). splits forces the slices of k (0: the plan's). Of the plans
// that fit it takes the one whose blocks each do least after their wait,
// times the waves: x's chunks copied and multiplied, about terms·kc·np/32
// cycles on an H100's multiprocessor (64 bytes of L2 a cycle; the
// products, at 4,096 fp16 operations a cycle, as long), plus, split, the
// cluster's adding (np·64 floats over its shared memory, about 8·np
// cycles) and two cluster barriers (counted as 1,000 cycles: a guess for
// measurements to revise).
func planLinearWg(m, n, k, terms, splits, maxRing, sms, sharedMax int, waves *clWaves) (p clPlan, ok bool) {
	if maxRing == 0 {
		maxRing = 8
	}
	np := wgRowsPadded(m)
	tilesM := (m + wgRows - 1) / wgRows
	tilesN := (n + wgCols - 1) / wgCols
	kb := (k + wgChunk - 1) / wgChunk
	best := 0
	for s := 1; s <= maxClusterSplits; s++ {
		if splits != 0 && s != splits {
			continue
		}
		chunks := (kb + s - 1) / s
		kc := chunks * wgChunk
		if (kb+chunks-1)/chunks != s {
			continue
		}
		ring := min(chunks, maxRing)
		for ring >= 3 && lwgShared(kc, np, terms, ring) > sharedMax {
			ring--
		}
		if ring < chunks && ring < 3 || lwgShared(kc, np, terms, ring) > sharedMax {
			continue
		}
		blocks := tilesN * s * tilesM
		wave := waves.wave(s, sms)
		work := terms * kc * np / 32
		if s > 1 {
			work += 8*np + 1000
		}
		cost := (blocks + wave - 1) / wave * work
		if !ok || cost < best {
			p = clPlan{bn: wgCols, kc: kc, splits: s, tilesN: tilesN, tilesM: tilesM, shared: lwgShared(kc, np, terms, ring), ring: ring, np: np}
			best, ok = cost, true
		}
	}
	return p, ok
}

// wgLinear reports whether a Linear of m rows, depth k, weight w and
// activation act runs on linear_wg (Options.WGRows), and its plan: FP16 or
// FP16X2 (both terms of x multiplied in the kernel), a resident weight, k
// a multiple of 8, no GELU (kernels.cu's lcl_act: its epilogue calls
// nothing), and the kernels compiled for sm_90a.
func (s *stream) wgLinear(m, k int, w *tensor, act backend.Activation) (clPlan, bool) {
	rows := s.be.opts.WGRows
	if rows == 0 || m > rows || s.prec != FP16 && s.prec != FP16X2 || w.s != nil || k%8 != 0 || act == backend.GELU || !s.be.wgmma {
		return clPlan{}, false
	}
	return planLinearWg(m, w.rows, k, terms(s.prec), s.be.opts.WGSplits, s.be.opts.WGRing, s.be.sms, s.be.clShared(), &s.be.wgWaves)
}

// issueWg launches linear_wg on x's 16-bit copy xh (FP16X2's terms m·k
// elements apart) and the weight's fp16 copy wh, in clusters of the plan's
// splits.
func (lin *linearOp) issueWg(x *run, xh, wh uintptr) error {
	p := lin.clPlan
	var bp uintptr
	if lin.b != nil {
		bp = lin.b.addr
	}
	var xlo int64
	if terms(x.prec) == 2 {
		xlo = int64(lin.m) * int64(lin.k)
	}
	if x.tune {
		x.b.count(func(st *Stats) { st.GEMMOwn++ })
	}
	var maps uintptr
	if x.b.opts.WGTMA {
		var err error
		if maps, err = x.b.wgMaps(x.tune, wh, xh, lin.n, lin.m, lin.k, terms(x.prec), p.np); err != nil {
			return err
		}
	}
	return x.l.launchCluster(x.b.drv, x.b.k.linearWG, [3]int{p.tilesN * p.splits, 1, p.tilesM}, 128, p.shared, x.cs.stream,
		p.splits, u64(lin.d.addr), u64(xh), uint64(xlo), u64(wh), u64(bp), i32(lin.m), i32(lin.k), i32(lin.n), uint64(lin.act),
		boolArg(lin.accumulate), boolArg(lin.halfOut), i32(p.kc), i32(p.ring), i32(p.np), u64(maps))
}

// wgKey is what a linear_wg launch's tensor maps describe: the weight (wh,
// n rows of k) and x (xh, terms of m rows of k, boxes of np rows). A map
// holds addresses and shapes alone, so the maps of a key stay right for
// any launch with it, whatever else has used the memory since.
type wgKey struct {
	wh, xh             uintptr
	n, m, k, np, terms int
}

// maxWGMaps bounds wgMaps' sets of maps. A set stays on the GPU while the
// backend is open (a captured graph may still read it), and each new
// entry's memory makes new ones, so a server whose request shapes keep
// changing would grow them without end: past the bound (at most 1.5 MB of
// device memory) new launches copy by their threads.
const maxWGMaps = 4096

// wgMaps returns the device address of the tensor maps of a linear_wg
// launch (Options.WGTMA), 128 bytes each: the weight's (boxes of 64 of k
// by 64 rows), then each term's of x (64 of k by np rows; FP16X2's second
// term m·k elements after the first). Maps are made and copied to the GPU
// on a segment's first run, which is never captured (create), and found
// again when its graph is captured; 0 where they were never made, or the
// driver (before CUDA 12.0) cannot make them: the kernel then copies by its
// threads.
func (b *Backend) wgMaps(create bool, wh, xh uintptr, n, m, k, terms, np int) (uintptr, error) {
	key := wgKey{wh, xh, n, m, k, np, terms}
	b.mu.Lock()
	d, ok := b.tmaps[key]
	full := len(b.tmaps) >= maxWGMaps
	b.mu.Unlock()
	if ok || !create || full || !b.drv.Has("cuTensorMapEncodeTiled") {
		return d, nil
	}
	maps := make([]tensorMap, 1+terms)
	var err error
	if maps[0], err = b.encodeTensorMap(wh, int64(n), int64(k), 2*int64(k), wgChunk, wgCols, true); err != nil {
		return 0, err
	}
	for t := range terms {
		if maps[1+t], err = b.encodeTensorMap(xh+uintptr(2*t*m*k), int64(m), int64(k), 2*int64(k), wgChunk, np, true); err != nil {
			return 0, err
		}
	}
	bytes := int64(len(maps)) * int64(unsafe.Sizeof(maps[0]))
	if d, err = b.alloc(bytes, "tensor maps"); err != nil {
		return 0, err
	}
	if err = b.drv.Call("cuMemcpyHtoD_v2", d, uintptr(unsafe.Pointer(&maps[0])), uintptr(bytes)); err != nil {
		b.drv.Call("cuMemFree_v2", d)
		return 0, err
	}
	// Requests flush on their own threads, so another may have made the
	// same maps meanwhile: the first kept is everyone's. b.tmaps alone
	// holds this memory (Close frees it); b.allocs is the worker's.
	b.mu.Lock()
	d0, ok := b.tmaps[key]
	if !ok {
		if b.tmaps == nil {
			b.tmaps = map[wgKey]uintptr{}
		}
		b.tmaps[key] = d
	}
	b.mu.Unlock()
	if ok {
		b.drv.Call("cuMemFree_v2", d)
		return d0, nil
	}
	return d, nil
}
