//go:build linux

package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/half"
)

// The key of a cuBLASLt plan tells apart every call whose descriptors or
// algorithm could differ: a plan found for another beta or epilogue would
// drop a residual or a bias, or add one that is not there.
func TestLtKeyTellsCallsApart(t *testing.T) {
	base := ltGEMM{m: 96, n: 1024, k: 1024, typ: cudaR16F, batch: 1, epilogue: ltEpilogueDefault, a: 1 << 20, b: 2 << 20, d: 3 << 20}
	// Other addresses of the same alignment share the plan.
	moved := base
	moved.a, moved.b, moved.d = 9<<20, 10<<20+256, 11<<20+512
	if base.key() != moved.key() {
		t.Errorf("same call at other 256-byte-aligned addresses: keys %+v and %+v differ", base.key(), moved.key())
	}
	// A stride means nothing to one matrix.
	unbatched := base
	unbatched.strideB, unbatched.strideD = 96*1024, 96*1024
	if base.key() != unbatched.key() {
		t.Errorf("strides of an unbatched call change its key")
	}
	variants := map[string]func(g *ltGEMM){
		"beta 1":          func(g *ltGEMM) { g.accumulate = true },
		"bias epilogue":   func(g *ltGEMM) { g.epilogue, g.bias = ltEpilogueBias, 4<<20 },
		"relu epilogue":   func(g *ltGEMM) { g.epilogue = ltEpilogueReLU },
		"relu+bias":       func(g *ltGEMM) { g.epilogue, g.bias = ltEpilogueReLUBias, 4<<20 },
		"bf16":            func(g *ltGEMM) { g.typ = cudaR16BF },
		"m":               func(g *ltGEMM) { g.m++ },
		"n":               func(g *ltGEMM) { g.n = 3072 },
		"k":               func(g *ltGEMM) { g.k = 2624 },
		"batched":         func(g *ltGEMM) { g.batch, g.strideB, g.strideD = 2, 96*1024, 96*1024 },
		"batch stride":    func(g *ltGEMM) { g.batch, g.strideB, g.strideD = 2, 96*1024, 96*1024+64 },
		"second term":     func(g *ltGEMM) { g.b += 17 * 64 * 2 }, // 2176 bytes on: 128-byte aligned
		"misaligned bias": func(g *ltGEMM) { g.epilogue, g.bias = ltEpilogueBias, 4<<20+32 },
	}
	seen := map[ltKey]string{base.key(): "base"}
	for name, f := range variants {
		g := base
		f(&g)
		k := g.key()
		if other, ok := seen[k]; ok {
			t.Errorf("%s: same key as %s (%+v)", name, other, k)
		}
		seen[k] = name
	}
}

func TestAlignment(t *testing.T) {
	for _, c := range []struct {
		p      uintptr
		stride int64
		want   uint32
	}{
		{0, 0, 256}, {1 << 21, 0, 256}, {1<<21 + 2176, 0, 128}, {1 << 21, 2176, 128}, {1<<21 + 2, 0, 2}, {1 << 21, 96 * 1024 * 4, 256},
	} {
		if got := alignment(c.p, c.stride); got != c.want {
			t.Errorf("alignment(%#x, %d) = %d, want %d", c.p, c.stride, got, c.want)
		}
	}
}

// Bias and ReLU go into the epilogue; GELU never does (cuBLASLt's is the
// tanh form, the model's the erf one).
func TestLtEpilogue(t *testing.T) {
	for _, c := range []struct {
		bias  bool
		act   backend.Activation
		epi   uint32
		fuses bool
	}{
		{false, backend.Identity, ltEpilogueDefault, true},
		{true, backend.Identity, ltEpilogueBias, true},
		{false, backend.ReLU, ltEpilogueReLU, true},
		{true, backend.ReLU, ltEpilogueReLUBias, true},
		{false, backend.GELU, ltEpilogueDefault, false},
		{true, backend.GELU, ltEpilogueDefault, false},
	} {
		epi, fuses := ltEpilogue(c.bias, c.act)
		if epi != c.epi || fuses != c.fuses {
			t.Errorf("ltEpilogue(%v, %v) = %d, %v; want %d, %v", c.bias, c.act, epi, fuses, c.epi, c.fuses)
		}
	}
	// The header's values (cublasLt.h): RELU_BIAS is RELU | BIAS.
	if ltEpilogueReLUBias != ltEpilogueReLU|ltEpilogueBias {
		t.Errorf("CUBLASLT_EPILOGUE_RELU_BIAS %d is not RELU | BIAS", ltEpilogueReLUBias)
	}
	if unsafe.Sizeof(ltHeuristic{}) != 96 || unsafe.Offsetof(ltHeuristic{}.state) != 72 {
		t.Errorf("cublasLtMatmulHeuristicResult_t: %d bytes, state at %d", unsafe.Sizeof(ltHeuristic{}), unsafe.Offsetof(ltHeuristic{}.state))
	}
}

// Only a call turned down as cuBLASLt checks it falls back to cuBLAS; a
// failure once launched is an error.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&ltError{"cublasLtMatmul", cublasStatusInvalidValue}, true},
		{&ltError{"cublasLtMatmul", cublasStatusNotSupported}, true},
		{fmt.Errorf("wrapped: %w", &ltError{"cublasLtMatmul", cublasStatusNotSupported}), true},
		{&ltError{"cublasLtMatmul", 13}, false}, // CUBLAS_STATUS_EXECUTION_FAILED
		{errors.New("cuda: something else"), false},
		{nil, false},
	} {
		if got := refused(c.err); got != c.want {
			t.Errorf("refused(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	for _, c := range []struct {
		status int32
		want   string
	}{
		{7, "cuda: cublasLtMatmul failed with CUBLAS_STATUS_INVALID_VALUE (cuBLAS status 7)"},
		{99, "cuda: cublasLtMatmul failed with cuBLAS status 99"},
	} {
		if got := (&ltError{"cublasLtMatmul", c.status}).Error(); got != c.want {
			t.Errorf("error text %q, want %q", got, c.want)
		}
	}
}

// cuBLASLt is looked for as cuBLAS's own toolkit ships it: by cuBLAS's
// major version (the soname cuBLAS loaded it under) and in its directory
// first.
func TestLtSearch(t *testing.T) {
	for _, c := range []struct {
		blas      string
		names     []string
		firstDirs string
	}{
		{"/usr/local/cuda-13.0/lib64/libcublas.so.13", []string{"libcublasLt.so.13"}, "/usr/local/cuda-13.0/lib64"},
		{"/opt/x/libcublas.so.12.9.1.4", []string{"libcublasLt.so.12"}, "/opt/x"},
		{"/opt/y/libcublas.so", []string{"libcublasLt.so", "libcublasLt.so.13", "libcublasLt.so.12"}, "/opt/y"},
		{"libcublas.so.13", []string{"libcublasLt.so.13"}, "."},
		{"", []string{"libcublasLt.so", "libcublasLt.so.13", "libcublasLt.so.12"}, ""},
	} {
		names, dirs := ltSearch(c.blas)
		if !slices.Equal(names, c.names) {
			t.Errorf("ltSearch(%q) names %v, want %v", c.blas, names, c.names)
		}
		if c.firstDirs != "" && (len(dirs) == 0 || dirs[0] != c.firstDirs) {
			t.Errorf("ltSearch(%q) dirs %v, want %s first", c.blas, dirs, c.firstDirs)
		}
	}
}

// A split's partial sums meet in float32 where the algorithm offers it,
// else in D's type only when D is float32: an fp16 D would round each part.
func TestReductionScheme(t *testing.T) {
	for _, c := range []struct {
		mask, dtyp, want uint32
	}{
		{ltReductionInPlace | ltReductionCompute | ltReductionOutput, cudaR32F, ltReductionCompute},
		{ltReductionInPlace | ltReductionCompute | ltReductionOutput, cudaR16F, ltReductionCompute},
		{ltReductionInPlace | ltReductionOutput, cudaR32F, ltReductionOutput},
		{ltReductionInPlace | ltReductionOutput, cudaR16F, 0},
		{ltReductionInPlace, cudaR32F, ltReductionInPlace},
		{ltReductionInPlace, cudaR16F, 0},
		{0, cudaR32F, 0},
	} {
		if got := reductionScheme(c.mask, c.dtyp); got != c.want {
			t.Errorf("reductionScheme(%#x, %d) = %d, want %d", c.mask, c.dtyp, got, c.want)
		}
	}
}

// With splitk=on a GEMM of few rows gets split-K variants of the
// heuristic's candidates where the library takes them, and every one
// computes the product: each is made the shape's pick in turn and run
// kernel by kernel against a float64 product of the fp16 operands.
func TestSplitKCandidates(t *testing.T) {
	be, err := Open(Options{Precision: FP16, SplitK: true, NoGraphs: true, NoSmallLinear: true})
	if err != nil {
		t.Skipf("no CUDA GPU here: %v", err)
	}
	defer be.Close()
	splitKCandidatesRun(t, be.(*Backend), 96, 1024, 1024, false)
}

// The same on the kernel emulator's cuBLASLt, which must offer split
// variants (of two of its three algorithms), on a smaller product.
func TestEmuSplitKCandidates(t *testing.T) {
	opts := emuOptions(t)
	opts.Precision, opts.SplitK, opts.NoGraphs, opts.NoSmallLinear = FP16, true, true, true
	be, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	splitKCandidatesRun(t, be.(*Backend), 24, 1024, 160, true)
}

// lcgValues returns a source of count values uniform in (−scale, scale),
// the same for the same seed.
func lcgValues(seed uint64) func(count int, scale float32) []float32 {
	return func(count int, scale float32) []float32 {
		v := make([]float32, count)
		for i := range v {
			seed = seed*6364136223846793005 + 1442695040888963407
			v[i] = (float32(seed>>40)/float32(1<<24)*2 - 1) * scale
		}
		return v
	}
}

// splitKCandidatesRun is TestSplitKCandidates on b, for an m×k by k×n
// product; must: the library must offer split variants.
func splitKCandidatesRun(t *testing.T, b *Backend, m, k, n int, must bool) {
	be := backend.Backend(b)
	if b.lt == nil {
		t.Skip("no cuBLASLt")
	}
	values := lcgValues(5)
	x, w := values(m*k, 1), values(n*k, 1.0/32)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*len(w))
	W, err := be.Upload("w", backend.F32, n, k, raw)
	if err != nil {
		t.Fatal(err)
	}
	run := func() []float32 {
		s := be.NewStream()
		defer s.Close()
		xt := s.FromHost(m, k, x)
		y := s.New(m, n)
		s.Linear(y, xt, W, nil, backend.Identity)
		got := make([]float32, m*n)
		if err := s.Read(context.Background(), y, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	run() // the shape's first run times its candidates
	if st := b.Stats(); must && (st.GEMMTuned == 0 || st.GEMMFallback != 0) {
		t.Fatalf("stats %+v: the GEMM was not tuned on cuBLASLt", st)
	}
	var p *ltPlan
	b.lt.mu.Lock()
	for key, q := range b.lt.plans {
		if key.m == m && key.n == n && key.k == k {
			p = q
		}
	}
	b.lt.mu.Unlock()
	if p == nil {
		t.Fatal("no cuBLASLt plan for the shape")
	}
	if len(p.cands) == p.split {
		if must {
			t.Fatalf("cuBLASLt took no split of its %d candidates", p.split)
		}
		t.Skipf("cuBLASLt took no split of its %d candidates: splitk=on changes nothing here", p.split)
	}
	h16 := func(v float32) float64 { return float64(half.Float16ToFloat32(half.Float32ToFloat16(v))) }
	want, mag := make([]float64, m*n), make([]float64, m*n)
	for r := range m {
		for c := range n {
			for j := range k {
				v := h16(x[r*k+j]) * h16(w[c*k+j])
				want[r*n+c] += v
				mag[r*n+c] += math.Abs(v)
			}
		}
	}
	for i := p.split; i < len(p.cands); i++ {
		b.lt.mu.Lock()
		p.pick = i
		b.lt.mu.Unlock()
		got := run()
		for j, v := range got {
			if d := math.Abs(float64(v) - want[j]); !(d <= 8*float64(k)*0x1p-24*mag[j]+1e-5) {
				t.Fatalf("split candidate %d of %d: output %d is %v, want %v", i-p.split, len(p.cands)-p.split, j, v, want[j])
			}
		}
	}
	t.Logf("%d heuristic candidates, %d split variants, all within the tolerance", p.split, len(p.cands)-p.split)
}

// A cuBLAS named by path takes the cuBLASLt beside it or none, never one
// the loader path or a toolkit directory would find: the kernel emulator,
// named so, takes its own (the link emuLinkLt puts beside it), and another
// install's would be given its memory.
func TestCUBLASLtBesideNamedCUBLAS(t *testing.T) {
	dir := t.TempDir()
	_, err := loadCUBLASLt(filepath.Join(dir, "libcublas.so.13"), true)
	if err == nil || !strings.Contains(err.Error(), "libcublasLt.so.13 beside "+dir) {
		t.Fatalf("no cuBLASLt beside a named cuBLAS: %v, want it not found there", err)
	}
}

// With TuneCold, timed launches read their weight from consecutive slots
// of the cold region, wrapping before its end; without it, or with a
// region of fewer than three slots, from the GEMM's own weight.
func TestColdWeights(t *testing.T) {
	const base, size = 0x100000, 10 << 10
	g := &ltGEMM{a: 0x42}
	for _, c := range []struct {
		name   string
		cold   bool
		wbytes int64
		want   []uintptr
	}{
		{"off", false, 1000, []uintptr{0x42, 0x42, 0x42}},
		{"cold", true, 3000, []uintptr{base, base + 3072, base + 6144, base, base + 3072}},
		{"too big", true, 4000, []uintptr{0x42, 0x42}},
	} {
		b := &Backend{opts: Options{TuneCold: c.cold}, l2: 1 << 20, lt: &ltGEMMs{cold: base, coldBytes: size}}
		w := b.coldWeights(nil, g, c.wbytes)
		var got []uintptr
		for range c.want {
			got = append(got, w())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: weights at %#x, want %#x", c.name, got, c.want)
		}
	}
}
