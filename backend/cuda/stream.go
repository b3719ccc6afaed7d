//go:build linux

package cuda

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/cudadrv"
)

// A stream records operations without running them. Read flushes what was
// recorded as one segment: its tensors get addresses in an entry (device
// memory, pinned staging areas and, from the second time the same shapes
// come by, a captured CUDA graph) chosen by the segment's shape key, and
// the segment runs with one host-to-device copy of its inputs (token ids,
// row positions, FromHost data), its kernels, and one device-to-host copy
// of the tensor read plus every small tensor the segment wrote, so that
// the reads that follow (a request's act probabilities after its logits)
// need no further synchronisation.
type stream struct {
	be     *Backend
	prec   Precision // the backend's, or FP16 on a reduced stream (Backend.ReducedStream)
	err    error
	closed bool

	words    []uint64 // what the segment's key hashes
	operands [4]*tensor
	bufs     *recordBufs
	seg      int
	ops      []*op
	made     []*tensor // tensors of the current segment
	wrote    []*tensor // tensors the current segment writes
	arena    int64
	temp     int64 // largest 16-bit operand scratch of the segment's GEMMs
	mmaPart  int64 // largest split-sum workspace of the segment's linear_mma GEMMs
	mmaSem   int64 // most tiles of one of them: the counters of their splits
	// pfHosts are the segment's LayerNorms and GeGLUs in order, which ask
	// L2 for the weights of the cuBLAS GEMMs recorded after them
	// (Options.PrefetchRows, PrefetchDepth).
	pfHosts []*op
	stage   []byte
	layouts []stagedLayout // per-row metadata staged in this segment

	opSlab  []op       // where record takes its ops from
	linSlab []linearOp // where Linear takes its linearOps from

	entries []*entry // flushed segments, held until Close
	cs      *cstream
	wait    chan error // the last flush's completion, until received

	// submitAt is the operations a segment needs for Submit to start it
	// (negative: never); started counts the segments Submit started since
	// the last wait (each timed by its own pair of events: cstream.spans),
	// splits those it started in all.
	submitAt int
	started  int
	splits   int
}

// run is what a recorded operation needs to issue its kernels.
type run struct {
	l    launcher
	b    *Backend
	cs   *cstream
	e    *entry
	temp uintptr
	ws   uintptr // the entry's GEMM workspace (gemmWorkspace bytes)
	// linear_mma's split sums and split counters (mmaSemBytes; zero
	// between launches, once the entry has zeroed them: entry.semZeroed).
	mmaPart, mmaSem uintptr
	mmaSemBytes     int64
	prec            Precision
	// tune: the segment runs kernel by kernel, neither captured nor
	// profiled, so a GEMM shape seen first may time its algorithms.
	tune bool
}

// shapeKey identifies a segment's work: its operations, shapes and
// parameters, the addresses of the tensors it reads from outside itself,
// and the sizes of its memory areas.
type shapeKey struct {
	hash                uint64
	prec                Precision // a reduced stream's segments are their own
	arena, stage, out   int64
	tensors, operations int
}

// mix adds vs to the segment's key. The words are hashed once, at flush:
// hashing them one Write at a time cost tens of microseconds a request.
func (s *stream) mix(vs ...uint64) { s.words = append(s.words, vs...) }

// ref identifies t in the key: by index for the segment's own tensors
// (whose addresses depend on the entry), else by address.
func (s *stream) ref(t *tensor) uint64 {
	if t == nil {
		return 0
	}
	if t.s == s && t.seg == s.seg {
		return 1<<63 | uint64(t.id)
	}
	return uint64(t.addr)
}

func (s *stream) fail(err error) {
	if s.err == nil {
		if cudadrv.ContextLost(err) {
			err = s.be.deviceLost(err)
		}
		s.err = err
	}
}

// begin checks that the operation may be recorded and its tensors are this
// stream's or this backend's; it returns them as *tensor (nil stays nil).
// It first records what an operand still owes (a pending rope, the sum of
// stacked terms) unless the operation takes that operand as it is.
func (s *stream) begin(op string, ts ...backend.Tensor) ([]*tensor, bool) {
	return s.beginTaking(op, 0, 0, ts...)
}

// beginTaking is begin for an operation that overwrites its operands in
// the bit set over without reading them, and reads the operands in the
// bit set two as stacked terms if they are (tensor.two).
func (s *stream) beginTaking(op string, over, two uint, ts ...backend.Tensor) ([]*tensor, bool) {
	if s.err != nil {
		return nil, false
	}
	if s.closed {
		s.fail(fmt.Errorf("cuda: %s: %w: the stream is closed", op, backend.ErrForeignTensor))
		return nil, false
	}
	// The operands go back in a buffer of the stream's: every caller reads
	// them before its next begin.
	out := s.operands[:0]
	if len(ts) > len(s.operands) {
		out = make([]*tensor, 0, len(ts))
	}
	out = out[:len(ts)]
	clear(out) // a nil operand (no bias) must not show the last operation's
	for i, x := range ts {
		if x == nil {
			continue
		}
		t, ok := x.(*tensor)
		if !ok || t != nil && (t.s == nil && t.owner != s.be || t.s != nil && t.s != s) {
			s.fail(fmt.Errorf("cuda: %s: %w: operand %d (%T)", op, backend.ErrForeignTensor, i, x))
			return nil, false
		}
		out[i] = t
	}
	for _, t := range out {
		if t == nil {
			continue
		}
		read, whole := false, true // read at all; read only where it may be stacked
		for j, u := range out {
			if u == t && over&(1<<j) == 0 {
				read = true
				whole = whole && two&(1<<j) != 0
			}
		}
		switch {
		case !read:
			// Overwritten: nothing it owes matters.
			t.rope, t.stacked = nil, false
			continue
		case t.rope != nil:
			s.pending(t)
		}
		if t.stacked && !whole {
			s.sumTerms(t)
		}
	}
	return out, true
}

// sumTerms adds t's stacked terms into its first.
func (s *stream) sumTerms(t *tensor) {
	two := t.two()
	s.writes(t)
	n := int64(t.rows) * int64(t.cols)
	s.mix(opAdd, s.ref(t), uint64(two))
	s.record("terms", func(o *op, r *run) error {
		return r.l.launch(r.b.drv, r.b.k.add, [3]int{r.b.grid(n), 1, 1}, 256, 0, r.cs.stream, u64(t.addr), u64(t.addr), uint64(two), 0, 0, uint64(n))
	})
}

func (s *stream) check(err error) bool {
	if err != nil {
		s.fail(fmt.Errorf("cuda: %w", err))
		return false
	}
	return true
}

// reads marks ts' float32 contents as read: a tensor of the segment read
// before anything wrote it is zeroed when the segment runs (New's promise),
// and a producer whose output was read keeps storing it (Discard).
func (s *stream) reads(ts ...*tensor) {
	for _, t := range ts {
		if t == nil || t.s != s {
			// A resident weight is every stream's: nothing of it to track.
			continue
		}
		t.f32Read = true
		t.lnReader = nil
		if t.seg == s.seg && !t.written {
			t.zero = true
		}
	}
}

// writes marks t as written by the segment: its snapshot is stale.
func (s *stream) writes(t *tensor) {
	t.stacked, t.f32Read, t.dead = false, false, false
	t.halfLin, t.halfReader, t.f16 = nil, nil, false
	t.gluLin, t.gluReader, t.fused = nil, nil, false
	t.statLin, t.lnReader, t.lnFused = nil, nil, false
	if t.s == s {
		t.snap = nil
		t.lastWriter = nil
	}
	if t.s == s && t.seg == s.seg {
		t.written = true
	}
	for _, w := range s.wrote {
		if w == t {
			return
		}
	}
	s.wrote = append(s.wrote, t)
}

func (s *stream) newTensor(rows, cols int) *tensor {
	t := &tensor{owner: s.be, rows: rows, cols: cols, s: s, seg: s.seg, id: len(s.made), off: s.arena, h16: -1}
	s.arena += align(t.bytes(), 256)
	s.made = append(s.made, t)
	return t
}

// stageBytes appends data to the segment's input area and returns its
// offset there.
func (s *stream) stageBytes(data []byte) int64 {
	off := int64(len(s.stage))
	s.stage = append(s.stage, data...)
	if pad := int(align(int64(len(s.stage)), 256)) - len(s.stage); pad > 0 {
		s.stage = append(s.stage, make([]byte, pad)...)
	}
	return off
}

func (s *stream) stageI32(v []int32) int64 {
	if len(v) == 0 {
		return s.stageBytes(nil)
	}
	return s.stageBytes(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4))
}

func (s *stream) record(name string, f func(o *op, x *run) error) *op {
	o := fromSlab(&s.opSlab, 64)
	o.name, o.issue = name, f
	s.ops = append(s.ops, o)
	return o
}

// fromSlab is a zeroed T from *slab, a new slab (twice the last, at least
// first long) when it is full: the full one stays where it is, its elements
// held by pointer (s.ops, tensors' lastWriter), and Close hands the last one
// to the next stream. A slab's elements past its length are zero (make's,
// or cleared by the Close that handed it on), so taking one is only
// extending the length: no copy of a zero value, whose pointers the
// collector would have to see written.
func fromSlab[T any](slab *[]T, first int) *T {
	if len(*slab) == cap(*slab) {
		*slab = make([]T, 0, max(first, 2*cap(*slab)))
	}
	*slab = (*slab)[:len(*slab)+1]
	return &(*slab)[len(*slab)-1]
}

// issueOp issues o: a Linear through its linearOp (recorded without a
// closure), anything else through its issue function.
func (o *op) issueOp(x *run) error {
	if o.issue == nil {
		return o.lin.issue(x)
	}
	return o.issue(o, x)
}

// op is a recorded operation: its name (for Profiler), what issues it, and
// what the peephole fusions need to know of it.
type op struct {
	name     string
	issue    func(o *op, x *run) error // o itself: closures need not capture it
	lin      *linearOp                 // a Linear
	add      [3]*tensor                // an Add: dst, a, b
	gather   *gatherRows               // a Gather
	residual *residualAdd              // an Add in place a LayerNorm may fold (&res)
	res      residualAdd
	shadow   *tensor // a producer (LayerNorm, Attention, GeGLU) also writes this 16-bit copy of its output
	halfIn   bool    // a GeGLU or attention reads its input as fp16 (tensor.halfLin)
	glu      *tensor // a GeGLU's output
	fused    bool    // a GeGLU or LayerNorm its GEMM computes (linearOp.glu, .ln): nothing to launch
	ln       *lnFuse // a LayerNorm a linear_mma GEMM reading its output could compute
	// noF32: the producer stores only the 16-bit copy; its float32 output
	// was discarded with no reader but the GEMMs of the copy (Discard).
	noF32 bool
	// pf: the weights (16-bit copies) of up to two GEMMs after this
	// LayerNorm or GeGLU that it asks L2 for (stream.pfHosts).
	pf [2]pfRange
}

// pfRange is device memory a kernel asks L2 for: bytes at addr, both
// multiples of 16.
type pfRange struct {
	addr  uintptr
	bytes int64
}

// pfArgs are o's prefetch arguments (PF_PARAMS).
func (o *op) pfArgs() [4]uint64 {
	return [4]uint64{u64(o.pf[0].addr), uint64(o.pf[0].bytes), u64(o.pf[1].addr), uint64(o.pf[1].bytes)}
}

const (
	opNew = iota + 1
	opFromHost
	opGather
	opLayerNorm
	opLinear
	opAdd
	opActivate
	opSoftmax
	opGeGLU
	opRope
	opAttention
	opActFeatures
	opRead
	opShadow
	opFuse
	opNoF32
	opSmall
	opHalf
	opMMA
	opGLU
	opLN
	opCl
	opKBatch
	opWG
	opKCat
)

func (s *stream) New(rows, cols int) backend.Tensor {
	if err := backend.CheckDims(rows, cols); err != nil {
		s.check(err)
		return &tensor{owner: s.be, rows: max(rows, 1), cols: max(cols, 1), s: s, seg: -1}
	}
	if s.err != nil || s.closed {
		return &tensor{owner: s.be, rows: rows, cols: cols, s: s, seg: -1}
	}
	s.mix(opNew, uint64(rows), uint64(cols))
	return s.newTensor(rows, cols)
}

func (s *stream) FromHost(rows, cols int, data []float32) backend.Tensor {
	if err := backend.CheckFromHost(rows, cols, len(data)); err != nil {
		s.check(err)
		return &tensor{owner: s.be, rows: max(rows, 1), cols: max(cols, 1), s: s, seg: -1}
	}
	if s.err != nil || s.closed {
		return &tensor{owner: s.be, rows: rows, cols: cols, s: s, seg: -1}
	}
	s.mix(opFromHost, uint64(rows), uint64(cols))
	t := &tensor{owner: s.be, rows: rows, cols: cols, s: s, seg: s.seg, id: len(s.made), staged: true, written: true, h16: -1}
	t.off = s.stageBytes(unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*4))
	s.made = append(s.made, t)
	return t
}

func (s *stream) Gather(dst, table backend.Tensor, index []int32) {
	ts, ok := s.beginTaking("gather", 1, 0, dst, table)
	if !ok || !s.check(backend.CheckGather(dst, table, index)) {
		return
	}
	d, tb := ts[0], ts[1]
	s.reads(tb)
	s.writes(d)
	off := s.stageI32(index)
	n := len(index)
	s.mix(opGather, s.ref(d), s.ref(tb), uint64(n))
	o := s.record("gather", func(o *op, x *run) error {
		return x.l.launch(x.b.drv, x.b.k.gather, [3]int{n, 1, 1}, 128, 0, x.cs.stream, u64(d.addr), u64(tb.addr), u64(x.e.devIn)+uint64(off), i32(tb.cols))
	})
	o.gather = &gatherRows{d: d, table: tb, off: off}
}

// gatherRows is a recorded Gather: d's rows are table's rows at the staged
// indices (off in the segment's input area). A LayerNorm right after it
// may read the table's rows itself (stream.LayerNorm).
type gatherRows struct {
	d, table *tensor
	off      int64
}

// foldGather takes the Gather that the last recorded op is, if it wrote t
// (CheckGather: all of t, from a table of t's width that is not t) and a
// LayerNorm writing dst reads it as its only use: dst is t itself, so that
// the gathered rows are overwritten by the norm that reads them and
// nothing can read them after. The Gather is dropped from the ops; the
// LayerNorm reads the table's rows by the staged indices instead.
func (s *stream) foldGather(t, dst *tensor) *gatherRows {
	n := len(s.ops)
	if n == 0 || dst != t || s.be.opts.NoGatherFold {
		return nil
	}
	g := s.ops[n-1].gather
	if g == nil || g.d != t {
		return nil
	}
	s.ops = s.ops[:n-1]
	s.mix(opFuse)
	return g
}

func (s *stream) LayerNorm(dst, x, weight, bias backend.Tensor, eps float32) {
	ts, ok := s.beginTaking("layerNorm", 1, 0, dst, x, weight, bias)
	if !ok || !s.check(backend.CheckLayerNorm(dst, x, weight, bias, eps)) {
		return
	}
	d, in, w, b := ts[0], ts[1], ts[2], ts[3]
	// x = x + p just before: the kernel adds p into x as it reads the row
	// (one pass over x fewer, one kernel fewer: the residual Adds of FP16X2
	// runs, whose GEMMs cannot fold them). x may be an earlier segment's
	// (the residual stream, after Submit): the kernel writes it by address,
	// as the Add would have.
	var res *residualAdd
	if n := len(s.ops); n > 0 && s.ops[n-1].residual != nil && s.ops[n-1].residual.x == in && in.s == s {
		res = s.ops[n-1].residual
		s.ops = s.ops[:n-1]
		s.mix(opFuse)
	}
	// The Gather that wrote the norm's input (the token embeddings) or the
	// residual's addend (the question type's embedding), just before: the
	// norm reads the table's rows itself, one kernel fewer. Only where
	// the norm overwrites what was gathered (see foldGather), and the
	// input's fold only without a residual, whose sum the kernel writes
	// back to x.
	var gx, gr *gatherRows
	if res != nil && res.two == 0 {
		gr = s.foldGather(res.p, d)
	} else if res == nil {
		gx = s.foldGather(in, d)
	}
	// A LayerNorm of the residual stream right after the linear_mma GEMM
	// that added into it may run in the linear_mma GEMM that alone reads
	// it (Discard): its weights resident, 16-byte aligned for the kernel's
	// float4 reads.
	var ln *lnFuse
	// (A residual folded into this LayerNorm was an Add, whose write of x
	// forgot statLin.)
	if src := in.statLin; src != nil && in.statSeg == s.seg && d != in && in.cols%8 == 0 && w.s == nil && w.addr%16 == 0 &&
		(b == nil || b.s == nil && b.addr%16 == 0) {
		ln = &lnFuse{x: in, w: w, b: b, eps: eps, src: src}
	}
	s.reads(in, w, b)
	s.writes(d)
	s.mix(opLayerNorm, s.ref(d), s.ref(in), s.ref(w), s.ref(b), uint64(in.rows), uint64(in.cols), f32(eps))
	o := s.record("layerNorm", func(o *op, x *run) error {
		if o.fused {
			return nil // its GEMM computes it
		}
		var bp, rp uintptr
		var two int64
		var xi, ri uint64
		if b != nil {
			bp = b.addr
		}
		xp := in.addr
		if res != nil {
			rp, two = res.p.addr, res.two
		}
		if gx != nil {
			xp, xi = gx.table.addr, u64(x.e.devIn)+uint64(gx.off)
		}
		if gr != nil {
			rp, ri = gr.table.addr, u64(x.e.devIn)+uint64(gr.off)
		}
		h, kind, lo := x.shadowArgs(o)
		fn, block := x.b.k.layerNorm, 256
		// A table's rows are 16-byte aligned where its first is.
		if in.cols%4 == 0 && in.cols <= 1024 && xp%16 == 0 && rp%16 == 0 {
			fn, block = x.b.k.layerNorm4, (in.cols/4+31)&^31
		}
		pf := o.pfArgs()
		return x.l.launch(x.b.drv, fn, [3]int{in.rows, 1, 1}, block, 0, x.cs.stream, dstArg(o, d), u64(xp), u64(w.addr), u64(bp), i32(in.cols), f32(eps), h, kind, lo,
			u64(rp), uint64(two), xi, ri, pf[0], pf[1], pf[2], pf[3])
	})
	if gx != nil {
		o.name += " (gathering its rows)"
	} else if gr != nil {
		o.name += " (gathering its addend)"
	}
	o.ln = ln
	d.lastWriter = o
	s.prefetchHost(o)
}

func (s *stream) Linear(dst, x, weight, bias backend.Tensor, act backend.Activation) {
	ts, ok := s.beginTaking("linear", 1, 0, dst, x, weight, bias)
	if !ok || !s.check(backend.CheckLinear(dst, x, weight, bias, act)) {
		return
	}
	d, in, w, b := ts[0], ts[1], ts[2], ts[3]
	read := in.f32Read
	s.reads(in, w, b)
	s.writes(d)
	lin := fromSlab(&s.linSlab, 32)
	*lin = linearOp{d: d, in: in, w: w, b: b, act: act, m: in.rows, k: in.cols, n: w.rows, small: s.smallLinear(in.rows, w)}
	m, k, n := lin.m, lin.k, lin.n
	s.mix(opLinear, s.ref(d), s.ref(in), s.ref(w), s.ref(b), uint64(m), uint64(k), uint64(n), uint64(act))
	if lin.small {
		s.mix(opSmall)
	} else if p, ok := s.mmaLinear(m, k, w); ok {
		lin.mma, lin.plan = true, p
		s.mmaPart = max(s.mmaPart, p.partBytes(m, n))
		s.mmaSem = max(s.mmaSem, int64(p.tilesN*p.tilesM))
		s.mix(opMMA)
	} else if p, ok := s.wgLinear(m, k, w, act); ok {
		lin.wg, lin.clPlan = true, p
		s.mix(opWG, uint64(p.splits))
	} else if p, ok := s.clLinear(m, k, w); ok {
		lin.cl, lin.clPlan = true, p
		s.mix(opCl)
	}
	// plain: a product into this segment's own tensor, which neither x nor
	// the weight is, with no bias or activation, whose way of being written
	// the choices below (stacked terms, an fp16 output, a fused GeGLU) may
	// change.
	plain := b == nil && act == backend.Identity && d.s == s && d.seg == s.seg && !d.staged && d != in && d != w
	// KCatRows: FP16X2's two terms of x side by side in each row, by the
	// weight twice over (its fp16 copy twice a row), one GEMM over twice
	// the k into one float32 product: its readers read one product, where
	// two stacked ones double what the LayerNorms, GeGLU and attention
	// after it read, and a bias or activation runs in its epilogue. It
	// does the stacked batch's multiply-adds and reads the weight twice,
	// which costs where one question's GEMMs wait on their weight's
	// latency and not where a batch's are bound by their products.
	lin.kcat = s.prec == FP16X2 && s.be.opts.KCatRows > 0 && m >= s.be.opts.KCatRows && k%8 == 0 && !lin.small && !lin.mma &&
		!lin.cl && !lin.wg
	if lin.kcat && w.s == nil {
		var err error
		switch lin.wHalf, err = s.be.kcatOf(w); {
		case errors.Is(err, ErrOutOfMemory):
			// No room for the weight's doubled copy: the stacked batch,
			// which needs none.
			lin.kcat = false
		case err != nil:
			s.fail(fmt.Errorf("cuda: linear: %w", err))
			return
		}
	}
	if lin.kcat {
		s.mix(opKCat)
	}
	// FP16X2: one batched GEMM over both 16-bit terms of x reads the weight
	// once (the second product finds it in L2) where two GEMMs read it
	// twice; its two products stay apart (stacked) until what reads d adds
	// them. Only a plain product stacks: a bias or activation needs the sum
	// first. linear_small, linear_mma and linear_wg write the sum.
	if s.prec == FP16X2 && !lin.small && !lin.mma && !lin.wg && !lin.kcat && plain {
		lin.two = s.stack(d)
		s.mix(opShadow, uint64(lin.two))
	}
	// KBatchRows: a plain product of one fp16 term and few rows on cuBLAS
	// as one batch of two GEMMs over k's halves, stacked as FP16X2's
	// products are (its readers add the two).
	if s.prec == FP16 && !lin.small && !lin.mma && !lin.cl && !lin.wg && plain && m <= s.be.opts.KBatchRows && k%32 == 0 &&
		k >= s.be.opts.KBatchMinK {
		lin.two, lin.khalf = s.stack(d), true
		s.mix(opKBatch, uint64(lin.two))
	}
	name := "linear"
	if act != backend.Identity {
		name += "+" + act.String()
	}
	if lin.small {
		name += " (small)"
	}
	if prec := s.prec; prec != FP32 {
		var need int64
		xBytes := align(int64(m)*int64(k)*2*int64(terms(prec)), 256)
		switch {
		case lin.small:
			// linear_small reads x as float32: no 16-bit copy asked of its
			// producer (one already asked for by another GEMM reading x is
			// still written, and unused here). Nor does it write one of d:
			// no Linear sets d.lastWriter, so a GEMM reading d converts it.
		case in.s == s && in.seg == s.seg && in.lastWriter != nil && in.h16 >= 0 && in.kcat != lin.kcat:
			// The copy its producer writes has the other layout (x read by
			// GEMMs of which only some are KCatRows'): this GEMM converts
			// x's float32 contents itself.
			in.f32Read = true
			need = xBytes
		case in.s == s && in.seg == s.seg && in.lastWriter != nil:
			// The operation that wrote x also writes its 16-bit copy.
			if in.h16 < 0 {
				in.h16, in.kcat = s.arena, lin.kcat
				s.arena += xBytes
			}
			in.lastWriter.shadow = in
			lin.shadowIn = true
			// The GEMM reads the copy, not x's float32 contents.
			in.f32Read = read || in == w || in == b
			s.mix(opShadow)
		default:
			need = xBytes
		}
		if w.s == nil {
			// A kcat GEMM took its weight's copy above.
			if !lin.kcat {
				var err error
				if lin.wHalf, err = s.be.halfOf(w); err != nil {
					s.fail(fmt.Errorf("cuda: linear: %w", err))
					return
				}
			}
		} else {
			wBytes := int64(n) * int64(k) * 2
			if lin.kcat {
				wBytes *= 2
			}
			need += align(wBytes, 256)
		}
		s.temp = max(s.temp, need)
	}
	o := s.record(name, nil)
	o.lin = lin
	s.prefetch(lin)
	if s.prec == FP16 && !lin.small && lin.two == 0 && plain {
		d.halfLin = lin
	}
	if lin.mma && plain && n%2 == 0 {
		d.gluLin = lin
	}
	// The LayerNorm just before, which wrote x, may run in this GEMM
	// (Discard) if nothing else reads x (reads and writes forget lnReader).
	if p := in.lastWriter; lin.mma && !read && p != nil && p.ln != nil && len(s.ops) > 1 && s.ops[len(s.ops)-2] == p &&
		d != p.ln.x && d != in && in.halfReader == nil && in.gluReader == nil {
		in.lnReader = lin
	}
}

// stack has d, a GEMM's product, written as two stacked terms (an arena
// slot for the second the first time) and returns the elements between
// them (tensor.two).
func (s *stream) stack(d *tensor) int64 {
	if d.twoOff == 0 {
		d.twoOff = s.arena
		s.arena += align(d.bytes(), 256)
	}
	d.stacked = true
	return d.two()
}

// prefetchHost notes o, a LayerNorm or GeGLU, as a kernel that may ask L2
// for the weights of GEMMs recorded after it; without Options.PrefetchRows
// none is kept.
func (s *stream) prefetchHost(o *op) {
	if s.be.opts.PrefetchRows > 0 {
		s.pfHosts = append(s.pfHosts, o)
	}
}

// prefetch has one of the segment's LayerNorms and GeGLUs ask L2 for lin's
// weight (Options.PrefetchRows): a resident weight's 16-bit copy read by a
// cuBLAS GEMM of few enough rows, or by linear_small (the heads' Linears,
// which wait on their weights' loads as much). The kernel asks as it
// starts: the last one recorded before the GEMM, or with PrefetchDepth d
// the d-th last (the segment's first if it has fewer), for a longer lead;
// each asks for up to two weights, a full one leaving the GEMM to the next.
func (s *stream) prefetch(lin *linearOp) {
	hs := s.pfHosts
	if len(hs) == 0 || lin.m > s.be.opts.PrefetchRows || lin.wHalf == 0 || lin.mma || lin.cl || lin.wg {
		return
	}
	bytes := int64(lin.n) * int64(lin.k) * 2
	if lin.kcat {
		bytes *= 2 // kcatOf's copy, twice a row
	}
	for _, h := range hs[max(0, len(hs)-max(1, s.be.opts.PrefetchDepth)):] {
		for i := range h.pf {
			if h.pf[i].bytes == 0 {
				h.pf[i] = pfRange{lin.wHalf, bytes &^ 15}
				return
			}
		}
	}
}

// linearOp is a recorded Linear; a residual Add after it may fold into it
// (Discard).
type linearOp struct {
	d, in, w, b *tensor
	act         backend.Activation
	m, k, n     int
	wHalf       uintptr
	shadowIn    bool // in's 16-bit copy is written by its producer
	accumulate  bool // d += x·Wᵀ: cuBLAS's beta = 1
	glu         *op  // the GeGLU linear_mma computes in place of d (tensor.gluLin)
	halfOut     bool // d is written as fp16 (tensor.halfLin)
	// stat: linear_mma also writes the row statistics of each of its
	// column tiles at statOff in the arena, for a LayerNorm of d that a
	// later GEMM computes (ln of that GEMM).
	stat    bool
	statOff int64
	ln      *lnFuse // the LayerNorm of x this GEMM computes as it reads x
	two     int64   // FP16X2 stacked: the second term's product goes two elements after d's
	khalf   bool    // stacked, the products of k's two halves (Options.KBatchRows)
	small   bool    // runs on linear_small (smallLinear)
	mma     bool    // runs on linear_mma (mmaLinear), as plan says
	plan    lmmaPlan
	cl      bool // runs on linear_cl (clLinear), as clPlan says
	wg      bool // runs on linear_wg (wgLinear), as clPlan says
	clPlan  clPlan
	// kcat: FP16X2's two terms of x side by side, one GEMM over twice the k
	// (Options.KCatRows; issue runs it as one term over 2k).
	kcat bool
}

// writesLNInput reports whether the GEMM, computing a LayerNorm of x as it
// reads x (ln), would write d = x, which its blocks read to the end.
func (lin *linearOp) writesLNInput(d *tensor) bool { return lin.ln != nil && d == lin.ln.x }

// lnFuse is a LayerNorm (of x, weight w, bias b) run by the linear_mma
// GEMM that reads its output, from the statistics that src, the linear_mma
// GEMM that last added into x, writes (Discard).
type lnFuse struct {
	x, w, b *tensor
	eps     float32
	src     *linearOp
}

// smallRows is the most rows of x a Linear runs on linear_small
// (kernels.cu's LIN_ROWS), one launch for the product, bias, activation
// and a folded residual, instead of cuBLAS: at one question the heads run
// about a dozen Linears on a handful of marker and CLS rows, where the
// GEMM path's three or four kernels (x's 16-bit copy, the GEMM and often a
// split-K reduction, bias_act) cost microseconds each for a product that
// reads its weight once. Its warps keep smallRows·smallCols accumulators
// in registers, and its float32 multiply-adds grow with the rows where the
// tensor-core GEMM's hardly do: 16 covers the heads' rows at a question
// (its options' markers, its CLS row) and stays well inside both.
const smallRows = 16

// smallCols and smallWarps are linear_small's blocks (kernels.cu's LIN_R
// and LIN_WARPS): the output columns (weight rows) a block computes, and
// its warps, which split k.
const (
	smallCols  = 4
	smallWarps = 4
)

// smallLinear reports whether a Linear of m rows by weight w runs on
// linear_small: unless Options.NoSmallLinear, at most smallRows rows and a
// weight in the form the precision reads at hand without a conversion: any
// float32 weight in FP32, else a resident one, whose 16-bit copy the
// kernel reads (halfOf). A weight written on the stream would need its
// conversion first, which the GEMM path's scratch already provides.
func (s *stream) smallLinear(m int, w *tensor) bool {
	return !s.be.opts.NoSmallLinear && m <= smallRows && (s.prec == FP32 || w.s == nil)
}

func (lin *linearOp) issue(x *run) error {
	if lin.small {
		return lin.issueSmall(x)
	}
	c, bl := x.cs, x.b.blas
	d, in, w, b := lin.d, lin.in, lin.w, lin.b
	m, k, n := lin.m, lin.k, lin.n
	beta := x.b.beta
	if lin.accumulate {
		beta = x.b.alpha
	}
	prec := x.prec
	var err error
	fused := false // the GEMM applied the bias and activation
	if prec == FP32 {
		err = bl.call("cublasSgemm_v2", bl.sgemm, c.blas, cublasOpT, cublasOpN, uintptr(n), uintptr(m), uintptr(k),
			uintptr(unsafe.Pointer(x.b.alpha)), w.addr, uintptr(k), in.addr, uintptr(k), uintptr(unsafe.Pointer(beta)), d.addr, uintptr(n))
	} else {
		kind, typ := operandKind(prec), uintptr(cudaR16F)
		if prec == BF16 {
			typ = cudaR16BF
		}
		xh := x.temp
		mk := int64(m) * int64(k)
		lo := uint64(mk)
		if lin.kcat {
			kind, lo = kindKCat, uint64(k)
		}
		if lin.shadowIn {
			xh = x.e.arena + uintptr(in.h16)
		} else if err = x.l.launch(x.b.drv, x.b.k.to16, [3]int{x.b.grid(mk), 1, 1}, 256, 0, c.stream, u64(xh), u64(in.addr), uint64(mk), lo, kind); err != nil {
			return err
		}
		wh := lin.wHalf
		// linear_mma and linear_cl read d as float32 to add the residual:
		// an fp16 d with one folded in stays on cuBLAS.
		if own := !(lin.halfOut && lin.accumulate); own && lin.mma {
			return lin.issueMMA(x, xh, wh)
		} else if own && lin.cl {
			return lin.issueCl(x, xh, wh)
		} else if own && lin.wg {
			return lin.issueWg(x, xh, wh)
		}
		if lin.ln != nil {
			// Only linear_mma computes the LayerNorm, whose output was
			// never written.
			return errors.New("a LayerNorm fused into a GEMM off linear_mma")
		}
		if wh == 0 {
			wh = x.temp + uintptr(align(mk*2*int64(terms(prec)), 256))
			nk := int64(n) * int64(k)
			wkind, wlo := weightKind(prec), uint64(nk)
			if lin.kcat {
				wkind, wlo = kindKCatWeight, uint64(k)
			}
			if err = x.l.launch(x.b.drv, x.b.k.to16, [3]int{x.b.grid(nk), 1, 1}, 256, 0, c.stream, u64(wh), u64(w.addr), uint64(nk), wlo, wkind); err != nil {
				return err
			}
		}
		if lin.two != 0 {
			// Stacked: no bias or activation (see Linear). A batch of two:
			// FP16X2's two terms of x (mk apart) by the one weight, or
			// (khalf) k's two halves of both, half a row apart.
			kb, sa, sb := k, int64(0), mk
			if lin.khalf {
				kb, sa, sb = k/2, int64(k/2), int64(k/2)
			}
			if x.b.lt != nil {
				done, err := x.gemmLt(&ltGEMM{m: m, n: n, k: kb, ld: k, typ: uint32(typ), batch: 2, strideA: sa, strideB: sb,
					strideD: lin.two, epilogue: ltEpilogueDefault, accumulate: lin.accumulate, a: wh, b: xh, d: d.addr})
				if done || err != nil {
					return err
				}
			}
			return bl.call("cublasGemmStridedBatchedEx", bl.gemmBatched, c.blas, cublasOpT, cublasOpN, uintptr(n), uintptr(m), uintptr(kb),
				uintptr(unsafe.Pointer(x.b.alpha)), wh, typ, uintptr(k), uintptr(sa), xh, typ, uintptr(k), uintptr(sb), uintptr(unsafe.Pointer(beta)),
				d.addr, cudaR32F, uintptr(n), uintptr(lin.two), 2, cublasCompute32F, cublasGemmDefault)
		}
		// cuBLASLt applies the bias and ReLU in the GEMM's epilogue, on the
		// last term's product (after beta·D has added the first's); GELU
		// stays with bias_act.
		epi, fuses := ltEpilogue(b != nil, lin.act)
		acc := lin.accumulate
		dtyp := uint32(cudaR32F)
		if lin.halfOut {
			dtyp = cudaR16F
		}
		// kcat: FP16X2's two terms side by side a row (xh, 2k wide) by the
		// weight's copy twice a row (wh), one GEMM over twice the k.
		nterms, kk := terms(prec), k
		if lin.kcat {
			nterms, kk = 1, 2*k
		}
		for term := range nterms {
			if term == 1 {
				xh += uintptr(mk * 2)
				beta, acc = x.b.alpha, true
			}
			if x.b.lt != nil {
				g := ltGEMM{m: m, n: n, k: kk, typ: uint32(typ), dtyp: dtyp, batch: 1, epilogue: ltEpilogueDefault, accumulate: acc, a: wh, b: xh, d: d.addr}
				last := term == nterms-1
				if last && fuses {
					g.epilogue = epi
					if b != nil {
						g.bias = b.addr
					}
				}
				done, err := x.gemmLt(&g)
				if err != nil {
					return err
				}
				if done {
					fused = last && fuses
					continue
				}
			}
			err = bl.call("cublasGemmEx", bl.gemmEx, c.blas, cublasOpT, cublasOpN, uintptr(n), uintptr(m), uintptr(kk),
				uintptr(unsafe.Pointer(x.b.alpha)), wh, typ, uintptr(kk), xh, typ, uintptr(kk), uintptr(unsafe.Pointer(beta)),
				d.addr, uintptr(dtyp), uintptr(n), cublasCompute32F, cublasGemmDefault)
			if err != nil {
				return err
			}
		}
		if lin.kcat && x.tune {
			x.b.count(func(st *Stats) { st.GEMMKCat++ })
		}
	}
	if err != nil {
		return err
	}
	if fused || b == nil && lin.act == backend.Identity {
		return nil
	}
	var bp uintptr
	if b != nil {
		bp = b.addr
	}
	total := int64(m) * int64(n)
	return x.l.launch(x.b.drv, x.b.k.biasAct, [3]int{x.b.grid(total), 1, 1}, 256, 0, c.stream, u64(d.addr), u64(bp), uint64(total), i32(n), uint64(lin.act))
}

// issueSmall launches linear_small: a block of smallWarps warps per
// smallCols output columns.
func (lin *linearOp) issueSmall(x *run) error {
	wp, kind := lin.w.addr, uint64(0)
	if prec := x.prec; prec != FP32 {
		wp, kind = lin.wHalf, weightKind(prec)
	}
	var bp uintptr
	if lin.b != nil {
		bp = lin.b.addr
	}
	grid := (lin.n + smallCols - 1) / smallCols
	return x.l.launch(x.b.drv, x.b.k.linearSmall, [3]int{grid, 1, 1}, 32*smallWarps, 0, x.cs.stream, u64(lin.d.addr), u64(lin.in.addr),
		u64(wp), kind, u64(bp), i32(lin.m), i32(lin.k), i32(lin.n), uint64(lin.act), boolArg(lin.accumulate))
}

// terms is how many 16-bit terms an activation operand is split into.
func terms(p Precision) int {
	if p == FP16X2 {
		return 2
	}
	return 1
}

// operandKind is how kernels.cu's to16 and store16 write a GEMM's 16-bit
// activation operand in precision p: 1 fp16, 2 bf16, 3 fp16 in two terms;
// 0 in FP32, which has no 16-bit operands.
func operandKind(p Precision) uint64 {
	switch p {
	case FP16:
		return 1
	case BF16:
		return 2
	case FP16X2:
		return 3
	}
	return 0
}

// kindKCat and kindKCatWeight are kernels.cu's store16 kinds for
// KCatRows' operands: FP16X2's two terms of x side by side a row, and the
// weight's fp16 copy twice a row.
const (
	kindKCat       = 5
	kindKCatWeight = 6
)

// weightKind is operandKind for a GEMM's weight, which is one term: fp16 in
// FP16X2, the type its GEMMs read.
func weightKind(p Precision) uint64 {
	if p == FP16X2 {
		return 1
	}
	return operandKind(p)
}

// shadowArgs are, for a producer kernel of o, the 16-bit copy's address,
// its kind (operandKind; 0: no copy) and the second term's offset in
// elements.
func (x *run) shadowArgs(o *op) (uint64, uint64, uint64) {
	if o.shadow == nil {
		return 0, 0, 0
	}
	t := o.shadow
	if t.kcat {
		return u64(x.e.arena) + uint64(t.h16), kindKCat, uint64(t.cols)
	}
	return u64(x.e.arena) + uint64(t.h16), operandKind(x.prec), uint64(t.rows) * uint64(t.cols)
}

// dstArg is the float32 output address a producer kernel of o is given:
// null where o stores only its 16-bit copy (op.noF32).
func dstArg(o *op, d *tensor) uint64 {
	if o.noF32 {
		return 0
	}
	return u64(d.addr)
}

func (s *stream) Add(dst, a, b backend.Tensor) {
	ts, ok := s.beginTaking("add", 1, 6, dst, a, b)
	if !ok || !s.check(backend.CheckAdd(dst, a, b)) {
		return
	}
	d, x, y := ts[0], ts[1], ts[2]
	x2, y2 := x.two(), y.two()
	s.reads(x, y)
	s.writes(d)
	n := int64(d.rows) * int64(d.cols)
	s.mix(opAdd, s.ref(d), s.ref(x), s.ref(y), uint64(n), uint64(x2), uint64(y2))
	o := s.record("add", func(o *op, r *run) error {
		return r.l.launch(r.b.drv, r.b.k.add, [3]int{r.b.grid(n), 1, 1}, 256, 0, r.cs.stream, u64(d.addr), u64(x.addr), uint64(x2), u64(y.addr), uint64(y2), uint64(n))
	})
	if x2 == 0 && y2 == 0 {
		o.add = [3]*tensor{d, x, y}
	}
	// x = x + p (or p + x): a LayerNorm of x next may do the sum itself.
	switch {
	case d == x && d != y && x2 == 0:
		o.res = residualAdd{x: d, p: y, two: y2}
		o.residual = &o.res
	case d == y && d != x && y2 == 0:
		o.res = residualAdd{x: d, p: x, two: x2}
		o.residual = &o.res
	}
}

// residualAdd is an Add of p (two: see tensor.two) into x in place.
type residualAdd struct {
	x, p *tensor
	two  int64
}

func (s *stream) Activate(dst, x backend.Tensor, act backend.Activation) {
	ts, ok := s.beginTaking("activate", 1, 0, dst, x)
	if !ok || !s.check(backend.CheckActivate(dst, x, act)) {
		return
	}
	d, in := ts[0], ts[1]
	s.reads(in)
	s.writes(d)
	n := int64(d.rows) * int64(d.cols)
	s.mix(opActivate, s.ref(d), s.ref(in), uint64(n), uint64(act))
	s.record("activate", func(o *op, r *run) error {
		return r.l.launch(r.b.drv, r.b.k.actMap, [3]int{r.b.grid(n), 1, 1}, 256, 0, r.cs.stream, u64(d.addr), u64(in.addr), uint64(n), uint64(act))
	})
}

func (s *stream) Softmax(dst, x backend.Tensor) {
	ts, ok := s.beginTaking("softmax", 1, 0, dst, x)
	if !ok || !s.check(backend.CheckSoftmax(dst, x)) {
		return
	}
	d, in := ts[0], ts[1]
	s.reads(in)
	s.writes(d)
	s.mix(opSoftmax, s.ref(d), s.ref(in), uint64(in.rows), uint64(in.cols))
	block := 128
	if in.cols > 2048 {
		block = 512
	}
	s.record("softmax", func(o *op, r *run) error {
		return r.l.launch(r.b.drv, r.b.k.softmax, [3]int{in.rows, 1, 1}, block, 0, r.cs.stream, u64(d.addr), u64(in.addr), i32(in.cols))
	})
}

func (s *stream) GeGLU(dst, x backend.Tensor) {
	ts, ok := s.beginTaking("geglu", 1, 2, dst, x)
	if !ok || !s.check(backend.CheckGeGLU(dst, x)) {
		return
	}
	d, in := ts[0], ts[1]
	two := in.two()
	// The GEMM that wrote in may write it as fp16 for this GeGLU alone:
	// nothing read it since, and (Discard) nothing will; or, on
	// linear_mma, compute this GeGLU itself.
	half := in.halfUnread() && two == 0
	// Fused, the GeGLU runs where its GEMM does: only right after it, with
	// nothing (an fp16 reader either) having read in, and not writing the
	// GEMM's own input (whose 16-bit copy the GEMM is still reading).
	glu := false
	if l := in.gluLin; l != nil && in.gluReader == nil && in.halfReader == nil && !in.f32Read && d != l.in && !l.writesLNInput(d) {
		glu = len(s.ops) > 0 && s.ops[len(s.ops)-1].lin == l
	}
	s.reads(in)
	s.writes(d)
	n := int64(d.rows) * int64(d.cols)
	s.mix(opGeGLU, s.ref(d), s.ref(in), uint64(d.rows), uint64(d.cols), uint64(two))
	vec := !s.be.opts.ScalarGeGLU && d.cols%4 == 0 && two%4 == 0 && n/4 < 1<<31
	name := "geglu"
	if vec {
		name = "geglu4" // the profiler's name: which kernel ran
	}
	o := s.record(name, func(o *op, r *run) error {
		if o.fused {
			return nil // its GEMM computed it
		}
		h, kind, lo := r.shadowArgs(o)
		fn, grid := r.b.k.geglu, r.b.grid(n)
		if vec && lo%4 == 0 && in.addr%16 == 0 && d.addr%16 == 0 {
			fn, grid = r.b.k.geglu4, r.b.grid(n/4)
		}
		pf := o.pfArgs()
		return r.l.launch(r.b.drv, fn, [3]int{grid, 1, 1}, 256, 0, r.cs.stream, dstArg(o, d), u64(in.addr), uint64(two), uint64(d.rows), i32(d.cols), h, kind, lo,
			boolArg(r.prec != FP32), boolArg(o.halfIn), pf[0], pf[1], pf[2], pf[3])
	})
	d.lastWriter = o
	o.glu = d
	s.prefetchHost(o)
	if half {
		in.f32Read, in.halfReader = false, o
	}
	if glu {
		in.f32Read, in.gluReader = false, o
	}
}

// positions returns each row's position in its batch row, for a layout
// checked by CheckRope or CheckAttention, and each row's batch-row start
// and length (the length is the row count of an unpadded layout without
// Lengths).
func positions(rows int, l backend.Layout) (pos, start, length []int32) {
	pos, start, length = make([]int32, rows), make([]int32, rows), make([]int32, rows)
	if l.Packed {
		r := 0
		for _, n := range l.Lengths {
			for i := 0; i < n; i++ {
				pos[r+i], start[r+i], length[r+i] = int32(i), int32(r), int32(n)
			}
			r += n
		}
		return
	}
	for r := range rows {
		b := r / l.SeqLen
		n := l.SeqLen
		if b < len(l.Lengths) {
			n = l.Lengths[b]
		}
		pos[r], start[r], length[r] = int32(r%l.SeqLen), int32(b*l.SeqLen), int32(n)
	}
	return
}

// Rope does not record the rotation at once: the attention that reads the
// tensor next rotates q and k as it loads them (the tiled kernels), which
// saves a kernel and a pass over q and k per layer. Any other use of the
// tensor, or a second attention, records the rope kernel first (pending).
func (s *stream) Rope(qkv backend.Tensor, p backend.RopeParams) {
	ts, ok := s.beginTaking("rope", 0, 1, qkv)
	if !ok || !s.check(backend.CheckRope(qkv, p)) {
		return
	}
	t := ts[0]
	table, err := s.be.ropeTable(p.Theta, p.HeadDim, p.SeqLen)
	if err != nil {
		s.fail(fmt.Errorf("cuda: rope: %w", err))
		return
	}
	// Written when recorded (pending), and so still stacked if it is.
	halfOK := t.halfUnread()
	s.reads(t)
	s.mix(opRope, s.ref(t), uint64(table), uint64(t.rows), uint64(p.Heads), uint64(p.HeadDim))
	t.rope = &pendingRope{table: table, heads: p.Heads, dh: p.HeadDim, layout: p.Layout, halfOK: halfOK}
}

// pendingRope is a Rope on a tensor not recorded yet.
type pendingRope struct {
	table     uintptr
	heads, dh int
	layout    backend.Layout
	// halfOK: the tensor's GEMM could still write it as fp16 (tensor.halfLin)
	// when the Rope was recorded; an attention that folds the rotation
	// reads it first.
	halfOK bool
}

// folds reports whether an attention with p can apply r itself: the tiled
// kernels rotate by each row's index in its batch row, which is r's
// position when both see the same rows.
func (r *pendingRope) folds(tiled *[5]uintptr, p backend.AttentionParams) bool {
	return tiled != nil && r.heads == p.Heads && r.dh == p.HeadDim && r.layout.Packed == p.Packed && r.layout.SeqLen == p.SeqLen &&
		(!p.Packed || slices.Equal(r.layout.Lengths, p.Lengths))
}

// pending records t's pending rope.
func (s *stream) pending(t *tensor) {
	r := t.rope
	t.rope = nil
	if t.stacked {
		s.sumTerms(t)
	}
	s.writes(t)
	off := s.stageLayout(layoutPositions, t.rows, r.layout, 0)
	// Its parameters again: the Rope that set them may have been recorded
	// in an earlier segment, whose key had them.
	heads, dh, table := r.heads, r.dh, r.table
	s.mix(opRope, s.ref(t), uint64(table), uint64(t.rows), uint64(heads), uint64(dh))
	s.record("rope", func(o *op, x *run) error {
		return x.l.launch(x.b.drv, x.b.k.rope, [3]int{t.rows, 1, 1}, 256, 0, x.cs.stream, u64(t.addr), u64(table), u64(x.e.devIn)+uint64(off), i32(heads), i32(dh))
	})
}

// Per-row metadata staged once per segment and shared by every layer's
// operations that ask for the same layout.
const (
	layoutPositions = iota // positions: each row's position in its batch row
	layoutTiles            // the tiled attention kernels' query tiles
	layoutMeta             // the attention kernel's start, length, position per row
)

type stagedLayout struct {
	what, rows int
	qt         int // layoutTiles: queries a tile
	layout     backend.Layout
	off        int64
}

func (s *stream) stageLayout(what, rows int, l backend.Layout, qt int) int64 {
	for _, c := range s.layouts {
		if c.what == what && c.qt == qt && c.rows == rows && c.layout.Packed == l.Packed && c.layout.SeqLen == l.SeqLen &&
			slices.Equal(c.layout.Lengths, l.Lengths) {
			return c.off
		}
	}
	var v []int32
	switch what {
	case layoutPositions:
		v, _, _ = positions(rows, l)
	case layoutTiles:
		// Tiles of up to qt queries, none across batch rows.
		at := 0
		for _, n := range l.Lengths {
			span := l.SeqLen // the batch row's tensor rows
			if l.Packed {
				span = n
			}
			for q := 0; q < span; q += qt {
				v = append(v, int32(at+q), int32(at), int32(n), int32(q), int32(min(qt, span-q)))
			}
			at += span
		}
		// Empty tiles (no queries) up to the grid.
		v = append(v, make([]int32, 5*(tileGrid(l, rows, qt)-len(v)/5))...)
	case layoutMeta:
		pos, start, length := positions(rows, l)
		v = make([]int32, 3*rows)
		for r := range pos {
			v[3*r], v[3*r+1], v[3*r+2] = start[r], length[r], pos[r]
		}
	}
	off := s.stageI32(v)
	l.Lengths = slices.Clone(l.Lengths)
	s.layouts = append(s.layouts, stagedLayout{what, rows, qt, l, off})
	return off
}

const (
	attentionBlock = 128
	tileWarps      = 8 // QW of kernels.cu's attention{DH}_{QPW}
	wideWarps      = 16
)

// regKernel is attn_reg's entry in a head dim's tiled attention kernels
// (kernels.attentionTiled): sixteen warps sharing a tile of 16 queries.
const regKernel = 4

// attnKernel is the queries a warp and the warps of entry i of a head
// dim's tiled attention kernels (kernels.attentionTiled).
func attnKernel(i int) (qpw, warps int) {
	if i >= 3 {
		return 1, wideWarps
	}
	return 1 << i, tileWarps
}

// tiledShared is the dynamic shared memory of entry i of a head dim's
// tiled attention kernels.
func tiledShared(dh, i int) int {
	if i == regKernel {
		return attnRegShared(dh)
	}
	qpw, warps := attnKernel(i)
	return attnShared(dh, qpw, warps)
}

// attnRegShared is attn_reg's dynamic shared memory for head dim dh: a
// chunk's keys (rows padded by 4 floats) and values, the tile's queries
// (padded alike), its scores (rows of the chunk padded by 4) and a float a
// query for the rescale and the sum.
func attnRegShared(dh int) int {
	kc := 128
	if dh > 64 {
		kc = 64
	}
	const qt = 16
	return 4 * (kc*(dh+4) + kc*dh + qt*(dh+4) + qt*(kc+4) + 2*qt)
}

// attnShared is the dynamic shared memory of the tiled attention kernel
// for head dim dh, qpw queries a warp and warps warps (attn_tiled's K, V,
// Q and P).
func attnShared(dh, qpw, warps int) int {
	kc := 64
	if dh > 64 {
		kc = 32
	}
	if qpw == 1 {
		kc *= 2
	}
	qt := warps * qpw
	return 4 * (kc*(dh+4) + kc*dh + qt*dh + qt*kc)
}

// tileGrid is the blocks (query tiles of qt queries) the tiled attention
// kernels launch over rows laid out as l. For a packed batch it is a bound
// that depends on the token count and the number of batch rows, not on the
// rows' lengths, so that one graph serves every request of a token bucket;
// the tiles past the real ones are empty, and their blocks return at once.
// Right-padded, it is the tiles.
func tileGrid(l backend.Layout, rows, qt int) int {
	if !l.Packed {
		return tilesOf(l, qt)
	}
	return min(rows, (rows+qt-1)/qt+len(l.Lengths))
}

// tilesOf counts the query tiles of qt queries of a layout.
func tilesOf(l backend.Layout, qt int) int {
	nt := 0
	for _, n := range l.Lengths {
		rows := l.SeqLen
		if l.Packed {
			rows = n
		}
		nt += (rows + qt - 1) / qt
	}
	return nt
}

// attentionTerms is the fp16 terms of the stream's tensor-core attention
// (Options.AttentionTerms, else the precision's). An FP16X2 backend's
// reduced streams (FP16, refinement) take two, as needExtras counts them:
// refinement runs again only the rows whose answers are near-ties, so the
// other rows' probabilities are the reduced run's and must hold FP16X2's
// gate themselves. With the attention in one term they did not on every
// golden (tiny-ml's calibrated probabilities 0.0053 from upstream's on an
// H100 and an H200), with two they did (within 0.0025 on the H200); the
// second term costs that pass 6 and 11 % of the GPU time at ten and fifty
// English questions (H200), and nothing at one, which runs the float32
// attention.
func (s *stream) attentionTerms() int {
	return cmp.Or(s.be.opts.AttentionTerms, max(terms(s.prec), terms(s.be.opts.Precision)))
}

// attentionKernel picks the tiled attention kernel for p over rows rows:
// its function, the queries of its tiles, its warps a block and its dynamic
// shared memory.
func (s *stream) attentionKernel(tiled *[5]uintptr, p backend.AttentionParams, rows int) (fn, half uintptr, qt, warps, shm int) {
	o := s.be.opts
	// FP16 and FP16X2 on tensor cores, at one or two fp16 terms, where a
	// block of four warps a tile still gives every multiprocessor a block:
	// on fewer blocks the float32 kernels, whose blocks start computing
	// sooner, finish first (one question). MMAWarps and AttentionSplit ask
	// for the tensor cores whatever the grid (without a key-split kernel for
	// the terms, AttentionSplit gets the four-warp one).
	if mma := s.be.k.attentionMMA[p.HeadDim]; mma != nil && !o.SIMTAttention && (s.prec == FP16 || s.prec == FP16X2) &&
		(o.MMAWarps != 0 || o.AttentionSplit || tileGrid(p.Layout, rows, 16*defaultMMAWarps)*p.Heads >= s.be.sms) {
		terms := s.attentionTerms()
		if sp := s.be.k.attentionSplit[p.HeadDim]; o.AttentionSplit && sp != nil && sp[terms-1] != 0 {
			if terms == 1 {
				half = sp[2]
			}
			return sp[terms-1], half, 16, splitWarps, attnSplitShared(p.HeadDim, terms)
		}
		// Rows of at most rowsKeys tokens: a block a (row, head) loads the
		// row once (attn_rows), where a tile of 64 queries would load
		// each of its keys again (MMAWarps then only says the tiled
		// kernels' warps for rows that do not fit).
		if rw := o.RowWarps; rw > 0 && rowsFit(p.Layout) {
			if fs := s.be.k.attentionRows[p.HeadDim]; fs != nil {
				row := fs[slices.Index(rowsWarps[:], rw)]
				if fn := row[terms-1]; fn != 0 {
					if terms == 1 {
						half = row[2]
					}
					return fn, half, rowsKeys, rw, attnRowsShared(p.HeadDim, terms)
				}
			}
		}
		// A kernel whose shared memory this GPU does not have, or of the
		// extras where they are not loaded, is 0 (setKernelAttributes):
		// fewer warps, else the float32 kernels.
		for i := slices.Index(mmaWarps[:], cmp.Or(o.MMAWarps, defaultMMAWarps)); i >= 0; i-- {
			if fn := mma[i][terms-1]; fn != 0 {
				w := mmaWarps[i]
				if terms == 1 {
					half = mma[i][2]
				}
				return fn, half, 16 * w, w, attnMMAShared(p.HeadDim, w, terms, s.be.mmaKC())
			}
		}
	}
	// More queries a warp share each key and value read from shared
	// memory, which bounds the kernel, but make fewer blocks: as many as
	// still give every multiprocessor two.
	qpw := o.QueriesPerWarp
	for _, q := range []int{4, 2, 1} {
		if qpw == 0 && (q == 1 || tileGrid(p.Layout, rows, tileWarps*q)*p.Heads >= 2*s.be.sms) {
			qpw = q
		}
	}
	// One query a warp: sixteen warps a block share each key and value load
	// between twice the queries (AttentionWarps).
	warps, k := tileWarps, bits.TrailingZeros(uint(qpw))
	if qpw == 1 && o.AttentionWarps != tileWarps {
		if !o.NoRegAttention && tiled[regKernel] != 0 {
			return tiled[regKernel], 0, 16, wideWarps, attnRegShared(p.HeadDim)
		}
		warps, k = wideWarps, 3
	}
	return tiled[k], 0, warps * qpw, warps, attnShared(p.HeadDim, qpw, warps)
}

// attnMMAShared is the dynamic shared memory of the tensor-core attention
// kernel for head dim dh, w warps a block and terms fp16 terms (attn_mma's
// K, V and Q: kc keys a chunk, 16·w queries, rows padded by 8 halves).
func attnMMAShared(dh, w, terms, kc int) int {
	return 2 * terms * (2*kc + 16*w) * (dh + 8)
}

// rowsKeys is the longest batch row the whole-row tensor-core attention
// takes (kernels.cu's ATTN_ROWS_KEYS): its tiles are a row each.
const rowsKeys = 128

// rowsWarps are the warps a block of the whole-row kernels
// (kernels.attentionRows, all in the extras) may have.
var rowsWarps = [3]int{4, 6, 8}

// rowsFit reports whether every batch row of l is at most rowsKeys tensor
// rows, so that each is one tile of the whole-row kernels.
func rowsFit(l backend.Layout) bool {
	if !l.Packed {
		return l.SeqLen <= rowsKeys
	}
	return len(l.Lengths) > 0 && slices.Max(l.Lengths) <= rowsKeys
}

// attnRowsShared is the whole-row kernels' dynamic shared memory for head
// dim dh and terms fp16 terms: a row's keys, values and queries, rows
// padded by 8 halves.
func attnRowsShared(dh, terms int) int {
	return 2 * terms * 3 * rowsKeys * (dh + 8)
}

// tunable is the value the kernels were compiled with for one of
// KernelTunables: Options.Defines', else its default.
func (b *Backend) tunable(name string) int {
	if v, ok := b.opts.Defines[name]; ok {
		return v
	}
	t, _ := kernelTunable(name)
	return t.Def
}

// mmaKC is the keys a chunk of the tensor-core attention kernels as
// compiled (the ATTN_MMA_KC16 tunable).
func (b *Backend) mmaKC() int { return 16 * b.tunable("ATTN_MMA_KC16") }

// splitWarps are the warps of the key-split tensor-core attention kernels
// (kernels.attentionSplit), which share one tile of 16 queries.
const splitWarps = 4

// attnSplitShared is their dynamic shared memory: a 16-query tile's chunks,
// or, if more, the warps' softmax states and outputs they combine at the end.
func attnSplitShared(dh, terms int) int {
	return max(2*terms*(2*64+16)*(dh+8), 4*16*splitWarps*(dh+2))
}

// mmaWarps are the warps a block of the tensor-core attention kernels
// (kernels.attentionMMA) has, sixteen queries each.
var mmaWarps = [4]int{1, 2, 4, 8}

const defaultMMAWarps = 4

func (s *stream) Attention(dst, qkv backend.Tensor, p backend.AttentionParams) {
	tiled := s.be.k.attentionTiled[p.HeadDim]
	// A rope pending on qkv folds into the tiled kernel; begin would
	// record it otherwise.
	var rope *pendingRope
	if t, ok := qkv.(*tensor); ok && t != nil && t.rope != nil && t.s == s && t.rope.folds(tiled, p) {
		rope, t.rope = t.rope, nil
	}
	var takes uint
	if tiled != nil {
		takes = 2
	}
	ts, ok := s.beginTaking("attention", 1, takes, dst, qkv)
	if !ok || !s.check(backend.CheckAttention(dst, qkv, p)) {
		return
	}
	d, in := ts[0], ts[1]
	two := in.two()
	// Nothing read qkv since its GEMM: a folded rope's own read aside, and
	// no attention before this one folded the same rope (it stays owed).
	unread := two == 0 && (rope == nil && in.halfUnread() || rope != nil && rope.halfOK && in.halfReader == nil)
	window := p.SeqLen
	if p.Sliding {
		window = min(window, 2*p.Radius+1)
	}
	if p.Packed {
		// A capacity (scores in shared memory): rounded, so that a
		// bucket's requests, whose longest rows differ, share a graph.
		window = (window + 15) &^ 15
	}
	shared := (window + p.HeadDim + attentionBlock) * 4
	if tiled == nil && shared > attentionSharedLimit {
		s.fail(fmt.Errorf("cuda: attention: %w: rows of %d keys with head dim %d need %d bytes of shared memory, the kernel has %d",
			backend.ErrShape, window, p.HeadDim, shared, attentionSharedLimit))
		return
	}
	s.reads(in)
	s.writes(d)
	heads, dh, scale, sliding, radius := p.Heads, p.HeadDim, p.Scale, p.Sliding, p.Radius
	name := "attention"
	if sliding {
		name = "attention (sliding)"
	}
	s.mix(opAttention, s.ref(d), s.ref(in), uint64(in.rows), uint64(p.Heads), uint64(p.HeadDim), f32(p.Scale), boolArg(p.Sliding), uint64(p.Radius))
	var o *op
	if tiled != nil {
		fn, halfFn, qt, warps, shm := s.attentionKernel(tiled, p, in.rows)
		half := unread && halfFn != 0
		off := s.stageLayout(layoutTiles, in.rows, p.Layout, qt)
		nt := tileGrid(p.Layout, in.rows, qt)
		var table uintptr
		if rope != nil {
			table = rope.table
			s.mix(opFuse, uint64(table))
			// The rotation is still owed to whatever reads qkv next.
			in.rope = rope
		}
		s.mix(uint64(nt), uint64(qt), uint64(warps), uint64(fn), uint64(two))
		o = s.record(name, func(o *op, r *run) error {
			h, kind, lo := r.shadowArgs(o)
			f := fn
			if o.halfIn {
				f = halfFn
			}
			return r.l.launch(r.b.drv, f, [3]int{nt, heads, 1}, 32*warps, shm, r.cs.stream, dstArg(o, d), u64(in.addr), uint64(two),
				u64(r.e.devIn)+uint64(off), i32(heads), f32(scale), boolArg(sliding), i32(radius), u64(table), h, kind, lo)
		})
		if half {
			in.f32Read, in.halfReader = false, o
		}
	} else {
		off := s.stageLayout(layoutMeta, in.rows, p.Layout, 0)
		s.mix(uint64(window))
		o = s.record(name, func(o *op, r *run) error {
			h, kind, lo := r.shadowArgs(o)
			return r.l.launch(r.b.drv, r.b.k.attention, [3]int{in.rows, heads, 1}, attentionBlock, shared, r.cs.stream, dstArg(o, d), u64(in.addr),
				u64(r.e.devIn)+uint64(off), i32(heads), i32(dh), f32(scale), boolArg(sliding), i32(radius), i32(window), h, kind, lo)
		})
	}
	d.lastWriter = o
}

func (s *stream) ActFeatures(dst, cls, logits backend.Tensor, counts []int) {
	ts, ok := s.beginTaking("actFeatures", 1, 0, dst, cls, logits)
	if !ok || !s.check(backend.CheckActFeatures(dst, cls, logits, counts)) {
		return
	}
	d, c, z := ts[0], ts[1], ts[2]
	s.reads(c, z)
	s.writes(d)
	off := s.stageI32(logitsMeta(counts))
	rows, dim := c.rows, c.cols
	s.mix(opActFeatures, s.ref(d), s.ref(c), s.ref(z), uint64(rows), uint64(dim))
	s.record("actFeatures", func(o *op, r *run) error {
		return r.l.launch(r.b.drv, r.b.k.actFeatures, [3]int{rows, 1, 1}, 128, 0, r.cs.stream, u64(d.addr), u64(c.addr), u64(z.addr),
			u64(r.e.devIn)+uint64(off), i32(dim))
	})
}

// logitsMeta is act_features' meta: for each question of counts[b]
// logits, stored one question after another, its first logit's offset and
// its count.
func logitsMeta(counts []int) []int32 {
	meta := make([]int32, 2*len(counts))
	at := 0
	for b, k := range counts {
		meta[2*b], meta[2*b+1] = int32(at), int32(k)
		at += k
	}
	return meta
}

// PacksRows reports that the stream takes packed batches.
func (s *stream) PacksRows() bool { return true }

// TokenBucket is Options.Bucket: the graph of a packed batch depends on its
// token count and rows (tileGrid), so a model that fills its batches up to
// a multiple of it replays one graph for the whole bucket.
func (s *stream) TokenBucket() int { return s.be.opts.Bucket }

func (s *stream) Err() error { return s.err }

// Read copies t into dst, flushing what was recorded first unless t was
// brought back by an earlier flush and nothing wrote it since. A tensor
// discarded after a producer that then stored only its 16-bit copy has no
// float32 contents to read: that is an error, not whatever its memory held.
func (s *stream) Read(ctx context.Context, t backend.Tensor, dst []float32) error {
	// A closed stream's ops went back to the pool with its slabs: begin
	// refuses it before a tensor's lastWriter is looked at.
	if x, ok := t.(*tensor); ok && x != nil && x.s == s && !s.closed && s.err == nil && x.lnFused {
		s.fail(fmt.Errorf("cuda: read of discarded tensor [%d, %d]: its one reader, a GEMM, normalised its input itself", x.rows, x.cols))
		return s.err
	}
	if x, ok := t.(*tensor); ok && x != nil && x.s == s && !s.closed && s.err == nil && x.lastWriter != nil && x.lastWriter.noF32 {
		s.fail(fmt.Errorf("cuda: read of discarded tensor [%d, %d]: its producer stored only the 16-bit copy a GEMM read", x.rows, x.cols))
		return s.err
	}
	if x, ok := t.(*tensor); ok && x != nil && x.s == s && !s.closed && s.err == nil && x.f16 {
		s.fail(fmt.Errorf("cuda: read of discarded tensor [%d, %d]: its GEMM wrote it in fp16 for its one reader", x.rows, x.cols))
		return s.err
	}
	if x, ok := t.(*tensor); ok && x != nil && x.s == s && !s.closed && s.err == nil && x.fused {
		s.fail(fmt.Errorf("cuda: read of discarded tensor [%d, %d]: its GEMM computed its one reader, a GeGLU, instead", x.rows, x.cols))
		return s.err
	}
	ts, ok := s.begin("read", t)
	if !ok {
		return s.err
	}
	if !s.check(backend.CheckRead(t, len(dst))) {
		return s.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	x := ts[0]
	snap := x.snap
	if snap == nil {
		var err error
		if snap, err = s.flush(ctx, x); err != nil {
			return err
		}
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(dst)*4), snap)
	return nil
}

// readback is the tensors a flush brings back: target, then up to
// maxSnapshots − 1 small tensors the segment wrote and did not discard,
// the latest first (by their first write in the segment, s.wrote's order):
// a model's outputs come last (the scorer's logits, then the act head's),
// and a short batch's early small tensors would otherwise take their
// places, costing the next Read a flush of its own.
func (s *stream) readback(target *tensor) []*tensor {
	out := []*tensor{target}
	for _, t := range slices.Backward(s.wrote) {
		if t != target && int64(t.rows)*int64(t.cols) <= snapshotElements && len(out) < maxSnapshots && !t.f16 && !t.fused && !t.lnFused &&
			(t.lastWriter == nil || !t.lastWriter.noF32) {
			out = append(out, t)
		}
	}
	return out
}

const (
	snapshotElements = 4096
	maxSnapshots     = 16
)

// flush runs the recorded segment and waits for it; it returns target's
// data in pinned memory. Weights (shared by every stream) keep no snapshot.
// With no target (Submit) it starts the segment and returns at once: the
// next flush's wait, or Close, waits for both.
func (s *stream) flush(ctx context.Context, target *tensor) ([]byte, error) {
	if err := s.finishWait(); err != nil {
		return nil, err
	}
	b := s.be
	if s.seg == 0 {
		// Streams are counted once they run: a reduced stream the model
		// closed unused (its gate shut) is not one.
		prec := s.prec
		b.count(func(st *Stats) {
			switch {
			case prec == b.opts.Precision:
				st.Streams++
			case prec == FP32:
				st.WideStreams++
			default:
				st.ReducedStreams++
			}
		})
	}
	var back []*tensor
	if target != nil {
		back = s.readback(target)
	}
	s.reads(back...)
	offs := make([]int64, len(back))
	var out int64
	for i, t := range back {
		offs[i] = out
		out += align(int64(t.rows)*int64(t.cols), 64)
		s.mix(opRead, s.ref(t), uint64(t.rows), uint64(t.cols))
	}
	tableOff := s.stageBytes(make([]byte, 24*len(back)))
	for _, t := range s.made {
		if t.zeroed() {
			s.mix(uint64(t.id))
		}
	}
	arena := s.arena
	// The activations, then the GEMMs' 16-bit operand scratch, linear_mma's
	// split sums and counters, and cuBLAS's workspace last (execute).
	tempOff := align(arena, 256)
	partOff := tempOff + align(s.temp, 256)
	semOff := partOff + align(s.mmaPart, 256)
	semBytes := 4 * s.mmaSem
	key := shapeKey{prec: s.prec, hash: maphash.Bytes(s.be.seed, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s.words))), 8*len(s.words))), arena: semOff + align(semBytes, 256) + gemmWorkspace, stage: int64(len(s.stage)), out: out * 4,
		tensors: len(s.made), operations: len(s.ops)}
	e := b.takeEntry(key)
	var err error
	var ready bool // the GPU finished while this thread polled
	terr := b.onThread(func() {
		if s.cs == nil {
			if s.cs, err = b.newCStream(); err != nil {
				return
			}
		}
		if e == nil {
			if e, err = b.newEntry(key); err != nil {
				return
			}
		}
		for _, t := range s.made {
			if t.staged {
				t.addr = e.devIn + uintptr(t.off)
			} else {
				t.addr = e.arena + uintptr(t.off)
			}
		}
		table := s.stage[tableOff:]
		for i, t := range back {
			binary.LittleEndian.PutUint64(table[24*i:], uint64(t.addr))
			binary.LittleEndian.PutUint64(table[24*i+8:], uint64(t.rows)*uint64(t.cols))
			binary.LittleEndian.PutUint64(table[24*i+16:], uint64(offs[i]))
		}
		copy(e.pinIn, s.stage)
		x := &run{b: b, cs: s.cs, e: e, temp: e.arena + uintptr(tempOff), prec: s.prec,
			mmaPart: e.arena + uintptr(partOff), mmaSem: e.arena + uintptr(semOff), mmaSemBytes: semBytes}
		x.l.pdl = b.pdl
		err = b.execute(s, x, tableOff, len(back))
		switch {
		case err != nil:
			// Close synchronises the CUDA stream (s.err): what this and
			// any started segment issued is done before their entries
			// serve another request.
		case target == nil:
			s.started++
		default:
			s.started = 0
			ready, err = b.poll(ctx, s.cs)
		}
	})
	if err == nil {
		err = terr
	}
	if e != nil {
		s.entries = append(s.entries, e)
	}
	s.nextSegment()
	if err != nil {
		if !strings.HasPrefix(err.Error(), "cuda: ") {
			// Driver and cuBLAS errors; the backend's own (an allocation
			// the GPU refused) carry the prefix already.
			err = fmt.Errorf("cuda: %w", err)
		}
		s.fail(err)
		return nil, s.err
	}
	if target == nil {
		b.count(func(st *Stats) { st.Submitted++ })
		return nil, nil
	}
	if !ready {
		if err = s.waitLong(ctx); err != nil {
			return nil, err
		}
	}
	snap := e.pinOut[:target.bytes()]
	for i, t := range back {
		if t.s == s {
			t.snap = e.pinOut[offs[i]*4 : (offs[i]+int64(t.rows)*int64(t.cols))*4]
		}
	}
	return snap, nil
}

// nextSegment starts recording the segment after the one flushed.
func (s *stream) nextSegment() {
	s.seg++
	s.ops, s.made, s.wrote, s.stage, s.layouts = s.ops[:0], nil, s.wrote[:0], s.stage[:0], s.layouts[:0]
	s.arena, s.temp, s.mmaPart, s.mmaSem = 0, 0, 0, 0
	s.pfHosts = s.pfHosts[:0]
	s.words = s.words[:0]
}

// waitLong waits for the flush poll gave up on (a long request, or ctx
// ended) on the stream's waiter thread; if ctx ends first, the next flush
// or Close waits for it (finishWait).
func (s *stream) waitLong(ctx context.Context) error {
	b := s.be
	var err error
	done := make(chan error, 1)
	cs := s.cs
	go func() {
		var err error
		cs.waiter.Do(func() {
			if err = b.drv.Call("cuEventSynchronize", cs.event); err == nil {
				b.countDeviceTime(cs)
			}
		})
		done <- err
	}()
	s.wait = done
	select {
	case err = <-done:
		s.wait = nil
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil {
		s.fail(fmt.Errorf("cuda: a kernel failed: %w", err))
		return s.err
	}
	return nil
}

// finishWait waits for a flush whose Read stopped waiting (its context
// ended): the entry is not reused before the GPU is done with it.
func (s *stream) finishWait() error {
	if s.wait == nil {
		return nil
	}
	err := <-s.wait
	s.wait = nil
	if err != nil {
		s.fail(fmt.Errorf("cuda: a kernel failed: %w", err))
		return s.err // the wrapped one: a lost device says so
	}
	return nil
}

// Submit is backend.Submitter: at the model's hint, once the segment has
// submitAt operations (Options.SubmitOps, then four times that, and so on
// for Options.SubmitSplits segments, then no more), it starts the segment
// on the GPU without waiting for it and goes on recording the next, so
// that the host's recording of the later layers overlaps the GPU's running
// of the first, where it otherwise came before it whole (a tenth of one
// English question's time on an H200).
//
// The tensors the model discarded are made anew in the next segment (the
// encoder's scratch tensors, reused by every layer): the fusions that
// depend on a tensor being the segment's own (a producer storing only its
// 16-bit copy, FP16X2's stacked products, a residual Add folded into its
// GEMM) keep working across the split. The tensors still live (the residual
// stream) stay where they are: later segments read and write them by
// address, which their keys include, so a shape's segments are cached and
// captured as a chain (a segment's entry is found again whenever the one
// before it is). One fusion is lost at each split, in FP16X2 only: a
// layer's last residual Add, which its GEMM cannot take there, runs as a
// kernel of its own rather than in the next layer's first LayerNorm (two
// kernels of a few microseconds a request, against the recording hidden).
//
// Each split makes the next segment its own scratch tensors: a request of
// fifty English questions holds about 1.9 GB of activations where a
// forward recorded whole holds 0.9 (one question 61 MB against 25). A
// segment already past submitArenaMax is not split.
func (s *stream) Submit() {
	if s.err != nil || s.closed || s.submitAt < 0 || len(s.ops) < s.submitAt || s.arena > submitArenaMax {
		return
	}
	made := s.made
	if _, err := s.flush(context.Background(), nil); err != nil {
		return
	}
	if s.splits++; s.splits >= cmp.Or(s.be.opts.SubmitSplits, DefaultSubmitSplits) {
		s.submitAt = -1
	} else {
		s.submitAt *= 4
	}
	for _, t := range made {
		if t.dead && !t.staged {
			s.remake(t)
		}
	}
}

// zeroed reports whether t is zeroed when its segment runs: New's promise
// for a tensor read before written, or never written, unless the model
// discarded it (its contents unspecified: a scratch tensor Submit made anew
// for layers that, after the last split, never come).
func (t *tensor) zeroed() bool { return !t.staged && !t.dead && (t.zero || !t.written) }

// maxSpans is the segments a stream runs between two waits that are timed
// apart: each Submit start (MaxSubmitSplits of them) and the Read's.
const maxSpans = MaxSubmitSplits + 1

// submitArenaMax is the largest segment (its activations, in bytes) that
// Submit splits: beyond it (a hundred English questions and more) the
// host's recording is a few percent of the GPU's time, and another copy of
// the scratch tensors a gigabyte or more.
const submitArenaMax = 1 << 30

// remake moves a discarded tensor of a started segment into the one being
// recorded, as New would make it.
func (s *stream) remake(t *tensor) {
	t.seg, t.id, t.off, t.addr = s.seg, len(s.made), s.arena, 0
	t.written, t.zero, t.f32Read, t.snap, t.rope = false, false, false, nil, nil
	t.h16, t.lastWriter, t.stacked, t.twoOff = -1, nil, false, 0
	t.halfLin, t.halfReader, t.f16 = nil, nil, false
	t.gluLin, t.gluReader, t.fused = nil, nil, false
	t.statLin, t.statSeg, t.lnReader, t.lnFused = nil, 0, nil, false
	s.arena += align(t.bytes(), 256)
	s.made = append(s.made, t)
	s.mix(opNew, uint64(t.rows), uint64(t.cols))
}

// Close waits for the stream's work and gives its entries and CUDA stream
// back for the next request.
func (s *stream) Close() {
	if s.closed {
		return
	}
	s.finishWait()
	if cs := s.cs; cs != nil && (s.started > 0 || s.err != nil) {
		// Segments Submit started and no Read waited for, or a flush that
		// failed after issuing part of its work: the entries and staged
		// inputs are not reused (nor freed) before the GPU is done with
		// them. The stream, not its event: a failed flush may have issued
		// work after the event it last recorded.
		s.be.onThread(func() { s.be.drv.Call("cuStreamSynchronize", cs.stream) })
		s.started = 0
	}
	s.closed = true
	b := s.be
	for _, t := range s.made {
		t.snap = nil
	}
	b.giveBack(s.entries, s.cs)
	s.entries, s.cs = nil, nil
	if s.bufs != nil {
		// The last (largest) slabs go to the next stream, cleared: their
		// ops held closures and tensors of this one.
		clear(s.opSlab)
		clear(s.linSlab)
		clear(s.ops[:cap(s.ops)])
		s.bufs.words, s.bufs.stage = s.words[:0], s.stage[:0]
		s.bufs.opSlab, s.bufs.linSlab, s.bufs.ops = s.opSlab[:0], s.linSlab[:0], s.ops[:0]
		s.words, s.stage, s.opSlab, s.linSlab, s.ops = nil, nil, nil, nil, nil
		b.bufs.Put(s.bufs)
	}
}

// recordBufs are a closed stream's key words, staging buffer and the slabs
// its operations were recorded in, kept for the next stream: grown afresh
// for each request they cost more than the rest of the recording.
type recordBufs struct {
	words   []uint64
	stage   []byte
	opSlab  []op
	linSlab []linearOp
	ops     []*op
}

// Discard folds a residual Add into the Linear before it: Linear(p, …)
// then Add(x, x, p) then Discard(p) become one GEMM accumulating into x
// (cuBLAS's beta = 1), as the Metal backend folds it. Memory is not
// reclaimed: a segment's is its entry's, reused as a whole.
//
// In the 16-bit precisions it also drops a producer's float32 store: when
// x was last written by a LayerNorm, attention or GeGLU whose 16-bit copy
// GEMMs read, and nothing read x's float32 contents since (tensor.f32Read),
// the producer writes the copy alone (GeGLU's output alone is [rows, 2624]
// floats a layer on ModernBERT-large).
func (s *stream) Discard(x backend.Tensor) {
	t, ok := x.(*tensor)
	if !ok || t == nil || t.s != s || s.err != nil || s.closed {
		return
	}
	t.dead = true
	if t.seg != s.seg {
		return
	}
	if o := t.lastWriter; o != nil && o.shadow == t && !o.noF32 && !t.f32Read {
		o.noF32 = true
		s.mix(opNoF32, s.ref(t))
	}
	if l, g := t.gluLin, t.gluReader; l != nil && g != nil && !t.f32Read && l.d == t && !l.accumulate && !g.fused && !l.writesLNInput(g.glu) {
		// The GeGLU goes into its GEMM's epilogue: t is never written.
		l.glu, g.fused, t.fused = g, true, true
		g.name += " (in its GEMM)"
		t.halfLin, t.halfReader, t.gluLin, t.gluReader = nil, nil, nil, nil
		s.mix(opGLU, s.ref(t))
	}
	// Not where the GEMM writes x (a residual folded in, its GeGLU's output):
	// its tiles' last blocks would write x while other blocks still read it.
	if c, o := t.lnReader, t.lastWriter; c != nil && o != nil && o.ln != nil && !o.fused && !t.f32Read && !s.be.opts.MMANoLN &&
		c.d != o.ln.x && (c.glu == nil || c.glu.glu != o.ln.x) {
		// The GEMM reading t normalises x itself from its producer's
		// statistics: the LayerNorm launches nothing and t is never
		// written.
		src := o.ln.src
		if !src.stat {
			src.stat, src.statOff = true, s.arena
			s.arena += align(int64(src.plan.tilesN)*int64(src.m)*8, 256)
		}
		c.ln, o.fused, t.lnFused = o.ln, true, true
		o.name += " (in its GEMM)"
		t.lnReader = nil
		s.mix(opLN, s.ref(t))
	}
	if l, g := t.halfLin, t.halfReader; l != nil && g != nil && !t.f32Read && l.d == t && !l.accumulate {
		l.halfOut, g.halfIn, t.f16 = true, true, true
		t.halfLin, t.halfReader = nil, nil
		s.mix(opHalf, s.ref(t))
	}
	n := len(s.ops)
	if n < 2 {
		return
	}
	l, a := s.ops[n-2].lin, s.ops[n-1].add
	// linear_small adds a bias before the residual; a cuBLAS GEMM's
	// epilogue would add it after beta·D, so there a bias keeps its Add.
	if l == nil || a[0] == nil || l.d != t || l.b != nil && !l.small || l.act != backend.Identity || l.accumulate || l.two != 0 {
		return
	}
	var into *tensor
	switch {
	case a[2] == t && a[0] == a[1]:
		into = a[1]
	case a[1] == t && a[0] == a[2]:
		into = a[2]
	default:
		return
	}
	if into == t || into == l.in || into == l.w || l.writesLNInput(into) {
		return
	}
	l.d, l.accumulate = into, true
	s.ops = s.ops[:n-1]
	s.mix(opFuse)
	if l.mma && l.glu == nil && !l.halfOut && into.s == s {
		// A LayerNorm of into may come next (LayerNorm, Discard).
		into.statLin, into.statSeg = l, s.seg
	}
}

// entry is the memory (and, once captured, the CUDA graph) of one segment
// shape: activations, the staged inputs (device and pinned host), and the
// read-back area (device and pinned host).
type entry struct {
	key         shapeKey
	arena       uintptr
	devIn       uintptr
	pinIn       []byte
	devOut      uintptr
	pinOut      []byte
	graph, exec uintptr
	seen        bool // ran once kernel by kernel: the next run captures
	noGraph     bool // capture failed: always kernel by kernel
	// semZeroed: linear_mma's split counters were zeroed (once: the last
	// block resets its counter).
	semZeroed bool
}

func (b *Backend) takeEntry(key shapeKey) *entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.cache[key]
	if len(list) == 0 {
		return nil
	}
	e := list[len(list)-1]
	b.cache[key] = list[:len(list)-1]
	if i := slices.Index(b.idle, e); i >= 0 {
		b.idle = slices.Delete(b.idle, i, i+1)
	}
	return e
}

// newEntry allocates an entry's memory, on a thread with the context
// current (a flushing request's).
func (b *Backend) newEntry(key shapeKey) (*entry, error) {
	e := &entry{key: key}
	var err error
	if e.arena, err = b.alloc(key.arena, "activations"); err != nil {
		return nil, err
	}
	if e.devIn, err = b.alloc(key.stage, "inputs"); err != nil {
		e.destroy(b)
		return nil, err
	}
	if e.devOut, err = b.alloc(key.out, "outputs"); err != nil {
		e.destroy(b)
		return nil, err
	}
	if e.pinIn, err = b.pinned(key.stage, "inputs"); err != nil {
		e.destroy(b)
		return nil, err
	}
	if e.pinOut, err = b.pinned(key.out, "outputs"); err != nil {
		e.destroy(b)
		return nil, err
	}
	b.mu.Lock()
	b.entries++
	b.mu.Unlock()
	return e, nil
}

// bytes is the device memory an entry holds.
func (e *entry) bytes() int64 {
	return max(e.key.arena, 256) + max(e.key.stage, 256) + max(e.key.out, 256)
}

// destroy frees an entry, on a thread with the context current (the
// worker's, or one whose allocation needed the memory, evictFor).
func (e *entry) destroy(b *Backend) {
	if e.exec != 0 {
		b.drv.Call("cuGraphExecDestroy", e.exec)
	}
	if e.graph != 0 {
		b.drv.Call("cuGraphDestroy", e.graph)
	}
	for _, p := range []uintptr{e.arena, e.devIn, e.devOut} {
		if p != 0 {
			b.drv.Call("cuMemFree_v2", p)
		}
	}
	for _, p := range [][]byte{e.pinIn, e.pinOut} {
		if len(p) > 0 {
			b.drv.Call("cuMemFreeHost", uintptr(unsafe.Pointer(&p[0])))
		}
	}
}

// cacheLocked makes entries idle (cached for their shapes) and returns the
// idle entries to free, least recently returned first, while more than
// Options.MaxGraphs are alive. Entries in use are never chosen.
func (b *Backend) cacheLocked(entries []*entry) (drop []*entry) {
	// A stream's later segments first: their keys hold the addresses of
	// the earlier ones (Submit), so an earlier entry freed before them
	// would leave them unreachable, while a later one freed leaves the
	// earlier ones of use.
	for _, e := range slices.Backward(entries) {
		b.cache[e.key] = append(b.cache[e.key], e)
		b.idle = append(b.idle, e)
	}
	for b.entries > b.opts.MaxGraphs && len(b.idle) > 0 {
		v := b.idle[0]
		b.idle = b.idle[1:]
		b.uncacheLocked(v)
		b.entries--
		drop = append(drop, v)
	}
	return drop
}

// uncacheLocked takes an entry out of its shape's list (b.mu held).
func (b *Backend) uncacheLocked(e *entry) {
	list := b.cache[e.key]
	if i := slices.Index(list, e); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(b.cache, e.key)
	} else {
		b.cache[e.key] = list
	}
}

// giveBack returns a closed stream's entries to the cache (freeing the
// oldest idle ones over Options.MaxGraphs) and its CUDA stream to the pool.
func (b *Backend) giveBack(entries []*entry, cs *cstream) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	drop := b.cacheLocked(entries)
	if cs != nil {
		b.free = append(b.free, cs)
	}
	b.mu.Unlock()
	if len(drop) > 0 {
		b.w.Do(func() {
			for _, e := range drop {
				e.destroy(b)
			}
		})
	}
}

// execute runs a bound segment on its CUDA stream: replaying its graph,
// capturing it (the second time the shape is seen), or kernel by kernel;
// on the worker thread.
func (b *Backend) execute(s *stream, x *run, tableOff int64, nBack int) error {
	e, cs := x.e, x.cs
	// The entry's own cuBLAS workspace: a captured GEMM keeps the address
	// it was given, and the graph may replay on another CUDA stream (and
	// handle) than the one that captured it, while that one runs other
	// work.
	ws := e.arena + uintptr(e.key.arena-gemmWorkspace)
	if err := b.blas.call("cublasSetWorkspace_v2", b.blas.setWorkspace, cs.blas, ws, gemmWorkspace); err != nil {
		return err
	}
	// A wide stream's float32 GEMMs may come to a handle a 16-bit
	// segment used last, and the other way round.
	if err := cs.setMath(b, x.prec); err != nil {
		return err
	}
	// cuBLASLt takes the workspace with each call: the same one, in stream
	// order with cuBLAS's use of it.
	x.ws = ws
	var prof *opTimer
	if b.profiling.Load() {
		// Each operation between its own events, kernel by kernel.
		prof = &opTimer{}
		defer prof.release(b)
	}
	// A shape is captured only once its entry has run kernel by kernel
	// (e.seen, set in the default case below only, not by a profiled
	// run), with the same operations and shapes (they make its key), so
	// its GEMMs are tuned (cuBLASLt, x.tune: that run only) before any
	// capture reads their algorithms. A GEMM found untuned while capturing
	// or profiling takes the heuristic's first choice.
	issue := func() error {
		if len(s.stage) > 0 {
			if err := b.drv.Call("cuMemcpyHtoDAsync_v2", e.devIn, uintptr(unsafe.Pointer(&e.pinIn[0])), uintptr(len(s.stage)), cs.stream); err != nil {
				return err
			}
		}
		for _, t := range s.made {
			if t.zeroed() {
				if err := b.drv.Call("cuMemsetD8Async", t.addr, 0, uintptr(t.bytes()), cs.stream); err != nil {
					return err
				}
			}
		}
		for _, o := range s.ops {
			if prof != nil {
				if err := prof.before(b, cs.stream); err != nil {
					return err
				}
			}
			if err := o.issueOp(x); err != nil {
				return err
			}
			if prof != nil {
				if err := prof.after(b, cs.stream, o.name); err != nil {
					return err
				}
			}
		}
		if nBack == 0 {
			return nil // started early (Submit): nothing read back
		}
		if err := x.l.launch(b.drv, b.k.packOut, [3]int{nBack, 1, 1}, 256, 0, cs.stream, u64(e.devOut), u64(e.devIn)+uint64(tableOff)); err != nil {
			return err
		}
		return b.drv.Call("cuMemcpyDtoHAsync_v2", uintptr(unsafe.Pointer(&e.pinOut[0])), e.devOut, uintptr(e.key.out), cs.stream)
	}
	// Each segment since the last wait between a pair of events of its
	// own: the GPU time counted is their sum, not the span from the first
	// to the last, which would count the GPU waiting for the host.
	span := min(s.started, maxSpans-1)
	cs.spans = span + 1
	if err := b.drv.Call("cuEventRecord", cs.ev[span][0], cs.stream); err != nil {
		return err
	}
	if !e.semZeroed && x.mmaSemBytes > 0 {
		// Outside any capture: before the first run, which is never one.
		if err := b.drv.Call("cuMemsetD8Async", x.mmaSem, 0, uintptr(x.mmaSemBytes), cs.stream); err != nil {
			return err
		}
		e.semZeroed = true
	}
	var err error
	switch {
	case prof != nil:
		err = issue()
		if err == nil {
			err = b.drv.Call("cuStreamSynchronize", cs.stream)
		}
		if err == nil {
			prof.collect(b)
		}
	case e.exec != 0:
		err = b.drv.Call("cuGraphLaunch", e.exec, cs.stream)
		b.count(func(st *Stats) { st.Replays++ })
	case e.seen && !e.noGraph && !b.graphsOff:
		x.l.pdl = x.l.pdl && !b.pdlUncaptured.Load()
		err = b.capture(e, cs, issue)
		if err != nil && x.l.pdl {
			// A driver that cannot capture programmatic launches (some
			// refuse them in graphs) still gets the graph, without them,
			// and the next shapes capture without them at once.
			x.l.pdl = false
			if err = b.capture(e, cs, issue); err == nil {
				b.pdlUncaptured.Store(true)
				b.count(func(st *Stats) { st.PDLRefused++ })
			}
		}
		if err != nil {
			// A segment that cannot be captured still runs.
			e.noGraph = true
			err = issue()
			b.count(func(st *Stats) { st.Eager++ })
		} else {
			err = b.drv.Call("cuGraphLaunch", e.exec, cs.stream)
			b.count(func(st *Stats) { st.Captures++ })
		}
	default:
		e.seen, x.tune = true, true
		err = issue()
		b.count(func(st *Stats) { st.Eager++ })
	}
	if err != nil {
		return err
	}
	if err := b.drv.Call("cuEventRecord", cs.ev[span][1], cs.stream); err != nil {
		return err
	}
	return b.drv.Call("cuEventRecord", cs.event, cs.stream)
}

func (b *Backend) count(f func(*Stats)) {
	b.mu.Lock()
	f(&b.stats)
	b.mu.Unlock()
}

// onThread runs f on the calling goroutine's own OS thread with the
// backend's context current, then makes the thread's previous context
// current again. A request launches and waits where it runs: handing its
// launch to the worker's thread and its wait to the stream's waiter cost
// two to four thread wake-ups a request. A context may be current on many
// threads, and what a flush calls is the driver's and cuBLAS's thread-safe
// API on the request's own CUDA stream and cuBLAS handle; graph capture is
// thread-local.
func (b *Backend) onThread(f func()) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev uintptr
	if err := b.drv.Call("cuCtxGetCurrent", uintptr(unsafe.Pointer(&prev))); err != nil {
		return err
	}
	if prev != b.ctx {
		if err := b.drv.Call("cuCtxSetCurrent", b.ctx); err != nil {
			return err
		}
		defer b.drv.Call("cuCtxSetCurrent", prev)
	}
	f()
	return nil
}

// pollFor is how long a flush polls its event on its own thread before it
// leaves the wait to the stream's waiter thread: longer than a request of a
// few questions takes, short enough that a long one does not hold the
// thread (its hand-off then costs nothing next to it).
const pollFor = 5 * time.Millisecond

// poll waits for cs's last flush by polling its event from the calling
// thread (the context current). It reports whether the flush completed
// (its GPU time then counted); false, with no error, when ctx ended or
// pollFor passed first.
func (b *Backend) poll(ctx context.Context, cs *cstream) (bool, error) {
	deadline := time.Now().Add(pollFor)
	for i := 0; ; i++ {
		// The raw result: building an error for every not-ready answer
		// cost more than the query.
		switch r := b.drv.Result("cuEventQuery", cs.event); r {
		case 0:
			b.countDeviceTime(cs)
			return true, nil
		case cudaErrorNotReady:
		default:
			return false, fmt.Errorf("a kernel failed: %w", &cudadrv.Error{Call: "cuEventQuery", Code: r, Text: b.drv.ErrorText(r)})
		}
		if i%32 == 31 && (ctx.Err() != nil || time.Now().After(deadline)) {
			return false, nil
		}
		// A query allocates (purego's call), so a tight loop's garbage
		// set the collector off every few hundred milliseconds, whose
		// assists then slow the next request's recording; the clock
		// allocates nothing.
		for next := time.Now().Add(pollGap); time.Now().Before(next); {
		}
	}
}

// pollGap is the time between two queries of a polled event: a microsecond
// more of latency at most, several times fewer queries (and allocations).
const pollGap = time.Microsecond

// countDeviceTime adds the GPU time of cs's last flush, done, and of the
// segments started before it, to the backend's clock (backend.Timer).
func (b *Backend) countDeviceTime(cs *cstream) {
	for _, ev := range cs.ev[:cs.spans] {
		var ms float32
		if b.drv.Call("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), ev[0], ev[1]) == nil {
			b.deviceNs.Add(int64(float64(ms) * 1e6))
		}
	}
}

// cudaErrorNotReady is CUDA_ERROR_NOT_READY: an event not reached yet.
const cudaErrorNotReady = 600

// capture records issue's work on cs as e's graph and instantiates it.
func (b *Backend) capture(e *entry, cs *cstream, issue func() error) error {
	// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: a forbidden call made on this
	// thread during capture fails rather than breaking another's capture.
	if err := b.drv.Call("cuStreamBeginCapture_v2", cs.stream, 1); err != nil {
		return err
	}
	ierr := issue()
	var g uintptr
	err := b.drv.Call("cuStreamEndCapture", cs.stream, uintptr(unsafe.Pointer(&g)))
	if ierr != nil || err != nil {
		if g != 0 {
			b.drv.Call("cuGraphDestroy", g)
		}
		if ierr != nil {
			return ierr
		}
		return err
	}
	var exec uintptr
	if err := b.drv.Call("cuGraphInstantiateWithFlags", uintptr(unsafe.Pointer(&exec)), g, 0); err != nil {
		b.drv.Call("cuGraphDestroy", g)
		return err
	}
	e.graph, e.exec = g, exec
	return nil
}

// cstream is a CUDA stream with what runs on it: a cuBLAS handle (whose
// workspace each flush sets to its entry's) and a cuBLASLt one, an event
// marking the last flush, and a thread to wait on it.
type cstream struct {
	stream, event, blas uintptr
	lt                  uintptr
	// ev are the timing events around each segment since the last wait,
	// spans of them used.
	ev     [maxSpans][2]uintptr
	spans  int
	waiter *cudadrv.Worker
	// math is the blas handle's math mode (mathMode): the pool serves the
	// segments of every precision a backend runs.
	math uintptr
}

// mathMode is the cuBLAS math mode of a precision's GEMMs: float32's are
// the parity path (pedantic: no TF32), the 16-bit ones take cuBLAS's
// default.
func mathMode(p Precision) uintptr {
	if p == FP32 {
		return cublasPedantic
	}
	return cublasDefaultMath
}

// setMath puts cs's blas handle in the math mode of prec's GEMMs, with the
// backend's context current. The mode is read when a GEMM is issued (and
// kept by a capture), so it is set before a segment's first.
func (cs *cstream) setMath(b *Backend, prec Precision) error {
	mode := mathMode(prec)
	if cs.math == mode {
		return nil
	}
	if err := b.blas.call("cublasSetMathMode", b.blas.setMathMode, cs.blas, mode); err != nil {
		return err
	}
	cs.math = mode
	return nil
}

// gemmWorkspace is the cuBLAS workspace each entry carries at the end of
// its activation memory.
const gemmWorkspace = 8 << 20

// newCStream takes a pooled CUDA stream or makes one; on the worker thread.
func (b *Backend) newCStream() (*cstream, error) {
	b.mu.Lock()
	if n := len(b.free); n > 0 {
		cs := b.free[n-1]
		b.free = b.free[:n-1]
		b.mu.Unlock()
		return cs, nil
	}
	b.mu.Unlock()
	cs := &cstream{}
	// What was made before a failure is given back (destroy skips what
	// was not).
	fail := func(err error) (*cstream, error) {
		cs.destroy(b)
		return nil, err
	}
	// CU_STREAM_NON_BLOCKING: no implicit order with the legacy stream.
	if err := b.drv.Call("cuStreamCreate", uintptr(unsafe.Pointer(&cs.stream)), 1); err != nil {
		return fail(err)
	}
	// CU_EVENT_DISABLE_TIMING.
	if err := b.drv.Call("cuEventCreate", uintptr(unsafe.Pointer(&cs.event)), 2); err != nil {
		return fail(err)
	}
	for i := range cs.ev {
		for j := range cs.ev[i] {
			if err := b.drv.Call("cuEventCreate", uintptr(unsafe.Pointer(&cs.ev[i][j])), 0); err != nil {
				return fail(err)
			}
		}
	}
	var err error
	bl := b.blas
	if err := bl.call("cublasCreate_v2", bl.create, uintptr(unsafe.Pointer(&cs.blas))); err != nil {
		return fail(err)
	}
	if err := bl.call("cublasSetStream_v2", bl.setStream, cs.blas, cs.stream); err != nil {
		return fail(err)
	}
	cs.math = ^uintptr(0)
	if err := cs.setMath(b, b.opts.Precision); err != nil {
		return fail(err)
	}
	if lt := b.lt; lt != nil {
		if err := lt.lib.call("cublasLtCreate", lt.lib.create, uintptr(unsafe.Pointer(&cs.lt))); err != nil {
			return fail(err)
		}
	}
	cs.waiter = cudadrv.NewWorker()
	cs.waiter.Do(func() { err = b.drv.Call("cuCtxSetCurrent", b.ctx) })
	if err != nil {
		return fail(err)
	}
	b.mu.Lock()
	b.streams = append(b.streams, cs)
	b.mu.Unlock()
	return cs, nil
}

// destroy releases a CUDA stream; on the worker thread.
func (cs *cstream) destroy(b *Backend) {
	if cs.blas != 0 {
		b.blas.call("cublasDestroy_v2", b.blas.destroy, cs.blas)
	}
	if cs.lt != 0 {
		b.lt.lib.call("cublasLtDestroy", b.lt.lib.destroy, cs.lt)
	}
	events := []uintptr{cs.event}
	for _, ev := range cs.ev {
		events = append(events, ev[0], ev[1])
	}
	for _, e := range events {
		if e != 0 {
			b.drv.Call("cuEventDestroy_v2", e)
		}
	}
	if cs.stream != 0 {
		b.drv.Call("cuStreamDestroy_v2", cs.stream)
	}
}
