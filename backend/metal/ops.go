package metalbackend

import (
	"math"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/metal"
)

// The operations check shapes exactly as package backend/cpu does (its
// messages, its aliasing rules), then encode one or two dispatches.

func sameShape(a, b backend.Tensor) bool { return a.Rows() == b.Rows() && a.Cols() == b.Cols() }

func aliases(a, b backend.Tensor) bool { return a.(*tensor) == b.(*tensor) }

// Gather implements backend.Stream.
func (s *Stream) Gather(dst, table backend.Tensor, index []int32) {
	if !s.ok("gather", dst, table) {
		return
	}
	d := table.Cols()
	if dst.Rows() != len(index) || dst.Cols() != d {
		s.shapeErr("gather", "dst [%d, %d] for %d rows of width %d", dst.Rows(), dst.Cols(), len(index), d)
		return
	}
	rows := make([]int, len(index))
	for i, r := range index {
		if r < 0 || int(r) >= table.Rows() {
			s.shapeErr("gather", "index[%d] = %d outside the table's %d rows", i, r, table.Rows())
			return
		}
		rows[i] = int(r)
	}
	if aliases(dst, table) {
		s.shapeErr("gather", "dst aliases the table")
		return
	}
	tt := table.(*tensor)
	elem, src := tt.elem, tt.buf
	out, idx := s.dst("gather", dst), s.u32Buffer("gather", rows)
	s.encode("gather", []metal.Buffer{src, idx}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.GatherRows(cb, s.be.kern, elem, src, idx, out, len(rows), d, table.Rows())
	})
}

// LayerNorm implements backend.Stream.
func (s *Stream) LayerNorm(dst, x, weight, bias backend.Tensor, eps float32) {
	if !s.ok("layerNorm", dst, x, weight, bias) {
		return
	}
	m, d := x.Rows(), x.Cols()
	switch {
	case dst.Rows() != m || dst.Cols() != d:
		s.shapeErr("layerNorm", "dst [%d, %d], x [%d, %d]", dst.Rows(), dst.Cols(), m, d)
		return
	case weight.Rows() != 1 || weight.Cols() != d:
		s.shapeErr("layerNorm", "weight [%d, %d], want [1, %d]", weight.Rows(), weight.Cols(), d)
		return
	case bias != nil && (bias.Rows() != 1 || bias.Cols() != d):
		s.shapeErr("layerNorm", "bias [%d, %d], want [1, %d]", bias.Rows(), bias.Cols(), d)
		return
	case !(eps >= 0) || math.IsInf(float64(eps), 0):
		s.shapeErr("layerNorm", "eps %v", eps)
		return
	}
	in, w, b, out := s.f32("layerNorm", x), s.f32("layerNorm", weight), s.f32("layerNorm", bias), s.dst("layerNorm", dst)
	s.encode("layerNorm", []metal.Buffer{in, w, b}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.LayerNorm(cb, s.be.kern, in, w, b, out, m, d, eps)
	})
}

// Linear implements backend.Stream: the GEMM with the bias fused, then the
// activation in place when there is one.
func (s *Stream) Linear(dst, x, weight, bias backend.Tensor, act backend.Activation) {
	if !s.ok("linear", dst, x, weight, bias) {
		return
	}
	m, k, n := x.Rows(), x.Cols(), weight.Rows()
	switch {
	case weight.Cols() != k:
		s.shapeErr("linear", "x [%d, %d] · weightᵀ [%d, %d]", m, k, n, weight.Cols())
		return
	case dst.Rows() != m || dst.Cols() != n:
		s.shapeErr("linear", "dst [%d, %d], want [%d, %d]", dst.Rows(), dst.Cols(), m, n)
		return
	case bias != nil && (bias.Rows() != 1 || bias.Cols() != n):
		s.shapeErr("linear", "bias [%d, %d], want [1, %d]", bias.Rows(), bias.Cols(), n)
		return
	case aliases(dst, x) || aliases(dst, weight):
		s.shapeErr("linear", "dst aliases an operand")
		return
	case act > backend.ReLU:
		s.shapeErr("linear", "unknown activation %v", act)
		return
	}
	wt := weight.(*tensor)
	kind, w := metal.GemmF32, wt.buf
	if wt.elem == metal.ElemF16 {
		kind = metal.GemmF32F16W
	}
	in, b, out := s.f32("linear", x), s.f32("linear", bias), s.dst("linear", dst)
	s.encode("linear", []metal.Buffer{in, w, b}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.Gemm(cb, s.be.kern, kind, in, w, b, out, m, n, k)
	})
	if act != backend.Identity {
		s.activate("linear", out, out, m*n, act)
	}
}

func (s *Stream) activate(op string, in, out metal.Buffer, n int, act backend.Activation) {
	kind := metal.ActIdentity
	switch act {
	case backend.GELU:
		kind = metal.ActGELU
	case backend.ReLU:
		kind = metal.ActReLU
	}
	s.encode(op, []metal.Buffer{in}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.Activate(cb, s.be.kern, kind, in, out, n)
	})
}

// Add implements backend.Stream.
func (s *Stream) Add(dst, a, b backend.Tensor) {
	if !s.ok("add", dst, a, b) {
		return
	}
	if !sameShape(dst, a) || !sameShape(a, b) {
		s.shapeErr("add", "dst [%d, %d], a [%d, %d], b [%d, %d]", dst.Rows(), dst.Cols(), a.Rows(), a.Cols(), b.Rows(), b.Cols())
		return
	}
	x, y, out := s.f32("add", a), s.f32("add", b), s.dst("add", dst)
	n := a.Rows() * a.Cols()
	s.encode("add", []metal.Buffer{x, y}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.VectorAdd(cb, s.be.kern, x, y, out, n)
	})
}

// Activate implements backend.Stream.
func (s *Stream) Activate(dst, x backend.Tensor, act backend.Activation) {
	if !s.ok("activate", dst, x) {
		return
	}
	if !sameShape(dst, x) || act > backend.ReLU {
		s.shapeErr("activate", "dst [%d, %d], x [%d, %d], %v", dst.Rows(), dst.Cols(), x.Rows(), x.Cols(), act)
		return
	}
	in, out := s.f32("activate", x), s.dst("activate", dst)
	if s.err == nil {
		s.activate("activate", in, out, x.Rows()*x.Cols(), act)
	}
}

// Softmax implements backend.Stream.
func (s *Stream) Softmax(dst, x backend.Tensor) {
	if !s.ok("softmax", dst, x) {
		return
	}
	if !sameShape(dst, x) {
		s.shapeErr("softmax", "dst [%d, %d], x [%d, %d]", dst.Rows(), dst.Cols(), x.Rows(), x.Cols())
		return
	}
	in, out := s.f32("softmax", x), s.dst("softmax", dst)
	s.encode("softmax", []metal.Buffer{in}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.Softmax(cb, s.be.kern, in, out, x.Rows(), x.Cols())
	})
}

// GeGLU implements backend.Stream.
func (s *Stream) GeGLU(dst, x backend.Tensor) {
	if !s.ok("geglu", dst, x) {
		return
	}
	inner := dst.Cols()
	if x.Cols() != 2*inner || x.Rows() != dst.Rows() {
		s.shapeErr("geglu", "dst [%d, %d], x [%d, %d]: x needs twice dst's columns", dst.Rows(), dst.Cols(), x.Rows(), x.Cols())
		return
	}
	in, out := s.f32("geglu", x), s.dst("geglu", dst)
	s.encode("geglu", []metal.Buffer{in}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.GeGLU(cb, s.be.kern, in, out, x.Rows(), inner)
	})
}

// Rope implements backend.Stream.
func (s *Stream) Rope(qkv backend.Tensor, p backend.RopeParams) {
	if !s.ok("rope", qkv) {
		return
	}
	width := p.Heads * p.HeadDim
	switch {
	case p.SeqLen <= 0 || p.Heads <= 0 || p.HeadDim <= 0 || p.HeadDim%2 != 0:
		s.shapeErr("rope", "seqLen %d, heads %d, headDim %d (must be even)", p.SeqLen, p.Heads, p.HeadDim)
		return
	case qkv.Cols() != 3*width || qkv.Rows()%p.SeqLen != 0:
		s.shapeErr("rope", "qkv [%d, %d] for seqLen %d and 3·%d·%d columns", qkv.Rows(), qkv.Cols(), p.SeqLen, p.Heads, p.HeadDim)
		return
	case !(p.Theta > 0) || math.IsInf(p.Theta, 0):
		s.shapeErr("rope", "theta %v", p.Theta)
		return
	}
	table, err := s.be.rope(p.Theta, p.HeadDim, p.SeqLen)
	if err != nil {
		s.fail(err)
		return
	}
	x := s.dst("rope", qkv)
	s.encode("rope", []metal.Buffer{x, table}, []metal.Buffer{x}, func(cb metal.CommandBuffer) error {
		return metal.Rope(cb, s.be.kern, x, table, qkv.Rows(), p.SeqLen, p.Heads, p.HeadDim)
	})
}

// Attention implements backend.Stream.
func (s *Stream) Attention(dst, qkv backend.Tensor, p backend.AttentionParams) {
	if !s.ok("attention", dst, qkv) {
		return
	}
	width := p.Heads * p.HeadDim
	batch := len(p.Lengths)
	switch {
	case p.SeqLen <= 0 || p.Heads <= 0 || p.HeadDim <= 0 || p.Radius < 0:
		s.shapeErr("attention", "seqLen %d, heads %d, headDim %d, radius %d", p.SeqLen, p.Heads, p.HeadDim, p.Radius)
		return
	case p.HeadDim > metal.MaxAttentionHeadDim:
		s.shapeErr("attention", "headDim %d: the Metal kernel takes at most %d", p.HeadDim, metal.MaxAttentionHeadDim)
		return
	case qkv.Cols() != 3*width || qkv.Rows() != batch*p.SeqLen:
		s.shapeErr("attention", "qkv [%d, %d] for %d rows of length %d and 3·%d·%d columns", qkv.Rows(), qkv.Cols(), batch, p.SeqLen, p.Heads, p.HeadDim)
		return
	case dst.Rows() != qkv.Rows() || dst.Cols() != width:
		s.shapeErr("attention", "dst [%d, %d], want [%d, %d]", dst.Rows(), dst.Cols(), qkv.Rows(), width)
		return
	case aliases(dst, qkv):
		s.shapeErr("attention", "dst aliases qkv")
		return
	}
	for b, n := range p.Lengths {
		if n < 1 || n > p.SeqLen {
			s.shapeErr("attention", "lengths[%d] = %d outside [1, %d]", b, n, p.SeqLen)
			return
		}
	}
	in, out, lengths := s.f32("attention", qkv), s.dst("attention", dst), s.u32Buffer("attention", p.Lengths)
	shape := metal.AttentionShape{Batch: batch, SeqLen: p.SeqLen, Heads: p.Heads, HeadDim: p.HeadDim,
		Scale: p.Scale, Sliding: p.Sliding, Radius: p.Radius}
	s.encode("attention", []metal.Buffer{in, lengths}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.Attention(cb, s.be.kern, in, lengths, out, shape)
	})
}

// ActFeatures implements backend.Stream.
func (s *Stream) ActFeatures(dst, cls, logits backend.Tensor, counts []int) {
	if !s.ok("actFeatures", dst, cls, logits) {
		return
	}
	b, d := cls.Rows(), cls.Cols()
	offsets := make([]int, 1, len(counts)+1)
	total := 0
	for r, k := range counts {
		if k < 1 {
			s.shapeErr("actFeatures", "counts[%d] = %d, want ≥ 1", r, k)
			return
		}
		total += k
		offsets = append(offsets, total)
	}
	if len(counts) != b || dst.Rows() != b || dst.Cols() != d+4 || logits.Rows()*logits.Cols() != total {
		s.shapeErr("actFeatures", "dst [%d, %d], cls [%d, %d], logits [%d, %d], %d counts summing to %d",
			dst.Rows(), dst.Cols(), b, d, logits.Rows(), logits.Cols(), len(counts), total)
		return
	}
	if aliases(dst, cls) || aliases(dst, logits) {
		s.shapeErr("actFeatures", "dst aliases an operand")
		return
	}
	c, z, out, off := s.f32("actFeatures", cls), s.f32("actFeatures", logits), s.dst("actFeatures", dst), s.u32Buffer("actFeatures", offsets)
	s.encode("actFeatures", []metal.Buffer{c, z, off}, []metal.Buffer{out}, func(cb metal.CommandBuffer) error {
		return metal.ActFeatures(cb, s.be.kern, c, z, off, out, b, d, total)
	})
}
