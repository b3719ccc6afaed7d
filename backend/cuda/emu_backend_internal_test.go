//go:build linux

package cuda

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/backendtest"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

// emuGoldenSets are the golden cases the emulated backend runs: on tiny-en
// (head dim 32) one row of 54 tokens, three of 77, 68 and 77, one of the
// full 128; on tiny-ml (head dim 64, as the real models', and a 16-token
// sliding window) three rows of 87 to 108 tokens and one of 126.
var emuGoldenSets = []struct {
	checkpoint string
	cases      []string
}{
	{"tiny-en", []string{"head_budget", "lang_en", "twenty_options"}},
	{"tiny-ml", []string{"lang_zh", "twenty_options"}},
}

// The whole backend on the kernel emulator: Open loads libcuemu.so
// (testdata/emu/fakecuda.cpp) as its driver, NVRTC, cuBLAS and cuBLASLt,
// and tiny-en oracle goldens run through it as TestForwardGoldens runs them
// on a GPU: the backend's own recording, planning, graph capture and
// replay, argument packing and launches, with every kernel on the emulator,
// the float32 GEMMs in double (cuBLAS) and the 16-bit ones accumulated in
// float32 on cuBLASLt, each shape's candidates timed, with bias and ReLU
// epilogues (once on cuBLAS: gemm=blas). Each case runs right-padded, then
// packed and pruned; each kernel by kernel, captured, and replayed, with a
// run of other tokens replayed in between (so that a replay must compute).
// FP32 holds the cpu backend's gates (logits within 1e-4, act
// probabilities within 1e-5), FP16X2 the reduced-precision gate
// (upstream's answers, calibrated and act probabilities within 0.005);
// FP16, which TestForwardGoldens only reports (near-ties of the real
// models flip answers), the probabilities' half of it.
func TestEmuBackendGoldens(t *testing.T) {
	for _, set := range emuGoldenSets {
		t.Run(set.checkpoint, func(t *testing.T) {
			all := oracletest.Cases(t, set.checkpoint)
			var cases []oracletest.Case
			for _, name := range set.cases {
				for _, c := range all {
					if c.Name == name {
						cases = append(cases, c)
					}
				}
			}
			if len(cases) != len(set.cases) {
				t.Fatalf("found %d of the cases %v", len(cases), set.cases)
			}
			emuBackendGoldens(t, oracletest.Checkpoint(set.checkpoint), cases, emuConfigs)
		})
	}
}

// emuConfig is a set of options the emulated goldens run under.
type emuConfig struct {
	name string
	opts Options
}

var emuConfigs = []emuConfig{
	{"FP32", Options{Precision: FP32}},
	// Programmatic dependent launch is the default (the emulated GPU is
	// sm_90): one configuration launches the plain way.
	{"FP16X2+pdl=off", Options{Precision: FP16X2, NoPDL: true}},
	// The 16-bit GEMMs run on cuBLASLt by default (in FP16 some write fp16
	// outputs); on cuBLAS with gemm=blas. Both with their LayerNorms and
	// GeGLUs asking L2 for the next GEMMs' weights (l2pf); in FP16 the
	// candidates timed reading their weights all over a region three times
	// the (fake) L2.
	{"FP16+l2pf+tunecold", Options{Precision: FP16, PrefetchRows: 1 << 20, TuneCold: true}},
	{"FP16X2+gemm=blas+l2pf", Options{Precision: FP16X2, GEMMBLAS: true, PrefetchRows: 1 << 20}},
	{"FP16X2+mmarows", Options{Precision: FP16X2, MMARows: MaxMMARows}},
	{"FP16+mmarows", Options{Precision: FP16, MMARows: MaxMMARows}},
	// The GEMMs of few rows on linear_cl, in FP16 and in FP16X2's reduced
	// streams (every batch in FP16 first).
	{"FP16X2+refine+clrows", Options{Precision: FP16X2, Refine: DefaultRefine, RefineTokens: 1, ClusterRows: MaxMMARows}},
	// The GEMMs of few rows on linear_wg (warpgroup products; the
	// emulated GPU is an sm_90) in FP16X2's reduced streams.
	{"FP16X2+refine+wgrows", Options{Precision: FP16X2, Refine: DefaultRefine, RefineTokens: 1, WGRows: MaxMMARows}},
	{"FP16X2+wgrows+wgtma", Options{Precision: FP16X2, WGRows: MaxMMARows, WGTMA: true}},
	{"FP16+wgrows+wgtma+wgring=3", Options{Precision: FP16, WGRows: MaxMMARows, WGTMA: true, WGRing: 3}},
	// FP16X2's two terms side by side in every cuBLAS GEMM (kcat): the
	// producers' kind 5, the weights' copies twice a row, one float32
	// product a GEMM with its bias in the epilogue.
	{"FP16X2+kcat", Options{Precision: FP16X2, KCatRows: 1}},
	// Every batch in FP16 first with each plain GEMM split over k's
	// halves (kbatch: stacked products, their residual Adds in the
	// LayerNorms), its near-ties again in FP16X2.
	{"FP16X2+refine+kbatch", Options{Precision: FP16X2, Refine: DefaultRefine, RefineTokens: 1, KBatchRows: 1 << 20}},
	// Every batch in FP16 first, its near-ties again in FP16X2, as the
	// registered backend runs them, on the few-rows kernels and the
	// key-split attention.
	{"FP16X2+refine+mmarows+attnsplit", Options{Precision: FP16X2, Refine: DefaultRefine, MMARows: MaxMMARows, AttentionSplit: true}},
	// The other few-rows kernels: linear_mma at 128 columns a block,
	// the tensor-core attention at one warp;
	// with the LayerNorms kernels of their own.
	{"FP16X2+mmarows+mmacols=128+mmawarps=1+mmaln=off", Options{Precision: FP16X2, MMARows: MaxMMARows, MMACols: 128, MMAWarps: 1, MMANoLN: true}},
	// Every batch in FP16 first, its near-ties again in FP16X2, with the
	// attention on the whole-row tensor-core kernels at eight warps (an
	// extras kernel), whatever the grid (mmawarps).
	{"FP16X2+refine+attnrows=8+mmawarps=4", Options{Precision: FP16X2, Refine: DefaultRefine, RefineTokens: 1, RowWarps: 8, MMAWarps: 4}},
	// The float32 attention of few tiles on the tiled kernel's warp a
	// query instead of attn_reg; the Gathers before the embeddings' and the
	// decision head's first LayerNorms kernels of their own (gatherfold=off).
	{"FP32+attnreg=off+gatherfold=off", Options{Precision: FP32, NoRegAttention: true, NoGatherFold: true}},
}

// Two rows of each variant's goldens (testdata/variants: shapes the oracle
// does not cover: head dims 16 and 48, which take the float32 attention,
// and 32; intermediate sizes 40 to 100, of which 40 and 100 are no multiple
// of linear_mma's 16; one to eight heads; windows of 8 to 32; bf16 and
// float32 weights) on the emulated backend, as the oracle's goldens run in
// TestEmuBackendGoldens: the edges of the few-rows GEMM, its fused GeGLU and
// the fallbacks around them, in FP16X2 with linear_mma at 64 columns a block
// and programmatic dependent launch, and at 128 with the tensor-core
// attention at one warp. FP32 on them is TestForwardGoldens' on a GPU.
func TestEmuBackendVariants(t *testing.T) {
	dir := filepath.Join(oracletest.Dir, "..", "variants")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		vdir := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(vdir, "goldens.json")); !e.IsDir() || err != nil {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			var g struct {
				BatchSize int              `json:"batch_size"`
				Rows      []oracletest.Row `json:"rows"`
			}
			oracletest.ReadJSON(t, filepath.Join(vdir, "goldens.json"), &g)
			if g.BatchSize < 1 || len(g.Rows) < g.BatchSize {
				t.Fatalf("batch size %d, %d rows", g.BatchSize, len(g.Rows))
			}
			// The emulator is slow on the 200-token rows (and on the
			// float32 attention, which head dims 16 and 48 take): the
			// longest row of at most 64 tokens (past every variant's
			// window) and the shortest, of any batch, each with two
			// options or more (one option's answer and calibrated
			// probability are always the same). The reference ran the rows
			// in padded batches, and a row's act features depend on its
			// batch, so only the logits and answers are compared.
			var rows []oracletest.Row
			for _, r := range g.Rows {
				if len(r.InputIDs) <= 64 && len(r.Logits) >= 2 {
					r.ActProbs = nil
					rows = append(rows, r)
				}
			}
			slices.SortStableFunc(rows, func(a, b oracletest.Row) int { return len(b.InputIDs) - len(a.InputIDs) })
			if len(rows) < 2 || len(rows[0].InputIDs) < 40 {
				t.Fatalf("%d rows of at most 64 tokens and two options or more, want two, one of at least 40 tokens", len(rows))
			}
			cases := []oracletest.Case{{Name: "short", Rows: []oracletest.Row{rows[0], rows[len(rows)-1]}}}
			emuBackendGoldens(t, vdir, cases, []emuConfig{emuConfigNamed(t, "FP16X2+mmarows"),
				emuConfigNamed(t, "FP16X2+mmarows+mmacols=128+mmawarps=1+mmaln=off"), emuConfigNamed(t, "FP16X2+refine+mmarows+attnsplit")})
		})
	}
	if n < 5 {
		t.Fatalf("%s: %d variants, want at least 5", dir, n)
	}
}

// emuConfigNamed is the emuConfigs entry of that name.
func emuConfigNamed(t *testing.T, name string) emuConfig {
	for _, c := range emuConfigs {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no emulator configuration %q", name)
	return emuConfig{}
}

func emuBackendGoldens(t *testing.T, dir string, cases []oracletest.Case, configs []emuConfig) {
	ckpt, err := weights.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	base := emuOptions(t)
	for _, cf := range configs {
		t.Run(cf.name, func(t *testing.T) {
			start := time.Now()
			opts := cf.opts
			opts.Driver, opts.NVRTC, opts.CUBLAS = base.Driver, base.NVRTC, base.CUBLAS
			opts.KernelCache, opts.GEMMBLAS = base.KernelCache, base.GEMMBLAS || opts.GEMMBLAS
			be, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			b := be.(*Backend)
			t.Logf("%s", b.Device())
			if lt := emuLt(opts); (b.lt != nil) != lt || opts.NoPDL == b.pdl {
				t.Fatalf("cuBLASLt %v, PDL %v: want cuBLASLt %v, PDL %v", b.lt != nil, b.pdl, lt, !opts.NoPDL)
			}
			parts, err := forwardpass.NewParts(be, ckpt)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			pad := int32(ckpt.Encoder.PadTokenID)
			var worstLogit, worstAct, worstProb float64
			rows, refined := 0, 0
			check := func(where string, want oracletest.Row, logits, probs []float32) {
				rows++
				for _, p := range probs {
					if math.IsNaN(float64(p)) || math.IsInf(float64(p), 0) {
						t.Errorf("%s: act probabilities %v", where, probs)
						break
					}
				}
				if opts.Precision == FP32 {
					worstLogit = max(worstLogit, oracletest.Compare(t, where+" logits", logits, want.Logits, oracletest.LogitTol))
					if want.ActProbs != nil {
						worstAct = max(worstAct, oracletest.Compare(t, where+" act_probs", probs, want.ActProbs, oracletest.ActProbTol))
					}
					return
				}
				wl := make([]float32, len(want.Logits))
				for j, v := range want.Logits {
					wl[j] = float32(v)
					worstLogit = max(worstLogit, math.Abs(v-float64(logits[j])))
				}
				temp := emuTemperature(ckpt, heads.QType(want.QType), len(wl))
				pg, pw := heads.Softmax(logits, temp), heads.Softmax(wl, temp)
				// max keeps a NaN, which fails the gate below.
				for j := range pg {
					worstProb = max(worstProb, math.Abs(float64(pg[j]-pw[j])))
				}
				for j, v := range want.ActProbs {
					worstAct = max(worstAct, math.Abs(v-float64(probs[j])))
				}
				if opts.Precision == FP16X2 && heads.Argmax(pg) != heads.Argmax(pw) {
					t.Errorf("%s: answer %d, upstream %d (logits %v, want %v)", where, heads.Argmax(pg), heads.Argmax(pw), logits, want.Logits)
				}
			}
			for _, packed := range []bool{false, true} {
				mode := "padded"
				var runOn forwardtest.RunFunc = parts.RunRows
				if packed {
					mode = "packed"
					runOn = forwardtest.RunPacked(parts)
				}
				run := func(r []forwardpass.Row) ([][]float32, [][]float32, error) {
					if opts.Refine > 0 {
						logits, probs, n, err := forwardtest.RunRefined(ctx, be, runOn, r, pad, refined)
						refined = n
						return logits, probs, err
					}
					return runOn(ctx, be, r, pad, nil)
				}
				for _, c := range cases {
					in := forwardtest.Rows(c.Rows)
					// Kernel by kernel, captured, and replayed; in between,
					// other tokens in the same shapes, replayed, whose answers
					// must move (by units; 0.1 is far above any precision's
					// error): a replay that ran nothing would return the last
					// run's.
					var last [][]float32
					for step, rowsIn := range [][]forwardpass.Row{in, in, emuOtherTokens(in), in} {
						before := b.Stats()
						logits, probs, err := run(rowsIn)
						if err != nil {
							t.Fatalf("case %s %s step %d: %v", c.Name, mode, step, err)
						}
						// Every segment of the run, kernel by kernel (step 0),
						// captured (1) or replayed (2, 3).
						st := b.Stats()
						ran := [3]int{st.Eager - before.Eager, st.Captures - before.Captures, st.Replays - before.Replays}
						how := min(step, 2)
						// A refined run's near-ties are a batch of their
						// own, whose shape other tokens (step 2) may change.
						if ran[how] == 0 || ran[0]+ran[1]+ran[2] != ran[how] && !(opts.Refine > 0 && step == 2) {
							t.Fatalf("case %s %s step %d: segments run kernel by kernel, captured, replayed: %v", c.Name, mode, step, ran)
						}
						if step == 2 {
							moved := 0.0
							for i := range logits {
								for j, v := range logits[i] {
									moved = max(moved, math.Abs(float64(v-last[i][j])))
								}
							}
							if !(moved > 0.1) {
								t.Fatalf("case %s %s: other tokens moved no logit by more than %.2g", c.Name, mode, moved)
							}
							continue
						}
						last = logits
						for i, want := range c.Rows {
							check(fmt.Sprintf("case %s %s %s step %d", c.Name, want.QID, mode, step), want, logits[i], probs[i])
						}
					}
				}
			}
			if opts.Precision != FP32 && !(worstProb <= 0.005 && worstAct <= 0.005) {
				t.Errorf("calibrated probabilities off by %.3g, act probabilities by %.3g: over 0.005", worstProb, worstAct)
			}
			st := b.Stats()
			if (opts.Refine > 0) != (st.ReducedStreams > 0) {
				t.Errorf("stats %+v: reduced streams with refine=%v", st, opts.Refine)
			}
			// A golden near-tie well inside the margin is refined.
			nearTie := false
			for _, c := range cases {
				for _, r := range c.Rows {
					l := make([]float32, len(r.Logits))
					for j, v := range r.Logits {
						l[j] = float32(v)
					}
					nearTie = nearTie || backend.NearTie(l, opts.Refine/2)
				}
			}
			if opts.Refine > 0 && nearTie && refined == 0 {
				t.Errorf("no row refined, though a golden's two largest logits lie within %g", opts.Refine/2)
			}
			own := opts.MMARows > 0 || opts.ClusterRows > 0 || opts.WGRows > 0
			if own && st.GEMMOwn == 0 {
				t.Errorf("stats %+v: no GEMM ran on linear_mma, linear_cl or linear_wg", st)
			}
			if kcat := opts.KCatRows > 0 && opts.Precision == FP16X2; kcat != (st.GEMMKCat > 0) {
				t.Errorf("stats %+v: GEMMs over both terms side by side with kcat=%d", st, opts.KCatRows)
			}
			// The GEMMs ran on cuBLASLt where they should (each shape timed
			// the first time: some shape is, unless linear_mma, linear_cl
			// or linear_wg takes them all), none refused to cuBLAS; on
			// cuBLAS, nothing was tuned.
			if lt := emuLt(opts); st.GEMMFallback != 0 || !lt && st.GEMMTuned != 0 || lt && !own && st.GEMMTuned == 0 {
				t.Errorf("stats %+v: with cuBLASLt %v, want GEMM shapes tuned on it (none without) and none fallen back to cuBLAS", st, lt)
			}
			// Every checkpoint here has a LayerNorm between two linear_mma
			// GEMMs (the attention output's and the MLP input's).
			if fused, want := st.LayerNormsInGEMM > 0, opts.MMARows > 0 && !opts.MMANoLN; fused != want {
				t.Errorf("stats %+v: LayerNorms in a GEMM %v, want %v", st, fused, want)
			}
			t.Logf("%d rows | max |Δlogit| %.2g | max |Δcalibrated p| %.2g | max |Δact p| %.2g | %+v | %v", rows, worstLogit, worstProb,
				worstAct, st, time.Since(start).Round(time.Millisecond))
		})
	}
}

// The backend conformance suite (every operation against float64, every
// contract rejection) on the emulator in FP32, with graphs and kernel by
// kernel, as TestConformance runs it on a GPU; and the self-test in every
// precision (BF16's only run here).
func TestEmuBackendConformance(t *testing.T) {
	base := emuOptions(t)
	for _, c := range []struct {
		name     string
		noGraphs bool
	}{{"graphs", false}, {"nographs", true}} {
		t.Run(c.name, func(t *testing.T) {
			opts := base
			opts.NoGraphs = c.noGraphs
			backendtest.Run(t, func() (backend.Backend, error) { return Open(opts) })
		})
	}
	for _, p := range []Precision{FP32, FP16, BF16, FP16X2} {
		opts := base
		opts.Precision = p
		if err := SelfTest(context.Background(), opts); err != nil {
			t.Errorf("self-test in %v: %v", p, err)
		}
	}
}

// emuOptions are the options that open the backend on libcuemu.so, its
// 16-bit GEMMs on the emulator's cuBLASLt (the libcublasLt.so beside it,
// emuLinkLt), except on a host with a real cuBLASLt.
func emuOptions(t testing.TB, defines ...string) Options {
	lib := emuLibTuned(t, defines...)
	// No kernel cache: the fake cubin has a real one's key (sm_90, NVRTC
	// 13.0), where a GPU's backend would find it.
	opts := Options{Driver: lib, NVRTC: lib, CUBLAS: lib, KernelCache: "off"}
	// The cuBLASLt the backend takes beside the emulator must be the
	// emulator itself, loaded once: another library there would be handed
	// its host pointers, a copy would have a GPU of its own.
	lt, err := loadCUBLASLt(lib, true)
	if err != nil {
		t.Fatalf("the emulator's cuBLASLt: %v", err)
	}
	if lt.create != emuSym(t, lib, "cublasLtCreate") {
		t.Fatalf("%s beside the emulator is another library than %s", lt.path, lib)
	}
	if real, err := loadCUBLASLt("", false); err == nil {
		// A real cuBLASLt in the loader path (a CUDA host): should anything
		// reach it, it would get this library's host pointers. The GEMMs
		// stay on cuBLAS.
		t.Logf("%s found: gemm=blas", real.path)
		opts.GEMMBLAS = true
	}
	return opts
}

// emuLt reports whether the backend opened with opts runs its 16-bit
// GEMMs on the emulator's cuBLASLt.
func emuLt(opts Options) bool { return opts.Precision != FP32 && !opts.GEMMBLAS }

// emuTemperature is the calibration temperature of a question: its
// bucket's, else its type's.
func emuTemperature(ckpt *weights.Checkpoint, q heads.QType, options int) float64 {
	if t, ok := ckpt.Agent.TemperatureByOptions[heads.Bucket(q, options)]; ok {
		return t
	}
	return ckpt.Agent.Temperature[q]
}

// emuOtherTokens is rows with the tokens between the first and the last
// that are not markers reversed: the same lengths and markers (the same
// shapes), other answers.
func emuOtherTokens(rows []forwardpass.Row) []forwardpass.Row {
	out := make([]forwardpass.Row, len(rows))
	for i, r := range rows {
		marker := map[int]bool{}
		for _, m := range r.Markers {
			marker[m] = true
		}
		var at []int
		for p := 1; p < len(r.IDs)-1; p++ {
			if !marker[p] {
				at = append(at, p)
			}
		}
		ids := slices.Clone(r.IDs)
		for k, p := range at {
			ids[p] = r.IDs[at[len(at)-1-k]]
		}
		out[i] = forwardpass.Row{IDs: ids, Markers: r.Markers, QType: r.QType}
	}
	return out
}

// The emulator runs the kernels its library was built with, so its NVRTC
// refuses a program asking for other tunables (define=) instead of
// running the default build's kernels under their name (emuLibTuned builds
// one with them).
func TestEmuDefinesRefused(t *testing.T) {
	opts := emuOptions(t)
	opts.Defines = map[string]int{"ATTN_SKIP": 1}
	be, err := Open(opts)
	if err == nil {
		be.Close()
		t.Fatal("Open with define=ATTN_SKIP=1 on the default build's emulator: no error")
	}
	if !strings.Contains(err.Error(), "built with [], the program asks for [-DATTN_SKIP=1]") {
		t.Errorf("Open with define=ATTN_SKIP=1 on the default build's emulator: %v", err)
	}
}

// The first Open with no kept kernels says it compiles them, and how long
// that took (Options.Log); one that finds them kept says nothing.
func TestEmuOpenLogsCompile(t *testing.T) {
	opts := emuOptions(t)
	opts.KernelCache = t.TempDir()
	for i, want := range []int{2, 0} {
		var msgs []string
		opts.Log = func(m string) { msgs = append(msgs, m) }
		be, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		be.Close()
		if len(msgs) != want {
			t.Fatalf("open %d logged %q, want %d messages", i, msgs, want)
		}
		if want > 0 && (!strings.Contains(msgs[0], "compiling the kernels for sm_") || !strings.Contains(msgs[0], opts.KernelCache) ||
			!strings.HasPrefix(msgs[1], "cuda: the kernels compiled in ")) {
			t.Errorf("logged %q", msgs)
		}
	}
}

// The emulator as a fake CUDA stack for any program: with LAYA_CUEMU_OUT
// set this writes libcuemu.so's path there (scripts/gpucheck/cuemu.sh), for
// LAYA_CUDA=driver=PATH,nvrtc=PATH,cublas=PATH, which runs laya-bench or
// laya serve on the CPU as on a GPU (slowly: a small checkpoint).
func TestEmuLibrary(t *testing.T) {
	lib := emuLib(t)
	if out := os.Getenv("LAYA_CUEMU_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(lib+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := emuOptions(t)
	o, err := ParseOptions("precision=fp16x2,driver=" + lib + ",nvrtc=" + lib + ",cublas=" + lib + ",cache=off")
	if err != nil {
		t.Fatal(err)
	}
	o.GEMMBLAS = opts.GEMMBLAS
	be, err := Open(o)
	if err != nil {
		t.Fatalf("opening the emulator named by options: %v", err)
	}
	defer be.Close()
	// Its cuBLASLt found beside it, as the default path wants.
	if b := be.(*Backend); (b.lt != nil) != emuLt(o) {
		t.Errorf("%s: cuBLASLt %v, want %v", b.Device(), b.lt != nil, emuLt(o))
	}
}
