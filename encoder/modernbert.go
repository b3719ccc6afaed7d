package encoder

import (
	"context"
	"fmt"
	"math"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// ModernBERT holds the encoder's weights on one backend.
type ModernBERT struct {
	cfg       weights.EncoderConfig
	tokEmb    backend.Tensor // [vocab, d]
	embNorm   backend.Tensor // [1, d], LayerNorm without bias
	layers    []layer
	finalNorm backend.Tensor
}

// layer is one pre-norm transformer block.
type layer struct {
	attnNorm backend.Tensor // nil in layer 0, which uses Identity
	wqkv     backend.Tensor // [3d, d], rows [q | k | v]
	wo       backend.Tensor // [d, d]
	mlpNorm  backend.Tensor
	wi       backend.Tensor // [2I, d], rows [value | gate]
	mlpWo    backend.Tensor // [d, I]
	sliding  bool
	theta    float64
}

// New uploads the encoder weights of ckpt to be. Every missing or
// misshapen weight is reported.
func New(be backend.Backend, ckpt *weights.Checkpoint) (*ModernBERT, error) {
	cfg := ckpt.Encoder
	d, inner := cfg.HiddenSize, cfg.IntermediateSize
	if d <= 0 || inner <= 0 || cfg.NumHeads <= 0 || d%cfg.NumHeads != 0 || cfg.HeadDim()%2 != 0 || len(cfg.LayerKinds) != cfg.NumLayers {
		return nil, fmt.Errorf("encoder: unusable config: hidden %d, intermediate %d, heads %d, %d layer kinds for %d layers",
			d, inner, cfg.NumHeads, len(cfg.LayerKinds), cfg.NumLayers)
	}
	ld := backend.NewLoader(be, ckpt)
	m := &ModernBERT{
		cfg:       cfg,
		tokEmb:    ld.Matrix("encoder.embeddings.tok_embeddings.weight", cfg.VocabSize, d),
		embNorm:   ld.Vector("encoder.embeddings.norm.weight", d),
		finalNorm: ld.Vector("encoder.final_norm.weight", d),
		layers:    make([]layer, cfg.NumLayers),
	}
	for i := range m.layers {
		name := func(s string) string { return fmt.Sprintf("encoder.layers.%d.%s", i, s) }
		l := &m.layers[i]
		if i > 0 {
			l.attnNorm = ld.Vector(name("attn_norm.weight"), d)
		}
		l.wqkv = ld.Matrix(name("attn.Wqkv.weight"), 3*d, d)
		l.wo = ld.Matrix(name("attn.Wo.weight"), d, d)
		l.mlpNorm = ld.Vector(name("mlp_norm.weight"), d)
		l.wi = ld.Matrix(name("mlp.Wi.weight"), 2*inner, d)
		l.mlpWo = ld.Matrix(name("mlp.Wo.weight"), d, inner)
		l.sliding = cfg.LayerKinds[i] == weights.SlidingAttention
		l.theta = cfg.RopeTheta(i)
	}
	if err := ld.Err(); err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	return m, nil
}

// Config is the encoder configuration the model was built from.
func (m *ModernBERT) Config() weights.EncoderConfig { return m.cfg }

// Forward records the encoder on s over the token ids of a batch laid out
// as layout (right-padded with the pad id, or packed on a stream that takes it)
// and returns last_hidden_state [layout.Rows(), d]. It checks ctx between layers. observe, when not nil,
// sees ("embeddings", 0, x), ("layer", i, x) after each encoder layer (the
// residual stream, before the final norm) and ("final", 0, h).
func (m *ModernBERT) Forward(ctx context.Context, s backend.Stream, ids []int32, layout backend.Layout, observe backend.Observer) (backend.Tensor, error) {
	cfg := m.cfg
	d, inner := cfg.HiddenSize, cfg.IntermediateSize
	rows := len(ids)
	if layout.SeqLen <= 0 || rows != layout.Rows() {
		return nil, fmt.Errorf("encoder: %w: %d ids for %d rows of length %d (packed %v)", backend.ErrShape, rows, len(layout.Lengths), layout.SeqLen, layout.Packed)
	}
	if layout.Packed && !backend.PacksRows(s) {
		return nil, fmt.Errorf("encoder: %w: a packed batch on a stream that does not take one", backend.ErrShape)
	}
	if observe == nil {
		observe = func(backend.Stream, string, int, backend.Tensor) {}
	}
	heads, headDim := cfg.NumHeads, cfg.HeadDim()
	eps := float32(cfg.NormEps)

	x := s.New(rows, d)
	s.Gather(x, m.tokEmb, ids)
	s.LayerNorm(x, x, m.embNorm, nil, eps)
	observe(s, "embeddings", 0, x)

	normed := s.New(rows, d)
	qkv := s.New(rows, 3*d)
	attn := s.New(rows, d)
	proj := s.New(rows, d)
	up := s.New(rows, 2*inner)
	act := s.New(rows, inner)
	for i, l := range m.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := x
		if l.attnNorm != nil {
			s.LayerNorm(normed, x, l.attnNorm, nil, eps)
			h = normed
		}
		s.Linear(qkv, h, l.wqkv, nil, backend.Identity)
		// Discard marks scratch tensors nobody reads again before they
		// are overwritten, so a fusing backend need not store them (the
		// Metal one folds the norm into this GEMM, the RoPE into the
		// attention, the Adds and the GeGLU into GEMM epilogues; the CUDA
		// one stores only the 16-bit copy of a norm, attention or GeGLU
		// output that the next GEMM reads).
		backend.Discard(s, normed)
		s.Rope(qkv, backend.RopeParams{Layout: layout, Heads: heads, HeadDim: headDim, Theta: l.theta})
		s.Attention(attn, qkv, backend.AttentionParams{
			Layout:  layout,
			Heads:   heads,
			HeadDim: headDim,
			Scale:   float32(1 / math.Sqrt(float64(headDim))),
			Sliding: l.sliding,
			// local_attention is the full window; HF ModernBERT allows
			// |i−j| ≤ local_attention // 2.
			Radius: cfg.LocalAttention / 2,
		})
		backend.Discard(s, qkv)
		s.Linear(proj, attn, l.wo, nil, backend.Identity)
		backend.Discard(s, attn)
		s.Add(x, x, proj)
		backend.Discard(s, proj)

		s.LayerNorm(normed, x, l.mlpNorm, nil, eps)
		s.Linear(up, normed, l.wi, nil, backend.Identity)
		backend.Discard(s, normed)
		s.GeGLU(act, up)
		backend.Discard(s, up)
		s.Linear(proj, act, l.mlpWo, nil, backend.Identity)
		backend.Discard(s, act)
		s.Add(x, x, proj)
		backend.Discard(s, proj)
		if err := s.Err(); err != nil {
			return nil, fmt.Errorf("encoder layer %d: %w", i, err)
		}
		observe(s, "layer", i, x)
		// Between layers only x is live: a recording backend may start
		// the layers so far while it records the next.
		backend.Submit(s)
	}
	out := s.New(rows, d)
	s.LayerNorm(out, x, m.finalNorm, nil, eps)
	observe(s, "final", 0, out)
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	return out, nil
}
