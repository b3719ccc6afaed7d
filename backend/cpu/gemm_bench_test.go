package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// BenchmarkGEMM measures Linear on the English encoder's shapes at a 93-token
// request (laya-mlx's reference length): Wqkv, Wi, and the MLP's Wo, with
// each tile kernel this machine runs ("go" is the portable one, "simd" the
// one Linear picks when the CPU has it).
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
				useGemmTile(b, kernel.tile)
				s := New().NewStream()
				x := s.FromHost(shape.m, shape.k, randomValues(rng, shape.m*shape.k))
				w := s.FromHost(shape.n, shape.k, randomValues(rng, shape.n*shape.k))
				y := s.New(shape.m, shape.n)
				for b.Loop() {
					s.Linear(y, x, w, nil, backend.Identity)
				}
				flops := 2 * float64(shape.m) * float64(shape.k) * float64(shape.n)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
