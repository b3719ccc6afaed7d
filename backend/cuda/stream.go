//go:build linux

package cuda

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
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
	err    error
	closed bool

	h     maphash.Hash
	hb    [8]byte
	seg   int
	ops   []*op
	made  []*tensor // tensors of the current segment
	wrote []*tensor // tensors the current segment writes
	arena int64
	temp  int64 // largest 16-bit operand scratch of the segment's GEMMs
	stage []byte

	entries []*entry // flushed segments, held until Close
	cs      *cstream
	wait    chan error // the last flush's completion, until received
}

// run is what a recorded operation needs to issue its kernels.
type run struct {
	l    launcher
	b    *Backend
	cs   *cstream
	e    *entry
	temp uintptr
}

// shapeKey identifies a segment's work: its operations, shapes and
// parameters, the addresses of the tensors it reads from outside itself,
// and the sizes of its memory areas.
type shapeKey struct {
	hash                uint64
	arena, stage, out   int64
	tensors, operations int
}

func (s *stream) mix(vs ...uint64) {
	for _, v := range vs {
		binary.LittleEndian.PutUint64(s.hb[:], v)
		s.h.Write(s.hb[:])
	}
}

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
		s.err = err
	}
}

// begin checks that the operation may be recorded and its tensors are this
// stream's or this backend's; it returns them as *tensor (nil stays nil).
func (s *stream) begin(op string, ts ...backend.Tensor) ([]*tensor, bool) {
	if s.err != nil {
		return nil, false
	}
	if s.closed {
		s.fail(fmt.Errorf("cuda: %s: %w: the stream is closed", op, backend.ErrForeignTensor))
		return nil, false
	}
	out := make([]*tensor, len(ts))
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
	return out, true
}

func (s *stream) check(err error) bool {
	if err != nil {
		s.fail(fmt.Errorf("cuda: %w", err))
		return false
	}
	return true
}

// reads marks ts as read: a tensor of the segment read before anything
// wrote it is zeroed when the segment runs (New's promise).
func (s *stream) reads(ts ...*tensor) {
	for _, t := range ts {
		if t != nil && t.s == s && t.seg == s.seg && !t.written {
			t.zero = true
		}
	}
}

// writes marks t as written by the segment: its snapshot is stale.
func (s *stream) writes(t *tensor) {
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

func (s *stream) record(name string, f func(x *run) error) *op {
	o := &op{name: name, issue: f}
	s.ops = append(s.ops, o)
	return o
}

// op is a recorded operation: its name (for Profiler), what issues it, and
// what the peephole fusions need to know of it.
type op struct {
	name   string
	issue  func(x *run) error
	lin    *linearOp  // a Linear
	add    [3]*tensor // an Add: dst, a, b
	shadow *tensor    // a producer (LayerNorm, Attention, GeGLU) also writes this 16-bit copy of its output
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
	ts, ok := s.begin("gather", dst, table)
	if !ok || !s.check(backend.CheckGather(dst, table, index)) {
		return
	}
	d, tb := ts[0], ts[1]
	s.reads(tb)
	s.writes(d)
	off := s.stageI32(index)
	n := len(index)
	s.mix(opGather, s.ref(d), s.ref(tb), uint64(n))
	s.record("gather", func(x *run) error {
		return x.l.launch(x.b.drv, x.b.k.gather, [3]int{n, 1, 1}, 128, 0, x.cs.stream, u64(d.addr), u64(tb.addr), u64(x.e.devIn)+uint64(off), i32(tb.cols))
	})
}

func (s *stream) LayerNorm(dst, x, weight, bias backend.Tensor, eps float32) {
	ts, ok := s.begin("layerNorm", dst, x, weight, bias)
	if !ok || !s.check(backend.CheckLayerNorm(dst, x, weight, bias, eps)) {
		return
	}
	d, in, w, b := ts[0], ts[1], ts[2], ts[3]
	s.reads(in, w, b)
	s.writes(d)
	s.mix(opLayerNorm, s.ref(d), s.ref(in), s.ref(w), s.ref(b), uint64(in.rows), uint64(in.cols), f32(eps))
	var o *op
	o = s.record("layerNorm", func(x *run) error {
		var bp uintptr
		if b != nil {
			bp = b.addr
		}
		h, kind, lo := x.shadowArgs(o)
		return x.l.launch(x.b.drv, x.b.k.layerNorm, [3]int{in.rows, 1, 1}, 256, 0, x.cs.stream, u64(d.addr), u64(in.addr), u64(w.addr), u64(bp), i32(in.cols), f32(eps), h, kind, lo)
	})
	d.lastWriter = o
}

func (s *stream) Linear(dst, x, weight, bias backend.Tensor, act backend.Activation) {
	ts, ok := s.begin("linear", dst, x, weight, bias)
	if !ok || !s.check(backend.CheckLinear(dst, x, weight, bias, act)) {
		return
	}
	d, in, w, b := ts[0], ts[1], ts[2], ts[3]
	s.reads(in, w, b)
	s.writes(d)
	lin := &linearOp{d: d, in: in, w: w, b: b, act: act, m: in.rows, k: in.cols, n: w.rows}
	m, k, n := lin.m, lin.k, lin.n
	s.mix(opLinear, s.ref(d), s.ref(in), s.ref(w), s.ref(b), uint64(m), uint64(k), uint64(n), uint64(act))
	name := "linear"
	if act != backend.Identity {
		name += "+" + act.String()
	}
	if prec := s.be.opts.Precision; prec != FP32 {
		var need int64
		xBytes := align(int64(m)*int64(k)*2*int64(terms(prec)), 256)
		if in.s == s && in.seg == s.seg && in.lastWriter != nil {
			// The operation that wrote x also writes its 16-bit copy.
			if in.h16 < 0 {
				in.h16 = s.arena
				s.arena += xBytes
			}
			in.lastWriter.shadow = in
			lin.shadowIn = true
			s.mix(opShadow)
		} else {
			need = xBytes
		}
		if w.s == nil {
			var err error
			if lin.wHalf, err = s.be.halfOf(w); err != nil {
				s.fail(fmt.Errorf("cuda: linear: %w", err))
				return
			}
		} else {
			need += align(int64(n)*int64(k)*2, 256)
		}
		s.temp = max(s.temp, need)
	}
	o := s.record(name, lin.issue)
	o.lin = lin
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
}

func (lin *linearOp) issue(x *run) error {
	c, bl := x.cs, x.b.blas
	d, in, w, b := lin.d, lin.in, lin.w, lin.b
	m, k, n := lin.m, lin.k, lin.n
	beta := x.b.beta
	if lin.accumulate {
		beta = x.b.alpha
	}
	prec := x.b.opts.Precision
	var err error
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
		if lin.shadowIn {
			xh = x.e.arena + uintptr(in.h16)
		} else if err = x.l.launch(x.b.drv, x.b.k.to16, [3]int{gridFor(mk), 1, 1}, 256, 0, c.stream, u64(xh), u64(in.addr), uint64(mk), kind); err != nil {
			return err
		}
		wh := lin.wHalf
		if wh == 0 {
			wh = x.temp + uintptr(align(mk*2*int64(terms(prec)), 256))
			nk := int64(n) * int64(k)
			if err = x.l.launch(x.b.drv, x.b.k.to16, [3]int{gridFor(nk), 1, 1}, 256, 0, c.stream, u64(wh), u64(w.addr), uint64(nk), weightKind(prec)); err != nil {
				return err
			}
		}
		for term := range terms(prec) {
			if term == 1 {
				xh += uintptr(mk * 2)
				beta = x.b.alpha
			}
			err = bl.call("cublasGemmEx", bl.gemmEx, c.blas, cublasOpT, cublasOpN, uintptr(n), uintptr(m), uintptr(k),
				uintptr(unsafe.Pointer(x.b.alpha)), wh, typ, uintptr(k), xh, typ, uintptr(k), uintptr(unsafe.Pointer(beta)),
				d.addr, cudaR32F, uintptr(n), cublasCompute32F, cublasGemmDefault)
			if err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	if b == nil && lin.act == backend.Identity {
		return nil
	}
	var bp uintptr
	if b != nil {
		bp = b.addr
	}
	total := int64(m) * int64(n)
	return x.l.launch(x.b.drv, x.b.k.biasAct, [3]int{gridFor(total), 1, 1}, 256, 0, c.stream, u64(d.addr), u64(bp), uint64(total), i32(n), uint64(lin.act))
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
	return u64(x.e.arena) + uint64(t.h16), operandKind(x.b.opts.Precision), uint64(t.rows) * uint64(t.cols)
}

func (s *stream) Add(dst, a, b backend.Tensor) {
	ts, ok := s.begin("add", dst, a, b)
	if !ok || !s.check(backend.CheckAdd(dst, a, b)) {
		return
	}
	d, x, y := ts[0], ts[1], ts[2]
	s.reads(x, y)
	s.writes(d)
	n := int64(d.rows) * int64(d.cols)
	s.mix(opAdd, s.ref(d), s.ref(x), s.ref(y), uint64(n))
	o := s.record("add", func(r *run) error {
		return r.l.launch(r.b.drv, r.b.k.add, [3]int{gridFor(n), 1, 1}, 256, 0, r.cs.stream, u64(d.addr), u64(x.addr), u64(y.addr), uint64(n))
	})
	o.add = [3]*tensor{d, x, y}
}

func (s *stream) Activate(dst, x backend.Tensor, act backend.Activation) {
	ts, ok := s.begin("activate", dst, x)
	if !ok || !s.check(backend.CheckActivate(dst, x, act)) {
		return
	}
	d, in := ts[0], ts[1]
	s.reads(in)
	s.writes(d)
	n := int64(d.rows) * int64(d.cols)
	s.mix(opActivate, s.ref(d), s.ref(in), uint64(n), uint64(act))
	s.record("activate", func(r *run) error {
		return r.l.launch(r.b.drv, r.b.k.actMap, [3]int{gridFor(n), 1, 1}, 256, 0, r.cs.stream, u64(d.addr), u64(in.addr), uint64(n), uint64(act))
	})
}

func (s *stream) Softmax(dst, x backend.Tensor) {
	ts, ok := s.begin("softmax", dst, x)
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
	s.record("softmax", func(r *run) error {
		return r.l.launch(r.b.drv, r.b.k.softmax, [3]int{in.rows, 1, 1}, block, 0, r.cs.stream, u64(d.addr), u64(in.addr), i32(in.cols))
	})
}

func (s *stream) GeGLU(dst, x backend.Tensor) {
	ts, ok := s.begin("geglu", dst, x)
	if !ok || !s.check(backend.CheckGeGLU(dst, x)) {
		return
	}
	d, in := ts[0], ts[1]
	s.reads(in)
	s.writes(d)
	n := int64(d.rows) * int64(d.cols)
	s.mix(opGeGLU, s.ref(d), s.ref(in), uint64(d.rows), uint64(d.cols))
	var o *op
	o = s.record("geglu", func(r *run) error {
		h, kind, lo := r.shadowArgs(o)
		return r.l.launch(r.b.drv, r.b.k.geglu, [3]int{gridFor(n), 1, 1}, 256, 0, r.cs.stream, u64(d.addr), u64(in.addr), uint64(d.rows), i32(d.cols), h, kind, lo,
			boolArg(r.b.opts.Precision != FP32))
	})
	d.lastWriter = o
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

func (s *stream) Rope(qkv backend.Tensor, p backend.RopeParams) {
	ts, ok := s.begin("rope", qkv)
	if !ok || !s.check(backend.CheckRope(qkv, p)) {
		return
	}
	t := ts[0]
	table, err := s.be.ropeTable(p.Theta, p.HeadDim, p.SeqLen)
	if err != nil {
		s.fail(fmt.Errorf("cuda: rope: %w", err))
		return
	}
	s.reads(t)
	s.writes(t)
	pos, _, _ := positions(t.rows, p.Layout)
	off := s.stageI32(pos)
	s.mix(opRope, s.ref(t), uint64(table), uint64(t.rows), uint64(p.Heads), uint64(p.HeadDim))
	heads, dh := p.Heads, p.HeadDim
	s.record("rope", func(r *run) error {
		return r.l.launch(r.b.drv, r.b.k.rope, [3]int{t.rows, 1, 1}, 256, 0, r.cs.stream, u64(t.addr), u64(table), u64(r.e.devIn)+uint64(off), i32(heads), i32(dh))
	})
}

const (
	attentionBlock = 128
	tileQueries    = 16 // QT of kernels.cu
)

func (s *stream) Attention(dst, qkv backend.Tensor, p backend.AttentionParams) {
	ts, ok := s.begin("attention", dst, qkv)
	if !ok || !s.check(backend.CheckAttention(dst, qkv, p)) {
		return
	}
	d, in := ts[0], ts[1]
	tiled := s.be.k.attentionTiled[p.HeadDim]
	window := p.SeqLen
	if p.Sliding {
		window = min(window, 2*p.Radius+1)
	}
	shared := (window + p.HeadDim + attentionBlock) * 4
	if tiled == 0 && shared > attentionSharedLimit {
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
	s.mix(opAttention, s.ref(d), s.ref(in), uint64(in.rows), uint64(p.Heads), uint64(p.HeadDim), f32(p.Scale), boolArg(p.Sliding), uint64(p.Radius), uint64(window))
	var o *op
	if tiled != 0 {
		// Tiles of up to tileQueries queries, none across batch rows.
		var tiles []int32
		at := 0
		for _, n := range p.Lengths {
			rows := p.SeqLen
			if p.Packed {
				rows = n
			}
			for q := 0; q < rows; q += tileQueries {
				tiles = append(tiles, int32(at+q), int32(at), int32(n), int32(q), int32(min(tileQueries, rows-q)))
			}
			at += rows
		}
		off := s.stageI32(tiles)
		nt := len(tiles) / 5
		s.mix(uint64(nt))
		o = s.record(name, func(r *run) error {
			h, kind, lo := r.shadowArgs(o)
			return r.l.launch(r.b.drv, tiled, [3]int{nt, heads, 1}, 256, 0, r.cs.stream, u64(d.addr), u64(in.addr),
				u64(r.e.devIn)+uint64(off), i32(heads), f32(scale), boolArg(sliding), i32(radius), h, kind, lo)
		})
	} else {
		pos, start, length := positions(in.rows, p.Layout)
		meta := make([]int32, 3*in.rows)
		for r := range pos {
			meta[3*r], meta[3*r+1], meta[3*r+2] = start[r], length[r], pos[r]
		}
		off := s.stageI32(meta)
		o = s.record(name, func(r *run) error {
			h, kind, lo := r.shadowArgs(o)
			return r.l.launch(r.b.drv, r.b.k.attention, [3]int{in.rows, heads, 1}, attentionBlock, shared, r.cs.stream, u64(d.addr), u64(in.addr),
				u64(r.e.devIn)+uint64(off), i32(heads), i32(dh), f32(scale), boolArg(sliding), i32(radius), i32(window), h, kind, lo)
		})
	}
	d.lastWriter = o
}

func (s *stream) ActFeatures(dst, cls, logits backend.Tensor, counts []int) {
	ts, ok := s.begin("actFeatures", dst, cls, logits)
	if !ok || !s.check(backend.CheckActFeatures(dst, cls, logits, counts)) {
		return
	}
	d, c, z := ts[0], ts[1], ts[2]
	s.reads(c, z)
	s.writes(d)
	meta := make([]int32, 2*len(counts))
	at := 0
	for b, k := range counts {
		meta[2*b], meta[2*b+1] = int32(at), int32(k)
		at += k
	}
	off := s.stageI32(meta)
	rows, dim := c.rows, c.cols
	s.mix(opActFeatures, s.ref(d), s.ref(c), s.ref(z), uint64(rows), uint64(dim))
	s.record("actFeatures", func(r *run) error {
		return r.l.launch(r.b.drv, r.b.k.actFeatures, [3]int{rows, 1, 1}, 128, 0, r.cs.stream, u64(d.addr), u64(c.addr), u64(z.addr),
			u64(r.e.devIn)+uint64(off), i32(dim))
	})
}

// PacksRows reports that the stream takes packed batches.
func (s *stream) PacksRows() bool { return true }

func (s *stream) Err() error { return s.err }

// Read copies t into dst, flushing what was recorded first unless t was
// brought back by an earlier flush and nothing wrote it since.
func (s *stream) Read(ctx context.Context, t backend.Tensor, dst []float32) error {
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
// maxSnapshots small tensors the segment wrote.
func (s *stream) readback(target *tensor) []*tensor {
	out := []*tensor{target}
	for _, t := range s.wrote {
		if t != target && int64(t.rows)*int64(t.cols) <= snapshotElements && len(out) < maxSnapshots {
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
func (s *stream) flush(ctx context.Context, target *tensor) ([]byte, error) {
	if err := s.finishWait(); err != nil {
		return nil, err
	}
	b := s.be
	back := s.readback(target)
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
		if !t.staged && (t.zero || !t.written) {
			s.mix(uint64(t.id))
		}
	}
	arena := s.arena
	tempOff := align(arena, 256)
	key := shapeKey{hash: s.h.Sum64(), arena: tempOff + align(s.temp, 256) + gemmWorkspace, stage: int64(len(s.stage)), out: out * 4,
		tensors: len(s.made), operations: len(s.ops)}
	e := b.takeEntry(key)
	var err error
	b.w.Do(func() {
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
		x := &run{b: b, cs: s.cs, e: e, temp: e.arena + uintptr(tempOff)}
		err = b.execute(s, x, tableOff, len(back))
	})
	if e != nil {
		s.entries = append(s.entries, e)
	}
	s.seg++
	s.ops, s.made, s.wrote, s.stage = s.ops[:0], nil, s.wrote[:0], s.stage[:0]
	s.arena, s.temp = 0, 0
	s.h.Reset()
	if err != nil {
		s.fail(fmt.Errorf("cuda: %w", err))
		return nil, s.err
	}
	done := make(chan error, 1)
	cs := s.cs
	go func() {
		var err error
		cs.waiter.Do(func() {
			if err = b.drv.Call("cuEventSynchronize", cs.event); err == nil {
				var ms float32
				if b.drv.Call("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), cs.start, cs.end) == nil {
					b.deviceNs.Add(int64(float64(ms) * 1e6))
				}
			}
		})
		done <- err
	}()
	s.wait = done
	select {
	case err = <-done:
		s.wait = nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err != nil {
		s.fail(fmt.Errorf("cuda: a kernel failed: %w", err))
		return nil, s.err
	}
	snap := e.pinOut[:target.bytes()]
	for i, t := range back {
		if t.s == s {
			t.snap = e.pinOut[offs[i]*4 : (offs[i]+int64(t.rows)*int64(t.cols))*4]
		}
	}
	return snap, nil
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
	}
	return err
}

// Close waits for the stream's work and gives its entries and CUDA stream
// back for the next request.
func (s *stream) Close() {
	if s.closed {
		return
	}
	s.finishWait()
	s.closed = true
	b := s.be
	for _, t := range s.made {
		t.snap = nil
	}
	b.giveBack(s.entries, s.cs)
	s.entries, s.cs = nil, nil
}

// Discard folds a residual Add into the Linear before it: Linear(p, …)
// then Add(x, x, p) then Discard(p) become one GEMM accumulating into x
// (cuBLAS's beta = 1), as the Metal backend folds it. Memory is not
// reclaimed: a segment's is its entry's, reused as a whole.
func (s *stream) Discard(x backend.Tensor) {
	t, ok := x.(*tensor)
	n := len(s.ops)
	if !ok || t == nil || t.s != s || t.seg != s.seg || s.err != nil || n < 2 {
		return
	}
	l, a := s.ops[n-2].lin, s.ops[n-1].add
	if l == nil || a[0] == nil || l.d != t || l.b != nil || l.act != backend.Identity || l.accumulate {
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
	if into == t || into == l.in || into == l.w {
		return
	}
	l.d, l.accumulate = into, true
	s.ops = s.ops[:n-1]
	s.mix(opFuse)
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

// newEntry allocates an entry's memory; on the worker thread.
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

// destroy frees an entry; on the worker thread.
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
	for _, e := range entries {
		b.cache[e.key] = append(b.cache[e.key], e)
		b.idle = append(b.idle, e)
	}
	for b.entries > b.opts.MaxGraphs && len(b.idle) > 0 {
		v := b.idle[0]
		b.idle = b.idle[1:]
		list := b.cache[v.key]
		if i := slices.Index(list, v); i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) == 0 {
			delete(b.cache, v.key)
		} else {
			b.cache[v.key] = list
		}
		b.entries--
		drop = append(drop, v)
	}
	return drop
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
	var prof *opTimer
	if b.profiling.Load() {
		// Each operation between its own events, kernel by kernel.
		prof = &opTimer{}
		defer prof.release(b)
	}
	issue := func() error {
		if len(s.stage) > 0 {
			if err := b.drv.Call("cuMemcpyHtoDAsync_v2", e.devIn, uintptr(unsafe.Pointer(&e.pinIn[0])), uintptr(len(s.stage)), cs.stream); err != nil {
				return err
			}
		}
		for _, t := range s.made {
			if !t.staged && (t.zero || !t.written) {
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
			if err := o.issue(x); err != nil {
				return err
			}
			if prof != nil {
				if err := prof.after(b, cs.stream, o.name); err != nil {
					return err
				}
			}
		}
		if err := x.l.launch(b.drv, b.k.packOut, [3]int{nBack, 1, 1}, 256, 0, cs.stream, u64(e.devOut), u64(e.devIn)+uint64(tableOff)); err != nil {
			return err
		}
		return b.drv.Call("cuMemcpyDtoHAsync_v2", uintptr(unsafe.Pointer(&e.pinOut[0])), e.devOut, uintptr(e.key.out), cs.stream)
	}
	if err := b.drv.Call("cuEventRecord", cs.start, cs.stream); err != nil {
		return err
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
		if err = b.capture(e, cs, issue); err != nil {
			// A segment that cannot be captured still runs.
			e.noGraph = true
			err = issue()
			b.count(func(st *Stats) { st.Eager++ })
		} else {
			err = b.drv.Call("cuGraphLaunch", e.exec, cs.stream)
			b.count(func(st *Stats) { st.Captures++ })
		}
	default:
		e.seen = true
		err = issue()
		b.count(func(st *Stats) { st.Eager++ })
	}
	if err != nil {
		return err
	}
	if err := b.drv.Call("cuEventRecord", cs.end, cs.stream); err != nil {
		return err
	}
	return b.drv.Call("cuEventRecord", cs.event, cs.stream)
}

func (b *Backend) count(f func(*Stats)) {
	b.mu.Lock()
	f(&b.stats)
	b.mu.Unlock()
}

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
// workspace each flush sets to its entry's), an event marking the last
// flush, and a thread to wait on it.
type cstream struct {
	stream, event, blas uintptr
	start, end          uintptr // timing events around each flush
	waiter              *cudadrv.Worker
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
	c := b.drv.Call
	// CU_STREAM_NON_BLOCKING: no implicit order with the legacy stream.
	if err := c("cuStreamCreate", uintptr(unsafe.Pointer(&cs.stream)), 1); err != nil {
		return nil, err
	}
	// CU_EVENT_DISABLE_TIMING.
	if err := c("cuEventCreate", uintptr(unsafe.Pointer(&cs.event)), 2); err != nil {
		return nil, err
	}
	for _, e := range []*uintptr{&cs.start, &cs.end} {
		if err := c("cuEventCreate", uintptr(unsafe.Pointer(e)), 0); err != nil {
			return nil, err
		}
	}
	var err error
	bl := b.blas
	if err := bl.call("cublasCreate_v2", bl.create, uintptr(unsafe.Pointer(&cs.blas))); err != nil {
		return nil, err
	}
	if err := bl.call("cublasSetStream_v2", bl.setStream, cs.blas, cs.stream); err != nil {
		return nil, err
	}
	mode := uintptr(cublasDefaultMath)
	if b.opts.Precision == FP32 {
		mode = cublasPedantic
	}
	if err := bl.call("cublasSetMathMode", bl.setMathMode, cs.blas, mode); err != nil {
		return nil, err
	}
	cs.waiter = cudadrv.NewWorker()
	cs.waiter.Do(func() { err = c("cuCtxSetCurrent", b.ctx) })
	if err != nil {
		return nil, err
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
	for _, e := range []uintptr{cs.event, cs.start, cs.end} {
		b.drv.Call("cuEventDestroy_v2", e)
	}
	b.drv.Call("cuStreamDestroy_v2", cs.stream)
}
