//go:build linux

package cuda

// clWarps is linear_cl's warps a block (kernels.cu's linear_cl_4): 64
// output columns a tile.
const clWarps = 4

// maxClusterSplits is the most blocks of a portable cluster: the most
// slices of k linear_cl splits a GEMM into.
const maxClusterSplits = 8

// clMaxK is the longest slice of k a linear_cl block copies: its threads
// take a row's 16-byte chunks (kc/8, rounded up to a power of two) in one
// step, so there may be at most as many as the block has threads.
const clMaxK = 8 * 32 * clWarps

// clPlan is how linear_cl runs a GEMM: the slice of k each block of a
// cluster takes (kc, a multiple of 16), the cluster's blocks (splits), the
// tiles of 64 output columns and of 128 rows, the dynamic shared memory a
// block, and the warps sharing each 16 columns over k-groups (kg, the
// kernels' LCL_KG).
type clPlan struct {
	kc, splits, tilesN, tilesM, shared, kg int
}

// lclShared is a linear_cl block's dynamic shared memory for slices of kc,
// rows rows and kg k-groups: its operands, or, where more, the k-groups'
// float32 products (rows of 64 + 8 floats) that meet there.
func lclShared(kc, rows, kg int) int {
	rp := (min(rows, 16*lmmaTiles) + 15) &^ 15
	return max(lmmaShared(kc, rows, 1, clWarps), kg*rp*(16*clWarps+8)*4)
}

// clKG is the k-groups linear_cl is compiled with (the LCL_KG tunable).
func (b *Backend) clKG() int { return b.tunable("LCL_KG") }

// planLinearCl splits a GEMM of m rows, n output columns and depth k (a
// multiple of 16) into clusters of linear_cl blocks on a GPU of sms
// multiprocessors with sharedMax bytes of shared memory a block: the
// fewest slices of k (a cluster's blocks, at most maxClusterSplits) whose
// blocks give every multiprocessor one, each slice at most clMaxK long and
// its operands within sharedMax; else the most that fit. Fewer slices leave fewer products to
// add, more make shorter blocks. ok is false where not even the most fit.
// A first rule, for measurements on a GPU to revise (it does not weigh
// how many blocks a multiprocessor holds at once).
func planLinearCl(m, n, k, kg, sms, sharedMax int) (p clPlan, ok bool) {
	p.kg = kg
	p.tilesN = (n + 16*clWarps - 1) / (16 * clWarps)
	p.tilesM = (m + 16*lmmaTiles - 1) / (16 * lmmaTiles)
	for s := 1; s <= maxClusterSplits; s++ {
		kc := (k/16 + s - 1) / s * 16
		shared := lclShared(kc, m, kg)
		if kc > clMaxK || shared > sharedMax {
			continue
		}
		p.kc, p.splits, p.shared, ok = kc, (k+kc-1)/kc, shared, true
		if p.tilesN*p.tilesM*p.splits >= sms {
			break
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
	return planLinearCl(m, w.rows, k, s.be.clKG(), s.be.sms, s.be.clShared())
}

// clShared is the shared memory linear_cl may ask of a block here: all a
// block may opt in to, for a slice of k long enough that eight of them
// cover the MLP output's 2624 (one block a multiprocessor where it takes
// more than half).
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
	return x.l.launchCluster(x.b.drv, x.b.k.linearCl, [3]int{p.tilesN * p.splits, 1, p.tilesM}, 32*clWarps*p.kg, p.shared, x.cs.stream,
		p.splits, u64(lin.d.addr), u64(xh), u64(wh), u64(bp), i32(lin.m), i32(lin.k), i32(lin.n), uint64(lin.act),
		boolArg(lin.accumulate), boolArg(lin.halfOut), i32(p.kc))
}
