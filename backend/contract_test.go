package backend_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// mat is a shape-only tensor handle: the contracts read nothing else.
type mat struct{ rows, cols int }

func (m *mat) Rows() int { return m.rows }
func (m *mat) Cols() int { return m.cols }

func m(rows, cols int) *mat { return &mat{rows, cols} }

// sliceTensor is a handle type Go cannot compare with ==; the aliasing
// checks must not panic on it.
type sliceTensor struct {
	rows, cols int
	data       []float32
}

func (t sliceTensor) Rows() int { return t.rows }
func (t sliceTensor) Cols() int { return t.cols }

// TestCheck runs every op contract on operands it must accept and on
// operands it must refuse. A refusal wraps ErrShape (ErrDType for an
// unknown upload dtype) and names the op and the bad part.
func TestCheck(t *testing.T) {
	x, sq := m(4, 8), m(3, 3)
	qkv, heads := m(6, 3*2*4), m(6, 2*4)
	rope := backend.RopeParams{Layout: backend.Layout{SeqLen: 3}, Heads: 2, HeadDim: 4, Theta: 10000}
	attn := backend.AttentionParams{Layout: backend.Layout{SeqLen: 3, Lengths: []int{3, 1}}, Heads: 2, HeadDim: 4, Scale: 0.5, Sliding: true, Radius: 1}
	with := func(p backend.AttentionParams, edit func(*backend.AttentionParams)) backend.AttentionParams {
		p.Lengths = append([]int(nil), p.Lengths...)
		edit(&p)
		return p
	}
	withRope := func(edit func(*backend.RopeParams)) backend.RopeParams {
		p := rope
		edit(&p)
		return p
	}
	var nilMat *mat
	cls, logits := m(2, 8), m(1, 5)
	cases := []struct {
		name    string
		err     error
		wantErr error  // nil: accepted
		want    string // a part of the message naming what is wrong
	}{
		{"dims ok", backend.CheckDims(2, 3), nil, ""},
		{"dims zero rows", backend.CheckDims(0, 3), backend.ErrShape, "new: "},
		{"dims negative cols", backend.CheckDims(2, -1), backend.ErrShape, "[2, -1]"},
		{"dims over int32", backend.CheckDims(1<<16, 1<<16), backend.ErrShape, "new: "},
		{"fromHost ok", backend.CheckFromHost(2, 3, 6), nil, ""},
		{"fromHost short", backend.CheckFromHost(2, 3, 5), backend.ErrShape, "5 values for [2, 3]"},
		{"fromHost bad dims", backend.CheckFromHost(0, 3, 0), backend.ErrShape, "new: "},
		{"read ok", backend.CheckRead(x, 32), nil, ""},
		{"read short", backend.CheckRead(x, 31), backend.ErrShape, "read: "},
		{"read nil", backend.CheckRead(nil, 0), backend.ErrShape, "tensor is nil"},
		{"upload ok f32", backend.CheckUpload("w", backend.F32, 2, 3, 24), nil, ""},
		{"upload ok bf16", backend.CheckUpload("w", backend.BF16, 2, 3, 12), nil, ""},
		{"upload short", backend.CheckUpload("w", backend.F16, 2, 3, 11), backend.ErrShape, "upload w: "},
		{"upload bad shape", backend.CheckUpload("w", backend.F32, 0, 3, 0), backend.ErrShape, "bad shape [0, 3]"},
		{"upload dtype", backend.CheckUpload("w", backend.DType(99), 2, 3, 24), backend.ErrDType, "upload w: "},

		{"gather ok", backend.CheckGather(m(3, 8), x, []int32{3, 0, 3}), nil, ""},
		{"gather empty index", backend.CheckGather(m(1, 8), x, nil), backend.ErrShape, "gather: "},
		{"gather width", backend.CheckGather(m(2, 7), x, []int32{0, 1}), backend.ErrShape, "dst [2, 7]"},
		{"gather index high", backend.CheckGather(m(2, 8), x, []int32{0, 4}), backend.ErrShape, "index[1] = 4"},
		{"gather index negative", backend.CheckGather(m(1, 8), x, []int32{-1}), backend.ErrShape, "index[0] = -1"},
		{"gather aliased", backend.CheckGather(x, x, []int32{0, 1, 2, 3}), backend.ErrShape, "aliases the table"},
		{"gather nil table", backend.CheckGather(x, nil, nil), backend.ErrShape, "table is nil"},

		{"layerNorm ok", backend.CheckLayerNorm(m(4, 8), x, m(1, 8), m(1, 8), 1e-5), nil, ""},
		{"layerNorm in place, no bias, eps 0", backend.CheckLayerNorm(x, x, m(1, 8), nil, 0), nil, ""},
		{"layerNorm dst", backend.CheckLayerNorm(m(4, 7), x, m(1, 8), nil, 1e-5), backend.ErrShape, "layerNorm: "},
		{"layerNorm weight", backend.CheckLayerNorm(x, x, m(2, 8), nil, 1e-5), backend.ErrShape, "weight [2, 8]"},
		{"layerNorm bias", backend.CheckLayerNorm(x, x, m(1, 8), m(1, 4), 1e-5), backend.ErrShape, "bias [1, 4]"},
		{"layerNorm eps negative", backend.CheckLayerNorm(x, x, m(1, 8), nil, -1e-5), backend.ErrShape, "eps"},
		{"layerNorm eps NaN", backend.CheckLayerNorm(x, x, m(1, 8), nil, float32(math.NaN())), backend.ErrShape, "eps NaN"},
		{"layerNorm eps inf", backend.CheckLayerNorm(x, x, m(1, 8), nil, float32(math.Inf(1))), backend.ErrShape, "eps +Inf"},
		{"layerNorm nil weight pointer", backend.CheckLayerNorm(x, x, nilMat, nil, 1e-5), backend.ErrShape, "weight is a nil"},

		{"linear ok", backend.CheckLinear(m(4, 3), x, m(3, 8), m(1, 3), backend.GELU), nil, ""},
		{"linear no bias relu", backend.CheckLinear(m(4, 3), x, m(3, 8), nil, backend.ReLU), nil, ""},
		{"linear K", backend.CheckLinear(m(4, 3), x, m(3, 7), nil, backend.Identity), backend.ErrShape, "weightᵀ [3, 7]"},
		{"linear dst", backend.CheckLinear(m(4, 4), x, m(3, 8), nil, backend.Identity), backend.ErrShape, "dst [4, 4], want [4, 3]"},
		{"linear bias", backend.CheckLinear(m(4, 3), x, m(3, 8), m(3, 1), backend.Identity), backend.ErrShape, "bias [3, 1]"},
		{"linear dst is x", backend.CheckLinear(sq, sq, m(3, 3), nil, backend.Identity), backend.ErrShape, "aliases"},
		{"linear dst is weight", backend.CheckLinear(sq, m(3, 3), sq, nil, backend.Identity), backend.ErrShape, "aliases"},
		{"linear activation", backend.CheckLinear(m(4, 3), x, m(3, 8), nil, backend.Activation(7)), backend.ErrShape, "Activation(7)"},
		{"linear nil dst", backend.CheckLinear(nil, x, m(3, 8), nil, backend.Identity), backend.ErrShape, "dst is nil"},
		{"linear uncomparable handles", backend.CheckLinear(sliceTensor{4, 3, nil}, sliceTensor{4, 8, nil}, sliceTensor{3, 8, nil}, nil, backend.Identity), nil, ""},

		{"add ok in place", backend.CheckAdd(x, x, m(4, 8)), nil, ""},
		{"add a", backend.CheckAdd(x, m(4, 7), m(4, 8)), backend.ErrShape, "add: "},
		{"add b", backend.CheckAdd(x, m(4, 8), m(8, 4)), backend.ErrShape, "b [8, 4]"},

		{"activate ok", backend.CheckActivate(x, x, backend.GELU), nil, ""},
		{"activate shape", backend.CheckActivate(m(4, 7), x, backend.ReLU), backend.ErrShape, "activate: "},
		{"activate unknown", backend.CheckActivate(x, x, backend.Activation(3)), backend.ErrShape, "Activation(3)"},

		{"softmax ok", backend.CheckSoftmax(x, x), nil, ""},
		{"softmax shape", backend.CheckSoftmax(m(8, 4), x), backend.ErrShape, "softmax: "},

		{"geglu ok", backend.CheckGeGLU(m(4, 4), x), nil, ""},
		{"geglu cols", backend.CheckGeGLU(m(4, 3), x), backend.ErrShape, "twice"},
		{"geglu rows", backend.CheckGeGLU(m(3, 4), x), backend.ErrShape, "geglu: "},

		{"rope ok", backend.CheckRope(qkv, rope), nil, ""},
		{"rope odd headDim", backend.CheckRope(m(6, 3*2*3), withRope(func(p *backend.RopeParams) { p.HeadDim = 3 })), backend.ErrShape, "must be even"},
		{"rope zero seqLen", backend.CheckRope(qkv, withRope(func(p *backend.RopeParams) { p.SeqLen = 0 })), backend.ErrShape, "seqLen 0"},
		{"rope zero heads", backend.CheckRope(qkv, withRope(func(p *backend.RopeParams) { p.Heads = 0 })), backend.ErrShape, "heads 0"},
		{"rope cols", backend.CheckRope(heads, rope), backend.ErrShape, "qkv [6, 8]"},
		{"rope rows", backend.CheckRope(m(5, 24), rope), backend.ErrShape, "qkv [5, 24]"},
		{"rope padded lengths ok", backend.CheckRope(qkv, withRope(func(p *backend.RopeParams) { p.Lengths = []int{3, 1} })), nil, ""},
		{"rope padded lengths rows", backend.CheckRope(qkv, withRope(func(p *backend.RopeParams) { p.Lengths = []int{3} })), backend.ErrShape, "1 rows of length 3"},
		{"rope packed without lengths", backend.CheckRope(qkv, withRope(func(p *backend.RopeParams) { p.Packed = true })), backend.ErrShape, "without its lengths"},
		{"rope theta zero", backend.CheckRope(qkv, withRope(func(p *backend.RopeParams) { p.Theta = 0 })), backend.ErrShape, "theta 0"},
		{"rope theta NaN", backend.CheckRope(qkv, withRope(func(p *backend.RopeParams) { p.Theta = math.NaN() })), backend.ErrShape, "theta NaN"},
		{"rope theta inf", backend.CheckRope(qkv, withRope(func(p *backend.RopeParams) { p.Theta = math.Inf(1) })), backend.ErrShape, "theta +Inf"},

		{"attention ok", backend.CheckAttention(heads, qkv, attn), nil, ""},
		{"attention radius", backend.CheckAttention(heads, qkv, with(attn, func(p *backend.AttentionParams) { p.Radius = -1 })), backend.ErrShape, "radius -1"},
		{"attention zero headDim", backend.CheckAttention(heads, qkv, with(attn, func(p *backend.AttentionParams) { p.HeadDim = 0 })), backend.ErrShape, "headDim 0"},
		{"attention batch", backend.CheckAttention(heads, qkv, with(attn, func(p *backend.AttentionParams) { p.Lengths = []int{3} })), backend.ErrShape, "for 1 rows of length 3"},
		{"attention no rows", backend.CheckAttention(heads, qkv, with(attn, func(p *backend.AttentionParams) { p.Lengths = nil })), backend.ErrShape, "attention: "},
		{"attention dst", backend.CheckAttention(m(6, 9), qkv, attn), backend.ErrShape, "dst [6, 9], want [6, 8]"},
		{"attention length zero", backend.CheckAttention(heads, qkv, with(attn, func(p *backend.AttentionParams) { p.Lengths[1] = 0 })), backend.ErrShape, "lengths[1] = 0"},
		{"attention length long", backend.CheckAttention(heads, qkv, with(attn, func(p *backend.AttentionParams) { p.Lengths[0] = 4 })), backend.ErrShape, "lengths[0] = 4"},
		// dst = qkv would need H·Dh = 3·H·Dh columns: the dst rule refuses it first.
		{"attention dst is qkv", backend.CheckAttention(m(6, 3), m(6, 3), backend.AttentionParams{Layout: backend.Layout{SeqLen: 3, Lengths: []int{3, 3}}, Heads: 1, HeadDim: 1}), backend.ErrShape, "dst [6, 3], want [6, 1]"},
		{"attention nil qkv", backend.CheckAttention(heads, nil, attn), backend.ErrShape, "qkv is nil"},

		{"actFeatures ok", backend.CheckActFeatures(m(2, 12), cls, logits, []int{2, 3}), nil, ""},
		{"actFeatures one logit", backend.CheckActFeatures(m(2, 12), cls, m(2, 1), []int{1, 1}), nil, ""},
		{"actFeatures zero count", backend.CheckActFeatures(m(2, 12), cls, logits, []int{5, 0}), backend.ErrShape, "counts[1] = 0"},
		{"actFeatures sum", backend.CheckActFeatures(m(2, 12), cls, logits, []int{2, 2}), backend.ErrShape, "summing to 4"},
		{"actFeatures rows", backend.CheckActFeatures(m(2, 12), cls, logits, []int{5}), backend.ErrShape, "1 counts"},
		{"actFeatures dst", backend.CheckActFeatures(m(2, 8), cls, logits, []int{2, 3}), backend.ErrShape, "dst [2, 8]"},
		{"actFeatures aliased", backend.CheckActFeatures(logits, m(1, 1), logits, []int{5}), backend.ErrShape, "aliases"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.wantErr == nil {
				if c.err != nil {
					t.Fatalf("err = %v, want nil", c.err)
				}
				return
			}
			if !errors.Is(c.err, c.wantErr) {
				t.Fatalf("err = %v, want %v", c.err, c.wantErr)
			}
			if !strings.Contains(c.err.Error(), c.want) {
				t.Errorf("err = %q, want it to name %q", c.err, c.want)
			}
		})
	}
}
