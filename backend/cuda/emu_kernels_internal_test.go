//go:build linux

package cuda

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/laya-metal/laya/internal/half"
)

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func u16Bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

// The emulator's mma and ldmatrix fragments, checked on a kernel that is
// verified on a GPU (TestHalfAttention and the goldens on the H200):
// attention_mma in one and two terms against float64 attention. A wrong
// fragment layout in cuemu.h fails here before it can pass a new kernel
// written against the same mistake.
func TestEmuAttentionMMA(t *testing.T) {
	const dh, heads = 64, 2
	// Two batch rows: 40 tokens (two tiles at two warps) and 17. Two warps
	// a block is the GPU-verified kernel; one is checked here first.
	l := emuAttnLayout{lens: []int{40, 17}}
	qkv := emuQKV(l, heads, dh, 3, 4, 1)
	for _, warps := range []int{1, 2} {
		t.Run(fmt.Sprintf("warps=%d", warps), func(t *testing.T) { emuAttentionMMA(t, dh, heads, warps, false, l, qkv) })
	}
}

// Sharp scores: q and k three times as large (scores of a standard
// deviation of 9) make one fp16 term's rounding of them the largest error
// (about 0.008 here: the probabilities' relative error is the scores'
// absolute one); two terms keep the outputs within 2e-4 of float64's.
func TestEmuAttentionMMASharp(t *testing.T) {
	const dh, heads = 64, 2
	l := emuAttnLayout{lens: []int{93, 17}}
	emuAttentionMMA(t, dh, heads, 4, false, l, emuQKV(l, heads, dh, 7, 8, 3), 2)
}

// The tensor-core attention built with other chunks of keys
// (ATTN_MMA_KC16): 128 keys (a short row's keys in one chunk, rows of 93
// and 17, and one of 140 in two, the second partly filled), 32 (several
// chunks a row), with four and eight warps, a sliding window across chunk
// boundaries and right padding, in one and two terms, against float64.
func TestEmuAttentionMMAChunks(t *testing.T) {
	const dh, heads = 64, 2
	for _, c := range []struct {
		kc16, warps int
		l           emuAttnLayout
	}{
		{8, 4, emuAttnLayout{lens: []int{93, 17, 140}}},
		{8, 8, emuAttnLayout{lens: []int{93, 17, 140}, radius: 40}},
		{8, 8, emuAttnLayout{lens: []int{93, 17}, seqLen: 100}},
		{2, 4, emuAttnLayout{lens: []int{93, 17}, radius: 20}},
	} {
		qkv := emuQKV(c.l, heads, dh, uint64(c.kc16), uint64(c.warps), 1)
		t.Run(fmt.Sprintf("kc=%d,warps=%d,seqlen=%d,radius=%d", 16*c.kc16, c.warps, c.l.seqLen, c.l.radius), func(t *testing.T) {
			emuAttentionMMATuned(t, c.kc16, dh, heads, c.warps, false, c.l, qkv)
		})
	}
}

// ATTN_EX2=0: the tensor-core attention with each score scaled before its
// exp2f (the default, 1, scales inside the exponent's fmaf and takes
// ex2.approx.ftz; the other tensor-core attention tests run it), against
// float64 within the same bounds: rows of 93, 17 and 140 tokens, right
// padding, sliding windows that cover a step or cut into it (masked scores),
// head dims 32, 64 and 128, the key-split kernel (whose merge takes the same
// exp2), one and two terms.
func TestEmuAttentionEx2Off(t *testing.T) {
	const heads = 2
	bin := emuRunnerTuned(t, "ATTN_EX2=0")
	for _, c := range []struct {
		dh, warps int
		split     bool
		l         emuAttnLayout
	}{
		{64, 4, false, emuAttnLayout{lens: []int{93, 17}}},
		{64, 4, false, emuAttnLayout{lens: []int{93, 17}, seqLen: 100, radius: 64}},
		{32, 4, false, emuAttnLayout{lens: []int{140, 17}, radius: 20}},
		{128, 4, false, emuAttnLayout{lens: []int{93}}},
		{64, 4, true, emuAttnLayout{lens: []int{140, 17}, radius: 40}},
	} {
		qkv := emuQKV(c.l, heads, c.dh, uint64(c.dh), uint64(c.warps), 1)
		t.Run(fmt.Sprintf("dh=%d,split=%v,lens=%v,seqlen=%d,radius=%d", c.dh, c.split, c.l.lens, c.l.seqLen, c.l.radius), func(t *testing.T) {
			emuAttentionMMAOn(t, bin, 4, c.dh, heads, c.warps, c.split, c.l, qkv)
		})
	}
}

// ATTN_MMA_LEAN: the tensor-core attention reading fp16 q, k, v in one
// term (the kernels of the fp16 pass, suffix 1h), its values copied into
// shared memory as they are and its masks skipped on key steps inside
// every row's window, gives the default build's outputs bit for bit: rows
// of 93 and 17 tokens (a full chunk and partial ones), right padding,
// sliding windows that cover a whole step or cut into it, head dims 32, 64
// and 128, the key-split kernel, and chunks of 128 keys; and those outputs
// lie within fp16's tolerance of float64.
func TestEmuAttentionMMALean(t *testing.T) {
	const heads = 2
	for _, c := range []struct {
		dh, warps int
		split     bool
		kc16      int
		l         emuAttnLayout
	}{
		{64, 4, false, 4, emuAttnLayout{lens: []int{93, 17}}},
		{64, 4, false, 4, emuAttnLayout{lens: []int{93, 17}, seqLen: 100, radius: 64}},
		{32, 4, false, 4, emuAttnLayout{lens: []int{140, 17}, radius: 20}},
		{128, 4, false, 4, emuAttnLayout{lens: []int{93, 40}}},
		{64, 4, true, 4, emuAttnLayout{lens: []int{93, 17}, radius: 40}},
		{64, 4, false, 8, emuAttnLayout{lens: []int{140, 93}, radius: 64}},
	} {
		name := fmt.Sprintf("dh=%d,split=%v,kc=%d,seqlen=%d,radius=%d", c.dh, c.split, 16*c.kc16, c.l.seqLen, c.l.radius)
		t.Run(name, func(t *testing.T) {
			width := heads * c.dh
			rows := c.l.rows()
			qkv := emuQKV(c.l, heads, c.dh, uint64(c.dh), uint64(c.kc16), 1)
			h16 := make([]uint16, len(qkv))
			for i, v := range qkv {
				h16[i] = half.Float32ToFloat16(v)
				qkv[i] = half.Float16ToFloat32(h16[i]) // the reference's inputs: what the kernel reads
			}
			qt, kernel, smem := 16*c.warps, fmt.Sprintf("attention_mma%d_%d_1h", c.dh, c.warps), attnMMAShared(c.dh, c.warps, 1, 16*c.kc16)
			if c.split {
				qt, kernel, smem = 16, fmt.Sprintf("attention_mma%d_%ds_1h", c.dh, c.warps), attnSplitShared(c.dh, 1)
			}
			tileBytes, ntiles := c.l.tiles(qt)
			scale := float32(1 / math.Sqrt(float64(c.dh)))
			lo := rows * width
			run := func(defines ...string) [][]byte {
				dst := make([]float32, rows*width)
				for i := range dst {
					dst[i] = float32(math.NaN())
				}
				return emuRunOn(t, emuRunnerTuned(t, defines...), [][]byte{f32Bytes(dst), u16Bytes(h16), tileBytes, make([]byte, 2*lo)},
					emuLaunch{name: kernel, grid: [3]int{ntiles, heads, 1}, threads: 32 * c.warps, smem: smem,
						args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(0), emuBuf(2, 0), emuInt(heads), emuF32(scale),
							emuVal(boolArg(c.l.radius > 0)), emuInt(c.l.radius), emuVal(0), emuBuf(3, 0), emuInt(1), emuVal(uint64(lo))}})
			}
			var base []string
			if c.kc16 != 4 {
				base = []string{fmt.Sprintf("ATTN_MMA_KC16=%d", c.kc16)}
			}
			want, got := run(base...), run(append(base, "ATTN_MMA_LEAN=1")...)
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("buffer %d differs from the default build's", i)
				}
			}
			at := func(part, r, _, h, d int) float64 { return float64(qkv[r*3*width+part*width+h*c.dh+d]) }
			t.Logf("largest error %.3g", emuAttnCheck(t, c.l, heads, c.dh, float64(scale), 1e-2, at, bytesF32(got[0])))
		})
	}
}

// ATTN_SKIP=1: the attention kernels leaving out a chunk's keys past the
// tile's last one give the outputs of the default build, which computes
// and masks them, bit for bit: attn_reg on two float32 terms with RoPE, the
// tensor-core kernels on float32 in one and two terms, on fp16 in one, the
// key-split kernel, the whole-row kernel, and 128-key chunks; rows of 93
// and 17 (a chunk partly filled), 140 (a second chunk; not for the
// whole-row kernel), right padding, and sliding windows whose tiles end
// short of a chunk. (The default build's outputs are held to float64 by
// TestEmuAttentionReg and the TestEmuAttentionMMA tests.)
func TestEmuAttentionSkip(t *testing.T) {
	const heads = 2
	layouts := []emuAttnLayout{
		{lens: []int{93, 17}},
		{lens: []int{93, 17}, seqLen: 100, radius: 64},
		{lens: []int{140, 17}, radius: 20},
	}
	type kernel struct {
		name      string
		dh, qt    int
		warps     int
		smem      int
		half, reg bool
		terms     int
		kc16      int
		rows      bool // the whole-row kernel: rows of at most rowsKeys
	}
	var kernels []kernel
	for _, dh := range []int{32, 64, 128} {
		kernels = append(kernels, kernel{name: fmt.Sprintf("attention%d_r16", dh), dh: dh, qt: 16, warps: wideWarps, smem: attnRegShared(dh), reg: true, terms: 2})
	}
	for _, k := range []struct{ dh, terms int }{{64, 1}, {64, 2}, {32, 1}, {128, 2}} {
		kernels = append(kernels, kernel{name: fmt.Sprintf("attention_mma%d_4_%d", k.dh, k.terms), dh: k.dh, qt: 64, warps: 4,
			smem: attnMMAShared(k.dh, 4, k.terms, 64), terms: k.terms, kc16: 4})
	}
	kernels = append(kernels,
		kernel{name: "attention_mma64_4_1h", dh: 64, qt: 64, warps: 4, smem: attnMMAShared(64, 4, 1, 64), half: true, terms: 1, kc16: 4},
		kernel{name: "attention_mma64_4s_2", dh: 64, qt: 16, warps: 4, smem: attnSplitShared(64, 2), terms: 2, kc16: 4},
		kernel{name: "attention_mma64_8_1h", dh: 64, qt: 128, warps: 8, smem: attnMMAShared(64, 8, 1, 128), half: true, terms: 1, kc16: 8},
		kernel{name: "attention_mma64_4_2", dh: 64, qt: 64, warps: 4, smem: attnMMAShared(64, 4, 2, 128), terms: 2, kc16: 8},
		kernel{name: "attention_rows64_4_2", dh: 64, qt: rowsKeys, warps: 4, smem: attnRowsShared(64, 2), terms: 2, kc16: 4, rows: true})
	const variant = "ATTN_SKIP=1"
	for _, k := range kernels {
		for _, l := range layouts {
			if k.rows && slices.Max(l.lens) > rowsKeys {
				continue
			}
			t.Run(fmt.Sprintf("%s,%s,kc=%d,lens=%v,seqlen=%d,radius=%d", variant, k.name, 16*k.kc16, l.lens, l.seqLen, l.radius), func(t *testing.T) {
				width, rows := heads*k.dh, l.rows()
				qkv := emuQKV(l, heads, k.dh, uint64(k.dh), uint64(rows), 1)
				_, in, two := emuAttnInput(qkv, k.half, k.reg)
				rope := emuRope(slices.Max(append(slices.Clone(l.lens), l.seqLen)), k.dh)
				ropeArg := emuVal(0)
				if k.reg {
					ropeArg = emuBuf(4, 0)
				}
				tileBytes, ntiles := l.tiles(k.qt)
				dst := make([]float32, rows*width)
				for i := range dst {
					dst[i] = float32(math.NaN())
				}
				kind, lo := 2*k.terms-1, rows*width
				launch := emuLaunch{name: k.name, grid: [3]int{ntiles, heads, 1}, threads: 32 * k.warps, smem: k.smem,
					args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(uint64(two)), emuBuf(2, 0), emuInt(heads), emuF32(float32(1 / math.Sqrt(float64(k.dh)))),
						emuVal(boolArg(l.radius > 0)), emuInt(l.radius), ropeArg, emuBuf(3, 0), emuInt(kind), emuVal(uint64(lo))}}
				bufs := [][]byte{f32Bytes(dst), in, tileBytes, make([]byte, 2*2*lo), f32Bytes(rope)}
				var defines []string
				if k.kc16 != 4 {
					defines = append(defines, fmt.Sprintf("ATTN_MMA_KC16=%d", k.kc16))
				}
				bin := emuRunner(t)
				if defines != nil {
					bin = emuRunnerTuned(t, defines...)
				}
				all := emuRunOn(t, bin, bufs, launch)
				skip := emuRunOn(t, emuRunnerTuned(t, append(defines, variant)...), bufs, launch)
				for i := range all {
					if !bytes.Equal(skip[i], all[i]) {
						t.Fatalf("buffer %d differs from the default build's", i)
					}
				}
				if slices.ContainsFunc(bytesF32(skip[0]), func(v float32) bool { return v != v }) {
					t.Fatal("a row of the output was not written")
				}
			})
		}
	}
}

// The key-split tensor-core attention (four warps sharing a tile of 16
// queries, each a quarter of every chunk's keys) against float64: rows of
// 93 keys (two chunks, the second partly empty) and 17, packed and
// right-padded to 100 (padding queries must come out zero), with and
// without a sliding window, head dims 32, 64 and 128; and scores 64 times
// larger (in two terms: one fp16 term's rounding of such q and k moves the
// answer beyond the tolerance), whose softmax overflows float32 unless each
// row's maximum over all four warps is taken out.
func TestEmuAttentionMMASplit(t *testing.T) {
	const heads = 2
	for _, c := range []struct {
		l     emuAttnLayout
		gain  float64
		heads []int
		terms []int
	}{
		{emuAttnLayout{lens: []int{93, 17}}, 1, []int{32, 64, 128}, nil},
		{emuAttnLayout{lens: []int{93, 17}, seqLen: 100, radius: 8}, 1, []int{64, 128}, nil},
		{emuAttnLayout{lens: []int{93, 17}, radius: 20}, 1, []int{32}, nil},
		{emuAttnLayout{lens: []int{93, 17}}, 8, []int{64}, []int{2}},
	} {
		for _, dh := range c.heads {
			qkv := emuQKV(c.l, heads, dh, 5, uint64(dh), c.gain)
			t.Run(fmt.Sprintf("dh=%d,seqlen=%d,radius=%d,gain=%g", dh, c.l.seqLen, c.l.radius, c.gain), func(t *testing.T) {
				emuAttentionMMA(t, dh, heads, splitWarps, true, c.l, qkv, c.terms...)
			})
		}
	}
}

// emuAttnLayout is a batch for the attention tests: its rows' lengths,
// packed (seqLen 0) or right-padded to seqLen, and a sliding window's
// radius (0: none).
type emuAttnLayout struct {
	lens           []int
	seqLen, radius int
}

// rows is the tensor rows of the batch.
func (l emuAttnLayout) rows() int {
	if l.seqLen > 0 {
		return len(l.lens) * l.seqLen
	}
	n := 0
	for _, k := range l.lens {
		n += k
	}
	return n
}

// start and span are batch row b's first tensor row and its tensor rows.
func (l emuAttnLayout) start(b int) (start, span int) {
	if l.seqLen > 0 {
		return b * l.seqLen, l.seqLen
	}
	for _, k := range l.lens[:b] {
		start += k
	}
	return start, l.lens[b]
}

// tiles is l's tile list for tiles of qt queries, as the stream stages it
// (five int32 a tile: first query row, the row's first tensor row, its
// length, the tile's first position, its queries), and the tiles' count.
func (l emuAttnLayout) tiles(qt int) ([]byte, int) {
	var tiles []int32
	for b, n := range l.lens {
		start, span := l.start(b)
		for p := 0; p < span; p += qt {
			tiles = append(tiles, int32(start+p), int32(start), int32(n), int32(p), int32(min(qt, span-p)))
		}
	}
	buf := make([]byte, 4*len(tiles))
	for i, v := range tiles {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(v))
	}
	return buf, len(tiles) / 5
}

// emuRope is a RoPE table (θ 10000) for positions 0..n−1 and head dim dh,
// as the attention kernels read it: each position's cosines, then sines,
// of dh/2 angles.
func emuRope(n, dh int) []float32 {
	rope := make([]float32, n*dh)
	for p := range n {
		for j := range dh / 2 {
			a := float64(p) * math.Pow(10000, -2*float64(j)/float64(dh))
			rope[p*dh+j], rope[p*dh+dh/2+j] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	return rope
}

// emuQKV is a random qkv for l: normal values, queries and keys times gain.
func emuQKV(l emuAttnLayout, heads, dh int, seed1, seed2 uint64, gain float64) []float32 {
	width := heads * dh
	rng := rand.New(rand.NewPCG(seed1, seed2))
	qkv := make([]float32, l.rows()*3*width)
	for i := range qkv {
		v := rng.NormFloat64()
		if i%(3*width) < 2*width {
			v *= gain
		}
		qkv[i] = float32(v)
	}
	return qkv
}

// emuAttnInput is qkv as an attention kernel's input: fp16 (half), or
// float32 with a second float32 term small beside the first, two elements
// on (twoTerms: ld4's layout), or float32 as it is; and the values the
// kernel reads (fp16's rounding, or qkv and its second term after it).
func emuAttnInput(qkv []float32, half16, twoTerms bool) (seen []float32, in []byte, two int) {
	switch {
	case half16:
		h16 := make([]uint16, len(qkv))
		seen = make([]float32, len(qkv))
		for i, v := range qkv {
			h16[i] = half.Float32ToFloat16(v)
			seen[i] = half.Float16ToFloat32(h16[i])
		}
		return seen, u16Bytes(h16), 0
	case twoTerms:
		seen = slices.Clone(qkv)
		for _, v := range qkv {
			seen = append(seen, v/512)
		}
		return seen, f32Bytes(seen), len(qkv)
	}
	return qkv, f32Bytes(qkv), 0
}

func emuAttentionMMA(t *testing.T, dh, heads, warps int, split bool, l emuAttnLayout, qkv []float32, termsList ...int) {
	emuAttentionMMATuned(t, 4, dh, heads, warps, split, l, qkv, termsList...)
}

// emuAttentionMMATuned is emuAttentionMMA on kernels built with chunks of
// 16·kc16 keys (ATTN_MMA_KC16; 4 is the default build).
func emuAttentionMMATuned(t *testing.T, kc16, dh, heads, warps int, split bool, l emuAttnLayout, qkv []float32, termsList ...int) {
	bin := emuRunner(t)
	if kc16 != 4 {
		bin = emuRunnerTuned(t, fmt.Sprintf("ATTN_MMA_KC16=%d", kc16))
	}
	emuAttentionMMAOn(t, bin, kc16, dh, heads, warps, split, l, qkv, termsList...)
}

// emuAttentionMMAOn is emuAttentionMMATuned on the emulator bin, whose
// build has chunks of 16·kc16 keys.
func emuAttentionMMAOn(t *testing.T, bin string, kc16, dh, heads, warps int, split bool, l emuAttnLayout, qkv []float32, termsList ...int) {
	width := heads * dh
	rows := l.rows()
	qt := 16 * warps
	if split {
		qt = 16
	}
	tileBytes, ntiles := l.tiles(qt)
	scale := float32(1 / math.Sqrt(float64(dh)))
	if termsList == nil {
		termsList = []int{1, 2}
	}
	for _, terms := range termsList {
		t.Run(fmt.Sprintf("terms=%d", terms), func(t *testing.T) {
			// NaN everywhere first: every row, padding included, is written.
			dst := make([]float32, rows*width)
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			// The output's 16-bit copy for the GEMM after: fp16, or two
			// fp16 terms (kind 3) lo elements apart, or where the tiles are
			// odd in number the two side by side a row (kindKCat).
			kind := 2*terms - 1
			if terms == 2 && ntiles%2 == 1 {
				kind = kindKCat
			}
			lo := kcatLo(kind, rows, width)
			name, smem := fmt.Sprintf("attention_mma%d_%d_%d", dh, warps, terms), attnMMAShared(dh, warps, terms, 16*kc16)
			if split {
				name, smem = fmt.Sprintf("attention_mma%d_%ds_%d", dh, warps, terms), attnSplitShared(dh, terms)
			}
			out := emuRunOn(t, bin, [][]byte{f32Bytes(dst), f32Bytes(qkv), tileBytes, make([]byte, 2*2*rows*width)}, emuLaunch{
				name: name, grid: [3]int{ntiles, heads, 1}, threads: 32 * warps, smem: smem,
				args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(0), emuBuf(2, 0), emuInt(heads), emuF32(scale),
					emuVal(boolArg(l.radius > 0)), emuInt(l.radius), emuVal(0), emuBuf(3, 0), emuInt(kind), emuVal(uint64(lo))},
			})
			got := bytesF32(out[0])
			check16(t, got, out[3], lo, kind)
			tol := 2e-4
			if terms == 1 {
				tol = 1e-2 // q, k, v and the probabilities rounded to fp16
			}
			at := func(part, r, _, h, d int) float64 { return float64(qkv[r*3*width+part*width+h*dh+d]) }
			t.Logf("largest error %.3g", emuAttnCheck(t, l, heads, dh, float64(scale), tol, at, got))
		})
	}
}

// linear_mma against float64 products of its fp16 operands: row counts
// across 16-row tiles and blocks of 128 rows, column counts across partial
// tiles, k in one split and in several (an uneven last one), one and two
// terms, bias, activations, a folded residual and fp16 outputs, and the
// splits planLinearMMA chooses.
func TestEmuLinearMMA(t *testing.T) {
	type tc struct {
		m, n, k, terms, kc int // kc 0: planLinearMMA's for sms
		warps              int // 0: 4
		sms                int
		bias               bool
		act                int
		accum, half        bool
	}
	cases := []tc{
		{m: 1, n: 64, k: 16, terms: 1, kc: 16},
		{m: 17, n: 72, k: 48, terms: 2, kc: 16, bias: true, act: 2},
		{m: 96, n: 130, k: 80, terms: 1, kc: 32, half: true},
		{m: 96, n: 200, k: 256, terms: 2, kc: 64, accum: true},
		{m: 130, n: 64, k: 64, terms: 2, kc: 64, act: 1, bias: true},
		{m: 200, n: 96, k: 32, terms: 1, kc: 16, accum: true},
		{m: 93, n: 128, k: 1024, terms: 2, sms: 4},
		{m: 96, n: 300, k: 96, terms: 2, kc: 32, warps: 8, accum: true},
		{m: 40, n: 128, k: 512, terms: 1, warps: 8, sms: 2, bias: true, act: 1},
		{m: 96, n: 64, k: 256, terms: 1, sms: 132, half: true},
		// 17 splits: the last block adds them in batches of LMMA_SUMS,
		// the last batch partly filled; four outputs a thread and one (n
		// no multiple of 4).
		{m: 33, n: 96, k: 272, terms: 1, kc: 16, accum: true},
		{m: 33, n: 98, k: 272, terms: 2, kc: 16, bias: true},
	}
	for _, c := range cases {
		c.warps = cmp.Or(c.warps, 4)
		name := fmt.Sprintf("m=%d,n=%d,k=%d,terms=%d,warps=%d,kc=%d,sms=%d,bias=%v,act=%d,accum=%v,half=%v", c.m, c.n, c.k, c.terms,
			c.warps, c.kc, c.sms, c.bias, c.act, c.accum, c.half)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.m), uint64(c.n*c.k)))
			x, w, prod, mags := lmmaOperands(rng, c.m, c.n, c.k, c.terms)
			bias := normals(rng, c.n)
			d0 := normals(rng, c.m*c.n)
			var p lmmaPlan
			if c.kc == 0 {
				var ok bool
				if p, ok = planLinearMMA(c.m, c.n, c.k, c.terms, c.warps, c.sms, lmmaSharedLimit); !ok {
					t.Fatal("no plan")
				}
				t.Logf("plan %+v", p)
			} else {
				p = lmmaPlanKC(c.m, c.n, c.k, c.terms, c.warps, c.kc)
			}
			dBytes := f32Bytes(d0)
			if c.half {
				dBytes = make([]byte, 2*c.m*c.n)
			}
			part := make([]byte, max(p.partBytes(c.m, c.n), 4))
			sem := make([]byte, 4*p.tilesN*p.tilesM)
			biasArg := emuVal(0)
			if c.bias {
				biasArg = emuBuf(3, 0)
			}
			launch := lmmaArgs{d: emuBuf(0, 0), x: emuBuf(1, 0), xlo: emuVal(uint64(c.m * c.k)), w: emuBuf(2, 0), bias: biasArg,
				m: emuInt(c.m), k: emuInt(c.k), n: emuInt(c.n), act: emuVal(uint64(c.act)), accum: emuVal(boolArg(c.accum)),
				half: emuVal(boolArg(c.half)), part: emuBuf(4, 0), sem: emuBuf(5, 0)}.launch(c.terms, p)
			out := emuRun(t, [][]byte{dBytes, u16Bytes(x), u16Bytes(w), f32Bytes(bias), part, sem}, launch)
			// The split counters are back at zero for the next launch.
			for i, b := range out[5] {
				if b != 0 {
					t.Fatalf("split counter byte %d is %d after the launch, want 0", i, b)
				}
			}
			lmmaCheck(t, out[0], prod, mags, d0, bias, c.m, c.n, c.bias, c.act, c.accum, c.half)
		})
	}
}

// lmmaCheck holds a GEMM's output d (float32, or fp16 where half) to the
// float64 product prod (mags: the sums of its terms' magnitudes), plus d0
// where accum, plus the bias where withBias, then the activation.
func lmmaCheck(t *testing.T, d []byte, prod, mags []float64, d0, bias []float32, m, n int, withBias bool, act int, accum, half16 bool) {
	t.Helper()
	worst := 0.0
	for r := range m {
		for col := range n {
			ref, mag := prod[r*n+col], mags[r*n+col]
			if accum {
				ref += float64(d0[r*n+col])
			}
			if withBias {
				ref += float64(bias[col])
			}
			switch act {
			case 1:
				ref = 0.5 * ref * math.Erfc(-ref*0.70710678118654752)
			case 2:
				ref = math.Max(ref, 0)
			}
			var got float64
			tol := 4e-7*(mag+math.Abs(ref)) + 1e-6
			if half16 {
				got = float64(half.Float16ToFloat32(binary.LittleEndian.Uint16(d[2*(r*n+col):])))
				tol += math.Abs(ref) / 1024
			} else {
				got = float64(math.Float32frombits(binary.LittleEndian.Uint32(d[4*(r*n+col):])))
			}
			if e := math.Abs(got - ref); !(e <= tol) {
				t.Fatalf("d[%d][%d] = %g, want %g (±%.2g)", r, col, got, ref, tol)
			} else {
				worst = math.Max(worst, e)
			}
		}
	}
	t.Logf("largest error %.3g", worst)
}

// lmmaOperands are random operands of linear_mma: x's terms as the
// producers store them (the fp16 rounding of each value, then the rounding
// of what it missed), an fp16 weight, and their float64 product with the
// sums of its terms' magnitudes.
func lmmaOperands(rng *rand.Rand, m, n, k, terms int) (x, w []uint16, prod, mag []float64) {
	x = make([]uint16, terms*m*k)
	xv := make([]float64, m*k)
	for i := range xv {
		v := float32(rng.NormFloat64())
		h := half.Float32ToFloat16(v)
		x[i] = h
		xv[i] = float64(half.Float16ToFloat32(h))
		if terms == 2 {
			l := half.Float32ToFloat16(v - half.Float16ToFloat32(h))
			x[m*k+i] = l
			xv[i] += float64(half.Float16ToFloat32(l))
		}
	}
	w = make([]uint16, n*k)
	for i := range w {
		w[i] = half.Float32ToFloat16(float32(rng.NormFloat64() * 0.05))
	}
	prod, mag = make([]float64, m*n), make([]float64, m*n)
	for r := range m {
		for c := range n {
			for j := range k {
				v := xv[r*k+j] * float64(half.Float16ToFloat32(w[c*k+j]))
				prod[r*n+c] += v
				mag[r*n+c] += math.Abs(v)
			}
		}
	}
	return x, w, prod, mag
}

// linear_mma with the GeGLU that reads its product fused in: the GeGLU's
// float32 output (or none) and its 16-bit copy in one term or two, against
// the float64 GeGLU of the float64 product, across partial tiles of
// output pairs, one split and several, 4 and 8 warps.
func TestEmuLinearMMAGeGLU(t *testing.T) {
	for _, c := range []struct {
		m, inner, k, terms, kc, warps, kind int
		noF32                               bool
	}{
		{m: 17, inner: 40, k: 48, terms: 1, kc: 16, warps: 4, kind: 1},
		{m: 96, inner: 100, k: 64, terms: 2, kc: 64, warps: 4, kind: 3},
		{m: 96, inner: 64, k: 96, terms: 2, kc: 32, warps: 8, kind: 3, noF32: true},
		{m: 130, inner: 72, k: 32, terms: 1, kc: 32, warps: 8, kind: 1},
		// More splits than the last block loads at once; inner no multiple
		// of 4 (one output a thread) and a multiple (four).
		{m: 20, inner: 42, k: 160, terms: 2, kc: 16, warps: 4, kind: 3},
		{m: 40, inner: 36, k: 176, terms: 1, kc: 16, warps: 4, kind: 1},
	} {
		t.Run(fmt.Sprintf("m=%d,inner=%d,k=%d,terms=%d,kc=%d,warps=%d,kind=%d,noF32=%v", c.m, c.inner, c.k, c.terms, c.kc, c.warps,
			c.kind, c.noF32), func(t *testing.T) {
			n := 2 * c.inner
			rng := rand.New(rand.NewPCG(uint64(c.m), uint64(c.inner)))
			x, w, prod, mags := lmmaOperands(rng, c.m, n, c.k, c.terms)
			p := lmmaPlanKC(c.m, n, c.k, c.terms, c.warps, c.kc)
			lo := c.m * c.inner
			gdArg := emuBuf(6, 0)
			if c.noF32 {
				gdArg = emuVal(0)
			}
			out := emuRun(t, [][]byte{make([]byte, 4), u16Bytes(x), u16Bytes(w), make([]byte, 4), make([]byte, p.partBytes(c.m, n)),
				make([]byte, 4*p.tilesN*p.tilesM), make([]byte, 4*c.m*c.inner), make([]byte, 2*2*lo)},
				lmmaArgs{d: emuBuf(0, 0), x: emuBuf(1, 0), xlo: emuVal(uint64(c.m * c.k)), w: emuBuf(2, 0), m: emuInt(c.m), k: emuInt(c.k),
					n: emuInt(n), part: emuBuf(4, 0), sem: emuBuf(5, 0), inner: emuInt(c.inner), gd: gdArg, gh: emuBuf(7, 0),
					gkind: emuInt(c.kind), glo: emuVal(uint64(lo))}.launch(c.terms, p))
			gd, gh := bytesF32(out[6]), out[7]
			h16 := func(i int) uint16 { return binary.LittleEndian.Uint16(gh[2*i:]) }
			worst := 0.0
			for r := range c.m {
				for j := range c.inner {
					i, o := r*n+j, r*c.inner+j
					v, u := prod[i], prod[i+c.inner]
					g := 0.5 * v * math.Erfc(-v*0.70710678118654752)
					want := g * u
					// The GEMM's float32 sums, then float32's erfc.
					ev, eu := 4e-7*mags[i]+1e-7, 4e-7*mags[i+c.inner]+1e-7
					tol := 1.2*math.Abs(u)*ev + math.Abs(g)*eu + 2e-6*math.Abs(want) + 1e-7
					// The 16-bit copy is of the float32 value the kernel
					// computed: store16's terms of it, bit for bit.
					y := float32(want)
					if !c.noF32 {
						y = gd[o]
						if e := math.Abs(float64(y) - want); !(e <= tol) {
							t.Fatalf("gd[%d][%d] = %g, want %g (±%.2g)", r, j, y, want, tol)
						} else {
							worst = math.Max(worst, e/tol)
						}
					}
					hi := h16(o)
					if got := float64(half.Float16ToFloat32(hi)); !(math.Abs(got-want) <= tol+math.Abs(want)/1024) {
						t.Fatalf("gh[%d][%d] = %g, want %g", r, j, got, want)
					}
					if c.noF32 {
						continue
					}
					if want := half.Float32ToFloat16(y); hi != want {
						t.Fatalf("gh[%d][%d] = %#04x, want %#04x, the fp16 rounding of %g", r, j, hi, want, y)
					}
					if c.kind == 3 {
						if got, want := h16(o+lo), half.Float32ToFloat16(y-half.Float16ToFloat32(hi)); got != want {
							t.Fatalf("gh's second term [%d][%d] = %#04x, want %#04x", r, j, got, want)
						}
					}
				}
			}
			if !bytesZero(out[5]) {
				t.Errorf("split counters %v after the launch, want zeros", out[5])
			}
			t.Logf("largest error %.3g of the tolerance", worst)
		})
	}
}

// A LayerNorm run by the two linear_mma GEMMs around it: the first adds
// its product into the residual stream x and writes its tiles' row
// statistics, the second normalises x's rows from them as it reads its
// k-slices, in one fp16 term or two; against float64 (x's update, the
// LayerNorm of the float64 x, the product of its terms' roundings). Rows
// across 16-row tiles and two row blocks, hidden sizes with a partial last
// column tile, 4 and 8 warps on either side, one split and several, a
// LayerNorm bias or none, and rows whose mean is far from zero next to
// their spread (where a one-pass variance would cancel).
func TestEmuLinearMMALayerNorm(t *testing.T) {
	for _, c := range []struct {
		m, hidden, k1, n2, terms int
		wp, wc, kcp, kcc         int // the two GEMMs' warps and k chunks
		bias                     bool
		glu                      bool // the second GEMM computes the GeGLU of its product (as Wi's)
	}{
		{m: 93, hidden: 336, k1: 128, n2: 96, terms: 2, wp: 4, wc: 4, kcp: 64, kcc: 64, bias: true},
		{m: 130, hidden: 208, k1: 64, n2: 64, terms: 1, wp: 8, wc: 8, kcp: 32, kcc: 208},
		{m: 17, hidden: 64, k1: 32, n2: 80, terms: 2, wp: 4, wc: 8, kcp: 32, kcc: 32, bias: true},
		{m: 40, hidden: 160, k1: 48, n2: 128, terms: 1, wp: 8, wc: 4, kcp: 16, kcc: 64},
		{m: 93, hidden: 128, k1: 64, n2: 160, terms: 2, wp: 4, wc: 4, kcp: 64, kcc: 64, bias: true, glu: true},
		{m: 24, hidden: 96, k1: 32, n2: 96, terms: 1, wp: 8, wc: 8, kcp: 32, kcc: 32, glu: true},
	} {
		t.Run(fmt.Sprintf("m=%d,hidden=%d,k1=%d,n2=%d,terms=%d,warps=%d/%d,kc=%d/%d,bias=%v,glu=%v", c.m, c.hidden, c.k1, c.n2, c.terms,
			c.wp, c.wc, c.kcp, c.kcc, c.bias, c.glu), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.m), uint64(c.hidden)))
			a1, w1, prod1, _ := lmmaOperands(rng, c.m, c.hidden, c.k1, c.terms)
			pp, pc := lmmaPlanKC(c.m, c.hidden, c.k1, c.terms, c.wp, c.kcp), lmmaPlanKC(c.m, c.n2, c.hidden, c.terms, c.wc, c.kcc)
			x0 := make([]float32, c.m*c.hidden)
			for r := range c.m {
				offset := 20 * rng.NormFloat64()
				for j := range c.hidden {
					x0[r*c.hidden+j] = float32(offset + 0.5*rng.NormFloat64())
				}
			}
			w2 := make([]uint16, c.n2*c.hidden)
			for i := range w2 {
				w2[i] = half.Float32ToFloat16(float32(rng.NormFloat64() * 0.05))
			}
			g, b := make([]float32, c.hidden), make([]float32, c.hidden)
			for j := range g {
				g[j], b[j] = float32(1+0.2*rng.NormFloat64()), float32(0.1*rng.NormFloat64())
			}
			const eps = 1e-5
			lnb := emuVal(0)
			if c.bias {
				lnb = emuBuf(8, 0)
			}
			part := max(pp.partBytes(c.m, c.hidden), pc.partBytes(c.m, c.n2))
			sem := 4 * max(pp.tilesN*pp.tilesM, pc.tilesN*pc.tilesM)
			inner, gd := 0, emuVal(0)
			if c.glu {
				inner, gd = c.n2/2, emuBuf(10, 0)
			}
			out := emuRun(t, [][]byte{f32Bytes(x0), u16Bytes(a1), u16Bytes(w1), make([]byte, 8*pp.tilesN*c.m), make([]byte, part),
				make([]byte, sem), u16Bytes(w2), f32Bytes(g), f32Bytes(b), make([]byte, 4*c.m*c.n2), make([]byte, 4*c.m*max(inner, 1))},
				// The residual GEMM: x += a1·w1ᵀ, and its row statistics.
				lmmaArgs{d: emuBuf(0, 0), x: emuBuf(1, 0), xlo: emuVal(uint64(c.m * c.k1)), w: emuBuf(2, 0), m: emuInt(c.m),
					k: emuInt(c.k1), n: emuInt(c.hidden), accum: emuVal(1), part: emuBuf(4, 0), sem: emuBuf(5, 0),
					stat: emuBuf(3, 0)}.launch(c.terms, pp),
				// The GEMM of the LayerNorm of x, which it computes from x and
				// those statistics (no 16-bit x).
				lmmaArgs{d: emuBuf(9, 0), w: emuBuf(6, 0), m: emuInt(c.m), k: emuInt(c.hidden), n: emuInt(c.n2), part: emuBuf(4, 0),
					sem: emuBuf(5, 0), inner: emuInt(inner), gd: gd, lnx: emuBuf(0, 0), lnstat: emuBuf(3, 0),
					lntiles: emuInt(pp.tilesN), lnw: emuInt(16 * c.wp), lng: emuBuf(7, 0), lnb: lnb, eps: emuF32(eps)}.launch(c.terms, pc))
			x, y, glu := bytesF32(out[0]), bytesF32(out[9]), bytesF32(out[10])
			if !bytesZero(out[5]) {
				t.Errorf("split counters %v after the launches, want zeros", out[5])
			}
			// The float32 sums of the first GEMM (as TestEmuLinearMMA holds
			// them), then the LayerNorm and the second product in float64 of
			// x as the kernel left it: its rounding is the first GEMM's.
			worst := 0.0
			for r := range c.m {
				mean, m2 := 0.0, 0.0
				for j := range c.hidden {
					want := float64(x0[r*c.hidden+j]) + prod1[r*c.hidden+j]
					got := float64(x[r*c.hidden+j])
					if e := math.Abs(got - want); !(e <= 4e-7*math.Abs(want)+2e-5) {
						t.Fatalf("x[%d][%d] = %g, want %g", r, j, got, want)
					}
					mean += got
				}
				mean /= float64(c.hidden)
				for j := range c.hidden {
					d := float64(x[r*c.hidden+j]) - mean
					m2 += d * d
				}
				inv := 1 / math.Sqrt(m2/float64(c.hidden)+eps)
				normed := make([]float64, c.hidden)
				for j := range normed {
					normed[j] = (float64(x[r*c.hidden+j])-mean)*inv*float64(g[j]) + float64(b[j])
					if !c.bias {
						normed[j] -= float64(b[j])
					}
				}
				want, errs := make([]float64, c.n2), make([]float64, c.n2)
				for col := range c.n2 {
					mag := 0.0
					for j, v := range normed {
						p := v * float64(half.Float16ToFloat32(w2[col*c.hidden+j]))
						want[col] += p
						mag += math.Abs(p)
					}
					// One fp16 term rounds each normalised value by up to
					// 2⁻¹¹ of it; two leave float32's rounding of the
					// normalisation (whose mean and variance come in
					// another order than float64's), a few units in 2⁻²³.
					rel := 1.0 / 2048
					if c.terms == 2 {
						rel = 2e-6
					}
					errs[col] = rel*mag + 4e-7*mag + 1e-6
				}
				for col := range c.n2 {
					if c.glu {
						break
					}
					got := float64(y[r*c.n2+col])
					if e := math.Abs(got - want[col]); !(e <= errs[col]) {
						t.Fatalf("y[%d][%d] = %g, want %g (±%.2g)", r, col, got, want[col], errs[col])
					} else {
						worst = math.Max(worst, e/errs[col])
					}
				}
				for j := range inner {
					// The GeGLU of the product's halves, as in
					// TestEmuLinearMMAGeGLU.
					v, u := want[j], want[j+inner]
					gv := 0.5 * v * math.Erfc(-v*0.70710678118654752)
					tol := 1.2*math.Abs(u)*errs[j] + math.Abs(gv)*errs[j+inner] + 2e-6*math.Abs(gv*u) + 1e-7
					got := float64(glu[r*inner+j])
					if e := math.Abs(got - gv*u); !(e <= tol) {
						t.Fatalf("geglu[%d][%d] = %g, want %g (±%.2g)", r, j, got, gv*u, tol)
					} else {
						worst = math.Max(worst, e/tol)
					}
				}
			}
			t.Logf("largest error %.3g of the tolerance", worst)
		})
	}
}

func bytesZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// check16 checks a producer's 16-bit copy h of its float32 output y as
// store16 writes it: y's fp16 rounding, and for kind 3 the rounding of what
// that missed lo elements on, bit for bit; kind 5 (kindKCat) puts both
// terms of a row of lo elements side by side, the row's first term at
// twice its start, its second lo on.
func check16(t *testing.T, y []float32, h []byte, lo, kind int) {
	t.Helper()
	at := func(i int) uint16 { return binary.LittleEndian.Uint16(h[2*i:]) }
	for i, v := range y {
		j, jlo := i, i+lo
		if kind == kindKCat {
			j = i + i/lo*lo
			jlo = j + lo
		}
		hi := half.Float32ToFloat16(v)
		if got := at(j); got != hi {
			t.Fatalf("16-bit copy [%d] = %#04x, want %#04x, the fp16 rounding of %g", i, got, hi, v)
		}
		if kind == 3 || kind == kindKCat {
			if got, want := at(jlo), half.Float32ToFloat16(v-half.Float16ToFloat32(hi)); got != want {
				t.Fatalf("16-bit copy's second term [%d] = %#04x, want %#04x", i, got, want)
			}
		}
	}
}

// kcatLo is the lo a producer of kind is given for a copy of rows rows of
// width: the row's width where kind lays the terms side by side, else the
// copy's elements.
func kcatLo(kind, rows, width int) int {
	if kind == kindKCat || kind == kindKCatWeight {
		return width
	}
	return rows * width
}

// to_16 in every kind against store16's layouts; kind 6 (kindKCatWeight)
// writes each row's fp16 rounding twice side by side.
func TestEmuTo16(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const rows, width = 7, 36
	x := normals(rng, rows*width)
	for i := range x {
		x[i] *= float32(math.Exp2(float64(rng.IntN(9) - 4)))
	}
	for _, kind := range []int{1, 3, kindKCat, kindKCatWeight} {
		lo := kcatLo(kind, rows, width)
		out := emuRun(t, [][]byte{make([]byte, 2*2*rows*width), f32Bytes(x)},
			emuLaunch{name: "to_16", grid: [3]int{3, 1, 1}, threads: 32, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0),
				emuVal(uint64(rows * width)), emuVal(uint64(lo)), emuInt(kind)}})
		if kind != kindKCatWeight {
			check16(t, x, out[0], lo, kind)
			continue
		}
		for r := range rows {
			for c := range width {
				want := half.Float32ToFloat16(x[r*width+c])
				for _, j := range []int{r*2*width + c, r*2*width + width + c} {
					if got := binary.LittleEndian.Uint16(out[0][2*j:]); got != want {
						t.Fatalf("kind %d: [%d][%d] at %d = %#04x, want %#04x", kind, r, c, j, got, want)
					}
				}
			}
		}
	}
}

// layer_norm, layer_norm4 and geglu4 against float64, and their 16-bit
// copies (four halves a store) against store16's, in one term and two.
func TestEmuProducers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	normal := func(n int) []float32 { return normals(rng, n) }
	for _, kind := range []int{1, 3, kindKCat} {
		// Each kernel plain, with its rows read from a table by index
		// (xidx: the token embeddings' norm) and with the residual's
		// addend read so (ridx: the decision head's question types),
		// against float64 of the rows each names.
		for _, c := range []struct {
			kernel, fold string
			threads      int
		}{
			{"layer_norm4", "", 64}, {"layer_norm4", "xidx", 64}, {"layer_norm4", "ridx", 64},
			{"layer_norm", "", 96}, {"layer_norm", "xidx", 96}, {"layer_norm", "ridx", 96},
		} {
			t.Run(fmt.Sprintf("%s/%s/kind=%d", c.kernel, c.fold, kind), func(t *testing.T) {
				const rows, cols, table = 5, 200, 7
				idx := []int32{6, 0, 3, 3, 5} // repeats and skips rows, as token ids do
				x, w, b, res := normal(table*cols), normal(cols), normal(cols), normal(table*cols)
				lo := kcatLo(kind, rows, cols)
				xi, ri := emuVal(0), emuVal(0)
				xRow, rRow := func(r int) int { return r }, func(r int) int { return r }
				switch c.fold {
				case "xidx":
					xi, xRow = emuBuf(6, 0), func(r int) int { return int(idx[r]) }
				case "ridx":
					ri, rRow = emuBuf(6, 0), func(r int) int { return int(idx[r]) }
				}
				var resArg emuArg = emuBuf(5, 0)
				if c.fold == "xidx" {
					resArg = emuVal(0) // the kernel would write the sum back into the table
				}
				ib := make([]byte, 4*rows)
				for i, v := range idx {
					binary.LittleEndian.PutUint32(ib[4*i:], uint32(v))
				}
				xin := append([]float32(nil), x...)
				out := emuRun(t, [][]byte{make([]byte, 4*rows*cols), f32Bytes(x), f32Bytes(w), f32Bytes(b), make([]byte, 2*2*rows*cols), f32Bytes(res), ib},
					emuLaunch{name: c.kernel, grid: [3]int{rows, 1, 1}, threads: c.threads, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0),
						emuBuf(2, 0), emuBuf(3, 0), emuInt(cols), emuF32(1e-5), emuBuf(4, 0), emuInt(kind), emuVal(uint64(lo)), resArg,
						emuVal(0), xi, ri, emuBuf(2, 0), emuVal(4 * cols), emuVal(0), emuVal(0)}}) // prefetching w
				y := bytesF32(out[0])
				in := func(r, c2 int) float32 { return xin[xRow(r)*cols+c2] }
				add := func(r, c2 int) float32 { return res[rRow(r)*cols+c2] }
				if c.fold == "xidx" {
					add = func(int, int) float32 { return 0 }
				}
				for r := range rows {
					var mean, v float64
					for c2 := range cols {
						mean += float64(in(r, c2) + add(r, c2))
					}
					mean /= cols
					for c2 := range cols {
						d := float64(in(r, c2)+add(r, c2)) - mean
						v += d * d
					}
					inv := 1 / math.Sqrt(v/cols+1e-5)
					for c2 := range cols {
						want := (float64(in(r, c2)+add(r, c2))-mean)*inv*float64(w[c2]) + float64(b[c2])
						if got := float64(y[r*cols+c2]); !(math.Abs(got-want) <= 1e-5*(1+math.Abs(want))) {
							t.Fatalf("[%d][%d] = %g, want %g", r, c2, got, want)
						}
					}
				}
				check16(t, y, out[4], lo, kind)
				// The residual's sum is written back to x's rows (the
				// addend's row by ridx); a table read by index is never
				// written.
				back := bytesF32(out[1])
				if c.fold == "xidx" && !slices.Equal(back, xin) {
					t.Errorf("the table of rows read by index was written")
				}
				if c.fold != "xidx" {
					for r := range rows {
						for c2 := range cols {
							if want := in(r, c2) + add(r, c2); back[r*cols+c2] != want {
								t.Fatalf("x[%d][%d] written back as %g, want %g", r, c2, back[r*cols+c2], want)
							}
						}
					}
				}
			})
		}
		// The default build (GEGLU_EXP=1) takes gelu_exp; GEGLU_EXP=0 the
		// erf form for one 16-bit term (kind 1) and the erfc form for two,
		// and with GEGLU_ERF=0 the erfc form throughout: the same float64
		// GELU within the same bound, the GELU's inputs reaching −9, where
		// 1 + erf cancels.
		for _, tuned := range [][]string{nil, {"GEGLU_EXP=0"}, {"GEGLU_EXP=0", "GEGLU_ERF=0"}} {
			t.Run(fmt.Sprintf("geglu4/kind=%d%s", kind, strings.Join(append([]string{""}, tuned...), "/")), func(t *testing.T) {
				const rows, inner = 3, 40
				x := normal(rows * 2 * inner)
				for c := range inner {
					x[c] = -9 + 18*float32(c)/inner // the first row's GELU inputs
				}
				lo := kcatLo(kind, rows, inner)
				out := emuRunOn(t, emuRunnerTuned(t, tuned...), [][]byte{make([]byte, 4*rows*inner), f32Bytes(x), make([]byte, 2*2*rows*inner)},
					emuLaunch{name: "geglu4", grid: [3]int{2, 1, 1}, threads: 32, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(0),
						emuInt(rows), emuInt(inner), emuBuf(2, 0), emuInt(kind), emuVal(uint64(lo)), emuInt(1), emuInt(0),
						emuVal(0), emuVal(0), emuBuf(1, 0), emuVal(4 * 2 * rows * inner)}}) // prefetching x
				y := bytesF32(out[0])
				for r := range rows {
					for c := range inner {
						v, u := float64(x[r*2*inner+c]), float64(x[r*2*inner+inner+c])
						want := 0.5 * v * math.Erfc(-v*0.70710678118654752) * u
						if got := float64(y[r*inner+c]); !(math.Abs(got-want) <= 1e-6*(1+math.Abs(want))) {
							t.Fatalf("[%d][%d] = %g, want %g", r, c, got, want)
						}
					}
				}
				check16(t, y, out[2], lo, kind)
			})
		}
	}
}

// geglu4 on fp16 inputs (hin: a GEMM wrote them for it, FP16's GeGLU whose
// GEMM output nothing else reads) against float64 on the fp16 values, and
// its 16-bit copy, in one 16-bit term and two.
func TestEmuGeGLUHalfIn(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kind := range []int{1, 3} {
		const rows, inner = 5, 44
		x := make([]uint16, rows*2*inner)
		for i := range x {
			x[i] = half.Float32ToFloat16(float32(3 * rng.NormFloat64()))
		}
		lo := rows * inner
		out := emuRun(t, [][]byte{make([]byte, 4*rows*inner), u16Bytes(x), make([]byte, 2*2*lo)},
			emuLaunch{name: "geglu4", grid: [3]int{3, 1, 1}, threads: 32, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(0),
				emuInt(rows), emuInt(inner), emuBuf(2, 0), emuInt(kind), emuVal(uint64(lo)), emuInt(1), emuInt(1),
				emuVal(0), emuVal(0), emuVal(0), emuVal(0)}})
		y := bytesF32(out[0])
		for r := range rows {
			for c := range inner {
				v := float64(half.Float16ToFloat32(x[r*2*inner+c]))
				u := float64(half.Float16ToFloat32(x[r*2*inner+inner+c]))
				want := 0.5 * v * math.Erfc(-v*0.70710678118654752) * u
				if got := float64(y[r*inner+c]); !(math.Abs(got-want) <= 1e-6*(1+math.Abs(want))) {
					t.Fatalf("kind %d [%d][%d] = %g, want %g", kind, r, c, got, want)
				}
			}
		}
		check16(t, y, out[2], lo, kind)
	}
}

// gelu_exp (the default, GEGLU_EXP=1) against float64's GELU at 40,001
// inputs from −10 to 10 (GeluInputs), through geglu4 with u = 1, in one 16-bit
// term and FP16X2's two, within CheckGeluExp's bounds.
func TestEmuGeluExp(t *testing.T) {
	x, inner := GeluInputs(40000)
	for _, kind := range []int{1, 3} {
		out := emuRun(t, [][]byte{make([]byte, 4*inner), f32Bytes(x), make([]byte, 2*2*inner)},
			emuLaunch{name: "geglu4", grid: [3]int{64, 1, 1}, threads: 128, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(0),
				emuInt(1), emuInt(inner), emuBuf(2, 0), emuInt(kind), emuVal(uint64(inner)), emuInt(1), emuInt(0),
				emuVal(0), emuVal(0), emuVal(0), emuVal(0)}})
		y := bytesF32(out[0])
		for i := range inner {
			if err := CheckGeluExp(float64(x[i]), y[i]); err != nil {
				t.Fatalf("kind %d: %v", kind, err)
			}
		}
		check16(t, y, out[2], inner, kind)
	}
}

// normals is n standard normal draws of rng, as float32.
func normals(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// linear_mma's last block adds a tile's split sums in split order whether
// it takes four outputs a thread (n a multiple of 4) or one: the same
// product with one weight row more (n 97 against 96) must agree bit for bit
// on the columns both have, for more splits than it loads at once.
func TestEmuLinearMMASumOrder(t *testing.T) {
	const m, k, kc, warps = 33, 272, 16, 4
	rng := rand.New(rand.NewPCG(7, 97))
	x, w, _, _ := lmmaOperands(rng, m, 97, k, 1)
	run := func(n int) []float32 {
		p := lmmaPlanKC(m, n, k, 1, warps, kc)
		launch := lmmaArgs{d: emuBuf(0, 0), x: emuBuf(1, 0), xlo: emuVal(uint64(m * k)), w: emuBuf(2, 0), m: emuInt(m), k: emuInt(k),
			n: emuInt(n), part: emuBuf(3, 0), sem: emuBuf(4, 0)}.launch(1, p)
		out := emuRun(t, [][]byte{make([]byte, 4*m*n), u16Bytes(x), u16Bytes(w[:n*k]), make([]byte, p.partBytes(m, n)),
			make([]byte, 4*p.tilesN*p.tilesM)}, launch)
		return bytesF32(out[0])
	}
	four, one := run(96), run(97)
	for r := range m {
		for c := range 96 {
			if a, b := four[r*96+c], one[r*97+c]; math.Float32bits(a) != math.Float32bits(b) {
				t.Fatalf("d[%d][%d]: %g with four outputs a thread, %g with one", r, c, a, b)
			}
		}
	}
}

// lmmaPlanKC is the plan of a linear_mma GEMM split into k chunks of kc,
// where a test picks the chunk instead of planLinearMMA.
func lmmaPlanKC(m, n, k, terms, warps, kc int) lmmaPlan {
	return lmmaPlan{warps: warps, kc: kc, splits: (k + kc - 1) / kc, tilesN: (n + 16*warps - 1) / (16 * warps),
		tilesM: (m + 16*lmmaTiles - 1) / (16 * lmmaTiles), shared: lmmaShared(kc, m, terms, warps)}
}

// lmmaArgs names linear_mma's arguments, which launch passes in lin_mma's
// order (kc from the plan); one a test leaves out is 0: no bias, no GeGLU,
// no LayerNorm statistics or LayerNorm.
type lmmaArgs struct {
	d, x, xlo, w, bias, m, k, n, act, accum, half, part, sem emuArg
	inner, gd, gh, gkind, glo                                emuArg
	stat, lnx, lnstat, lntiles, lnw, lng, lnb, eps           emuArg
}

func (a lmmaArgs) launch(terms int, p lmmaPlan) emuLaunch {
	return emuLaunch{name: fmt.Sprintf("linear_mma_%d_%d", terms, p.warps), grid: [3]int{p.tilesN, p.splits, p.tilesM},
		threads: 32 * p.warps, smem: p.shared,
		args: []emuArg{a.d, a.x, a.xlo, a.w, a.bias, a.m, a.k, a.n, a.act, a.accum, a.half, emuInt(p.kc), a.part, a.sem,
			a.inner, a.gd, a.gh, a.gkind, a.glo, a.stat, a.lnx, a.lnstat, a.lntiles, a.lnw, a.lng, a.lnb, a.eps}}
}

// attn_reg (the float32 attention whose sixteen warps share a tile's 16
// queries) against float64 attention, RoPE and a qkv of two float32 terms
// included: rows shorter than a chunk, rows of several chunks (with and
// without a sliding window whose span crosses chunk boundaries), right
// padding (padding queries must come out zero, every row written), head
// dims 32, 64 and 128; and its output's two fp16 terms (check16).
func TestEmuAttentionReg(t *testing.T) {
	const heads = 2
	for _, c := range []struct {
		l   emuAttnLayout
		dhs []int
	}{
		{emuAttnLayout{lens: []int{93, 17}}, []int{32, 64, 128}},
		{emuAttnLayout{lens: []int{93, 17}, seqLen: 100}, []int{64}},
		{emuAttnLayout{lens: []int{300, 5}, radius: 64}, []int{64, 128}},
		{emuAttnLayout{lens: []int{200}}, []int{32, 64}},
		{emuAttnLayout{lens: []int{150, 40}, seqLen: 160, radius: 20}, []int{128}},
	} {
		for _, dh := range c.dhs {
			t.Run(fmt.Sprintf("dh=%d,lens=%v,seqlen=%d,radius=%d", dh, c.l.lens, c.l.seqLen, c.l.radius), func(t *testing.T) {
				emuAttentionReg(t, dh, heads, c.l)
			})
		}
	}
}

func emuAttentionReg(t *testing.T, dh, heads int, l emuAttnLayout) {
	width := heads * dh
	rows := l.rows()
	const qt = 16
	tileBytes, ntiles := l.tiles(qt)
	maxLen := 0
	for b := range l.lens {
		_, span := l.start(b)
		maxLen = max(maxLen, span)
	}
	// Two terms: a GEMM's float32 output of the stacked fp16 terms, the
	// second two elements on (ld4), small beside the first.
	rng := rand.New(rand.NewPCG(uint64(dh), uint64(rows)))
	n1 := rows * 3 * width
	qkv := make([]float32, 2*n1)
	for i := range qkv {
		qkv[i] = float32(rng.NormFloat64())
		if i >= n1 {
			qkv[i] *= 1.0 / 512
		}
	}
	rope := emuRope(maxLen, dh)
	// x is element d of the rotated q (part 0) or k (1), or of v (2), of
	// tensor row r, position pos, head h, as float64 from the float32 the
	// kernel sums.
	x := func(part, r, pos, h, d int) float64 {
		at := func(d int) float64 {
			i := r*3*width + part*width + h*dh + d
			return float64(qkv[i] + qkv[i+n1])
		}
		if part == 2 {
			return at(d)
		}
		half := dh / 2
		j := d % half
		a, b := at(j), at(j+half)
		c, s := float64(rope[pos*dh+j]), float64(rope[pos*dh+half+j])
		if d < half {
			return a*c - b*s
		}
		return b*c + a*s
	}
	dst := make([]float32, rows*width)
	for i := range dst {
		dst[i] = float32(math.NaN())
	}
	kind, lo := 3, rows*width
	scale := float32(1 / math.Sqrt(float64(dh)))
	out := emuRun(t, [][]byte{f32Bytes(dst), f32Bytes(qkv), tileBytes, make([]byte, 2*2*lo), f32Bytes(rope)}, emuLaunch{
		name: fmt.Sprintf("attention%d_r16", dh), grid: [3]int{ntiles, heads, 1}, threads: 32 * wideWarps, smem: attnRegShared(dh),
		args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(uint64(n1)), emuBuf(2, 0), emuInt(heads), emuF32(scale),
			emuVal(boolArg(l.radius > 0)), emuInt(l.radius), emuBuf(4, 0), emuBuf(3, 0), emuInt(kind), emuVal(uint64(lo))},
	})
	got := bytesF32(out[0])
	check16(t, got, out[3], lo, kind)
	t.Logf("largest error %.3g", emuAttnCheck(t, l, heads, dh, float64(scale), 1e-5, x, got))
}

// emuAttnCheck holds an attention kernel's float32 output got for l to
// float64 attention within tol and returns the largest error: at(part, r,
// pos, h, d) is element d of head h of the query (part 0), key (1) or
// value (2) of tensor row r at position pos, as the kernel should see it.
// Every row is checked, a padding query's output against zero.
func emuAttnCheck(t *testing.T, l emuAttnLayout, heads, dh int, scale, tol float64,
	at func(part, r, pos, h, d int) float64, got []float32) float64 {
	t.Helper()
	width := heads * dh
	worst := 0.0
	for b, n := range l.lens {
		start, span := l.start(b)
		for h := range heads {
			for i := range span {
				s := make([]float64, n)
				mx := math.Inf(-1)
				if i < n {
					for j := range n {
						if l.radius > 0 && (j < i-l.radius || j > i+l.radius) {
							s[j] = math.Inf(-1)
							continue
						}
						for d := range dh {
							s[j] += at(0, start+i, i, h, d) * at(1, start+j, j, h, d)
						}
						s[j] *= scale
						mx = math.Max(mx, s[j])
					}
				}
				sum := 0.0
				for j := range s {
					s[j] = math.Exp(s[j] - mx)
					sum += s[j]
				}
				for d := range dh {
					want := 0.0 // a padding query's output
					if i < n {
						for j := range n {
							want += s[j] / sum * at(2, start+j, j, h, d)
						}
					}
					g := float64(got[(start+i)*width+h*dh+d])
					if e := math.Abs(g - want); !(e <= tol) {
						t.Fatalf("row %d head %d dim %d: %g, want %g", start+i, h, d, g, want)
					} else {
						worst = math.Max(worst, e)
					}
				}
			}
		}
	}
	return worst
}

// emuGEMM is a few-rows GEMM kernel's test operands: lmmaOperands' x, w
// and float64 product, a bias and d's first value (a folded residual),
// and the launch's buffers: d (float32, or fp16 zeros for a half output),
// x, w and the bias (buffer 3, biasArg; none without one).
type emuGEMM struct {
	x, w       []uint16
	prod, mags []float64
	bias, d0   []float32
	dBytes     []byte
	biasArg    emuArg
}

func newEmuGEMM(rng *rand.Rand, m, n, k, terms int, withBias, half bool) emuGEMM {
	var g emuGEMM
	g.x, g.w, g.prod, g.mags = lmmaOperands(rng, m, n, k, terms)
	g.bias, g.d0 = normals(rng, n), normals(rng, m*n)
	g.dBytes = f32Bytes(g.d0)
	if half {
		g.dBytes = make([]byte, 2*m*n)
	}
	g.biasArg = emuVal(0)
	if withBias {
		g.biasArg = emuBuf(3, 0)
	}
	return g
}

// bufs is the launch's buffers 0 to 3.
func (g emuGEMM) bufs() [][]byte {
	return [][]byte{g.dBytes, u16Bytes(g.x), u16Bytes(g.w), f32Bytes(g.bias)}
}

// linear_cl (a GEMM of few rows whose splits of k are summed in a
// cluster) against float64: clusters of one to eight blocks, tiles of 32,
// 64 and 128 columns (four, two and one k-groups a block), slices of k
// shorter than a chunk of x, of several chunks with the last one short, of
// more chunks than copy groups may wait apart (nine), a last slice shorter
// than the others, row and column tiles partly filled, two row blocks,
// bias, activations, the residual added, fp16 outputs, and rows whose
// length is not a multiple of four (each output stored alone); and
// several of them on sixteen warps a block (LCL_W16), four row groups.
func TestEmuLinearCl(t *testing.T) {
	for _, c := range []struct {
		m, n, k, kc, bn int
		bias            bool
		act             int
		accum, half     bool
		w16             bool
	}{
		{m: 1, n: 64, k: 16, kc: 16, bn: 64},
		{m: 17, n: 72, k: 48, kc: 16, bn: 64, bias: true, act: 2},
		{m: 93, n: 130, k: 1024, kc: 208, bn: 128, half: true},
		{m: 96, n: 200, k: 256, kc: 64, bn: 128, accum: true},
		{m: 130, n: 64, k: 64, kc: 16, bn: 64, act: 1, bias: true},
		{m: 33, n: 98, k: 272, kc: 48, bn: 128, bias: true, accum: true},
		{m: 5, n: 40, k: 112, kc: 16, bn: 32},
		{m: 16, n: 64, k: 2048, kc: 576, bn: 64},
		{m: 128, n: 256, k: 320, kc: 160, bn: 128, bias: true, half: true},
		{m: 113, n: 100, k: 512, kc: 128, bn: 32, act: 1},
		{m: 40, n: 192, k: 96, kc: 96, bn: 64, accum: true, act: 2},
		{m: 93, n: 130, k: 1024, kc: 208, bn: 128, half: true, w16: true},
		{m: 33, n: 98, k: 272, kc: 48, bn: 128, bias: true, accum: true, w16: true},
		{m: 130, n: 64, k: 64, kc: 16, bn: 64, act: 1, bias: true, w16: true},
		{m: 113, n: 100, k: 512, kc: 128, bn: 32, act: 1, w16: true},
	} {
		splits := (c.k + c.kc - 1) / c.kc
		name := fmt.Sprintf("m=%d,n=%d,k=%d,kc=%d,bn=%d,cluster=%d,bias=%v,act=%d,accum=%v,half=%v,w16=%v", c.m, c.n, c.k, c.kc, c.bn,
			splits, c.bias, c.act, c.accum, c.half, c.w16)
		t.Run(name, func(t *testing.T) {
			g := newEmuGEMM(rand.New(rand.NewPCG(uint64(c.m), uint64(c.n*c.k+1))), c.m, c.n, c.k, 1, c.bias, c.half)
			tilesN, tilesM := (c.n+c.bn-1)/c.bn, (c.m+16*lmmaTiles-1)/(16*lmmaTiles)
			warps, bin := 8, emuRunner(t)
			if c.w16 {
				warps, bin = 16, emuRunnerTuned(t, "LCL_W16=1")
			}
			launch := emuLaunch{name: "linear_cl", grid: [3]int{tilesN * splits, 1, tilesM}, threads: 32 * warps,
				smem: lclShared(c.kc, c.m, c.bn), cluster: splits, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuBuf(2, 0),
					g.biasArg, emuInt(c.m), emuInt(c.k), emuInt(c.n), emuVal(uint64(c.act)), emuVal(boolArg(c.accum)),
					emuVal(boolArg(c.half)), emuInt(c.kc), emuInt(c.bn)}}
			out := emuRunOn(t, bin, g.bufs(), launch)
			lmmaCheck(t, out[0], g.prod, g.mags, g.d0, g.bias, c.m, c.n, c.bias, c.act, c.accum, c.half)
		})
	}
}

// linear_wg (linear_cl's plan on warpgroup products) against float64 on
// the emulator, whose wgmma computes from the PTX ISA's descriptor,
// swizzle and fragment layouts when a wg_wait lets a product finish:
// slices of k whole in shared memory and through rings of three to five
// chunks (a chunk copied into a slot before the products reading it are
// waited for computes wrong products), k not a multiple of 64 (the last
// chunk part zeros), clusters of one to seven, a second tile of rows,
// every padded row count, the epilogues (act 2: ReLU; linear_wg takes no
// GELU).
func TestEmuLinearWg(t *testing.T) {
	for _, c := range []struct {
		m, n, k, splits, ring, terms int
		bias                         bool
		act                          int
		accum, half                  bool
	}{
		{m: 93, n: 130, k: 1024, splits: 2, ring: 8, half: true},
		{m: 93, n: 130, k: 1024, splits: 1, ring: 4},
		{m: 17, n: 72, k: 200, splits: 2, ring: 2, bias: true, act: 2},
		{m: 130, n: 64, k: 64, splits: 1, ring: 1, act: 2, bias: true},
		{m: 40, n: 192, k: 640, splits: 3, ring: 3, accum: true},
		{m: 128, n: 256, k: 320, splits: 1, ring: 5, bias: true, half: true},
		{m: 1, n: 64, k: 8, splits: 1, ring: 1},
		{m: 64, n: 100, k: 2624, splits: 7, ring: 3, accum: true, act: 2},
		{m: 70, n: 64, k: 448, splits: 1, ring: 3, bias: true},
		{m: 93, n: 130, k: 1024, splits: 1, ring: 4, terms: 2, half: true},
		{m: 40, n: 192, k: 640, splits: 3, ring: 3, terms: 2, accum: true, act: 2},
	} {
		kb := (c.k + wgChunk - 1) / wgChunk
		chunks := (kb + c.splits - 1) / c.splits
		kc := chunks * wgChunk
		if (kb+chunks-1)/chunks != c.splits || c.ring > chunks || c.ring < chunks && c.ring < 3 {
			t.Fatalf("m=%d n=%d k=%d: %d splits of %d chunks, ring %d: not a plan linear_wg takes", c.m, c.n, c.k, c.splits, chunks, c.ring)
		}
		np, terms := wgRowsPadded(c.m), max(c.terms, 1)
		name := fmt.Sprintf("m=%d,n=%d,k=%d,kc=%d,cluster=%d,ring=%d,np=%d,terms=%d,bias=%v,act=%d,accum=%v,half=%v", c.m, c.n, c.k, kc,
			c.splits, c.ring, np, terms, c.bias, c.act, c.accum, c.half)
		t.Run(name, func(t *testing.T) {
			g := newEmuGEMM(rand.New(rand.NewPCG(uint64(c.m), uint64(c.n*c.k+2))), c.m, c.n, c.k, terms, c.bias, c.half)
			tilesN, tilesM := (c.n+wgCols-1)/wgCols, (c.m+wgRows-1)/wgRows
			launch := emuLaunch{name: "linear_wg", grid: [3]int{tilesN * c.splits, 1, tilesM}, threads: 128,
				smem: lwgShared(kc, np, terms, c.ring), cluster: c.splits, args: []emuArg{emuBuf(0, 0), emuBuf(1, 0),
					emuVal(uint64((terms - 1) * c.m * c.k)), emuBuf(2, 0),
					g.biasArg, emuInt(c.m), emuInt(c.k), emuInt(c.n), emuVal(uint64(c.act)), emuVal(boolArg(c.accum)),
					emuVal(boolArg(c.half)), emuInt(kc), emuInt(c.ring), emuInt(np), emuVal(0)}} // no tensor maps: the threads copy
			out := emuRunOn(t, emuRunner(t), g.bufs(), launch)
			lmmaCheck(t, out[0], g.prod, g.mags, g.d0, g.bias, c.m, c.n, c.bias, c.act, c.accum, c.half)
		})
	}
}

// The whole-row tensor-core attention (attn_rows: a block a batch row and
// head, the row's queries, keys and values loaded once) against float64,
// and bit for bit against the tiled tensor-core kernel (attn_mma at four
// warps, tiles of 64 queries) wherever both start their key steps at the
// same key (no sliding window, or a radius of 64 or more): rows of 93, 17
// and 128 tokens (the longest it takes), right padding to 100 (padding
// queries come out zero), sliding windows of radius 20 and 64, RoPE folded
// in and not, head dims 32, 64 and 128, four, six and eight warps, float32
// input in one and two terms (a second float32 term, as FP16X2's stacked
// products give) and fp16 input (cp.async), and empty tiles past the real
// ones (a packed grid's bound) that must leave the output alone.
func TestEmuAttentionRows(t *testing.T) {
	const heads = 2
	type input int
	const (
		f32one input = iota // float32 qkv, one fp16 term
		f32two              // float32 qkv plus a second float32 term, two fp16 terms
		f16                 // fp16 qkv, one term
	)
	for _, c := range []struct {
		dh, warps int
		in        input
		rope      bool
		l         emuAttnLayout
	}{
		{64, 4, f16, true, emuAttnLayout{lens: []int{93, 17, 128}}},
		{64, 4, f16, false, emuAttnLayout{lens: []int{93, 17}, seqLen: 100, radius: 64}},
		{64, 4, f16, true, emuAttnLayout{lens: []int{93, 128, 17}, radius: 20}},
		{64, 8, f16, true, emuAttnLayout{lens: []int{93, 17}}},
		{64, 6, f16, true, emuAttnLayout{lens: []int{93, 17, 128}, radius: 20}},
		{64, 6, f32two, false, emuAttnLayout{lens: []int{128, 40}}},
		{64, 4, f32two, true, emuAttnLayout{lens: []int{93, 17, 128}}},
		{64, 4, f32two, false, emuAttnLayout{lens: []int{93, 40}, radius: 20}},
		{64, 8, f32two, true, emuAttnLayout{lens: []int{93, 17}, seqLen: 100, radius: 64}},
		{64, 4, f32one, true, emuAttnLayout{lens: []int{93, 17}}},
		{32, 4, f16, true, emuAttnLayout{lens: []int{128, 17}, radius: 20}},
		{32, 4, f32two, false, emuAttnLayout{lens: []int{93, 17}}},
		{128, 4, f16, true, emuAttnLayout{lens: []int{93, 40}}},
		{128, 4, f32two, true, emuAttnLayout{lens: []int{93, 17}, radius: 64}},
	} {
		terms, suffix := 1, "1h"
		switch c.in {
		case f32one:
			suffix = "1"
		case f32two:
			terms, suffix = 2, "2"
		}
		name := fmt.Sprintf("dh=%d,warps=%d,%s,rope=%v,lens=%v,seqlen=%d,radius=%d", c.dh, c.warps, suffix, c.rope, c.l.lens, c.l.seqLen, c.l.radius)
		t.Run(name, func(t *testing.T) {
			width, rows := heads*c.dh, c.l.rows()
			qkv := emuQKV(c.l, heads, c.dh, uint64(c.dh), uint64(rows+c.warps), 1)
			qkv, in, two := emuAttnInput(qkv, c.in == f16, c.in == f32two)
			// What the kernel should see: the terms summed, q and k rotated.
			table := emuRope(slices.Max(append(slices.Clone(c.l.lens), c.l.seqLen)), c.dh)
			elem := func(part, r, h, d int) float64 {
				i := r*3*width + part*width + h*c.dh + d
				v := float64(qkv[i])
				if two > 0 {
					v += float64(qkv[two+i])
				}
				return v
			}
			at := func(part, r, pos, h, d int) float64 {
				v := elem(part, r, h, d)
				if !c.rope || part == 2 {
					return v
				}
				half := c.dh / 2
				j := d % half
				cs, sn := float64(table[pos*c.dh+j]), float64(table[pos*c.dh+half+j])
				if d < half {
					return v*cs - elem(part, r, h, d+half)*sn
				}
				return v*cs + elem(part, r, h, d-half)*sn
			}
			ropeArg := emuVal(0)
			if c.rope {
				ropeArg = emuBuf(4, 0)
			}
			scale := float32(1 / math.Sqrt(float64(c.dh)))
			kind, lo := 2*terms-1, rows*width
			launch := func(kernel string, qt, warps, smem, empty int) [][]byte {
				tileBytes, ntiles := c.l.tiles(qt)
				tileBytes = append(tileBytes, make([]byte, 4*5*empty)...)
				dst := make([]float32, rows*width)
				for i := range dst {
					dst[i] = float32(math.NaN())
				}
				return emuRunOn(t, emuRunner(t), [][]byte{f32Bytes(dst), in, tileBytes, make([]byte, 2*2*lo), f32Bytes(table)},
					emuLaunch{name: kernel, grid: [3]int{ntiles + empty, heads, 1}, threads: 32 * warps, smem: smem,
						args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuVal(uint64(two)), emuBuf(2, 0), emuInt(heads), emuF32(scale),
							emuVal(boolArg(c.l.radius > 0)), emuInt(c.l.radius), ropeArg, emuBuf(3, 0), emuInt(kind), emuVal(uint64(lo))}})
			}
			got := launch(fmt.Sprintf("attention_rows%d_%d_%s", c.dh, c.warps, suffix), rowsKeys, c.warps, attnRowsShared(c.dh, terms), 3)
			y := bytesF32(got[0])
			check16(t, y, got[3], lo, kind)
			tol := 2e-4
			if terms == 1 {
				tol = 1e-2 // q, k, v and the probabilities rounded to fp16
			}
			t.Logf("largest error %.3g", emuAttnCheck(t, c.l, heads, c.dh, float64(scale), tol, at, y))
			if c.l.radius == 0 || c.l.radius >= 64 {
				want := launch(fmt.Sprintf("attention_mma%d_4_%s", c.dh, suffix), 64, 4, attnMMAShared(c.dh, 4, terms, 64), 0)
				for _, i := range []int{0, 3} { // the outputs (their tiles differ)
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("buffer %d differs from attn_mma's", i)
					}
				}
			}
		})
	}
}

// linear_small against float64 products of the weights it reads: float32,
// fp16 and bf16 weights; rows of k = 1024, 4096 and 4104 (16-byte loads),
// 1028 (16-byte loads of float32 only) and 1030 (single elements); one to
// sixteen rows (both row counts the kernel is built for); a partial last
// block of columns; bias, GELU and ReLU, and the residual folded in.
func TestEmuLinearSmall(t *testing.T) {
	for _, c := range []struct {
		kind, m, k, n, act int
		bias, accum        bool
	}{
		{kind: 1, m: 1, k: 1024, n: 64},
		{kind: 1, m: 5, k: 4096, n: 9, bias: true, act: 1},
		{kind: 1, m: 16, k: 4104, n: 13, accum: true},
		{kind: 2, m: 4, k: 1024, n: 40, bias: true, act: 2},
		{kind: 2, m: 3, k: 4104, n: 8, accum: true, bias: true},
		{kind: 1, m: 2, k: 1028, n: 7, bias: true},
		{kind: 1, m: 6, k: 1030, n: 5},
		{kind: 0, m: 4, k: 1028, n: 11, bias: true, act: 1},
		{kind: 0, m: 9, k: 1030, n: 6, accum: true},
		{kind: 1, m: 7, k: 1024, n: 37, bias: true, act: 2},
		{kind: 2, m: 1, k: 1032, n: 33, bias: true},
	} {
		t.Run(fmt.Sprintf("kind=%d,m=%d,k=%d,n=%d,act=%d,bias=%v,accum=%v", c.kind, c.m, c.k, c.n, c.act, c.bias, c.accum), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.k), uint64(c.m*100+c.n)))
			x := normals(rng, c.m*c.k)
			// The weights as the kernel reads them, and their bytes.
			wf := make([]float64, c.n*c.k)
			var wb []byte
			switch c.kind {
			case 0:
				w := make([]float32, len(wf))
				for i := range w {
					w[i] = float32(rng.NormFloat64() / 32)
					wf[i] = float64(w[i])
				}
				wb = f32Bytes(w)
			default:
				w := make([]uint16, len(wf))
				for i := range w {
					v := float32(rng.NormFloat64() / 32)
					if c.kind == 1 {
						w[i] = half.Float32ToFloat16(v)
						wf[i] = float64(half.Float16ToFloat32(w[i]))
					} else {
						w[i] = uint16(math.Float32bits(v) >> 16) // bf16 by truncation: what the kernel reads is what counts
						wf[i] = float64(math.Float32frombits(uint32(w[i]) << 16))
					}
				}
				wb = u16Bytes(w)
			}
			bias := normals(rng, c.n)
			d := normals(rng, c.m*c.n)
			biasArg := emuVal(0)
			if c.bias {
				biasArg = emuBuf(3, 0)
			}
			out := emuRun(t, [][]byte{f32Bytes(d), f32Bytes(x), wb, f32Bytes(bias)}, emuLaunch{
				name: "linear_small", grid: [3]int{(c.n + smallCols - 1) / smallCols, 1, 1}, threads: 32 * smallWarps,
				args: []emuArg{emuBuf(0, 0), emuBuf(1, 0), emuBuf(2, 0), emuInt(c.kind), biasArg, emuInt(c.m), emuInt(c.k), emuInt(c.n),
					emuInt(c.act), emuVal(boolArg(c.accum))},
			})
			got := bytesF32(out[0])
			for r := range c.m {
				for j := range c.n {
					want := 0.0
					for i := range c.k {
						want += float64(x[r*c.k+i]) * wf[j*c.k+i]
					}
					if c.accum {
						want += float64(d[r*c.n+j])
					}
					if c.bias {
						want += float64(bias[j])
					}
					switch c.act {
					case 1:
						want = 0.5 * want * (1 + math.Erf(want/math.Sqrt2))
					case 2:
						want = math.Max(want, 0)
					}
					if e := math.Abs(float64(got[r*c.n+j]) - want); !(e <= 2e-5*math.Sqrt(float64(c.k))) {
						t.Fatalf("row %d column %d: %g, want %g", r, j, got[r*c.n+j], want)
					}
				}
			}
		})
	}
}
