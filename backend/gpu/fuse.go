package gpu

import (
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/metal"
)

// Fusion by deferred recording. The model calls one operation at a time
// (backend.Stream); the stream holds the last one back (Stream.pending) so
// that the next can join its dispatch:
//
//	LayerNorm(n, x) ; Linear(y, n, W)         → one GEMM with a LayerNorm prologue
//	Linear(y, x, W) ; GeGLU(g, y)             → one GEMM whose store writes g
//	Linear(y, x, W) ; Add(r, r, y)            → one GEMM whose store does r += y
//	Rope(qkv)       ; Attention(o, qkv)       → one attention that rotates as it stages
//
// A fused dispatch still writes every tensor the unfused operations would
// (n, y, the rotated qkv), unless the model said with backend.Discard that
// nobody reads it before overwriting it; a LayerNorm or RoPE whose output
// is not discarded runs as its own dispatch first. An encoder layer whose
// model discards its scratch tensors is 5 dispatches: LayerNorm+QKV,
// RoPE+attention, Wo+residual, LayerNorm+Wi+GeGLU, Wo2+residual.
//
// Every other operation (and Read, Err, Close) encodes what is pending
// first: the order of effects is the order of calls.

// pendingLN is a deferred LayerNorm.
type pendingLN struct {
	op        metal.LayerNormOp
	dst       *tensor
	discarded bool // nobody reads dst: a GEMM's prologue replaces it
}

// pendingLinear is a deferred Linear with what has joined it.
type pendingLinear struct {
	op  metal.GemmOp // X is the Linear's own input (ln's dst when ln is set)
	dst *tensor
	// ln is the LayerNorm that produced X, folded into the prologue when
	// its output is discarded by the time the GEMM is encoded.
	ln *pendingLN
	// yDiscarded: nobody reads dst, so a GEMM that also writes Gated or
	// Residual need not store Y.
	yDiscarded bool
}

// pendingRope is a deferred Rope.
type pendingRope struct {
	qkv   *tensor
	table metal.Buffer
	p     backend.RopeParams
}

// pendingAttention is a deferred Attention with the Rope before it.
type pendingAttention struct {
	in, out      metal.Buffer
	qkv          *tensor
	lengths      []int        // inline (setBytes), or
	lengthsBuf   metal.Buffer // for more than metal.MaxInlineLengths rows
	shape        metal.AttentionShape
	rope         *pendingRope
	qkvDiscarded bool // nobody reads the rotated qkv: rotate while staging
}

// flush encodes whatever is pending.
func (s *Stream) flush() {
	p := s.pending
	if p == nil {
		return
	}
	s.pending = nil
	switch p := p.(type) {
	case *pendingLN:
		s.encodeLayerNorm(p.op)
	case *pendingLinear:
		s.encodeLinear(p)
	case *pendingRope:
		s.encodeRope(p)
	case *pendingAttention:
		s.encodeAttention(p)
	}
}

// Discard implements backend.Discarder: it marks what pending fused
// operations need not store.
func (s *Stream) Discard(t backend.Tensor) {
	mt, ok := t.(*tensor)
	if !ok || mt == nil {
		return
	}
	switch p := s.pending.(type) {
	case *pendingLinear:
		if p.ln != nil && p.ln.dst == mt {
			p.ln.discarded = true
		}
		if p.dst == mt {
			p.yDiscarded = true
		}
	case *pendingAttention:
		if p.qkv == mt {
			p.qkvDiscarded = true
		}
	}
}

func (s *Stream) encodeLayerNorm(op metal.LayerNormOp) {
	if s.begin("layerNorm") {
		s.end("layerNorm", metal.EncodeLayerNorm(s.enc(), s.be.kern, op))
	}
}

// encodeLinear encodes a pending Linear: its LayerNorm as a prologue or as
// a dispatch of its own, Y stored or not.
func (s *Stream) encodeLinear(p *pendingLinear) {
	op := p.op
	ln := 0
	if p.ln != nil {
		if p.ln.discarded {
			op.X = p.ln.op.In
			op.LNWeight, op.LNWeightOffset = p.ln.op.Weight, p.ln.op.WeightOffset
			op.LNBias, op.LNBiasOffset = p.ln.op.Bias, p.ln.op.BiasOffset
			op.Eps = p.ln.op.Eps
			ln = 1
		} else {
			s.encodeLayerNorm(p.ln.op)
		}
	}
	if p.yDiscarded && (op.Gated != nil || op.Residual != nil) {
		op.Y = nil
	}
	epilogue := 0
	switch {
	case op.Gated != nil:
		epilogue = 1
	case op.Act == metal.ActGELU:
		epilogue = 2
	case op.Act == metal.ActReLU:
		epilogue = 3
	}
	residual := 0
	if op.Residual != nil {
		residual = 1
	}
	name := linearNames[ln][epilogue][residual]
	if s.encodeSplitK(name, op) {
		return
	}
	if s.begin(name) {
		s.end(name, metal.EncodeGemm(s.enc(), s.be.kern, op))
	}
}

// linearNames are the profile names of a GEMM by [LayerNorm prologue]
// [epilogue: none, GeGLU, GELU, ReLU][residual].
var linearNames = func() (names [2][4][2]string) {
	for ln, pre := range []string{"", "layerNorm+"} {
		for e, epi := range []string{"", "+geglu", "+gelu", "+relu"} {
			for r, res := range []string{"", "+residual"} {
				names[ln][e][r] = pre + "linear" + epi + res
			}
		}
	}
	return names
}()

func (s *Stream) encodeRope(p *pendingRope) {
	x := p.qkv.buf
	if s.begin("rope") {
		s.end("rope", metal.Rope(s.enc(), s.be.kern, x, p.table, p.qkv.Rows(), p.p.SeqLen, p.p.Heads, p.p.HeadDim))
	}
}

// encodeAttention encodes a pending Attention, rotating q and k as it
// stages them when the rotated qkv is not read by anyone else.
func (s *Stream) encodeAttention(p *pendingAttention) {
	shape := p.shape
	var table metal.Buffer
	name := "attention"
	if p.rope != nil {
		if p.qkvDiscarded && metal.AttentionFusesRope(shape) {
			table = p.rope.table
			name = "rope+attention"
		} else {
			s.encodeRope(p.rope)
		}
	}
	op := metal.AttentionOp{QKV: p.in, Out: p.out, Lengths: p.lengths, LengthsBuffer: p.lengthsBuf, Table: table, Shape: shape}
	if s.begin(name) {
		s.end(name, metal.EncodeAttention(s.enc(), s.be.kern, op))
	}
}

// lnJoins reports whether Linear(dst, x, …) can take the pending LayerNorm
// ln as its prologue: x is ln's output, ln is not in place (its input must
// survive to the GEMM), and the GEMM does not write what ln reads.
func lnJoins(ln *pendingLN, dst, x backend.Tensor) bool {
	d, ok := dst.(*tensor)
	return ok && d != nil && x == backend.Tensor(ln.dst) && ln.op.In != ln.op.Out && d.buf != ln.op.In &&
		d.buf != ln.op.Out && d.stream != nil
}

// fuseResidual records Add(dst, a, b) into the pending Linear that writes
// one operand when dst is the other (x = x + proj), and reports whether it
// did. The residual must not be anything the GEMM reads.
func (s *Stream) fuseResidual(dst, a, b backend.Tensor) bool {
	p, ok := s.pending.(*pendingLinear)
	if !ok || p.op.Gated != nil || p.op.Residual != nil || a == b || !s.valid("add", dst, a, b) || backend.CheckAdd(dst, a, b) != nil {
		return false
	}
	var res backend.Tensor
	switch {
	case b == backend.Tensor(p.dst) && dst == a:
		res = a
	case a == backend.Tensor(p.dst) && dst == b:
		res = b
	default:
		return false
	}
	r := res.(*tensor)
	if r.stream == nil || r.off != 0 {
		return false
	}
	for _, buf := range []metal.Buffer{p.op.X, p.op.W, p.op.Bias, p.op.Y} {
		if buf == r.buf {
			return false
		}
	}
	if p.ln != nil && (p.ln.op.In == r.buf || p.ln.op.Weight == r.buf || p.ln.op.Bias == r.buf) {
		return false
	}
	s.readable(r)
	p.op.Residual = r.buf
	return true
}

// fuseGeGLU records GeGLU(dst, x) into the pending Linear that writes x,
// and reports whether it did. It does not when dst shares a buffer with
// what the GEMM reads: threadgroups would overwrite operands others still
// stage.
func (s *Stream) fuseGeGLU(dst, x backend.Tensor) bool {
	p, ok := s.pending.(*pendingLinear)
	if !ok || x != backend.Tensor(p.dst) || p.op.Gated != nil || p.op.Residual != nil || p.op.Act != metal.ActIdentity ||
		p.op.N%2 != 0 || !s.valid("geglu", dst, x) || backend.CheckGeGLU(dst, x) != nil {
		return false
	}
	out := dst.(*tensor)
	if out.stream == nil || out.buf == p.op.Y {
		return false
	}
	for _, b := range []metal.Buffer{p.op.X, p.op.W, p.op.Bias} {
		if b == out.buf {
			return false
		}
	}
	if p.ln != nil && (p.ln.op.In == out.buf || p.ln.op.Weight == out.buf) {
		return false
	}
	out.stale = false // written whole by the GEMM
	p.op.Gated = out.buf
	return true
}

// takeRope takes the pending Rope when it rotates qkv for attention p.
func (s *Stream) takeRope(qkv backend.Tensor, p backend.AttentionParams) *pendingRope {
	r, ok := s.pending.(*pendingRope)
	if !ok || backend.Tensor(r.qkv) != qkv || r.p.SeqLen != p.SeqLen || r.p.Heads != p.Heads || r.p.HeadDim != p.HeadDim {
		return nil
	}
	s.pending = nil
	return r
}

// encodeSplitK encodes op as a deterministic split-K GEMM when the backend
// splits (Backend.SetSplitK) and op's grid leaves the GPU idle
// (metal.GemmSplitSlices), and reports whether it did: the slices write
// the stream's partial scratch, then, behind the barrier that dependency
// brings, the reduction sums them in order and applies the epilogue. Two
// dispatches instead of one.
func (s *Stream) encodeSplitK(name string, op metal.GemmOp) bool {
	target := int(s.be.splitTarget.Load())
	if target <= 0 || s.err != nil {
		return false
	}
	op.Slices = metal.GemmSplitSlicesMinK(op.M, op.N, op.K, op.Gated != nil, target, splitMinSliceK)
	if op.Slices < 2 {
		return false
	}
	op.Partial = s.partialScratch(name, 4*op.Slices*op.M*op.N)
	if op.Partial == nil {
		return true // the stream failed
	}
	if s.begin(name) {
		s.end(name, metal.EncodeGemm(s.enc(), s.be.kern, op))
	}
	if s.begin(name) {
		s.end(name, metal.EncodeGemmReduce(s.enc(), s.be.kern, op))
	}
	return true
}

// splitMinSliceK is the least K of a split-K slice (a variable so that the
// tests can split the tiny goldens' models, whose K is under it).
var splitMinSliceK = metal.GemmMinSliceK

// partialScratch is the stream's buffer for split-K partial matrices, of at
// least size bytes: one per stream, grown when a GEMM needs more (the
// hazard tracking orders one GEMM's use of it after the last one's).
func (s *Stream) partialScratch(op string, size int) metal.Buffer {
	if s.partial == nil || s.partial.Len() < size {
		s.partial, _ = s.newBuffer(op, size)
	}
	return s.partial
}
