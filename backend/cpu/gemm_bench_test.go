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
						useGemmTile(b, kernel.tile)
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
