package gpu

import (
	"fmt"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/metal"
)

// The operations check their operands with package backend's op contracts
// (backend.CheckLinear, …), which package backend/cpu also runs, then the
// limits of the Metal kernels, then encode one or two dispatches.

// Gather implements backend.Stream. The table is bound where it lies: a
// float32 or fp16 table read in place from a checkpoint mapping (the
// embedding table, most often the largest tensor) is not copied.
func (s *Stream) Gather(dst, table backend.Tensor, index []int32) {
	if !s.ok("gather", dst, table) || !s.check(backend.CheckGather(dst, table, index)) {
		return
	}
	s.readable(table)
	tt := table.(*tensor)
	op := metal.GatherOp{Elem: tt.elem, Table: tt.buf, TableOffset: tt.off, Rows: len(index), Cols: table.Cols(), TableRows: table.Rows()}
	op.Out = s.dst("gather", dst)
	if len(index) <= metal.MaxInlineIndices {
		op.IndexValues = index // copied into the dispatch as it is encoded, now
	} else {
		rows := s.ints[:0]
		for _, r := range index {
			rows = append(rows, int(r))
		}
		s.ints = rows
		op.Index = s.u32Buffer("gather", rows)
	}
	if s.begin("gather") {
		s.end("gather", metal.EncodeGather(s.enc(), s.be.kern, op))
	}
}

// LayerNorm implements backend.Stream. float32 weight and bias are bound
// where they lie (in place in a checkpoint mapping); fp16 ones are read
// from their float32 twin, as the kernel reads floats. It is held back in
// case a Linear of its output follows (see fuse.go).
func (s *Stream) LayerNorm(dst, x, weight, bias backend.Tensor, eps float32) {
	if !s.ok("layerNorm", dst, x, weight, bias) || !s.check(backend.CheckLayerNorm(dst, x, weight, bias, eps)) {
		return
	}
	op := metal.LayerNormOp{Rows: x.Rows(), Cols: x.Cols(), Eps: eps}
	op.In, op.Out = s.f32("layerNorm", x), s.dst("layerNorm", dst)
	op.Weight, op.WeightOffset = s.f32At("layerNorm", weight)
	op.Bias, op.BiasOffset = s.f32At("layerNorm", bias)
	if s.err != nil {
		return
	}
	s.lnSlot = pendingLN{op: op, dst: dst.(*tensor)}
	s.pending = &s.lnSlot
}

// Linear implements backend.Stream: one GEMM whose store adds the bias and
// applies the activation. It is held back one operation (see fuse.go): a
// LayerNorm just before it that produced x becomes its prologue, and a
// GeGLU or a residual Add of its output that follows joins its store.
func (s *Stream) Linear(dst, x, weight, bias backend.Tensor, act backend.Activation) {
	var ln *pendingLN
	if p, ok := s.pending.(*pendingLN); ok && lnJoins(p, dst, x) {
		ln = p
	}
	if ln != nil {
		s.pending = nil
		if !s.valid("linear", dst, x, weight, bias) {
			return
		}
	} else if !s.ok("linear", dst, x, weight, bias) {
		return
	}
	if !s.check(backend.CheckLinear(dst, x, weight, bias, act)) {
		return
	}
	wt := weight.(*tensor)
	op := metal.GemmOp{Input: metal.GemmF32, W: wt.buf, WOffset: wt.off, M: x.Rows(), N: weight.Rows(), K: x.Cols(), Act: gemmAct(act)}
	if wt.elem == metal.ElemF16 {
		op.Input = metal.GemmF32F16W
	}
	op.X, op.Y = s.f32("linear", x), s.dst("linear", dst)
	op.Bias, op.BiasOffset = s.f32At("linear", bias)
	if s.err != nil {
		return
	}
	s.linearSlot = pendingLinear{op: op, dst: dst.(*tensor), ln: ln}
	s.pending = &s.linearSlot
}

func gemmAct(act backend.Activation) metal.Activation {
	switch act {
	case backend.GELU:
		return metal.ActGELU
	case backend.ReLU:
		return metal.ActReLU
	}
	return metal.ActIdentity
}

func (s *Stream) activate(op string, in, out metal.Buffer, n int, act backend.Activation) {
	kind := gemmAct(act)
	if s.begin(op) {
		s.end(op, metal.Activate(s.enc(), s.be.kern, kind, in, out, n))
	}
}

// Add implements backend.Stream.
//
// x = x + proj right after the Linear that wrote proj joins that GEMM's
// store (see fuse.go).
func (s *Stream) Add(dst, a, b backend.Tensor) {
	if s.fuseResidual(dst, a, b) {
		return
	}
	if !s.ok("add", dst, a, b) || !s.check(backend.CheckAdd(dst, a, b)) {
		return
	}
	x, y, out := s.f32("add", a), s.f32("add", b), s.dst("add", dst)
	n := a.Rows() * a.Cols()
	if s.begin("add") {
		s.end("add", metal.VectorAdd(s.enc(), s.be.kern, x, y, out, n))
	}
}

// Activate implements backend.Stream.
func (s *Stream) Activate(dst, x backend.Tensor, act backend.Activation) {
	if !s.ok("activate", dst, x) || !s.check(backend.CheckActivate(dst, x, act)) {
		return
	}
	in, out := s.f32("activate", x), s.dst("activate", dst)
	if s.err == nil {
		s.activate("activate", in, out, x.Rows()*x.Cols(), act)
	}
}

// Softmax implements backend.Stream.
func (s *Stream) Softmax(dst, x backend.Tensor) {
	if !s.ok("softmax", dst, x) || !s.check(backend.CheckSoftmax(dst, x)) {
		return
	}
	in, out := s.f32("softmax", x), s.dst("softmax", dst)
	if s.begin("softmax") {
		s.end("softmax", metal.Softmax(s.enc(), s.be.kern, in, out, x.Rows(), x.Cols()))
	}
}

// GeGLU implements backend.Stream. When x is the output of the Linear just
// recorded, the GeGLU joins that GEMM's store (metal.GemmOp.Gated): one
// dispatch, and x is not read back. x is still written, as any later
// reader of it expects.
func (s *Stream) GeGLU(dst, x backend.Tensor) {
	if s.fuseGeGLU(dst, x) {
		return
	}
	if !s.ok("geglu", dst, x) || !s.check(backend.CheckGeGLU(dst, x)) {
		return
	}
	inner := dst.Cols()
	in, out := s.f32("geglu", x), s.dst("geglu", dst)
	if s.begin("geglu") {
		s.end("geglu", metal.GeGLU(s.enc(), s.be.kern, in, out, x.Rows(), inner))
	}
}

// Rope implements backend.Stream. It is held back in case the Attention
// over qkv follows, which then rotates q and k as it stages them.
func (s *Stream) Rope(qkv backend.Tensor, p backend.RopeParams) {
	if !s.ok("rope", qkv) || !s.check(backend.CheckRope(qkv, p)) {
		return
	}
	if p.Packed {
		s.fail(errPacked("rope"))
		return
	}
	table, err := s.be.rope(p.Theta, p.HeadDim, p.SeqLen)
	if err != nil {
		s.fail(err)
		return
	}
	s.readable(qkv) // rotated in place: read first
	if s.dst("rope", qkv) == nil {
		return
	}
	s.ropeSlot = pendingRope{qkv: qkv.(*tensor), table: table, p: p}
	s.pending = &s.ropeSlot
}

// Attention implements backend.Stream: metal.EncodeAttention (the flash
// kernel for head dims ≤ 64) with the lengths inline, RoPE fused when a
// Rope of qkv came just before and the rotated qkv is discarded. It is
// held back one operation for that Discard.
func (s *Stream) Attention(dst, qkv backend.Tensor, p backend.AttentionParams) {
	if p.Packed {
		if s.ok("attention", dst, qkv) {
			s.fail(errPacked("attention"))
		}
		return
	}
	rope := s.takeRope(qkv, p)
	if rope != nil {
		if !s.valid("attention", dst, qkv) {
			return
		}
	} else if !s.ok("attention", dst, qkv) {
		return
	}
	if !s.check(backend.CheckAttention(dst, qkv, p)) {
		return
	}
	if p.HeadDim > metal.MaxAttentionHeadDim {
		s.shapeErr("attention", "headDim %d: the Metal kernel takes at most %d", p.HeadDim, metal.MaxAttentionHeadDim)
		return
	}
	in, out := s.f32("attention", qkv), s.dst("attention", dst)
	if s.err != nil {
		return
	}
	shape := metal.AttentionShape{Batch: len(p.Lengths), SeqLen: p.SeqLen, Heads: p.Heads, HeadDim: p.HeadDim,
		Scale: p.Scale, Sliding: p.Sliding, Radius: p.Radius}
	s.attnSlot = pendingAttention{in: in, out: out, qkv: qkv.(*tensor), shape: shape, rope: rope}
	if len(p.Lengths) <= metal.MaxInlineLengths {
		s.lengths = append(s.lengths[:0], p.Lengths...)
		s.attnSlot.lengths = s.lengths
	} else {
		s.attnSlot.lengthsBuf = s.u32Buffer("attention", p.Lengths)
	}
	s.pending = &s.attnSlot
}

// ActFeatures implements backend.Stream.
func (s *Stream) ActFeatures(dst, cls, logits backend.Tensor, counts []int) {
	if !s.ok("actFeatures", dst, cls, logits) || !s.check(backend.CheckActFeatures(dst, cls, logits, counts)) {
		return
	}
	b, d := cls.Rows(), cls.Cols()
	offsets := append(s.ints[:0], 0)
	total := 0
	for _, k := range counts {
		total += k
		offsets = append(offsets, total)
	}
	s.ints = offsets
	c, z, out, off := s.f32("actFeatures", cls), s.f32("actFeatures", logits), s.dst("actFeatures", dst), s.u32Buffer("actFeatures", offsets)
	if s.begin("actFeatures") {
		s.end("actFeatures", metal.ActFeatures(s.enc(), s.be.kern, c, z, off, out, b, d, total))
	}
}

// errPacked refuses a packed batch: the kernels index rows as b·SeqLen+i, and
// the stream does not implement backend.RowPacker, so models send it padded
// batches.
func errPacked(op string) error {
	return fmt.Errorf("backend/gpu: %s: %w: packed batches are not supported", op, backend.ErrShape)
}
