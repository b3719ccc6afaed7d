package heads

import (
	"context"
	"fmt"
	"math"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// headNormEps is nn.LayerNorm's default eps, which the decision head, the
// scorer and PyTorch's TransformerEncoderLayer use (not the encoder's
// norm_eps).
const headNormEps = 1e-5

// Decision is the decision head: type_emb[qtype] added to every position,
// then pre-norm nn.TransformerEncoderLayers (ReLU feed-forward, no final
// norm).
type Decision struct {
	cfg     weights.HeadConfig
	typeEmb backend.Tensor // [3, d]: choice, score, noul
	layers  []headLayer
}

type headLayer struct {
	norm1W, norm1B   backend.Tensor
	inProjW, inProjB backend.Tensor // [3d, d], [1, 3d]: rows [q | k | v]
	outProjW         backend.Tensor
	outProjB         backend.Tensor
	norm2W, norm2B   backend.Tensor
	linear1W         backend.Tensor // [4d, d]
	linear1B         backend.Tensor
	linear2W         backend.Tensor // [d, 4d]
	linear2B         backend.Tensor
}

// NumQuestionTypes is the number of type_emb rows: 0 choice, 1 score, 2 noul.
const NumQuestionTypes = 3

// NewDecision uploads the decision head of ckpt to be.
func NewDecision(be backend.Backend, ckpt *weights.Checkpoint) (*Decision, error) {
	cfg := ckpt.Head
	d := cfg.Dim
	if d <= 0 || cfg.Heads <= 0 || cfg.HeadDim*cfg.Heads != d || cfg.FFN <= 0 {
		return nil, fmt.Errorf("heads: unusable decision-head config: dim %d, %d heads of %d, ffn %d", d, cfg.Heads, cfg.HeadDim, cfg.FFN)
	}
	ld := backend.NewLoader(be, ckpt)
	m := &Decision{
		cfg:     cfg,
		typeEmb: ld.Matrix("type_emb.weight", NumQuestionTypes, d),
		layers:  make([]headLayer, cfg.Layers),
	}
	for j := range m.layers {
		name := func(s string) string { return fmt.Sprintf("head.layers.%d.%s", j, s) }
		m.layers[j] = headLayer{
			norm1W:   ld.Vector(name("norm1.weight"), d),
			norm1B:   ld.Vector(name("norm1.bias"), d),
			inProjW:  ld.Matrix(name("self_attn.in_proj_weight"), 3*d, d),
			inProjB:  ld.Vector(name("self_attn.in_proj_bias"), 3*d),
			outProjW: ld.Matrix(name("self_attn.out_proj.weight"), d, d),
			outProjB: ld.Vector(name("self_attn.out_proj.bias"), d),
			norm2W:   ld.Vector(name("norm2.weight"), d),
			norm2B:   ld.Vector(name("norm2.bias"), d),
			linear1W: ld.Matrix(name("linear1.weight"), cfg.FFN, d),
			linear1B: ld.Vector(name("linear1.bias"), cfg.FFN),
			linear2W: ld.Matrix(name("linear2.weight"), d, cfg.FFN),
			linear2B: ld.Vector(name("linear2.bias"), d),
		}
	}
	if err := ld.Err(); err != nil {
		return nil, fmt.Errorf("heads: %w", err)
	}
	return m, nil
}

// Forward records the decision head on s over the encoder output hidden
// [layout.Rows(), d], updating it in place, and returns it. qtypes holds
// one entry per batch row. observe, when not nil, sees ("input", 0, h)
// after the type embedding and ("layer", j, h) after each head layer.
func (m *Decision) Forward(ctx context.Context, s backend.Stream, hidden backend.Tensor, qtypes []QType, layout backend.Layout, observe backend.Observer) (backend.Tensor, error) {
	return m.forward(ctx, s, hidden, qtypes, layout, nil, observe)
}

// ForwardRows is Forward for a caller that reads only the output rows keep
// (row indices into hidden: the [CLS] and marker positions). It returns
// [len(keep), d], row i holding Forward's row keep[i]. This is final-head
// pruning: the last layer still computes keys and values (and, in the
// attention op, queries) for every row, since every row is attended to, but
// its output projection, residual adds, second norm and feed-forward — three
// quarters of its weights' work — only for the kept rows. Every operation
// after the attention is row-wise, so the kept rows are the same values
// Forward computes (bit for bit on the cpu backend, whose GEMM rows do not
// depend on one another). The observer sees the last layer's pruned rows.
func (m *Decision) ForwardRows(ctx context.Context, s backend.Stream, hidden backend.Tensor, qtypes []QType, layout backend.Layout, keep []int32, observe backend.Observer) (backend.Tensor, error) {
	if len(keep) == 0 {
		return nil, fmt.Errorf("heads: %w: no rows to keep", backend.ErrShape)
	}
	for i, r := range keep {
		if r < 0 || int(r) >= hidden.Rows() {
			return nil, fmt.Errorf("heads: %w: keep[%d] = %d outside the %d rows", backend.ErrShape, i, r, hidden.Rows())
		}
	}
	return m.forward(ctx, s, hidden, qtypes, layout, keep, observe)
}

func (m *Decision) forward(ctx context.Context, s backend.Stream, hidden backend.Tensor, qtypes []QType, layout backend.Layout, keep []int32, observe backend.Observer) (backend.Tensor, error) {
	d := m.cfg.Dim
	rows := hidden.Rows()
	lengths, seqLen := layout.Lengths, layout.SeqLen
	if len(qtypes) != len(lengths) || rows != layout.Rows() || hidden.Cols() != d {
		return nil, fmt.Errorf("heads: %w: hidden [%d, %d] for %d rows of length %d (%d qtypes, packed %v), dim %d",
			backend.ErrShape, rows, hidden.Cols(), len(lengths), seqLen, len(qtypes), layout.Packed, d)
	}
	if observe == nil {
		observe = func(backend.Stream, string, int, backend.Tensor) {}
	}
	// type_emb[qtype] is broadcast to every position, padding included.
	typeIndex := make([]int32, 0, rows)
	for b, q := range qtypes {
		if q < 0 || q >= NumQuestionTypes {
			return nil, fmt.Errorf("heads: %w: qtype %d of row %d (want 0 choice, 1 score, 2 noul)", backend.ErrShape, q, b)
		}
		n := seqLen
		if layout.Packed {
			n = lengths[b]
		}
		for range n {
			typeIndex = append(typeIndex, int32(q))
		}
	}
	h := hidden
	scratch := s.New(rows, d)
	s.Gather(scratch, m.typeEmb, typeIndex)
	s.Add(h, h, scratch)
	observe(s, "input", 0, h)

	normed := scratch
	qkv := s.New(rows, 3*d)
	attn := s.New(rows, d)
	proj := s.New(rows, d)
	ffn := s.New(rows, m.cfg.FFN)
	for j, l := range m.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.LayerNorm(normed, h, l.norm1W, l.norm1B, headNormEps)
		s.Linear(qkv, normed, l.inProjW, l.inProjB, backend.Identity)
		// Scratch nobody reads again before it is overwritten (see the
		// encoder): a fusing backend folds the norms into the next GEMM's
		// prologue and the Adds into the GEMM before them, storing neither.
		backend.Discard(s, normed)
		s.Attention(attn, qkv, backend.AttentionParams{
			Layout:  layout,
			Heads:   m.cfg.Heads,
			HeadDim: m.cfg.HeadDim,
			Scale:   float32(1 / math.Sqrt(float64(m.cfg.HeadDim))),
		})
		if keep != nil && j == len(m.layers)-1 {
			// Final-head pruning: from here on only the kept rows.
			k := len(keep)
			kept := s.New(k, d)
			s.Gather(kept, h, keep)
			attnKept := s.New(k, d)
			s.Gather(attnKept, attn, keep)
			h, attn = kept, attnKept
			normed, proj, ffn = s.New(k, d), s.New(k, d), s.New(k, m.cfg.FFN)
		}
		s.Linear(proj, attn, l.outProjW, l.outProjB, backend.Identity)
		backend.Discard(s, attn)
		s.Add(h, h, proj)
		backend.Discard(s, proj)

		s.LayerNorm(normed, h, l.norm2W, l.norm2B, headNormEps)
		s.Linear(ffn, normed, l.linear1W, l.linear1B, backend.ReLU)
		backend.Discard(s, normed)
		s.Linear(proj, ffn, l.linear2W, l.linear2B, backend.Identity)
		backend.Discard(s, ffn)
		s.Add(h, h, proj)
		backend.Discard(s, proj)
		if err := s.Err(); err != nil {
			return nil, fmt.Errorf("heads: decision layer %d: %w", j, err)
		}
		observe(s, "layer", j, h)
	}
	return h, nil
}
