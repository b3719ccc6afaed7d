//go:build linux

package cuda

import (
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// The recording side of a stream needs no GPU: what is recorded, folded and
// staged is checked here, in CI.

func TestPositions(t *testing.T) {
	for _, c := range []struct {
		name              string
		rows              int
		layout            backend.Layout
		pos, start, lengt []int32
	}{
		{"padded", 6, backend.Layout{SeqLen: 3, Lengths: []int{2, 3}},
			[]int32{0, 1, 2, 0, 1, 2}, []int32{0, 0, 0, 3, 3, 3}, []int32{2, 2, 2, 3, 3, 3}},
		{"packed", 5, backend.Layout{SeqLen: 3, Lengths: []int{2, 3}, Packed: true},
			[]int32{0, 1, 0, 1, 2}, []int32{0, 0, 2, 2, 2}, []int32{2, 2, 3, 3, 3}},
		{"no lengths", 4, backend.Layout{SeqLen: 2},
			[]int32{0, 1, 0, 1}, []int32{0, 0, 2, 2}, []int32{2, 2, 2, 2}},
	} {
		pos, start, length := positions(c.rows, c.layout)
		if !slices.Equal(pos, c.pos) || !slices.Equal(start, c.start) || !slices.Equal(length, c.lengt) {
			t.Errorf("%s: positions %v, starts %v, lengths %v; want %v, %v, %v", c.name, pos, start, length, c.pos, c.start, c.lengt)
		}
	}
}

func recording(p Precision) *stream {
	return &stream{be: &Backend{opts: Options{Precision: p}}, prec: p}
}

// Linear(p, …), Add(x, x, p), Discard(p) fold into one GEMM accumulating
// into x; anything else stays as recorded.
func TestDiscardFoldsResidualAdd(t *testing.T) {
	s := recording(FP32)
	x := s.FromHost(2, 4, make([]float32, 8))
	a := s.FromHost(2, 4, make([]float32, 8))
	w := s.FromHost(4, 4, make([]float32, 16))
	p := s.New(2, 4)
	s.Linear(p, a, w, nil, backend.Identity)
	s.Add(x, x, p)
	s.Discard(p)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(s.ops) != 1 || s.ops[0].lin == nil || !s.ops[0].lin.accumulate || s.ops[0].lin.d != x.(*tensor) {
		t.Fatalf("ops after the fold: %d, first %+v", len(s.ops), s.ops[0])
	}
	// With a bias on cuBLAS (linear_small takes one:
	// TestDiscardFoldsIntoSmallLinear), an activation, or an Add that is
	// not residual, nothing folds.
	for _, c := range []struct {
		name string
		rec  func(s *stream, x, a, w, p, bias backend.Tensor)
	}{
		{"bias", func(s *stream, x, a, w, p, bias backend.Tensor) {
			s.be.opts.NoSmallLinear = true
			s.Linear(p, a, w, bias, backend.Identity)
			s.Add(x, x, p)
		}},
		{"gelu", func(s *stream, x, a, w, p, bias backend.Tensor) {
			s.Linear(p, a, w, nil, backend.GELU)
			s.Add(x, x, p)
		}},
		{"into another", func(s *stream, x, a, w, p, bias backend.Tensor) {
			s.Linear(p, a, w, nil, backend.Identity)
			s.Add(a, x, p)
		}},
	} {
		s := recording(FP32)
		x := s.FromHost(2, 4, make([]float32, 8))
		a := s.FromHost(2, 4, make([]float32, 8))
		w := s.FromHost(4, 4, make([]float32, 16))
		bias := s.FromHost(1, 4, make([]float32, 4))
		p := s.New(2, 4)
		c.rec(s, x, a, w, p, bias)
		s.Discard(p)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if len(s.ops) != 2 {
			t.Errorf("%s: %d ops, want 2 (no fold)", c.name, len(s.ops))
		}
	}
}

// In the 16-bit precisions the producer of a GEMM's input writes the
// rounded copy; an input no producer wrote is converted by the GEMM.
func TestShadowedGEMMInputs(t *testing.T) {
	s := recording(FP16X2)
	x := s.FromHost(3, 8, make([]float32, 24))
	g := s.FromHost(1, 8, make([]float32, 8))
	w := s.FromHost(5, 8, make([]float32, 40))
	n := s.New(3, 8)
	s.LayerNorm(n, x, g, nil, 1e-5)
	y := s.New(3, 5)
	s.Linear(y, n, w, nil, backend.Identity)
	z := s.New(3, 5)
	s.Linear(z, x, w, nil, backend.Identity)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	ln, l1, l2 := s.ops[0], s.ops[1].lin, s.ops[2].lin
	if ln.shadow != n.(*tensor) || !l1.shadowIn || l2.shadowIn {
		t.Errorf("layerNorm writes the copy of %v, first GEMM reads a copy %v, second %v; want n, true, false", ln.shadow, l1.shadowIn, l2.shadowIn)
	}
	if got, want := s.temp, align(3*8*2*2, 256)+align(5*8*2*2, 256); got < want {
		t.Errorf("scratch for the converted operands %d bytes, want at least %d", got, want)
	}
}

// Over Options.MaxGraphs, the idle entries returned longest ago are freed,
// of one stream's the later segments first (their keys hold the earlier
// ones' addresses); entries in use are not, and a taken entry leaves the
// idle list.
func TestCacheEvictsOldestIdle(t *testing.T) {
	b := &Backend{opts: Options{MaxGraphs: 2}, cache: map[shapeKey][]*entry{}}
	e := func(h uint64) *entry { return &entry{key: shapeKey{hash: h}} }
	a, c, d := e(1), e(2), e(3)
	b.entries = 3
	if drop := b.cacheLocked([]*entry{a, c}); !slices.Equal(drop, []*entry{c}) {
		t.Fatalf("dropped %v, want the later segment (c)", drop)
	}
	if got := b.takeEntry(shapeKey{hash: 2}); got != nil {
		t.Errorf("a freed entry is still cached")
	}
	if got := b.takeEntry(shapeKey{hash: 1}); got != a {
		t.Fatalf("takeEntry = %v, want a", got)
	}
	if drop := b.cacheLocked([]*entry{a}); len(drop) != 0 {
		t.Errorf("dropped %v with 2 alive", drop)
	}
	b.entries++ // d, made by another stream meanwhile
	if drop := b.cacheLocked([]*entry{d}); !slices.Equal(drop, []*entry{a}) || !slices.Equal(b.idle, []*entry{d}) {
		t.Errorf("dropped %v, idle %v; want a dropped, d idle", drop, b.idle)
	}
}

// A weight's 16-bit copy is one term of the type the GEMMs read: fp16 in
// FP16X2 (only its activations are split in two), bf16 only in BF16.
// Converted at Upload or inside a GEMM, a weight is written the same way.
func TestWeightKindIsTheGEMMType(t *testing.T) {
	for _, c := range []struct {
		p             Precision
		operand, want uint64
	}{{FP16, 1, 1}, {BF16, 2, 2}, {FP16X2, 3, 1}} {
		if got := operandKind(c.p); got != c.operand {
			t.Errorf("%v: activation operands written as kind %d, want %d", c.p, got, c.operand)
		}
		if got := weightKind(c.p); got != c.want {
			t.Errorf("%v: weights written as kind %d, want %d (kernels.cu's to16: 1 fp16, 2 bf16)", c.p, got, c.want)
		}
	}
}

// recordingTiled is recording with a tiled attention kernel for head dim 4
// and a rope table, so that Rope and Attention record without a GPU.
func recordingTiled(p Precision) *stream {
	s := recording(p)
	s.be.k.attentionTiled = map[int]*[5]uintptr{4: {1, 1, 1, 1}}
	s.be.ropes = map[ropeKey]ropeTable{{10000, 4}: {addr: 1, positions: 1 << 20}}
	return s
}

func names(s *stream) []string {
	var out []string
	for _, o := range s.ops {
		out = append(out, o.name)
	}
	return out
}

// A Rope followed by the attention that reads its tensor folds into the
// tiled kernel; anything else that touches the tensor first, or after,
// gets the rope kernel recorded before it.
func TestRopeFoldsIntoAttention(t *testing.T) {
	layout := backend.Layout{SeqLen: 3, Lengths: []int{3, 2}, Packed: true}
	rp := backend.RopeParams{Layout: layout, Heads: 2, HeadDim: 4, Theta: 10000}
	ap := backend.AttentionParams{Layout: layout, Heads: 2, HeadDim: 4, Scale: 0.5}
	for _, c := range []struct {
		name string
		rec  func(s *stream, qkv, out backend.Tensor)
		want []string
	}{
		{"fold", func(s *stream, qkv, out backend.Tensor) {
			s.Rope(qkv, rp)
			s.Attention(out, qkv, ap)
		}, []string{"attention"}},
		{"read between", func(s *stream, qkv, out backend.Tensor) {
			s.Rope(qkv, rp)
			s.Add(qkv, qkv, qkv)
			s.Attention(out, qkv, ap)
		}, []string{"rope", "add", "attention"}},
		{"read after", func(s *stream, qkv, out backend.Tensor) {
			s.Rope(qkv, rp)
			s.Attention(out, qkv, ap)
			s.Add(qkv, qkv, qkv)
		}, []string{"attention", "rope", "add"}},
		{"two ropes", func(s *stream, qkv, out backend.Tensor) {
			s.Rope(qkv, rp)
			s.Rope(qkv, rp)
			s.Attention(out, qkv, ap)
		}, []string{"rope", "attention"}},
		{"other layout", func(s *stream, qkv, out backend.Tensor) {
			other := rp
			other.Lengths = []int{2, 3}
			s.Rope(qkv, other)
			s.Attention(out, qkv, ap)
		}, []string{"rope", "attention"}},
	} {
		s := recordingTiled(FP32)
		qkv := s.FromHost(5, 24, make([]float32, 120))
		out := s.New(5, 8)
		c.rec(s, qkv, out)
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := names(s); !slices.Equal(got, c.want) {
			t.Errorf("%s: recorded %v, want %v", c.name, got, c.want)
		}
	}
}

// Per-row metadata is staged once per layout, however many layers ask.
func TestLayoutStagedOnce(t *testing.T) {
	s := recordingTiled(FP32)
	layout := backend.Layout{SeqLen: 4, Lengths: []int{4, 3}, Packed: true}
	x := s.FromHost(7, 8, make([]float32, 56))
	w := s.FromHost(24, 8, make([]float32, 192))
	qkv := s.New(7, 24)
	before := len(s.stage)
	for range 3 {
		out := s.New(7, 8)
		s.Linear(qkv, x, w, nil, backend.Identity)
		s.Rope(qkv, backend.RopeParams{Layout: layout, Heads: 2, HeadDim: 4, Theta: 10000})
		s.Attention(out, qkv, backend.AttentionParams{Layout: layout, Heads: 2, HeadDim: 4, Scale: 0.5})
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := len(s.stage) - before; got != 256 {
		t.Errorf("staged %d bytes for three layers, want one tile list (256 after alignment)", got)
	}
	if got := names(s); !slices.Equal(got, []string{"linear (small)", "attention", "linear (small)", "attention", "linear (small)", "attention"}) {
		t.Errorf("recorded %v: a rope owed by qkv is dropped when a GEMM overwrites it", got)
	}
}

// In FP16X2 a plain GEMM into the segment's own tensor runs once over both
// terms and leaves its products apart; a residual Add of them and the
// LayerNorm after it fold into one kernel, GeGLU and attention read both
// terms, and anything else gets the sum recorded first.
func TestStackedTermsFP16X2(t *testing.T) {
	s := recordingTiled(FP16X2)
	x := s.FromHost(3, 8, make([]float32, 24))
	g := s.FromHost(1, 8, make([]float32, 8))
	w := s.FromHost(8, 8, make([]float32, 64))
	w3 := s.FromHost(24, 8, make([]float32, 192))
	n := s.New(3, 8)
	p := s.New(3, 8)
	s.LayerNorm(n, x, g, nil, 1e-5)
	s.Linear(p, n, w, nil, backend.Identity)
	if pt := p.(*tensor); !pt.stacked || s.ops[1].lin.two != pt.two() || pt.two() <= 0 {
		t.Fatalf("plain FP16X2 GEMM: stacked %v, two %d", pt.stacked, pt.two())
	}
	s.Add(x, x, p)
	s.Discard(p)
	s.LayerNorm(n, x, g, nil, 1e-5)
	qkv := s.New(3, 24)
	s.Linear(qkv, n, w3, nil, backend.Identity)
	layout := backend.Layout{SeqLen: 3, Lengths: []int{3}}
	s.Rope(qkv, backend.RopeParams{Layout: layout, Heads: 2, HeadDim: 4, Theta: 10000})
	out := s.New(3, 8)
	s.Attention(out, qkv, backend.AttentionParams{Layout: layout, Heads: 2, HeadDim: 4, Scale: 0.5})
	up := s.New(3, 16)
	w16 := s.FromHost(16, 8, make([]float32, 128))
	s.Linear(up, out, w16, nil, backend.Identity)
	act := s.New(3, 8)
	s.GeGLU(act, up)
	s.Linear(p, act, w, nil, backend.Identity)
	s.Softmax(n, p)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"layerNorm", "linear", "layerNorm", "linear", "attention", "linear", "geglu4", "linear", "terms", "softmax"}
	if got := names(s); !slices.Equal(got, want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
	if qkv.(*tensor).rope == nil || !qkv.(*tensor).stacked {
		t.Errorf("qkv after the folded attention: rope pending %v, stacked %v; want both (owed to later readers)",
			qkv.(*tensor).rope != nil, qkv.(*tensor).stacked)
	}
	// In FP16 nothing stacks: the residual Add folds into the GEMM.
	s = recordingTiled(FP16)
	x = s.FromHost(3, 8, make([]float32, 24))
	p = s.New(3, 8)
	s.Linear(p, x, w, nil, backend.Identity)
	if p.(*tensor).stacked {
		t.Errorf("FP16 GEMM output stacked")
	}
}

// BenchmarkRecordForward records what the ModernBERT-large encoder asks of a
// stream for one 93-token question (28 layers, the order of
// encoder.ModernBERT.Forward), without running it: the host's share of a
// request before the GPU starts.
func BenchmarkRecordForward(b *testing.B) {
	for _, q := range []int{1, 50} {
		b.Run(fmt.Sprintf("questions=%d", q), func(b *testing.B) { benchRecordForward(b, q) })
	}
}

// benchRecordForward records a ModernBERT-large forward over q packed
// rows of 93 tokens, the FP16 recording of the reduced run at q ≥ 4.
func benchRecordForward(b *testing.B, q int) {
	const n, d, inner, heads, dh, layers = 93, 1024, 2624, 16, 64, 28
	rows := q * n
	prec := FP16X2
	if q >= 4 {
		prec = FP16
	}
	be := &Backend{opts: Options{Precision: prec}}
	be.k.attentionTiled = map[int]*[5]uintptr{dh: {1, 1, 1, 1}}
	be.k.attentionMMA = map[int]*[4][3]uintptr{dh: {{2, 2, 2}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}}}
	be.ropes = map[ropeKey]ropeTable{{160000, dh}: {addr: 1, positions: 8192}, {10000, dh}: {addr: 1, positions: 8192}}
	be.sms = 132
	weight := func(r, c int) *tensor { return residentWeight(be, r, c, 1, 1) }
	type layer struct{ norm1, wqkv, wo, norm2, wi, wo2 *tensor }
	ls := make([]layer, layers)
	for i := range ls {
		ls[i] = layer{weight(1, d), weight(3*d, d), weight(d, d), weight(1, d), weight(2*inner, d), weight(d, inner)}
	}
	emb, embNorm, final := weight(50368, d), weight(1, d), weight(1, d)
	ids := make([]int32, rows)
	lengths := make([]int, q)
	for i := range lengths {
		lengths[i] = n
	}
	layout := backend.Layout{SeqLen: n, Lengths: lengths, Packed: true}
	b.ReportAllocs()
	for b.Loop() {
		s := be.NewStream().(*stream)
		x := s.New(rows, d)
		s.Gather(x, emb, ids)
		s.LayerNorm(x, x, embNorm, nil, 1e-5)
		normed, qkv, attn, proj := s.New(rows, d), s.New(rows, 3*d), s.New(rows, d), s.New(rows, d)
		up, act := s.New(rows, 2*inner), s.New(rows, inner)
		for i, l := range ls {
			theta := 160000.0
			if i%3 != 0 {
				theta = 10000
			}
			s.LayerNorm(normed, x, l.norm1, nil, 1e-5)
			s.Linear(qkv, normed, l.wqkv, nil, backend.Identity)
			s.Discard(normed)
			s.Rope(qkv, backend.RopeParams{Layout: layout, Heads: heads, HeadDim: dh, Theta: theta})
			s.Attention(attn, qkv, backend.AttentionParams{Layout: layout, Heads: heads, HeadDim: dh, Scale: 0.125, Sliding: i%3 != 0, Radius: 64})
			s.Discard(qkv)
			s.Linear(proj, attn, l.wo, nil, backend.Identity)
			s.Discard(attn)
			s.Add(x, x, proj)
			s.Discard(proj)
			s.LayerNorm(normed, x, l.norm2, nil, 1e-5)
			s.Linear(up, normed, l.wi, nil, backend.Identity)
			s.Discard(normed)
			s.GeGLU(act, up)
			s.Discard(up)
			s.Linear(proj, act, l.wo2, nil, backend.Identity)
			s.Discard(act)
			s.Add(x, x, proj)
			s.Discard(proj)
		}
		out := s.New(rows, d)
		s.LayerNorm(out, x, final, nil, 1e-5)
		if s.err != nil {
			b.Fatal(s.err)
		}
		s.Close() // nothing ran: no GPU to wait for
	}
}

// A nil operand (no bias) is nil to the operation, whatever the operation
// before it was given in that place.
func TestNilOperandsStayNil(t *testing.T) {
	s := recording(FP32)
	x := s.FromHost(2, 4, make([]float32, 8))
	w := s.FromHost(4, 4, make([]float32, 16))
	bias := s.FromHost(1, 4, make([]float32, 4))
	g := s.FromHost(1, 4, make([]float32, 4))
	y, z, n := s.New(2, 4), s.New(2, 4), s.New(2, 4)
	s.Linear(y, x, w, bias, backend.GELU)
	s.Linear(z, x, w, nil, backend.GELU)
	s.LayerNorm(n, x, g, bias, 1e-5)
	s.LayerNorm(n, x, g, nil, 1e-5)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if b := s.ops[1].lin.b; b != nil {
		t.Errorf("a Linear without bias records bias %p, the one before's", b)
	}
	if len(s.ops) != 4 {
		t.Fatalf("recorded %v", names(s))
	}
}

// A packed batch's graph depends on its token count and number of rows,
// not on the rows' lengths: two requests filled up to one token bucket
// record the same key, and the tile list staged for the attention has the
// grid's length, real tiles first, empty ones after.
func TestBucketSharesKey(t *testing.T) {
	record := func(lengths []int) (*stream, []uint64) {
		s := recordingTiled(FP16X2)
		s.be.sms = 132
		rows := 0
		for _, n := range lengths {
			rows += n
		}
		layout := backend.Layout{Lengths: lengths, SeqLen: slices.Max(lengths), Packed: true}
		x := s.FromHost(rows, 8, make([]float32, rows*8))
		w := s.FromHost(24, 8, make([]float32, 192))
		qkv, out := s.New(rows, 24), s.New(rows, 8)
		s.Linear(qkv, x, w, nil, backend.Identity)
		s.Rope(qkv, backend.RopeParams{Layout: layout, Heads: 2, HeadDim: 4, Theta: 10000})
		for _, sliding := range []bool{false, true} {
			s.Attention(out, qkv, backend.AttentionParams{Layout: layout, Heads: 2, HeadDim: 4, Scale: 0.5, Sliding: sliding, Radius: 2})
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return s, slices.Clone(s.words)
	}
	// 48 tokens in three rows, three ways; the last fills a bucket of 16.
	ways := [][]int{{40, 5, 3}, {16, 16, 16}, {1, 1, 46}}
	var first []uint64
	for i, lengths := range ways {
		s, words := record(lengths)
		if i == 0 {
			first = words
		} else if !slices.Equal(words, first) {
			t.Errorf("lengths %v record another key than %v", lengths, ways[0])
		}
		for _, c := range s.layouts {
			if c.what != layoutTiles {
				continue
			}
			grid := tileGrid(c.layout, c.rows, c.qt)
			tiles := tilesOf(c.layout, c.qt)
			if grid < tiles || grid > c.rows {
				t.Errorf("lengths %v, %d a tile: grid %d for %d tiles of %d rows", lengths, c.qt, grid, tiles, c.rows)
			}
			staged := s.stage[c.off : c.off+int64(20*grid)]
			for k := range grid {
				nq := int32(binary.LittleEndian.Uint32(staged[20*k+16:]))
				if (nq > 0) != (k < tiles) {
					t.Errorf("lengths %v: tile %d of %d holds %d queries; want the %d real tiles first", lengths, k, grid, nq, tiles)
				}
			}
		}
	}
	// A different number of rows is another shape.
	if _, words := record([]int{24, 24}); slices.Equal(words, first) {
		t.Errorf("two rows record the key of three")
	}
}

// At one query a warp the tiled attention runs sixteen warps a block (tiles
// of sixteen queries) unless AttentionWarps asks for eight; more queries a
// warp run eight warps.
func TestAttentionWarps(t *testing.T) {
	for _, c := range []struct {
		warps, rows, sms int
		qt               int
	}{
		{0, 40, 132, 16},  // few tiles: one query a warp, sixteen warps
		{8, 40, 132, 8},   // eight asked for
		{16, 40, 132, 16}, // sixteen asked for
		{0, 4000, 4, 32},  // many tiles: four queries a warp, eight warps
	} {
		s := recordingTiled(FP16X2)
		s.be.sms = c.sms
		s.be.opts.AttentionWarps = c.warps
		layout := backend.Layout{Lengths: []int{c.rows}, SeqLen: c.rows, Packed: true}
		qkv, out := s.New(c.rows, 24), s.New(c.rows, 8)
		s.Attention(out, qkv, backend.AttentionParams{Layout: layout, Heads: 2, HeadDim: 4, Scale: 0.5})
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if len(s.layouts) != 1 || s.layouts[0].qt != c.qt {
			t.Errorf("warps %d, %d rows, %d SMs: tiles %+v, want %d queries a tile", c.warps, c.rows, c.sms, s.layouts, c.qt)
		}
	}
}

// The attention kernel by precision, options and grid: tensor cores (four
// warps a block unless MMAWarps says) for FP16 and FP16X2 where a block a
// tile fills the GPU (ten questions of 93 tokens, 16 heads), the float32
// kernels where it does not (one question) and in FP32 and BF16; of
// those, at one query a warp, attn_reg unless attnreg=off, eight warps are
// asked for or it is not loaded.
func TestAttentionKernelChoice(t *testing.T) {
	const dh, heads = 64, 16
	one := backend.AttentionParams{Layout: backend.Layout{SeqLen: 93, Lengths: []int{93, 3}, Packed: true}, Heads: heads, HeadDim: dh}
	ten := one
	ten.Lengths = []int{93, 93, 93, 93, 93, 93, 93, 93, 93, 93, 2}
	long := ten
	long.Lengths = []int{93, 93, 93, 93, 93, 93, 93, 93, 93, 129, 2}
	rowsOf := func(p backend.AttentionParams) (n int) {
		for _, l := range p.Lengths {
			n += l
		}
		return n
	}
	const simt = uintptr(100)
	for _, c := range []struct {
		name   string
		opts   Options
		p      backend.AttentionParams
		want   uintptr // simt: the float32 kernels; else attentionMMA's entry
		warps  int
		tileQs int
	}{
		{"fp16x2 ten", Options{Precision: FP16X2}, ten, 42, 4, 64},
		{"fp16 ten", Options{Precision: FP16}, ten, 41, 4, 64},
		{"fp16x2 one", Options{Precision: FP16X2}, one, simt + regKernel, 16, 16},
		{"fp16x2 one, attnreg=off", Options{Precision: FP16X2, NoRegAttention: true}, one, simt, 16, 16},
		{"fp32 one", Options{Precision: FP32}, one, simt + regKernel, 16, 16},
		{"fp32 one, attnwarps=8", Options{Precision: FP32, AttentionWarps: 8}, one, simt, 8, 8},
		{"fp32 one, no attn_reg", Options{Precision: FP32}, one, simt, 16, 16},
		{"fp16x2 one, mmawarps=8", Options{Precision: FP16X2, MMAWarps: 8}, one, 82, 8, 128},
		{"fp16 ten, mmawarps=2", Options{Precision: FP16, MMAWarps: 2}, ten, 21, 2, 32},
		{"fp16x2 one, mmawarps=1", Options{Precision: FP16X2, MMAWarps: 1}, one, 12, 1, 16},
		{"fp16x2 ten, attnterms=1", Options{Precision: FP16X2, AttentionTerms: 1}, ten, 41, 4, 64},
		{"fp16 ten, attnterms=2", Options{Precision: FP16, AttentionTerms: 2}, ten, 42, 4, 64},
		{"fp16x2 ten, attn=simt", Options{Precision: FP16X2, SIMTAttention: true}, ten, simt + 2, 8, 32},
		{"fp32 ten", Options{Precision: FP32}, ten, simt + 2, 8, 32},
		{"bf16 ten", Options{Precision: BF16}, ten, simt + 2, 8, 32},
		// A GPU with less shared memory than the two-term kernels at four
		// and eight warps need (setKernelAttributes leaves them 0): two warps.
		{"fp16x2 ten, small shared memory", Options{Precision: FP16X2}, ten, 22, 2, 32},
		{"fp16x2 ten, mmawarps=8, small shared memory", Options{Precision: FP16X2, MMAWarps: 8}, ten, 22, 2, 32},
		{"fp16 ten, small shared memory", Options{Precision: FP16}, ten, 41, 4, 64},
		// attnsplit: the key-split kernels (50 + terms; 55 fp16 input), 16
		// queries a tile, whatever the grid or mmawarps; without one, the
		// four-warp tensor-core kernel; never in FP32.
		{"fp16x2 one, attnsplit", Options{Precision: FP16X2, AttentionSplit: true}, one, 52, 4, 16},
		{"fp16 one, attnsplit", Options{Precision: FP16, AttentionSplit: true}, one, 51, 4, 16},
		{"fp16x2 ten, attnsplit, mmawarps=8", Options{Precision: FP16X2, AttentionSplit: true, MMAWarps: 8}, ten, 52, 4, 16},
		{"fp16x2 one, attnsplit, no split kernel", Options{Precision: FP16X2, AttentionSplit: true}, one, 42, 4, 64},
		{"fp16x2 one, attnsplit, attnterms=1", Options{Precision: FP16X2, AttentionSplit: true, AttentionTerms: 1}, one, 51, 4, 16},
		{"fp32 one, attnsplit", Options{Precision: FP32, AttentionSplit: true}, one, simt + regKernel, 16, 16},
		// attnrows: the whole-row kernels (200 + 10·warps + terms; + 4
		// fp16 input), a tile a row, where the tensor-core kernels would
		// run (with mmawarps, whatever the grid) and every row fits; not
		// where a row is longer than rowsKeys or the kernel is not loaded.
		{"fp16x2 ten, attnrows=4", Options{Precision: FP16X2, RowWarps: 4}, ten, 242, 4, rowsKeys},
		{"fp16 ten, attnrows=8", Options{Precision: FP16, RowWarps: 8}, ten, 281, 8, rowsKeys},
		{"fp16x2 ten, attnrows=off", Options{Precision: FP16X2, RowWarps: -1}, ten, 42, 4, 64},
		{"fp16x2 one, attnrows=4", Options{Precision: FP16X2, RowWarps: 4}, one, simt + regKernel, 16, 16},
		{"fp16x2 one, attnrows=4, mmawarps=8", Options{Precision: FP16X2, RowWarps: 4, MMAWarps: 8}, one, 242, 4, rowsKeys},
		{"fp16x2 ten, attnrows=4, mmawarps=8, long row", Options{Precision: FP16X2, RowWarps: 4, MMAWarps: 8}, long, 82, 8, 128},
		{"fp16x2 ten, attnrows=4, long row", Options{Precision: FP16X2, RowWarps: 4}, long, 42, 4, 64},
		{"fp16x2 ten, attnrows=8, not loaded", Options{Precision: FP16X2, RowWarps: 8}, ten, 42, 4, 64},
	} {
		be := &Backend{opts: c.opts, sms: 132}
		tiled := &[5]uintptr{simt + 0, simt + 1, simt + 2, simt, simt + regKernel}
		if strings.HasSuffix(c.name, "no attn_reg") {
			tiled[regKernel] = 0
		}
		be.k.attentionTiled = map[int]*[5]uintptr{dh: tiled}
		// Entry [warps index][terms-1] = 10·warps + terms; [2], one term
		// reading fp16 qkv, 10·warps + 5.
		be.k.attentionMMA = map[int]*[4][3]uintptr{dh: {{11, 12, 15}, {21, 22, 25}, {41, 42, 45}, {81, 82, 85}}}
		if strings.HasSuffix(c.name, "small shared memory") {
			be.k.attentionMMA[dh][2][1], be.k.attentionMMA[dh][3][1] = 0, 0
		}
		be.k.attentionSplit = map[int]*[3]uintptr{dh: {51, 52, 55}}
		be.k.attentionRows = map[int]*[3][3]uintptr{dh: {{241, 242, 245}, {261, 262, 265}, {281, 282, 285}}}
		if strings.HasSuffix(c.name, "not loaded") {
			be.k.attentionRows[dh][2] = [3]uintptr{}
		}
		if strings.HasSuffix(c.name, "no split kernel") {
			be.k.attentionSplit[dh][1] = 0
		}
		s := be.NewStream().(*stream)
		fn, half, qt, warps, shm := s.attentionKernel(tiled, c.p, rowsOf(c.p))
		wantShm := shm > 0
		if c.want == 51 || c.want == 52 { // the key-split kernels' own size
			wantShm = shm == attnSplitShared(dh, int(c.want-50))
		}
		if c.want == simt+regKernel {
			wantShm = shm == attnRegShared(dh)
		}
		if c.want > 200 {
			wantShm = shm == attnRowsShared(dh, int(c.want%10))
		}
		if fn != c.want || warps != c.warps || qt != c.tileQs || !wantShm {
			t.Errorf("%s: kernel %d, %d warps, tiles of %d, %d bytes; want kernel %d, %d warps, tiles of %d", c.name, fn, warps, qt, shm,
				c.want, c.warps, c.tileQs)
		}
		// Only the one-term tensor-core kernels have an fp16-input twin.
		if wantHalf := uintptr(0); c.want%10 == 1 && (c.want < simt || c.want > 200) {
			if wantHalf = c.want + 4; half != wantHalf {
				t.Errorf("%s: fp16-input kernel %d, want %d", c.name, half, wantHalf)
			}
		} else if half != 0 {
			t.Errorf("%s: fp16-input kernel %d, want none", c.name, half)
		}
		s.Close()
	}
}

// In the 16-bit precisions a producer (LayerNorm, GeGLU, attention) whose
// output is discarded after GEMMs read only its 16-bit copy stores just the
// copy; in FP32 (no copies), with no GEMM of the copy, or where anything
// else read the float32 output since it was written, it stores both.
func TestDiscardSkipsFloat32Output(t *testing.T) {
	layout := backend.Layout{SeqLen: 3, Lengths: []int{3}, Packed: true}
	ap := backend.AttentionParams{Layout: layout, Heads: 2, HeadDim: 4, Scale: 0.5}
	type operands struct{ x, g, w, w16, w24 backend.Tensor }
	norm := func(s *stream, o operands) backend.Tensor {
		n := s.New(3, 8)
		s.LayerNorm(n, o.x, o.g, nil, 1e-5)
		return n
	}
	for _, c := range []struct {
		name string
		// rec records the producer and what follows it, and returns the
		// producer's output, discarded last.
		rec  func(s *stream, o operands) backend.Tensor
		skip bool // in FP16, BF16 and FP16X2
	}{
		{"layerNorm, linear", func(s *stream, o operands) backend.Tensor {
			n := norm(s, o)
			s.Linear(s.New(3, 8), n, o.w, nil, backend.Identity)
			return n
		}, true},
		{"layerNorm, two linears", func(s *stream, o operands) backend.Tensor {
			n := norm(s, o)
			s.Linear(s.New(3, 24), n, o.w24, nil, backend.Identity)
			s.Linear(s.New(3, 16), n, o.w16, nil, backend.GELU)
			return n
		}, true},
		{"layerNorm in place, linear", func(s *stream, o operands) backend.Tensor {
			s.LayerNorm(o.x, o.x, o.g, nil, 1e-5)
			s.Linear(s.New(3, 8), o.x, o.w, nil, backend.Identity)
			return o.x
		}, true},
		{"geglu, linear", func(s *stream, o operands) backend.Tensor {
			up, act := s.New(3, 16), s.New(3, 8)
			s.Linear(up, o.x, o.w16, nil, backend.Identity)
			s.GeGLU(act, up)
			s.Discard(up)
			s.Linear(s.New(3, 8), act, o.w, nil, backend.Identity)
			return act
		}, true},
		{"attention, linear", func(s *stream, o operands) backend.Tensor {
			qkv, attn := s.New(3, 24), s.New(3, 8)
			s.Linear(qkv, o.x, o.w24, nil, backend.Identity)
			s.Rope(qkv, backend.RopeParams{Layout: layout, Heads: 2, HeadDim: 4, Theta: 10000})
			s.Attention(attn, qkv, ap)
			s.Discard(qkv)
			s.Linear(s.New(3, 8), attn, o.w, nil, backend.Identity)
			return attn
		}, true},
		{"written again after a read", func(s *stream, o operands) backend.Tensor {
			n := norm(s, o)
			s.Add(o.x, o.x, n)
			s.LayerNorm(n, o.x, o.g, nil, 1e-5)
			s.Linear(s.New(3, 8), n, o.w, nil, backend.Identity)
			return n
		}, true},
		{"no linear", func(s *stream, o operands) backend.Tensor {
			return norm(s, o)
		}, false},
		{"added after the linear", func(s *stream, o operands) backend.Tensor {
			n := norm(s, o)
			s.Linear(s.New(3, 8), n, o.w, nil, backend.Identity)
			s.Add(o.x, o.x, n)
			return n
		}, false},
		{"added before the linear", func(s *stream, o operands) backend.Tensor {
			n := norm(s, o)
			s.Add(o.x, o.x, n)
			s.Linear(s.New(3, 8), n, o.w, nil, backend.Identity)
			return n
		}, false},
		{"softmax of it", func(s *stream, o operands) backend.Tensor {
			n := norm(s, o)
			s.Linear(s.New(3, 8), n, o.w, nil, backend.Identity)
			s.Softmax(s.New(3, 8), n)
			return n
		}, false},
		{"normed again from it", func(s *stream, o operands) backend.Tensor {
			n := norm(s, o)
			s.Linear(s.New(3, 8), n, o.w, nil, backend.Identity)
			s.LayerNorm(s.New(3, 8), n, o.g, nil, 1e-5)
			return n
		}, false},
		{"a linear's weight", func(s *stream, o operands) backend.Tensor {
			n := norm(s, o)
			s.Linear(s.New(3, 8), n, o.w, nil, backend.Identity)
			s.Linear(s.New(3, 3), o.x, n, nil, backend.Identity)
			return n
		}, false},
		{"layerNorm in place with a residual folded in", func(s *stream, o operands) backend.Tensor {
			// FP16X2: the Add folds into the LayerNorm, whose kernel
			// still writes x + p into x before it normalises it.
			p := s.New(3, 8)
			s.Linear(p, o.x, o.w, nil, backend.Identity)
			s.Add(o.x, o.x, p)
			s.LayerNorm(o.x, o.x, o.g, nil, 1e-5)
			s.Linear(s.New(3, 8), o.x, o.w, nil, backend.Identity)
			return o.x
		}, true},
	} {
		for _, p := range []Precision{FP32, FP16, BF16, FP16X2} {
			s := recordingTiled(p)
			o := operands{
				x:   s.FromHost(3, 8, make([]float32, 24)),
				g:   s.FromHost(1, 8, make([]float32, 8)),
				w:   s.FromHost(8, 8, make([]float32, 64)),
				w16: s.FromHost(16, 8, make([]float32, 128)),
				w24: s.FromHost(24, 8, make([]float32, 192)),
			}
			out := c.rec(s, o).(*tensor)
			producer := out.lastWriter
			s.Discard(out)
			if err := s.Err(); err != nil {
				t.Fatalf("%s, %v: %v", c.name, p, err)
			}
			if producer == nil {
				t.Fatalf("%s, %v: the discarded tensor has no producer", c.name, p)
			}
			want := c.skip && p != FP32
			if producer.noF32 != want {
				t.Errorf("%s, %v: %s stores only its 16-bit copy: %v, want %v", c.name, p, producer.name, producer.noF32, want)
			}
			for _, op := range s.ops {
				if op.noF32 && op != producer {
					t.Errorf("%s, %v: %s, not the discarded tensor's producer, skips its float32 output", c.name, p, op.name)
				}
			}
		}
	}
}

// A recording whose producer skips its float32 store has another key than
// the same operations storing it; the next write of the tensor (the next
// layer) stores it again; the float32 contents are not read back, and a
// Read of them is an error.
func TestDiscardedOutputKeyAndRead(t *testing.T) {
	record := func(discard bool) (*stream, *tensor, *tensor) {
		s := recording(FP16X2)
		x := s.FromHost(3, 8, make([]float32, 24))
		g := s.FromHost(1, 8, make([]float32, 8))
		w := s.FromHost(8, 8, make([]float32, 64))
		n, y := s.New(3, 8), s.New(3, 8)
		s.LayerNorm(n, x, g, nil, 1e-5)
		s.Linear(y, n, w, nil, backend.Identity)
		if discard {
			s.Discard(n)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return s, n.(*tensor), y.(*tensor)
	}
	kept, _, _ := record(false)
	s, n, y := record(true)
	if slices.Equal(s.words, kept.words) {
		t.Errorf("a LayerNorm storing only its 16-bit copy records the key of one storing both")
	}
	if !s.ops[0].noF32 {
		t.Fatalf("the discarded LayerNorm stores its float32 output")
	}
	for _, b := range s.readback(y) {
		if b == n {
			t.Errorf("the discarded tensor is brought back with %v", y)
		}
	}
	err := s.Read(context.Background(), n, make([]float32, 24))
	if err == nil || !strings.Contains(err.Error(), "cuda: read of discarded tensor") {
		t.Errorf("Read of the discarded tensor: %v, want a read of discarded tensor error", err)
	}

	s, n, y = record(true)
	g := s.FromHost(1, 8, make([]float32, 8))
	s.LayerNorm(n, y, g, nil, 1e-5)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if again := s.ops[len(s.ops)-1]; again.noF32 || n.lastWriter != again || !s.ops[0].noF32 {
		t.Errorf("written again: the new LayerNorm skips %v, is n's writer %v; the first still skips %v; want false, true, true",
			again.noF32, n.lastWriter == again, s.ops[0].noF32)
	}
	if !slices.Contains(s.readback(y), n) {
		t.Errorf("written again, n is not brought back")
	}
}

// resident is a weight as Upload leaves it, its 16-bit copy made, without
// a GPU.
func resident(be *Backend, rows, cols int) *tensor {
	return residentWeight(be, rows, cols, 1, 2)
}

// A Linear on at most smallRows rows runs on linear_small unless small=off:
// in FP32 whatever its weight, in the 16-bit precisions with a resident
// weight (the kernel reads its 16-bit copy). Then its input's producer is
// not asked for a 16-bit copy, no scratch is reserved, and in FP16X2 its
// output is one sum, not stacked terms; on cuBLAS all of that is as before.
func TestSmallLinearChoice(t *testing.T) {
	for _, c := range []struct {
		name     string
		opts     Options
		rows     int
		onStream bool // the weight is the stream's (FromHost), not resident
		want     bool
	}{
		{"fp32, one row", Options{}, 1, false, true},
		{"fp32, smallRows", Options{}, smallRows, false, true},
		{"fp32, smallRows+1", Options{}, smallRows + 1, false, false},
		{"fp32, the stream's weight", Options{}, 3, true, true},
		{"fp32, small=off", Options{NoSmallLinear: true}, 1, false, false},
		{"fp16x2, 3 rows", Options{Precision: FP16X2}, 3, false, true},
		{"fp16x2, smallRows+1", Options{Precision: FP16X2}, smallRows + 1, false, false},
		{"fp16x2, the stream's weight", Options{Precision: FP16X2}, 3, true, false},
		{"fp16x2, small=off", Options{Precision: FP16X2, NoSmallLinear: true}, 3, false, false},
		{"fp16, smallRows", Options{Precision: FP16}, smallRows, false, true},
		{"bf16, one row", Options{Precision: BF16}, 1, false, true},
		{"bf16, smallRows+1", Options{Precision: BF16}, smallRows + 1, false, false},
	} {
		s := &stream{be: &Backend{opts: c.opts}, prec: c.opts.Precision}
		x := s.FromHost(c.rows, 8, make([]float32, c.rows*8))
		g := s.FromHost(1, 8, make([]float32, 8))
		n := s.New(c.rows, 8)
		s.LayerNorm(n, x, g, nil, 1e-5)
		var w backend.Tensor = resident(s.be, 5, 8)
		if c.onStream {
			w = s.FromHost(5, 8, make([]float32, 40))
		}
		y := s.New(c.rows, 5)
		s.Linear(y, n, w, nil, backend.Identity)
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ln, lin := s.ops[0], s.ops[1].lin
		if lin.small != c.want || strings.HasSuffix(s.ops[1].name, "(small)") != c.want {
			t.Errorf("%s: small %v (op %q), want %v", c.name, lin.small, s.ops[1].name, c.want)
			continue
		}
		prec := c.opts.Precision
		switch {
		case c.want:
			if ln.shadow != nil || n.(*tensor).h16 >= 0 || lin.shadowIn || y.(*tensor).stacked || s.temp != 0 {
				t.Errorf("%s: producer's copy %v (h16 %d), read %v, output stacked %v, scratch %d; want none",
					c.name, ln.shadow, n.(*tensor).h16, lin.shadowIn, y.(*tensor).stacked, s.temp)
			}
			if want := uintptr(2); prec != FP32 && lin.wHalf != want {
				t.Errorf("%s: weight copy %#x, want the resident one %#x", c.name, lin.wHalf, want)
			}
		case prec != FP32:
			if ln.shadow != n.(*tensor) || !lin.shadowIn {
				t.Errorf("%s: on cuBLAS: producer's copy %v, read %v; want n's, true", c.name, ln.shadow, lin.shadowIn)
			}
			if stacked := y.(*tensor).stacked; stacked != (prec == FP16X2) {
				t.Errorf("%s: on cuBLAS: output stacked %v", c.name, stacked)
			}
		}
	}
}

// The key of a segment whose Linear runs on linear_small is not that of
// the same shapes on cuBLAS.
func TestSmallLinearKey(t *testing.T) {
	record := func(off bool) []uint64 {
		s := &stream{be: &Backend{opts: Options{Precision: FP16, NoSmallLinear: off}}, prec: FP16}
		x := s.FromHost(3, 8, make([]float32, 24))
		y := s.New(3, 5)
		s.Linear(y, x, resident(s.be, 5, 8), nil, backend.GELU)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if s.ops[0].lin.small == off {
			t.Fatalf("small=off %v: small %v", off, s.ops[0].lin.small)
		}
		return slices.Clone(s.words)
	}
	if on, off := record(false), record(true); slices.Equal(on, off) {
		t.Errorf("linear_small and cuBLAS record one key %v", on)
	}
}

// A 16-bit copy asked of a producer by one GEMM stays asked for when a
// Linear on linear_small reads the same tensor, before it or after it.
func TestSmallLinearBesideGEMM(t *testing.T) {
	for _, smallFirst := range []bool{false, true} {
		s := recording(FP16X2)
		x := s.FromHost(3, 8, make([]float32, 24))
		g := s.FromHost(1, 8, make([]float32, 8))
		ws := s.FromHost(5, 8, make([]float32, 40)) // the stream's: cuBLAS
		wr := resident(s.be, 6, 8)
		n := s.New(3, 8)
		s.LayerNorm(n, x, g, nil, 1e-5)
		a, b := s.New(3, 5), s.New(3, 6)
		if smallFirst {
			s.Linear(b, n, wr, nil, backend.Identity)
			s.Linear(a, n, ws, nil, backend.Identity)
		} else {
			s.Linear(a, n, ws, nil, backend.Identity)
			s.Linear(b, n, wr, nil, backend.Identity)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		gemm, small := s.ops[1].lin, s.ops[2].lin
		if smallFirst {
			gemm, small = small, gemm
		}
		if s.ops[0].shadow != n.(*tensor) || n.(*tensor).h16 < 0 || !gemm.shadowIn || gemm.small || !small.small || small.shadowIn {
			t.Errorf("small first %v: producer's copy %v, GEMM reads it %v (small %v), small Linear %v (reads a copy %v)",
				smallFirst, s.ops[0].shadow, gemm.shadowIn, gemm.small, small.small, small.shadowIn)
		}
	}
}

// The residual Add after a Linear on linear_small folds into it as into a
// GEMM: the kernel adds the product to the Add's target. With a bias (the
// heads' Linears) it folds into linear_small only, which adds the bias
// before the residual; on cuBLAS the Add stays.
func TestDiscardFoldsIntoSmallLinear(t *testing.T) {
	for _, opts := range []Options{{}, {Precision: FP16X2}, {Precision: FP16}, {NoSmallLinear: true}, {Precision: BF16, NoSmallLinear: true}} {
		for _, bias := range []bool{false, true} {
			s := &stream{be: &Backend{opts: opts}, prec: opts.Precision}
			x := s.FromHost(2, 4, make([]float32, 8))
			a := s.FromHost(2, 4, make([]float32, 8))
			p := s.New(2, 4)
			var b backend.Tensor
			if bias {
				b = resident(s.be, 1, 4)
			}
			s.Linear(p, a, resident(s.be, 4, 4), b, backend.Identity)
			s.Add(x, x, p)
			s.Discard(p)
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if bias && opts.NoSmallLinear {
				if len(s.ops) != 2 || s.ops[0].lin.accumulate {
					t.Errorf("%+v, bias: recorded %v; want the GEMM and its Add", opts, names(s))
				}
				continue
			}
			if len(s.ops) != 1 || s.ops[0].lin.small == opts.NoSmallLinear || !s.ops[0].lin.accumulate || s.ops[0].lin.d != x.(*tensor) {
				t.Errorf("%+v, bias %v: recorded %v; want one Linear (small: %v) accumulating into x", opts, bias, names(s), !opts.NoSmallLinear)
			}
		}
	}
}

// linear_small's shape constants, and the longest row of the whole-row
// attention, are the ones kernels.cu is written for.
func TestShapeConstantsMatchKernel(t *testing.T) {
	for name, v := range map[string]int{"LIN_ROWS": smallRows, "LIN_R": smallCols, "LIN_WARPS": smallWarps, "ATTN_ROWS_KEYS": rowsKeys} {
		if def := fmt.Sprintf("\n#define %s %d\n", name, v); !strings.Contains(kernelSource, def) {
			t.Errorf("kernels.cu does not say %q", strings.TrimSpace(def))
		}
	}
}

// ReducedStream gives FP16X2 with Refine a stream in FP16 from
// RefineTokens tokens on, nothing otherwise; a reduced stream records its
// GEMMs in one term (no stacked products, half the 16-bit operand).
// (Streams are counted when they run: TestForwardGoldens' +refine run
// checks the counters on a GPU.)
func TestReducedStream(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   Options
		tokens int
		want   bool
	}{
		{"fp16x2, refine, enough tokens", Options{Precision: FP16X2, Refine: 0.1}, DefaultRefineTokens, true},
		{"fp16x2, refine, too few tokens", Options{Precision: FP16X2, Refine: 0.1}, DefaultRefineTokens - 1, false},
		{"fp16x2, refine, refinetokens=8", Options{Precision: FP16X2, Refine: 0.1, RefineTokens: 8}, 8, true},
		{"fp16x2, refine off", Options{Precision: FP16X2}, 1 << 20, false},
		{"fp16, refine", Options{Precision: FP16, Refine: 0.1}, 1 << 20, false},
		{"fp32, refine", Options{Refine: 0.1}, 1 << 20, false},
	} {
		b := &Backend{opts: c.opts}
		s, margin := b.ReducedStream(c.tokens)
		if (s != nil) != c.want {
			t.Errorf("%s: stream %v, want one %v", c.name, s != nil, c.want)
			continue
		}
		if !c.want {
			if margin != 0 {
				t.Errorf("%s: margin %g without a stream", c.name, margin)
			}
			continue
		}
		if margin != c.opts.Refine {
			t.Errorf("%s: margin %g, want %g", c.name, margin, c.opts.Refine)
		}
		var arenas []int64
		for _, rs := range []*stream{s.(*stream), b.newStream(b.opts.Precision)} {
			x := rs.FromHost(20, 8, make([]float32, 160))
			g := rs.FromHost(1, 8, make([]float32, 8))
			n := rs.New(20, 8)
			rs.LayerNorm(n, x, g, nil, 1e-5)
			y := rs.New(20, 5)
			rs.Linear(y, n, resident(b, 5, 8), nil, backend.Identity)
			if err := rs.Err(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			reduced := rs.prec == FP16
			if stacked := y.(*tensor).stacked; stacked == reduced {
				t.Errorf("%s: stream in %v: output stacked %v", c.name, rs.prec, stacked)
			}
			arenas = append(arenas, rs.arena)
		}
		// FP16X2's arena holds n's second term and y's second product.
		if want := align(20*8*2*2, 256) - align(20*8*2, 256) + align(20*5*4, 256); arenas[1]-arenas[0] != want {
			t.Errorf("%s: arenas %v, want FP16X2's %d bytes more", c.name, arenas, want)
		}
	}
}

// geglu=vec (the default) records geglu4 where the widths allow (a multiple
// of 4 of inner and of a stacked input's second-term offset), geglu
// otherwise and with geglu=scalar.
func TestVecGeGLUChoice(t *testing.T) {
	for _, c := range []struct {
		name        string
		opts        Options
		rows, inner int
		want        string
	}{
		{"vec", Options{Precision: FP16}, 20, 48, "geglu4"},
		{"vec, fp16x2 stacked", Options{Precision: FP16X2}, 20, 48, "geglu4"},
		{"vec, inner 6", Options{Precision: FP16}, 20, 6, "geglu"},
		{"scalar", Options{Precision: FP16, ScalarGeGLU: true}, 20, 48, "geglu"},
	} {
		s := &stream{be: &Backend{opts: c.opts}, prec: c.opts.Precision}
		x := s.FromHost(c.rows, 8, make([]float32, c.rows*8))
		up, act := s.New(c.rows, 2*c.inner), s.New(c.rows, c.inner)
		w := s.FromHost(2*c.inner, 8, make([]float32, 2*c.inner*8))
		s.Linear(up, x, w, nil, backend.Identity)
		s.GeGLU(act, up)
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.ops[len(s.ops)-1].name; got != c.want {
			t.Errorf("%s: recorded %q, want %q", c.name, got, c.want)
		}
		if stacked := up.(*tensor).stacked; stacked != (c.opts.Precision == FP16X2) {
			t.Errorf("%s: GEMM output stacked %v", c.name, stacked)
		}
	}
}

// In FP16 a GEMM whose output only a GeGLU reads and which is then
// discarded writes it as fp16 and the GeGLU reads it so, and a Read of it
// fails; not when anything else reads the output (a second GeGLU too), when
// it is kept, in the other precisions, nor for a GEMM with a bias.
func TestHalfGeGLUInput(t *testing.T) {
	for _, c := range []struct {
		name                string
		prec                Precision
		bias, readAfter     bool
		readBefore, discard bool
		twice               bool
		want                bool
	}{
		{"fp16, discarded", FP16, false, false, false, true, false, true},
		{"fp16, kept", FP16, false, false, false, false, false, false},
		{"fp16, read after the GeGLU", FP16, false, true, false, true, false, false},
		{"fp16, read before the GeGLU", FP16, false, false, true, true, false, false},
		{"fp16, a second GeGLU", FP16, false, false, false, true, true, false},
		{"fp16, bias", FP16, true, false, false, true, false, false},
		{"fp16x2", FP16X2, false, false, false, true, false, false},
		{"bf16", BF16, false, false, false, true, false, false},
		{"fp32", FP32, false, false, false, true, false, false},
	} {
		s := &stream{be: &Backend{}, prec: c.prec}
		const rows, inner = 20, 48
		x := s.FromHost(rows, 8, make([]float32, rows*8))
		up, act, sum := s.New(rows, 2*inner), s.New(rows, inner), s.New(rows, 2*inner)
		w := s.FromHost(2*inner, 8, make([]float32, 2*inner*8))
		var b backend.Tensor
		if c.bias {
			b = s.FromHost(1, 2*inner, make([]float32, 2*inner))
		}
		s.Linear(up, x, w, b, backend.Identity)
		lin := s.ops[len(s.ops)-1].lin
		if c.readBefore {
			s.Add(sum, up, up)
		}
		s.GeGLU(act, up)
		geglu := s.ops[len(s.ops)-1]
		second := geglu
		if c.twice {
			s.GeGLU(s.New(rows, inner), up)
			second = s.ops[len(s.ops)-1]
		}
		if c.readAfter {
			s.Add(sum, up, up)
		}
		words := len(s.words)
		if c.discard {
			s.Discard(up)
		}
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if lin.halfOut != c.want || geglu.halfIn != c.want || second.halfIn != c.want || up.(*tensor).f16 != c.want {
			t.Errorf("%s: GEMM fp16 out %v, GeGLUs fp16 in %v and %v, tensor fp16 %v; want %v", c.name, lin.halfOut, geglu.halfIn, second.halfIn,
				up.(*tensor).f16, c.want)
		}
		if keyed := len(s.words) > words; c.want && !keyed {
			t.Errorf("%s: the choice is not in the segment's key", c.name)
		}
		if slices.Contains(s.readback(act.(*tensor)), up.(*tensor)) == c.want {
			t.Errorf("%s: an fp16 output is read back as float32, or a float32 one is not", c.name)
		}
		if c.want {
			if err := s.Read(context.Background(), up, make([]float32, rows*2*inner)); err == nil || !strings.Contains(err.Error(), "fp16") {
				t.Errorf("%s: Read of the fp16 output: %v, want an error", c.name, err)
			}
		}
	}
}

// In FP16 the qkv GEMM writes fp16 for a tensor-core attention that folds
// its RoPE and is the only reader before the model discards qkv; not when
// something else reads qkv, when it is kept, at two terms, or on the float32
// kernels.
func TestHalfAttentionInput(t *testing.T) {
	const dh, heads, rows = 4, 2, 20
	layout := backend.Layout{SeqLen: rows, Lengths: []int{rows}, Packed: true}
	for _, c := range []struct {
		name             string
		opts             Options
		readAfter, unrot bool
		discard          bool
		then             string // a second reader: "attention" (the rope still owed), "geglu", "rope+attention"
		want             bool
	}{
		{"fp16, discarded", Options{Precision: FP16, MMAWarps: 4}, false, false, true, "", true},
		{"fp16, no rope", Options{Precision: FP16, MMAWarps: 4}, false, true, true, "", true},
		{"fp16, kept", Options{Precision: FP16, MMAWarps: 4}, false, false, false, "", false},
		{"fp16, read after the attention", Options{Precision: FP16, MMAWarps: 4}, true, false, true, "", false},
		{"fp16, a second attention", Options{Precision: FP16, MMAWarps: 4}, false, false, true, "attention", false},
		{"fp16, no rope, a second attention", Options{Precision: FP16, MMAWarps: 4}, false, true, true, "attention", false},
		{"fp16, a GeGLU after", Options{Precision: FP16, MMAWarps: 4}, false, true, true, "geglu", false},
		{"fp16, a GeGLU before", Options{Precision: FP16, MMAWarps: 4}, false, false, true, "geglu first", false},
		{"fp16, attnterms=2", Options{Precision: FP16, MMAWarps: 4, AttentionTerms: 2}, false, false, true, "", false},
		{"fp16, float32 kernels", Options{Precision: FP16, SIMTAttention: true}, false, false, true, "", false},
		{"fp16x2", Options{Precision: FP16X2, MMAWarps: 4}, false, false, true, "", false},
	} {
		be := &Backend{opts: c.opts, sms: 132}
		tiled := &[5]uintptr{100, 101, 102, 100}
		be.k.attentionTiled = map[int]*[5]uintptr{dh: tiled}
		be.k.attentionMMA = map[int]*[4][3]uintptr{dh: {{11, 12, 15}, {21, 22, 25}, {41, 42, 45}, {81, 82, 85}}}
		be.ropes = map[ropeKey]ropeTable{{10000, dh}: {addr: 1, positions: 8192}}
		s := be.NewStream().(*stream)
		x := s.FromHost(rows, 8, make([]float32, rows*8))
		w := s.FromHost(3*heads*dh, 8, make([]float32, 3*heads*dh*8))
		qkv, out, sum := s.New(rows, 3*heads*dh), s.New(rows, heads*dh), s.New(rows, 3*heads*dh)
		s.Linear(qkv, x, w, nil, backend.Identity)
		lin := s.ops[len(s.ops)-1].lin
		var first *op
		if c.then == "geglu first" {
			s.GeGLU(s.New(rows, 3*heads*dh/2), qkv)
			first = s.ops[len(s.ops)-1]
		}
		if !c.unrot {
			s.Rope(qkv, backend.RopeParams{Layout: layout, Heads: heads, HeadDim: dh, Theta: 10000})
		}
		ap := backend.AttentionParams{Layout: layout, Heads: heads, HeadDim: dh, Scale: 0.5}
		s.Attention(out, qkv, ap)
		attn := s.ops[len(s.ops)-1]
		second := attn
		switch c.then {
		case "attention":
			s.Attention(s.New(rows, heads*dh), qkv, ap)
			second = s.ops[len(s.ops)-1]
		case "geglu":
			s.GeGLU(s.New(rows, 3*heads*dh/2), qkv)
			second = s.ops[len(s.ops)-1]
		}
		if c.readAfter {
			s.Add(sum, qkv, qkv)
		}
		if c.discard {
			s.Discard(qkv)
		}
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if attn.name != "attention" {
			t.Fatalf("%s: the last operation is %q", c.name, attn.name)
		}
		if lin.halfOut != c.want || attn.halfIn != c.want || second.halfIn != c.want || first != nil && first.halfIn {
			t.Errorf("%s: GEMM fp16 out %v, attention fp16 in %v, its other reader %v; want %v", c.name, lin.halfOut, attn.halfIn, second.halfIn, c.want)
		}
		s.Close()
	}
}

// launchConfig and launchAttr are cuda.h's CUlaunchConfig and
// CUlaunchAttribute, which cuLaunchKernelEx reads: the sizes and offsets of
// the C structs on a 64-bit host.
func TestLaunchConfigLayout(t *testing.T) {
	var c launchConfig
	var a launchAttr
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(CUlaunchConfig)", unsafe.Sizeof(c), 56},
		{"CUlaunchConfig.sharedMemBytes", unsafe.Offsetof(c.shared), 24},
		{"CUlaunchConfig.hStream", unsafe.Offsetof(c.stream), 32},
		{"CUlaunchConfig.attrs", unsafe.Offsetof(c.attrs), 40},
		{"CUlaunchConfig.numAttrs", unsafe.Offsetof(c.nattrs), 48},
		{"sizeof(CUlaunchAttribute)", unsafe.Sizeof(a), 72},
		{"CUlaunchAttribute.value", unsafe.Offsetof(a.value), 8},
	} {
		if f.got != f.want {
			t.Errorf("%s = %d, want %d", f.name, f.got, f.want)
		}
	}
}

// planLinearMMA takes the longest k chunk that still gives each
// multiprocessor two blocks, else the shortest that fits, within the
// shared memory it is given.
func TestPlanLinearMMA(t *testing.T) {
	for _, c := range []struct {
		m, n, k, terms, warps, sms, shared int
		want                               lmmaPlan
		ok                                 bool
	}{
		// ModernBERT-large at one question (96 rows) on an H200: Wqkv,
		// Wo, Wi and the MLP's Wo.
		{96, 3072, 1024, 2, 4, 132, lmmaSharedLimit, lmmaPlan{warps: 4, kc: 128, splits: 8, tilesN: 48, tilesM: 1, shared: (64 + 192) * 136 * 2}, true},
		{96, 1024, 1024, 2, 4, 132, lmmaSharedLimit, lmmaPlan{warps: 4, kc: 64, splits: 16, tilesN: 16, tilesM: 1, shared: (64 + 192) * 72 * 2}, true},
		// (256 would give two blocks each too, but two terms of 96 rows
		// of it take 132 KiB.)
		{96, 5248, 1024, 2, 4, 132, lmmaSharedLimit, lmmaPlan{warps: 4, kc: 128, splits: 8, tilesN: 82, tilesM: 1, shared: (64 + 192) * 136 * 2}, true},
		{96, 5248, 1024, 1, 4, 132, lmmaSharedLimit, lmmaPlan{warps: 4, kc: 256, splits: 4, tilesN: 82, tilesM: 1, shared: (64 + 96) * 264 * 2}, true},
		{96, 1024, 2624, 1, 4, 132, lmmaSharedLimit, lmmaPlan{warps: 4, kc: 128, splits: 21, tilesN: 16, tilesM: 1, shared: (64 + 96) * 136 * 2}, true},
		// k shorter than a chunk: one split of all of it.
		{17, 64, 48, 1, 4, 132, lmmaSharedLimit, lmmaPlan{warps: 4, kc: 48, splits: 1, tilesN: 1, tilesM: 1, shared: (64 + 32) * 56 * 2}, true},
		// 200 rows: two row blocks, each of up to 128 rows' shared memory.
		{200, 1024, 1024, 1, 4, 4, lmmaSharedLimit, lmmaPlan{warps: 4, kc: 128, splits: 8, tilesN: 16, tilesM: 2, shared: (64 + 128) * 136 * 2}, true},
		// 128 columns a block: half the tiles, each chunk of k longer
		// for the blocks to stay two a multiprocessor; its float32
		// products (96 rows of 128 + 8) take more than its operands.
		{96, 3072, 1024, 2, 8, 132, lmmaSharedLimit, lmmaPlan{warps: 8, kc: 64, splits: 16, tilesN: 24, tilesM: 1, shared: 96 * 136 * 4}, true},
		// Too little shared memory for even the shortest chunk.
		{128, 1024, 1024, 2, 4, 132, 20 << 10, lmmaPlan{warps: 4, tilesN: 16, tilesM: 1}, false},
	} {
		got, ok := planLinearMMA(c.m, c.n, c.k, c.terms, c.warps, c.sms, c.shared)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("planLinearMMA(%d, %d, %d, %d terms, %d warps, %d SMs, %d) = %+v, %v; want %+v, %v", c.m, c.n, c.k, c.terms, c.warps, c.sms, c.shared, got, ok, c.want, c.ok)
		}
	}
}

// On linear_mma (FP16 and FP16X2) a GEMM whose output only a GeGLU reads
// and which is then discarded computes the GeGLU itself: the GeGLU launches
// nothing, the output is never written, and a Read of it fails; not when
// anything else reads the output, when it is kept, for a GEMM with a bias,
// on cuBLAS (more rows than mmarows), nor in BF16.
func TestGeGLUFusedIntoLinearMMA(t *testing.T) {
	const rows, inner, k = 20, 48, 64
	for _, c := range []struct {
		name                string
		prec                Precision
		mmaRows             int
		bias, readAfter     bool
		readBefore, discard bool
		want                bool
	}{
		{"fp16, discarded", FP16, 128, false, false, false, true, true},
		{"fp16x2, discarded", FP16X2, 128, false, false, false, true, true},
		{"fp16, kept", FP16, 128, false, false, false, false, false},
		{"fp16, read after the GeGLU", FP16, 128, false, true, false, true, false},
		{"fp16, read before the GeGLU", FP16, 128, false, false, true, true, false},
		{"fp16, bias", FP16, 128, true, false, false, true, false},
		{"fp16, on cuBLAS", FP16, rows - 1, false, false, false, true, false},
		{"bf16", BF16, 128, false, false, false, true, false},
	} {
		be := &Backend{opts: Options{Precision: c.prec, MMARows: c.mmaRows}, sms: 132}
		s := be.NewStream().(*stream)
		x := s.FromHost(rows, k, make([]float32, rows*k))
		up, act, sum := s.New(rows, 2*inner), s.New(rows, inner), s.New(rows, 2*inner)
		w := residentWeight(be, 2*inner, k, 1, 1)
		var b backend.Tensor
		if c.bias {
			b = s.FromHost(1, 2*inner, make([]float32, 2*inner))
		}
		s.Linear(up, x, w, b, backend.Identity)
		lin := s.ops[len(s.ops)-1].lin
		if c.readBefore {
			s.Add(sum, up, up)
		}
		s.GeGLU(act, up)
		geglu := s.ops[len(s.ops)-1]
		if c.readAfter {
			s.Add(sum, up, up)
		}
		words := len(s.words)
		if c.discard {
			s.Discard(up)
		}
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fused := lin.glu == geglu
		if fused != c.want || geglu.fused != c.want || up.(*tensor).fused != c.want {
			t.Errorf("%s: GEMM computes the GeGLU %v, GeGLU fused %v, output unwritten %v; want %v", c.name, fused, geglu.fused,
				up.(*tensor).fused, c.want)
		}
		if c.want && (lin.halfOut || geglu.halfIn) {
			t.Errorf("%s: fused, and also an fp16 output (%v) or input (%v)", c.name, lin.halfOut, geglu.halfIn)
		}
		if keyed := len(s.words) > words; c.want && !keyed {
			t.Errorf("%s: the choice is not in the segment's key", c.name)
		}
		if c.want && slices.Contains(s.readback(act.(*tensor)), up.(*tensor)) {
			t.Errorf("%s: the unwritten output is read back", c.name)
		}
		if c.want {
			if err := s.Read(context.Background(), up, make([]float32, rows*2*inner)); err == nil || !strings.Contains(err.Error(), "GeGLU") {
				t.Errorf("%s: Read of the unwritten output: %v, want an error", c.name, err)
			}
		}
	}
}

// The GeGLU goes into its GEMM only where moving it there changes nothing:
// not after a tensor-core attention read the product as fp16 (it would
// read a product never written), not past an operation between the GEMM
// and the GeGLU (which would see the GeGLU's output too early), and not
// when the GeGLU writes the GEMM's own input (whose 16-bit copy the GEMM's
// other blocks are still reading). ModernBERT's order, layer after layer
// on the same tensors, still fuses, with the GeGLU's float32 output dropped.
func TestGeGLUFusionOrder(t *testing.T) {
	const rows = 20
	t.Run("after an fp16 attention", func(t *testing.T) {
		const dh, heads = 4, 2
		layout := backend.Layout{SeqLen: rows, Lengths: []int{rows}, Packed: true}
		be := &Backend{opts: Options{Precision: FP16, MMAWarps: 4, MMARows: 128}, sms: 132}
		be.k.attentionTiled = map[int]*[5]uintptr{dh: {100, 101, 102, 100}}
		be.k.attentionMMA = map[int]*[4][3]uintptr{dh: {{11, 12, 15}, {21, 22, 25}, {41, 42, 45}, {81, 82, 85}}}
		s := be.NewStream().(*stream)
		x := s.FromHost(rows, 16, make([]float32, rows*16))
		w := residentWeight(be, 3*heads*dh, 16, 1, 1)
		qkv, out := s.New(rows, 3*heads*dh), s.New(rows, heads*dh)
		s.Linear(qkv, x, w, nil, backend.Identity)
		s.Attention(out, qkv, backend.AttentionParams{Layout: layout, Heads: heads, HeadDim: dh, Scale: 0.5})
		attn := s.ops[len(s.ops)-1]
		s.GeGLU(s.New(rows, 3*heads*dh/2), qkv)
		g := s.ops[len(s.ops)-1]
		s.Discard(qkv)
		if g.fused {
			t.Errorf("GeGLU fused (attention reads fp16: %v), though an attention read the product first", attn.halfIn)
		}
	})
	t.Run("an operation between", func(t *testing.T) {
		const inner, k = 48, 64
		be := &Backend{opts: Options{Precision: FP16, MMARows: 128}, sms: 132}
		s := be.NewStream().(*stream)
		x := s.FromHost(rows, k, make([]float32, rows*k))
		up, act, sum := s.New(rows, 2*inner), s.New(rows, inner), s.New(rows, inner)
		w := residentWeight(be, 2*inner, k, 1, 1)
		s.Linear(up, x, w, nil, backend.Identity)
		lin := s.ops[len(s.ops)-1].lin
		s.Add(sum, act, act)
		s.GeGLU(act, up)
		s.Discard(up)
		if lin.glu != nil {
			t.Errorf("GeGLU fused past an Add that reads its output")
		}
	})
	t.Run("writing the GEMM's input", func(t *testing.T) {
		const inner = 64
		be := &Backend{opts: Options{Precision: FP16, MMARows: 128}, sms: 132}
		s := be.NewStream().(*stream)
		xin := s.FromHost(rows, inner, make([]float32, rows*inner))
		h := s.New(rows, inner)
		s.LayerNorm(h, xin, s.FromHost(1, inner, make([]float32, inner)), nil, 1e-5)
		up := s.New(rows, 2*inner)
		s.Linear(up, h, residentWeight(be, 2*inner, inner, 1, 1), nil, backend.Identity)
		lin := s.ops[len(s.ops)-1].lin
		s.GeGLU(h, up)
		s.Discard(up)
		s.Linear(s.New(rows, 8), h, residentWeight(be, 8, inner, 2, 2), nil, backend.Identity)
		if lin.glu != nil {
			t.Errorf("GeGLU fused into the GEMM whose input it writes")
		}
	})
	t.Run("ModernBERT's order", func(t *testing.T) {
		const hid, inner = 64, 96
		for _, p := range []Precision{FP16, FP16X2} {
			be := &Backend{opts: Options{Precision: p, MMARows: 128}, sms: 132}
			s := be.NewStream().(*stream)
			xin := s.FromHost(rows, hid, make([]float32, rows*hid))
			lw := s.FromHost(1, hid, make([]float32, hid))
			normed, up, act, proj := s.New(rows, hid), s.New(rows, 2*inner), s.New(rows, inner), s.New(rows, hid)
			wi := residentWeight(be, 2*inner, hid, 1, 1)
			wo := residentWeight(be, hid, inner, 2, 2)
			for layer := range 3 {
				s.LayerNorm(normed, xin, lw, nil, 1e-5)
				s.Linear(up, normed, wi, nil, backend.Identity)
				lin := s.ops[len(s.ops)-1].lin
				s.Discard(normed)
				s.GeGLU(act, up)
				g := s.ops[len(s.ops)-1]
				s.Discard(up)
				s.Linear(proj, act, wo, nil, backend.Identity)
				s.Discard(act)
				s.Add(xin, xin, proj)
				s.Discard(proj)
				if lin.glu != g || !g.fused || !g.noF32 {
					t.Errorf("%v layer %d: fused %v, float32 output dropped %v; want both", p, layer, lin.glu == g, g.noF32)
				}
			}
		}
	})
}

// residualLN is what recordResidualLN recorded.
type residualLN struct {
	s                *stream
	x, normed, spare backend.Tensor
	producer         *linearOp // the GEMM that added into x
	ln               *op       // the LayerNorm of x into normed
	weight           func(rows, cols int) *tensor
}

// recordResidualLN records on an FP16X2 stream with opts a GEMM of 96-deep
// rows adding into x [rows, d] (a residual Add folded in), then between
// (if any), then the LayerNorm of x into normed, with a bias or without:
// the start of ModernBERT's layers. Weights are resident, 256-byte aligned.
func recordResidualLN(opts Options, rows, d int, bias bool, between func(s *stream, x, normed, spare backend.Tensor)) residualLN {
	const k = 96
	opts.Precision = FP16X2
	be := &Backend{opts: opts, sms: 132}
	r := residualLN{s: be.NewStream().(*stream)}
	s := r.s
	r.weight = func(rows, cols int) *tensor { return residentWeight(be, rows, cols, 256, 256) }
	a := s.FromHost(rows, k, make([]float32, rows*k))
	var proj backend.Tensor
	r.x, proj, r.normed, r.spare = s.New(rows, d), s.New(rows, d), s.New(rows, d), s.New(rows, d)
	s.Linear(proj, a, r.weight(d, k), nil, backend.Identity)
	s.Add(r.x, r.x, proj)
	s.Discard(proj)
	r.producer = s.ops[len(s.ops)-1].lin
	if between != nil {
		between(s, r.x, r.normed, r.spare)
	}
	var b backend.Tensor
	if bias {
		b = r.weight(1, d)
	}
	s.LayerNorm(r.normed, r.x, r.weight(1, d), b, 1e-5)
	r.ln = s.ops[len(s.ops)-1]
	return r
}

// A LayerNorm of the residual stream runs in the linear_mma GEMMs around
// it (the one that added into x writes its row statistics, the one that
// alone reads the LayerNorm's output normalises x itself) only where that
// changes nothing: ModernBERT's order fuses, layer after layer; a reader of
// the output besides the GEMM, an operation between the LayerNorm and the
// GEMM, a write of x between its GEMM and the LayerNorm, a kept output, a
// flush in between, cuBLAS on either side, and mmaln=off do not.
func TestLayerNormFusedIntoLinearMMA(t *testing.T) {
	const rows, d = 20, 64
	for _, c := range []struct {
		name string
		opts Options
		// between: after the residual GEMM and before the LayerNorm;
		// after: between the LayerNorm and its GEMM; late: after the GEMM,
		// before the output's Discard.
		between, after, late func(s *stream, x, normed, spare backend.Tensor)
		keep                 bool
		want                 bool
	}{
		{name: "modernbert order", opts: Options{MMARows: 128}, want: true},
		{name: "mmaln=off", opts: Options{MMARows: 128, MMANoLN: true}},
		{name: "on cuBLAS", opts: Options{MMARows: rows - 1}},
		{name: "output kept", opts: Options{MMARows: 128}, keep: true},
		{name: "x written before the LayerNorm", opts: Options{MMARows: 128},
			between: func(s *stream, x, _, spare backend.Tensor) { s.Add(x, x, spare) }},
		{name: "x read before the LayerNorm", opts: Options{MMARows: 128}, want: true,
			between: func(s *stream, x, _, spare backend.Tensor) { s.Add(spare, x, x) }},
		// As a Read's flush leaves the stream.
		{name: "flush before the LayerNorm", opts: Options{MMARows: 128},
			between: func(s *stream, _, _, _ backend.Tensor) { s.nextSegment() }},
		{name: "an operation between the LayerNorm and its GEMM", opts: Options{MMARows: 128},
			after: func(s *stream, _, _, spare backend.Tensor) { s.Add(spare, spare, spare) }},
		{name: "output read again after its GEMM", opts: Options{MMARows: 128},
			late: func(s *stream, _, normed, spare backend.Tensor) { s.Add(spare, normed, normed) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := recordResidualLN(c.opts, rows, d, true, c.between)
			s, x, normed, spare, producer, ln, weight := r.s, r.x, r.normed, r.spare, r.producer, r.ln, r.weight
			out := s.New(rows, 3*d)
			if c.after != nil {
				c.after(s, x, normed, spare)
			}
			s.Linear(out, normed, weight(3*d, d), nil, backend.Identity)
			consumer := s.ops[len(s.ops)-1].lin
			if c.late != nil {
				c.late(s, x, normed, spare)
			}
			words := len(s.words)
			if !c.keep {
				s.Discard(normed)
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			fused := consumer.ln != nil && consumer.ln == ln.ln && ln.fused && producer.stat && consumer.ln.src == producer
			if fused != c.want || ln.fused != c.want || normed.(*tensor).lnFused != c.want {
				t.Fatalf("fused %v (LayerNorm launches nothing %v, output unwritten %v, statistics written %v); want %v", fused, ln.fused,
					normed.(*tensor).lnFused, producer.stat, c.want)
			}
			if !c.want {
				return
			}
			if len(s.words) == words {
				t.Error("the choice is not in the segment's key")
			}
			if err := s.Read(context.Background(), normed, make([]float32, rows*d)); err == nil || !strings.Contains(err.Error(), "normalised") {
				t.Errorf("Read of the unwritten output: %v, want an error", err)
			}
		})
	}
}

// The GEMM that computes a LayerNorm of x never writes x, in whichever
// order the writes come (its blocks read x to the end): not a residual Add
// of its product folded into it (x += W·LN(x), a pre-norm block), not a
// GeGLU of its product fused into it that writes x, before or after the
// LayerNorm's fusion is decided. Nor does a GEMM off linear_mma (k not a
// multiple of 16, though the LayerNorm's row statistics could be had)
// take the LayerNorm.
func TestLayerNormFusionNeverWritesItsInput(t *testing.T) {
	const rows = 20
	record := func(t *testing.T, d int) (s *stream, x, normed backend.Tensor, ln *op, weight func(r, c int) *tensor) {
		r := recordResidualLN(Options{MMARows: 128}, rows, d, false, nil)
		if r.ln.ln == nil {
			t.Fatal("the LayerNorm of the residual stream is not a candidate")
		}
		return r.s, r.x, r.normed, r.ln, r.weight
	}
	check := func(t *testing.T, s *stream, x backend.Tensor, ln *op, lin *linearOp) {
		t.Helper()
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		writes := lin.d == x.(*tensor) || lin.glu != nil && lin.glu.glu == x.(*tensor)
		if lin.ln != nil && writes || ln.fused && lin.ln == nil {
			t.Errorf("the GEMM computes the LayerNorm %v and writes x %v; the LayerNorm launches nothing %v", lin.ln != nil, writes,
				ln.fused)
		}
		if !writes && !(lin.ln != nil && ln.fused) {
			t.Errorf("the GEMM does not write x, and the LayerNorm did not go into it")
		}
	}
	for _, lnFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("residual folded, LayerNorm decided first %v", lnFirst), func(t *testing.T) {
			const d = 64
			s, x, normed, ln, weight := record(t, d)
			p2 := s.New(rows, d)
			s.Linear(p2, normed, weight(d, d), nil, backend.Identity)
			lin := s.ops[len(s.ops)-1].lin
			if lnFirst {
				s.Discard(normed)
			}
			s.Add(x, x, p2)
			s.Discard(p2)
			if !lnFirst {
				s.Discard(normed)
			}
			check(t, s, x, ln, lin)
		})
		t.Run(fmt.Sprintf("GeGLU into x, LayerNorm decided first %v", lnFirst), func(t *testing.T) {
			const d = 64
			s, x, normed, ln, weight := record(t, d)
			up := s.New(rows, 2*d)
			s.Linear(up, normed, weight(2*d, d), nil, backend.Identity)
			lin := s.ops[len(s.ops)-1].lin
			if lnFirst {
				s.Discard(normed)
			}
			s.GeGLU(x, up)
			s.Discard(up)
			if !lnFirst {
				s.Discard(normed)
			}
			check(t, s, x, ln, lin)
		})
	}
	t.Run("k no multiple of 16", func(t *testing.T) {
		const d = 72
		s, x, normed, ln, weight := record(t, d)
		out := s.New(rows, 3*d)
		s.Linear(out, normed, weight(3*d, d), nil, backend.Identity)
		lin := s.ops[len(s.ops)-1].lin
		s.Discard(normed)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if lin.mma || lin.ln != nil || ln.fused || x.(*tensor).statLin == nil {
			t.Errorf("GEMM on linear_mma %v, computes the LayerNorm %v, the LayerNorm launches nothing %v, statistics offered %v; want "+
				"neither, with statistics offered", lin.mma, lin.ln != nil, ln.fused, x.(*tensor).statLin != nil)
		}
	})
}

// A stream's slabs go to the next stream cleared to their capacity: the
// next one takes operations from them without zeroing (fromSlab), so an
// operation left from the last request would be recorded as this one's.
func TestClosedStreamSlabsAreZero(t *testing.T) {
	be := &Backend{opts: Options{Precision: FP32}}
	s := be.NewStream().(*stream)
	x := s.FromHost(2, 4, make([]float32, 8))
	w := s.FromHost(4, 4, make([]float32, 16))
	for range 40 {
		p := s.New(2, 4)
		s.Linear(p, x, w, nil, backend.Identity)
		s.Add(x, x, p)
		s.Discard(p)
		s.GeGLU(s.New(2, 2), x)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(s.opSlab) == 0 || len(s.linSlab) == 0 {
		t.Fatalf("recorded %d operations and %d Linears from the slabs, want some", len(s.opSlab), len(s.linSlab))
	}
	bufs := s.bufs
	s.Close()
	for i, o := range bufs.opSlab[:cap(bufs.opSlab)] {
		if !reflect.ValueOf(o).IsZero() {
			t.Fatalf("operation %d of the handed-on slab is %q, want zero", i, o.name)
		}
	}
	for i, l := range bufs.linSlab[:cap(bufs.linSlab)] {
		if !reflect.ValueOf(l).IsZero() {
			t.Fatalf("Linear %d of the handed-on slab is not zero", i)
		}
	}
}

// residentWeight is a weight tensor of be at addr with its 16-bit copy at
// half, as Upload and halfOf leave one.
func residentWeight(be *Backend, rows, cols int, addr, half uintptr) *tensor {
	t := &tensor{owner: be, rows: rows, cols: cols, addr: addr}
	t.half.Store(half)
	return t
}

// With PrefetchRows, each LayerNorm and GeGLU asks L2 for the weights of
// the cuBLAS (or linear_small) GEMMs recorded after it, up to two and up
// to the next such kernel: an encoder layer's first LayerNorm for the qkv
// and attention output weights, its second for the MLP input's, the GeGLU
// for the MLP output's. GEMMs of more rows, or of a weight written on the
// stream (FP32: none are 16-bit copies) are not asked for; nor is anything
// without the option.
func TestPrefetchWeights(t *testing.T) {
	const rows, d, inner = 20, 16, 24
	layer := func(s *stream, be *Backend, m int, base uintptr) (ln1, ln2, glu *op) {
		w := func(r, c int, i uintptr) *tensor { return residentWeight(be, r, c, base+i, base+0x1000*i) }
		wqkv, wo, wi, wo2 := w(3*d, d, 1), w(d, d, 2), w(2*inner, d, 3), w(d, inner, 4)
		g := s.FromHost(1, d, make([]float32, d))
		x := s.FromHost(m, d, make([]float32, m*d))
		n := s.New(m, d)
		s.LayerNorm(n, x, g, nil, 1e-5)
		ln1 = s.ops[len(s.ops)-1]
		qkv := s.New(m, 3*d)
		s.Linear(qkv, n, wqkv, nil, backend.Identity)
		a := s.New(m, d)
		layout := backend.Layout{SeqLen: m, Lengths: []int{m}}
		s.Attention(a, qkv, backend.AttentionParams{Layout: layout, Heads: 2, HeadDim: d / 2, Scale: 0.5})
		p := s.New(m, d)
		s.Linear(p, a, wo, nil, backend.Identity)
		s.Add(x, x, p)
		s.Discard(p)
		s.LayerNorm(n, x, g, nil, 1e-5)
		ln2 = s.ops[len(s.ops)-1]
		up := s.New(m, 2*inner)
		s.Linear(up, n, wi, nil, backend.Identity)
		act := s.New(m, inner)
		s.GeGLU(act, up)
		glu = s.ops[len(s.ops)-1]
		s.Linear(p, act, wo2, nil, backend.Identity)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return ln1, ln2, glu
	}
	r := func(i uintptr, n, k int) pfRange { return pfRange{0x10000 + 0x1000*i, int64(2 * n * k)} }
	for _, c := range []struct {
		name string
		pf   int
		m    int
		prec Precision
		want [3][2]pfRange
	}{
		{"fp16", rows, rows, FP16, [3][2]pfRange{{r(1, 3*d, d), r(2, d, d)}, {r(3, 2*inner, d)}, {r(4, d, inner)}}},
		{"fp16x2", 1 << 20, rows, FP16X2, [3][2]pfRange{{r(1, 3*d, d), r(2, d, d)}, {r(3, 2*inner, d)}, {r(4, d, inner)}}},
		{"more rows than l2pf", rows - 1, rows, FP16, [3][2]pfRange{}},
		{"off", 0, rows, FP16X2, [3][2]pfRange{}},
		{"linear_small", 1 << 20, smallRows, FP16, [3][2]pfRange{{r(1, 3*d, d), r(2, d, d)}, {r(3, 2*inner, d)}, {r(4, d, inner)}}},
		{"fp32", 1 << 20, rows, FP32, [3][2]pfRange{}},
	} {
		be := &Backend{opts: Options{Precision: c.prec, PrefetchRows: c.pf}}
		s := be.newStream(c.prec)
		ln1, ln2, glu := layer(s, be, c.m, 0x10000)
		if got := [3][2]pfRange{ln1.pf, ln2.pf, glu.pf}; got != c.want {
			t.Errorf("%s: LayerNorm, LayerNorm, GeGLU prefetch %v, want %v", c.name, got, c.want)
		}
	}
	// At depth 2 a layer's GeGLU asks for the next layer's qkv and
	// attention output weights, its second LayerNorm for its MLP output's;
	// the first LayerNorm, full, leaves the MLP input's to the second.
	be2 := &Backend{opts: Options{Precision: FP16, PrefetchRows: rows, PrefetchDepth: 2}}
	s2 := be2.newStream(FP16)
	a1, a2, ag := layer(s2, be2, rows, 0x10000)
	b1, b2, bg := layer(s2, be2, rows, 0x20000)
	r2 := func(i uintptr, n, k int) pfRange { return pfRange{0x20000 + 0x1000*i, int64(2 * n * k)} }
	want := [6][2]pfRange{{r(1, 3*d, d), r(2, d, d)}, {r(3, 2*inner, d), r(4, d, inner)}, {r2(1, 3*d, d), r2(2, d, d)},
		{r2(3, 2*inner, d)}, {r2(4, d, inner)}, {}}
	if got := [6][2]pfRange{a1.pf, a2.pf, ag.pf, b1.pf, b2.pf, bg.pf}; got != want {
		t.Errorf("depth 2: two layers' LayerNorm, LayerNorm, GeGLU prefetch %v, want %v", got, want)
	}
	// A segment's first GEMMs have no host before them in it.
	be := &Backend{opts: Options{Precision: FP16, PrefetchRows: 1 << 20}}
	s := be.newStream(FP16)
	layer(s, be, rows, 0x10000)
	s.nextSegment()
	if len(s.pfHosts) != 0 {
		t.Errorf("a new segment starts with the last one's prefetching kernel")
	}
}

// With KBatchRows a plain FP16 GEMM of at most that many rows, k a multiple
// of 32, runs as one batch over k's halves and leaves the two products
// stacked as FP16X2's terms are (its residual Add then folds into the
// LayerNorm after it); one with a bias, more rows, another k, k under
// KBatchMinK, or the option off stays whole, and FP16X2 stacks by its
// terms, not by k.
func TestKBatchStacks(t *testing.T) {
	for _, c := range []struct {
		name          string
		prec          Precision
		rows, m, k    int
		bias          bool
		khalf, stacks bool
		mink          int
	}{
		{"fp16", FP16, 8, 3, 64, false, true, true, 0},
		{"more rows", FP16, 8, 9, 64, false, false, false, 0},
		{"k=48", FP16, 8, 3, 48, false, false, false, 0},
		{"bias", FP16, 8, 3, 64, true, false, false, 0},
		{"off", FP16, 0, 3, 64, false, false, false, 0},
		{"kbatchk=96", FP16, 8, 3, 64, false, false, false, 96},
		{"kbatchk=64", FP16, 8, 3, 64, false, true, true, 64},
		{"fp16x2", FP16X2, 8, 3, 64, false, false, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := recordingTiled(c.prec)
			s.be.opts.KBatchRows, s.be.opts.KBatchMinK = c.rows, c.mink
			h := s.FromHost(c.m, 16, make([]float32, c.m*16))
			g := s.FromHost(1, 16, make([]float32, 16))
			x := s.FromHost(c.m, c.k, make([]float32, c.m*c.k))
			w := s.FromHost(16, c.k, make([]float32, 16*c.k))
			var b backend.Tensor
			if c.bias {
				b = s.FromHost(1, 16, make([]float32, 16))
			}
			p := s.New(c.m, 16)
			s.Linear(p, x, w, b, backend.Identity)
			lin := s.ops[len(s.ops)-1].lin
			pt := p.(*tensor)
			if lin.khalf != c.khalf || pt.stacked != c.stacks || (lin.two != 0) != c.stacks || c.stacks && lin.two != pt.two() {
				t.Fatalf("khalf %v, stacked %v, two %d (tensor's %d); want khalf %v, stacked %v", lin.khalf, pt.stacked, lin.two, pt.two(),
					c.khalf, c.stacks)
			}
			s.Add(h, h, p)
			s.Discard(p)
			n := s.New(c.m, 16)
			s.LayerNorm(n, h, g, nil, 1e-5)
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			// Stacked: the Add folds into the LayerNorm; FP16's whole
			// product takes the Add into the GEMM (beta = 1).
			if got := names(s); len(got) != 2 || got[0] != "linear" || got[1] != "layerNorm" {
				t.Errorf("recorded %v, want the GEMM and the LayerNorm", got)
			}
			if !c.stacks && c.prec == FP16 && !c.bias && !lin.accumulate {
				t.Errorf("FP16's whole product did not take the residual Add")
			}
		})
	}
}

// A LayerNorm reads the rows a Gather just before it copied from their
// table, and the Gather is not recorded: the embeddings' norm in place on
// the gathered rows, and a norm whose residual Add adds gathered rows the
// norm then overwrites (the decision head's first). Where the gathered rows
// could still be read afterwards, or with gatherfold=off, both stay.
func TestLayerNormFoldsGather(t *testing.T) {
	const rows, d = 3, 8
	for _, c := range []struct {
		name string
		off  bool
		rec  func(s *stream, tab, g, h backend.Tensor)
		want []string
	}{
		{"embeddings", false, func(s *stream, tab, g, h backend.Tensor) {
			x := s.New(rows, d)
			s.Gather(x, tab, []int32{2, 0, 2})
			s.LayerNorm(x, x, g, nil, 1e-5)
		}, []string{"layerNorm (gathering its rows)"}},
		{"residual addend", false, func(s *stream, tab, g, h backend.Tensor) {
			p := s.New(rows, d)
			s.Gather(p, tab, []int32{1, 1, 0})
			s.Add(h, h, p)
			s.LayerNorm(p, h, g, g, 1e-5)
		}, []string{"layerNorm (gathering its addend)"}},
		{"off", true, func(s *stream, tab, g, h backend.Tensor) {
			x := s.New(rows, d)
			s.Gather(x, tab, []int32{2, 0, 2})
			s.LayerNorm(x, x, g, nil, 1e-5)
		}, []string{"gather", "layerNorm"}},
		{"gathered rows kept", false, func(s *stream, tab, g, h backend.Tensor) {
			x, y := s.New(rows, d), s.New(rows, d)
			s.Gather(x, tab, []int32{2, 0, 2})
			s.LayerNorm(y, x, g, nil, 1e-5)
		}, []string{"gather", "layerNorm"}},
		{"addend kept", false, func(s *stream, tab, g, h backend.Tensor) {
			p, y := s.New(rows, d), s.New(rows, d)
			s.Gather(p, tab, []int32{1, 1, 0})
			s.Add(h, h, p)
			s.LayerNorm(y, h, g, nil, 1e-5)
		}, []string{"gather", "layerNorm"}},
		{"an op between", false, func(s *stream, tab, g, h backend.Tensor) {
			x := s.New(rows, d)
			s.Gather(x, tab, []int32{2, 0, 2})
			s.Softmax(h, h)
			s.LayerNorm(x, x, g, nil, 1e-5)
		}, []string{"gather", "softmax", "layerNorm"}},
	} {
		s := recording(FP16)
		s.be.opts.NoGatherFold = c.off
		tab := s.FromHost(4, d, make([]float32, 4*d))
		g := s.FromHost(1, d, make([]float32, d))
		h := s.FromHost(rows, d, make([]float32, rows*d))
		before := len(s.ops)
		c.rec(s, tab, g, h)
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := names(s)[before:]; !slices.Equal(got, c.want) {
			t.Errorf("%s: recorded %v, want %v", c.name, got, c.want)
		}
	}
}

// The tensor-core attention's fp16 terms: the precision's, two for an
// FP16X2 backend's reduced FP16 streams as for its own (their rows that
// are not near-ties keep the reduced run's probabilities), and whatever
// attnterms fixes.
func TestAttentionTerms(t *testing.T) {
	for _, c := range []struct {
		backend, stream Precision
		fixed, want     int
	}{
		{FP16, FP16, 0, 1},
		{FP16X2, FP16X2, 0, 2},
		{FP16X2, FP16, 0, 2}, // a reduced stream (refinement)
		{BF16, BF16, 0, 1},
		{FP16, FP16, 2, 2},
		{FP16X2, FP16, 1, 1},
		{FP16X2, FP16X2, 1, 1},
	} {
		s := &stream{be: &Backend{opts: Options{Precision: c.backend, AttentionTerms: c.fixed}}, prec: c.stream}
		if got := s.attentionTerms(); got != c.want {
			t.Errorf("%v backend, %v stream, attnterms=%d: %d terms, want %d", c.backend, c.stream, c.fixed, got, c.want)
		}
	}
}
