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

// gemmBenchShapes are the encoders' GEMMs: ModernBERT-large (English: d =
// 1024, MLP inner 2624, Wi feeding a GeGLU) and mmBERT-base (multilingual:
// d = 768, inner 1152).
var gemmBenchShapes = []struct {
	name  string
	k, n  int
	geglu bool // Linear then GeGLU (fused: one pass, GeGLU in the store)
}{
	{"english/qkv", 1024, 3072, false},
	{"english/wi", 1024, 5248, false},
	{"english/wi-geglu", 1024, 5248, true},
	{"english/mlp-wo", 2624, 1024, false},
	{"english/attn-wo", 1024, 1024, false},
	{"multilingual/qkv", 768, 2304, false},
	{"multilingual/wi-geglu", 768, 2304, true},
	{"multilingual/mlp-wo", 1152, 768, false},
	{"multilingual/attn-wo", 768, 768, false},
}

// benchKernels are the kernels the benchmarks compare: every one this
// machine runs except outer-go (a test reference, exact FMAs in software).
func benchKernels(b *testing.B) []gemmKernel {
	var ks []gemmKernel
	for _, k := range gemmKernels(b) {
		if k.name != "outer-go" {
			ks = append(ks, k)
		}
	}
	return ks
}

// BenchmarkGEMM measures Linear (and Linear + fused GeGLU) on the encoders'
// shapes at a 93-token request (laya-mlx's reference length) and at 860
// rows (10 questions), with the weight stored as F32 and as F16 (widened
// panel by panel while packing), on each kernel this machine runs, side by
// side: "go" is the portable dot kernel, "avx512-outer" the outer-product
// kernel (gemm_outer.go), "avx512"/"avx2" the dot kernels. Linear runs
// the first of them this CPU has, of avx512-outer, avx512, avx2, go.
// Compare with: go test -bench 'GEMM/english' -count 6 ./backend/cpu and
// medians per name (this machine is shared and noisy).
func BenchmarkGEMM(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, shape := range gemmBenchShapes {
		for _, m := range []int{93, 860} {
			for _, dtype := range []backend.DType{backend.F32, backend.F16} {
				// The weights are made only for the shapes -bench selects.
				b.Run(fmt.Sprintf("%s/M=%d/%v", shape.name, m, dtype), func(b *testing.B) {
					be := New()
					w := uploadRandom(b, be, dtype, shape.n, shape.k, rng)
					xv := randomValues(rng, m*shape.k)
					for _, kernel := range benchKernels(b) {
						b.Run(kernel.name, func(b *testing.B) {
							useGemmKernel(b, kernel)
							benchLinear(b, be, m, shape.k, shape.n, shape.geglu, w, xv)
						})
					}
				})
			}
		}
	}
}

// benchLinear times Linear (+ GeGLU) of m rows of xv against w and reports
// GFLOP/s of the product.
func benchLinear(b *testing.B, be *Backend, m, k, n int, geglu bool, w backend.Tensor, xv []float32) {
	s := be.NewStream().(*Stream)
	x := s.FromHost(m, k, xv)
	y := s.New(m, n)
	g := s.New(m, n/2)
	for b.Loop() {
		s.Linear(y, x, w, nil, backend.Identity)
		if geglu {
			s.GeGLU(g, y)
		} else {
			s.runPending()
		}
	}
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	flops := 2 * float64(m) * float64(k) * float64(n)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkGEMMSmallM compares the outer-product and dot kernels at few
// rows (M from 8 to 64) at the English attention output's shape, F32 and
// F16: what running the outer-product kernel at every M costs (gemmOuter).
func BenchmarkGEMMSmallM(b *testing.B) {
	rng := rand.New(rand.NewPCG(19, 20))
	const k, n = 1024, 1024
	for _, dtype := range []backend.DType{backend.F32, backend.F16} {
		b.Run(dtype.String(), func(b *testing.B) {
			be := New()
			w := uploadRandom(b, be, dtype, n, k, rng)
			for _, m := range []int{8, 16, 24, 32, 40, 48, 64} {
				xv := randomValues(rng, m*k)
				for _, kernel := range benchKernels(b) {
					if kernel.name == "go" {
						continue
					}
					b.Run(fmt.Sprintf("M=%d/%s", m, kernel.name), func(b *testing.B) {
						useGemmKernel(b, kernel)
						benchLinear(b, be, m, k, n, false, w, xv)
					})
				}
			}
		})
	}
}

// BenchmarkLayerCold runs the GEMMs of one encoder layer (Wqkv, attention
// Wo, Wi + fused GeGLU, MLP Wo) with F16 weights, rotating over a whole
// encoder's worth of layers, so every weight panel comes from DRAM as in
// the real forward: English at 93 tokens (one question; 28 layers, 684 MB,
// more than any L3 here) and multilingual at 862 (ten questions; 22
// layers, 220 MB). GFLOP/s counts the four products; ms/layer is the wall
// time of one layer's GEMMs. The multilingual case is the GEMM part of a
// ten-question request without the rest of the forward, to compare with
// the forward's own GEMM time (laya-bench --joins), to tell whether cold
// weights explain the forward's GEMMs running below the same shapes alone
// with hot weights (measurements: docs/perf-log.md).
func BenchmarkLayerCold(b *testing.B) {
	for _, c := range []struct {
		name             string
		layers, m, d, in int
	}{
		{"english-93", 28, 93, 1024, 2624},
		{"multilingual-862", 22, 862, 768, 1152},
	} {
		b.Run(c.name, func(b *testing.B) { benchLayerCold(b, c.layers, c.m, c.d, c.in) })
	}
}

func benchLayerCold(b *testing.B, layers, m, d, inner int) {
	rng := rand.New(rand.NewPCG(23, 24))
	be := New()
	type layer struct{ qkv, wo, wi, mlpWo backend.Tensor }
	shapes := [4][2]int{{3 * d, d}, {d, d}, {2 * inner, d}, {d, inner}}
	var raws [4][]byte
	for i, sh := range shapes {
		raws[i], _ = encode(randomValues(rng, sh[0]*sh[1]), backend.F16)
	}
	ls := make([]layer, layers)
	for l := range ls {
		var ts [4]backend.Tensor
		for i, sh := range shapes {
			t, err := be.Upload("w", backend.F16, sh[0], sh[1], raws[i]) // a copy per layer
			if err != nil {
				b.Fatal(err)
			}
			ts[i] = t
		}
		ls[l] = layer{ts[0], ts[1], ts[2], ts[3]}
	}
	flops := 0.0
	for _, sh := range shapes {
		flops += 2 * float64(m) * float64(sh[0]) * float64(sh[1])
	}
	type variant struct {
		kernel       gemmKernel
		name         string
		prefetch     bool
		noBlockAhead bool
	}
	var variants []variant
	for _, kernel := range benchKernels(b) {
		if kernel.name == "go" {
			continue
		}
		variants = append(variants, variant{kernel, kernel.name, false, false})
		if kernel.outer != nil {
			variants = append(variants, variant{kernel, kernel.name + "+prefetch", true, false},
				variant{kernel, kernel.name + "-blockahead", false, true})
		}
	}
	for _, v := range variants {
		kernel := v.kernel
		b.Run(v.name, func(b *testing.B) {
			useGemmKernel(b, kernel)
			gemmPrefetch, noPrefetchNextBlock = v.prefetch, v.noBlockAhead
			defer func() { gemmPrefetch, noPrefetchNextBlock = false, false }()
			s := be.NewStream().(*Stream)
			x := s.FromHost(m, d, randomValues(rng, m*d))
			qkv, attn := s.New(m, 3*d), s.New(m, d)
			wi, act, out := s.New(m, 2*inner), s.New(m, inner), s.New(m, d)
			i := 0
			for b.Loop() {
				l := ls[i%layers]
				i++
				s.Linear(qkv, x, l.qkv, nil, backend.Identity)
				s.runPending()
				s.Linear(attn, x, l.wo, nil, backend.Identity)
				s.runPending()
				s.Linear(wi, attn, l.wi, nil, backend.Identity)
				s.GeGLU(act, wi)
				s.Linear(out, act, l.mlpWo, nil, backend.Identity)
				s.runPending()
			}
			if err := s.Err(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/layer")
		})
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
