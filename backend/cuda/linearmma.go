//go:build linux

package cuda

import (
	"cmp"
	"encoding/binary"
	"unsafe"

	"github.com/laya-metal/laya/internal/cudadrv"
)

// lmmaTiles is kernels.cu's LMMA_MT: linear_mma's 16-row tiles of x a
// block. Its warps (Options.MMACols / 16: 4 or 8) take 16 output columns
// (weight rows) each, for every row.
const lmmaTiles = 8

// DefaultMMACols is Options.MMACols' default.
const DefaultMMACols = 64

// lmmaSharedLimit is the most dynamic shared memory linear_mma's plans ask
// of a block (bounded by the GPU's opt-in limit): two blocks a
// multiprocessor on Hopper, so that one copies its weights in while
// another computes.
const lmmaSharedLimit = 96 << 10

// lmmaPlan is how linear_mma runs a GEMM: its grid (column tiles, k
// splits of kc, row blocks) and dynamic shared memory.
type lmmaPlan struct {
	warps, kc, splits, tilesN, tilesM, shared int
}

// partBytes is the split sums' workspace: splits·m·n floats, an unsplit
// GEMM's too, since a GeGLU fused in later (Discard) sends even one
// split's sums through it.
func (p lmmaPlan) partBytes(m, n int) int64 {
	return int64(p.splits) * int64(m) * int64(n) * 4
}

// lmmaShared is linear_mma's dynamic shared memory for k chunks of kc,
// rows of x a block (rounded up to 16) and warps: the weight slice and
// each term of x, rows padded by 8 halves; or, where more, the block's
// float32 products that go out through the same space, rows padded by 8
// floats.
func lmmaShared(kc, rows, terms, warps int) int {
	rp := (min(rows, 16*lmmaTiles) + 15) &^ 15
	return max((16*warps+terms*rp)*(kc+8)*2, rp*(16*warps+8)*4)
}

// planLinearMMA splits a GEMM of m rows, n output columns and depth k (a
// multiple of 16) for linear_mma blocks of warps warps (16·warps columns)
// on a GPU of sms multiprocessors with sharedMax bytes of shared memory a
// block: the longest k chunk (256, 128 or 64; all of k when shorter) whose
// grid still gives every multiprocessor two blocks, else the shortest that
// fits. A short chunk
// makes more blocks, each with less to wait for, at the price of more
// partial sums to add. ok is false where not even the shortest fits.
func planLinearMMA(m, n, k, terms, warps, sms, sharedMax int) (p lmmaPlan, ok bool) {
	p.warps = warps
	p.tilesN = (n + 16*warps - 1) / (16 * warps)
	p.tilesM = (m + 16*lmmaTiles - 1) / (16 * lmmaTiles)
	for _, kc := range []int{256, 128, 64} {
		kc = min(kc, k)
		shared := lmmaShared(kc, m, terms, warps)
		if shared > sharedMax {
			continue
		}
		p.kc, p.splits, p.shared, ok = kc, (k+kc-1)/kc, shared, true
		if p.tilesN*p.tilesM*p.splits >= 2*sms {
			break
		}
	}
	return p, ok
}

// mmaLinear reports whether a Linear of m rows, depth k and weight w runs
// on linear_mma (Options.MMARows), and its plan: FP16 or FP16X2, a resident
// weight (whose fp16 copy the kernel starts loading before the kernel
// before it has finished), and k a multiple of 16.
func (s *stream) mmaLinear(m, k int, w *tensor) (lmmaPlan, bool) {
	rows := s.be.opts.MMARows
	if rows == 0 || m > rows || s.prec != FP16 && s.prec != FP16X2 || w.s != nil || k%16 != 0 {
		return lmmaPlan{}, false
	}
	return s.be.planLinearMMA(m, w.rows, k, terms(s.prec))
}

// planLinearMMA is planLinearMMA on this GPU with Options.MMACols.
func (b *Backend) planLinearMMA(m, n, k, terms int) (lmmaPlan, bool) {
	return planLinearMMA(m, n, k, terms, cmp.Or(b.opts.MMACols, DefaultMMACols)/16, b.sms, b.lmmaShared())
}

// lmmaShared is the shared memory linear_mma may ask of a block here.
func (b *Backend) lmmaShared() int {
	if b.sharedOptin > 0 {
		return min(lmmaSharedLimit, b.sharedOptin)
	}
	return lmmaSharedLimit
}

// issueMMA launches linear_mma on x's 16-bit copy xh (its terms m·k
// elements apart) and the weight's fp16 copy wh.
func (lin *linearOp) issueMMA(x *run, xh, wh uintptr) error {
	t, p := terms(x.prec), lin.plan
	var bp uintptr
	if lin.b != nil {
		bp = lin.b.addr
	}
	var inner int
	var gd, gh, gkind, glo uint64
	if g := lin.glu; g != nil {
		inner = lin.n / 2
		gd = dstArg(g, g.glu)
		gh, gkind, glo = x.shadowArgs(g)
	}
	var stat, lnx, lnstat, lntiles, lnw, lng, lnb, eps uint64
	if lin.stat {
		stat = u64(x.e.arena) + uint64(lin.statOff)
	}
	if f := lin.ln; f != nil {
		src := f.src
		lnx, lnstat = u64(f.x.addr), u64(x.e.arena)+uint64(src.statOff)
		lntiles, lnw = i32(src.plan.tilesN), i32(16*src.plan.warps)
		lng, eps = u64(f.w.addr), f32(f.eps)
		if f.b != nil {
			lnb = u64(f.b.addr)
		}
	}
	if x.tune {
		x.b.count(func(st *Stats) {
			st.GEMMOwn++
			if lin.ln != nil {
				st.LayerNormsInGEMM++
			}
		})
	}
	return x.l.launch(x.b.drv, x.b.k.linearMMA[t-1][p.warps/8], [3]int{p.tilesN, p.splits, p.tilesM}, 32*p.warps, p.shared, x.cs.stream,
		u64(lin.d.addr), u64(xh), uint64(int64(lin.m)*int64(lin.k)), u64(wh), u64(bp), i32(lin.m), i32(lin.k), i32(lin.n),
		uint64(lin.act), boolArg(lin.accumulate), boolArg(lin.halfOut), i32(p.kc), u64(x.mmaPart), u64(x.mmaSem),
		i32(inner), gd, gh, gkind, glo, stat, lnx, lnstat, lntiles, lnw, lng, lnb, eps)
}

// launchConfig and launchAttr are the driver's CUlaunchConfig and
// CUlaunchAttribute (cuda.h, CUDA 11.8 and later), for cuLaunchKernelEx:
// an attribute is its id, padding to 8 bytes, and a 64-byte value union.
type launchConfig struct {
	grid   [3]uint32
	block  [3]uint32
	shared uint32
	_      uint32
	stream uintptr
	attrs  uintptr
	nattrs uint32
	_      uint32
}

type launchAttr struct {
	id    uint32
	_     uint32
	value [64]byte
}

// launchAttrProgrammaticStreamSerialization is
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: its value, an int,
// non-zero lets the kernel start before the one before it in the stream
// has finished (the kernel waits for it with griddepcontrol.wait).
const launchAttrProgrammaticStreamSerialization = 6

// launchAttrClusterDimension is CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: its
// value three unsigned ints, a cluster's blocks along x, y and z (sm_90;
// each dividing the grid's).
const launchAttrClusterDimension = 4

// launchAttrs launches through cuLaunchKernelEx in clusters of cluster
// blocks along x (1: none), with programmatic stream serialization allowed
// where l.pdl; l.ptrs holds the arguments. drv.Call is called directly,
// so that its go:uintptrescapes keeps l (the configuration and the
// attributes it points to) on the heap over the call.
func (l *launcher) launchAttrs(drv *cudadrv.Driver, fn uintptr, grid [3]int, block, shared int, stream uintptr, cluster int) error {
	n := 0
	if l.pdl {
		l.attrs[n] = launchAttr{id: launchAttrProgrammaticStreamSerialization}
		l.attrs[n].value[0] = 1
		n++
	}
	if cluster > 1 {
		l.attrs[n] = launchAttr{id: launchAttrClusterDimension}
		binary.LittleEndian.PutUint32(l.attrs[n].value[0:], uint32(cluster))
		binary.LittleEndian.PutUint32(l.attrs[n].value[4:], 1)
		binary.LittleEndian.PutUint32(l.attrs[n].value[8:], 1)
		n++
	}
	l.cfg = launchConfig{
		grid:   [3]uint32{uint32(grid[0]), uint32(grid[1]), uint32(grid[2])},
		block:  [3]uint32{uint32(block), 1, 1},
		shared: uint32(shared),
		stream: stream,
		attrs:  uintptr(unsafe.Pointer(&l.attrs[0])),
		nattrs: uint32(n),
	}
	return drv.Call("cuLaunchKernelEx", uintptr(unsafe.Pointer(&l.cfg)), fn, uintptr(unsafe.Pointer(&l.ptrs[0])), 0)
}

// launchCluster is launch in clusters of cluster blocks along x (compute
// capability 9.0 and cuLaunchKernelEx; the grid's x a multiple of it).
func (l *launcher) launchCluster(drv *cudadrv.Driver, fn uintptr, grid [3]int, block, shared int, stream uintptr, cluster int, args ...uint64) error {
	l.setArgs(args)
	return l.launchAttrs(drv, fn, grid, block, shared, stream, cluster)
}
