package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// BenchmarkGEMM measures Linear on the English encoder's shapes at a 93-token
// request (laya-mlx's reference length): Wqkv, Wi, and the MLP's Wo, with
// each tile kernel this machine runs ("go" is the portable one, then the
// SIMD ones, best first: Linear picks the first), and with the weight stored
// as F32 and as F16 (widened panel by panel while packing).
func BenchmarkGEMM(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kernel := range gemmKernels(b) {
		for _, shape := range []struct{ m, k, n int }{
			{93, 1024, 3072}, // Wqkv
			{93, 1024, 5248}, // Wi (GeGLU, 2·2624)
			{93, 2624, 1024}, // mlp Wo
			{93, 1024, 1024}, // attention Wo
		} {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", kernel.name, shape.m, shape.k, shape.n), func(b *testing.B) {
				for _, dtype := range []backend.DType{backend.F32, backend.F16} {
					b.Run(dtype.String(), func(b *testing.B) {
						useGemmKernel(b, kernel)
						be := New()
						s := be.NewStream()
						x := s.FromHost(shape.m, shape.k, randomValues(rng, shape.m*shape.k))
						w := uploadRandom(b, be, dtype, shape.n, shape.k, rng)
						y := s.New(shape.m, shape.n)
						for b.Loop() {
							s.Linear(y, x, w, nil, backend.Identity)
						}
						if err := s.Err(); err != nil {
							b.Fatal(err)
						}
						flops := 2 * float64(shape.m) * float64(shape.k) * float64(shape.n)
						b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				}
			})
		}
	}
}

// uploadRandom uploads a [rows, cols] weight of random values in dtype.
func uploadRandom(tb testing.TB, be *Backend, dtype backend.DType, rows, cols int, rng *rand.Rand) backend.Tensor {
	tb.Helper()
	vals := randomValues(rng, rows*cols)
	raw := make([]byte, 0, rows*cols*dtype.Size())
	for _, v := range vals {
		switch dtype {
		case backend.F16:
			raw = binary.LittleEndian.AppendUint16(raw, weights.Float32ToFloat16(v))
		case backend.BF16:
			raw = binary.LittleEndian.AppendUint16(raw, uint16(math.Float32bits(v)>>16))
		default:
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	}
	t, err := be.Upload("w", dtype, rows, cols, raw)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// BenchmarkAttention measures Attention at the encoders' shapes for one
// 93-token row (English: 16 heads of 64; multilingual: 12 of 64), global and
// sliding (radius 64), on the kernel Linear picks. GFLOP/s counts the two
// products, 4·L·keys·Dh per head.
func BenchmarkAttention(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		name       string
		heads, len int
		sliding    bool
		radius     int
	}{
		{name: "english/global/93", heads: 16, len: 93},
		{name: "english/sliding/93", heads: 16, len: 93, sliding: true, radius: 64},
		{name: "multilingual/global/93", heads: 12, len: 93},
		{name: "english/sliding/512", heads: 16, len: 512, sliding: true, radius: 64},
	} {
		b.Run(c.name, func(b *testing.B) {
			const dh = 64
			s := New().NewStream()
			width := c.heads * dh
			qkv := s.FromHost(c.len, 3*width, randomValues(rng, c.len*3*width))
			out := s.New(c.len, width)
			p := backend.AttentionParams{SeqLen: c.len, Lengths: []int{c.len}, Heads: c.heads, HeadDim: dh,
				Scale: 0.125, Sliding: c.sliding, Radius: c.radius}
			for b.Loop() {
				s.Attention(out, qkv, p)
			}
			if err := s.Err(); err != nil {
				b.Fatal(err)
			}
			keys := 0
			for i := range c.len {
				lo, hi := 0, c.len-1
				if c.sliding {
					lo, hi = max(0, i-c.radius), min(c.len-1, i+c.radius)
				}
				keys += hi - lo + 1
			}
			flops := 4 * float64(keys) * dh * float64(c.heads)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkWiden measures the F16 → F32 panel conversion (GB/s of F16 read).
func BenchmarkWiden(b *testing.B) {
	src := make([]uint16, 64*1024)
	dst := make([]float32, len(src))
	for _, dtype := range []backend.DType{backend.F16, backend.BF16} {
		b.Run(dtype.String(), func(b *testing.B) {
			for b.Loop() {
				widen(dst, src, dtype)
			}
			b.ReportMetric(float64(2*len(src))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
