package cpu

import (
	"math"

	"github.com/laya-metal/laya/backend"
)

// Gather implements backend.Stream.
func (s *Stream) Gather(dst, table backend.Tensor, index []int32) {
	if !s.ok("gather", dst, table) || !s.check(backend.CheckGather(dst, table, index)) {
		return
	}
	d := table.Cols()
	out := data(dst)
	if t := table.(*tensor); t.half != nil {
		// An F16/BF16 table (the token embeddings) widens only the rows
		// gathered.
		for i, r := range index {
			widen(out[i*d:i*d+d], t.half[int(r)*d:int(r)*d+d], t.dtype)
		}
		return
	}
	src := data(table)
	for i, r := range index {
		copy(out[i*d:i*d+d], src[int(r)*d:int(r)*d+d])
	}
}

// LayerNorm implements backend.Stream. Mean and variance are accumulated in
// float64: PyTorch's float32 kernel is within an ulp or two of that, and the
// reference should carry no error of its own.
//
// It is recorded and runs with the next operation, so that a Linear of its
// output right after can take it into its GEMM's packing (norm.go).
func (s *Stream) LayerNorm(dst, x, weight, bias backend.Tensor, eps float32) {
	if !s.ok("layerNorm", dst, x, weight, bias) || !s.check(backend.CheckLayerNorm(dst, x, weight, bias, eps)) {
		return
	}
	s.norm = &normOp{dst: dst.(*tensor), x: data(x), w: data(weight), b: data(bias), eps: eps, m: x.Rows(), d: x.Cols()}
}

// layerNormRows normalises rows [0, n.m) of n.x into n.dst, a parallel pass.
func (b *Backend) layerNormRows(n *normOp) {
	d, out := n.d, n.dst.data
	// 32 rows a chunk, ~10 µs of the SIMD rows: finer grains would spread
	// one question over more workers, but hand out more tasks, and at
	// 16 cores the pool's hand-offs cost 16–19 µs an operation.
	b.parallelFor(n.m, 32, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			layerNormRow(out[r*d:r*d+d], n.x[r*d:r*d+d], n.w, n.b, n.eps)
		}
	})
}

// layerNormRow normalises one row: the AVX-512 kernels where the CPU has
// them (ops_amd64.go: the same float64 arithmetic, the sums in 16 lanes),
// else the Go loops below.
func layerNormRow(out, in, w, b []float32, eps float32) {
	if mean, sq, ok := layerNormStatsSIMD(in); ok {
		rstd := 1 / math.Sqrt(sq/float64(len(in))+float64(eps))
		layerNormApplySIMD(out, in, w, b, mean, rstd)
		return
	}
	// Four partial sums (in float64, whose rounding is far below the
	// float32 result's) keep four additions in flight.
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(in); i += 4 {
		s0 += float64(in[i])
		s1 += float64(in[i+1])
		s2 += float64(in[i+2])
		s3 += float64(in[i+3])
	}
	for ; i < len(in); i++ {
		s0 += float64(in[i])
	}
	mean := ((s0 + s1) + (s2 + s3)) / float64(len(in))
	var q0, q1, q2, q3 float64
	i = 0
	for ; i+4 <= len(in); i += 4 {
		d0, d1 := float64(in[i])-mean, float64(in[i+1])-mean
		d2, d3 := float64(in[i+2])-mean, float64(in[i+3])-mean
		q0 += d0 * d0
		q1 += d1 * d1
		q2 += d2 * d2
		q3 += d3 * d3
	}
	for ; i < len(in); i++ {
		d := float64(in[i]) - mean
		q0 += d * d
	}
	sq := (q0 + q1) + (q2 + q3)
	rstd := 1 / math.Sqrt(sq/float64(len(in))+float64(eps))
	w = w[:len(in)]
	for i, v := range in {
		y := float32((float64(v) - mean) * rstd * float64(w[i]))
		if b != nil {
			y += b[i]
		}
		out[i] = y
	}
}

// Add implements backend.Stream.
func (s *Stream) Add(dst, a, b backend.Tensor) {
	// The Linear that made b, if it is still pending, runs with this Add
	// as its epilogue (gemm.go, gemmResidual): the residual x += proj of
	// every encoder layer then costs no pass of its own. The pair is
	// recorded and runs with the next operation, so that a Discard of proj
	// in between spares storing it (Stream.Discard). Only when the
	// Linear's input is neither dst nor a: its units would otherwise write
	// (or the epilogue read) rows other units still read as input.
	op := s.pending
	s.pending = nil
	fused := op != nil && backend.Tensor(op.dst) == b && op.bias == nil && op.act == backend.Identity && op.rope == nil &&
		!sharesFirst(dst, op.x) && !sharesFirst(a, op.x)
	if !fused && op != nil {
		s.be.runLinear(op)
	}
	if !s.ok("add", dst, a, b) || !s.check(backend.CheckAdd(dst, a, b)) {
		if fused {
			s.be.runLinear(op)
		}
		return
	}
	if fused {
		s.fused = &fusedOp{op: op, dst: data(dst), a: data(a)}
		return
	}
	out, x, y := data(dst), data(a), data(b)
	// 16,384 values a chunk, for the reason LayerNorm's chunks are 32 rows.
	s.be.parallelFor(len(x), 1<<14, func(lo, hi int) { addSlices(out[lo:hi], x[lo:hi], y[lo:hi]) })
}

// addSlices sets o[i] = x[i] + y[i] (one float32 addition each), with
// AVX-512 where there is some.
func addSlices(o, x, y []float32) {
	if addSIMD(o, x, y) {
		return
	}
	for i := range x {
		o[i] = x[i] + y[i]
	}
}

// Activate implements backend.Stream.
func (s *Stream) Activate(dst, x backend.Tensor, act backend.Activation) {
	if !s.ok("activate", dst, x) || !s.check(backend.CheckActivate(dst, x, act)) {
		return
	}
	out, in := data(dst), data(x)
	cols := x.Cols()
	s.be.parallelFor(x.Rows(), 16, func(lo, hi int) {
		activate(out[lo*cols:hi*cols], in[lo*cols:hi*cols], act)
	})
}

func activate(out, in []float32, act backend.Activation) {
	out = out[:len(in)]
	switch act {
	case backend.GELU:
		geluSlice(out, in)
	case backend.ReLU:
		for i, v := range in {
			out[i] = max(v, 0)
		}
	default:
		copy(out, in)
	}
}

// Softmax implements backend.Stream.
func (s *Stream) Softmax(dst, x backend.Tensor) {
	if !s.ok("softmax", dst, x) || !s.check(backend.CheckSoftmax(dst, x)) {
		return
	}
	out, in := data(dst), data(x)
	d := x.Cols()
	for r := range x.Rows() {
		softmaxRow(out[r*d:r*d+d], in[r*d:r*d+d])
	}
}

// softmaxRow is a max-subtracted softmax with a float64 sum.
func softmaxRow(out, in []float32) {
	top := float32(math.Inf(-1))
	for _, v := range in {
		top = max(top, v)
	}
	var sum float64
	for _, v := range in {
		sum += math.Exp(float64(v - top))
	}
	for i, v := range in {
		out[i] = float32(math.Exp(float64(v-top)) / sum)
	}
}

// GeGLU implements backend.Stream.
func (s *Stream) GeGLU(dst, x backend.Tensor) {
	// The Linear that made x, if it is still pending, runs fused with this
	// GeGLU (gemm.go, gemmGeGLU), recorded like Add's fused pair.
	op := s.pending
	s.pending = nil
	fused := op != nil && backend.Tensor(op.dst) == x && op.rope == nil && !sharesFirst(dst, op.x)
	if !fused && op != nil {
		s.be.runLinear(op)
	}
	if !s.ok("geglu", dst, x) || !s.check(backend.CheckGeGLU(dst, x)) {
		if fused {
			s.be.runLinear(op)
		}
		return
	}
	if fused {
		s.fused = &fusedOp{op: op, geglu: true, dst: data(dst)}
		return
	}
	inner := dst.Cols()
	out, in := data(dst), data(x)
	s.be.parallelFor(x.Rows(), 4, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			value := in[r*2*inner : r*2*inner+inner]
			gate := in[r*2*inner+inner : (r+1)*2*inner]
			gegluSlice(out[r*inner:r*inner+inner], value, gate)
		}
	})
}

// ActFeatures implements backend.Stream. The features are computed in
// float64 and rounded once.
func (s *Stream) ActFeatures(dst, cls, logits backend.Tensor, counts []int) {
	if !s.ok("actFeatures", dst, cls, logits) || !s.check(backend.CheckActFeatures(dst, cls, logits, counts)) {
		return
	}
	d := cls.Cols()
	out, h, z := data(dst), data(cls), data(logits)
	for r, k := range counts {
		row := out[r*(d+4) : (r+1)*(d+4)]
		copy(row, h[r*d:r*d+d])
		f := actFeatures(z[:k])
		copy(row[d:], f[:])
		z = z[k:]
	}
}

// actFeatures is the reference rule of backend.Stream.ActFeatures for one row
// of real (unpadded, untempered) logits.
func actFeatures(logits []float32) [4]float32 {
	top := math.Inf(-1)
	for _, v := range logits {
		top = max(top, float64(v))
	}
	p := make([]float64, len(logits))
	var sum float64
	for i, v := range logits {
		p[i] = math.Exp(float64(v) - top)
		sum += p[i]
	}
	var top1, top2, ent float64
	for i := range p {
		p[i] /= sum
		ent -= p[i] * math.Log(max(p[i], 1e-9))
		switch {
		case p[i] > top1:
			top1, top2 = p[i], top1
		case p[i] > top2:
			top2 = p[i]
		}
	}
	k := float64(max(2, len(logits)))
	return [4]float32{float32(top1), float32(top1 - top2), float32(ent / math.Log(k)), float32(k / 255)}
}

// sharesFirst reports whether t's values start where xs does (t is the
// tensor xs was read from): a GeGLU writing into the Linear's own input
// cannot run fused with it.
func sharesFirst(t backend.Tensor, xs []float32) bool {
	d := data(t)
	return len(d) > 0 && len(xs) > 0 && &d[0] == &xs[0]
}
