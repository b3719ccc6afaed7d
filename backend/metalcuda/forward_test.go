package metalcuda_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/laya-metal/laya/backend"
	_ "github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/metal/cuda"
	"github.com/laya-metal/laya/weights"
)

// The whole Laya forward pass on metal-cuda: against upstream's goldens with
// the gates of the CPU backend (raw logits within 1e-4, act probabilities
// within 1e-5), and at full size against the cpu backend on synthetic
// checkpoints. The pipeline is the one of root forward.go's runBatch, as
// in backend/gpu's forward tests.

type model struct {
	ckpt *weights.Checkpoint
	forwardpass.Parts
}

func newModel(t testing.TB, be backend.Backend, ckpt *weights.Checkpoint) *model {
	t.Helper()
	parts, err := forwardpass.NewParts(be, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	return &model{ckpt: ckpt, Parts: parts}
}

// forward runs rows as one right-padded batch and returns each row's logits
// and act probabilities.
func (m *model) forward(ctx context.Context, be backend.Backend, rows []forwardpass.Row) (logits, actProbs [][]float32, err error) {
	return m.forwardObserved(ctx, be, rows, nil)
}

// forwardObserved is forward with an observer of the encoder's and the
// decision head's stages.
func (m *model) forwardObserved(ctx context.Context, be backend.Backend, rows []forwardpass.Row, obs backend.Observer) (logits, actProbs [][]float32, err error) {
	return m.RunRows(ctx, be, rows, int32(m.ckpt.Encoder.PadTokenID), obs)
}

// Every golden case of the three oracle checkpoints, on the GPU.
func TestForwardGoldens(t *testing.T) {
	for _, cfg := range []struct {
		name string
		opts cuda.Options
	}{{"copied", cuda.Options{}}, {"maphost", cuda.Options{MapHost: true}}} {
		t.Run(cfg.name, func(t *testing.T) { forwardGoldens(t, cfg.opts) })
	}
}

// forwardGoldens opens one backend per checkpoint and closes it before the
// checkpoint: UploadMapped's contract is that the mapping outlives the
// backend. A backend shared across checkpoints that closes each before the
// next broke it: backend/gpu finds wrapped ranges by the mapping's address,
// a later checkpoint mapped at a freed one's address got the stale buffers,
// and on this device they are registered (pinned) pages of the old file,
// so real-en read tiny-ml's weights (NaN act probabilities with MapHost).
func forwardGoldens(t *testing.T, opts cuda.Options) {
	ctx := context.Background()
	for _, name := range []string{"tiny-en", "tiny-ml", "real-en"} {
		t.Run(name, func(t *testing.T) {
			ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint(name))
			if err != nil {
				t.Fatal(err)
			}
			defer ckpt.Close()
			be := open(t, opts)
			defer be.Close()
			m := newModel(t, be, ckpt)
			var worstLogit, worstAct float64
			rows := 0
			for _, c := range oracletest.Cases(t, name) {
				logits, probs, err := m.forward(ctx, be, forwardtest.Rows(c.Rows))
				if err != nil {
					t.Fatalf("case %s: %v", c.Name, err)
				}
				for i, want := range c.Rows {
					where := fmt.Sprintf("case %s %s", c.Name, want.QID)
					worstLogit = max(worstLogit, oracletest.Compare(t, where+" logits", logits[i], want.Logits, oracletest.LogitTol))
					worstAct = max(worstAct, oracletest.Compare(t, where+" act_probs", probs[i], want.ActProbs, oracletest.ActProbTol))
					rows++
				}
			}
			t.Logf("GOLDENS %s on %s (mapped weights %v): %d rows, max |Δlogit| %.2g, max |Δact_prob| %.2g", name, be.Name(), opts.MapHost, rows, worstLogit, worstAct)
		})
	}
}

// syntheticRows builds q question rows of length n (0: the golden row's own
// length) from the golden rows of base: longer rows get the row's own
// tokens repeated after [CLS] as state text, the markers moved with them.
func syntheticRows(t *testing.T, base string, q, n int) []forwardpass.Row {
	var src []forwardpass.Row
	for _, c := range oracletest.Cases(t, base) {
		if c.Name == "many_questions" || c.Name == "email" {
			src = append(src, forwardtest.Rows(c.Rows)...)
		}
	}
	rows := make([]forwardpass.Row, q)
	for i := range rows {
		r := src[i%len(src)]
		if n <= len(r.IDs) {
			rows[i] = r
			continue
		}
		extra := n - len(r.IDs)
		ids := append([]int{r.IDs[0]}, make([]int, extra)...)
		for j := 0; j < extra; j++ {
			ids[1+j] = r.IDs[1+j%(len(r.IDs)-2)]
		}
		ids = append(ids, r.IDs[1:]...)
		markers := make([]int, len(r.Markers))
		for j, p := range r.Markers {
			markers[j] = p + extra
		}
		rows[i] = forwardpass.Row{IDs: ids, Markers: markers, QType: r.QType}
	}
	return rows
}

func softmax(z []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range z {
		m = max(m, float64(v))
	}
	var s float64
	p := make([]float64, len(z))
	for i, v := range z {
		p[i] = math.Exp(float64(v) - m)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

func argmax(z []float32) int {
	best := 0
	for i, v := range z {
		if v > z[best] {
			best = i
		}
	}
	return best
}

// Full-size synthetic checkpoints (LAYA_CUDA_SYNTH: comma-separated
// "dir:golden" pairs, the golden naming the vocabulary's oracle rows) on
// metal-cuda against the cpu backend, at 1, 10 and 50 questions, short
// and max_len-token states. The parity rule of laya-spec §4.1's
// validation: the same answer (argmax) for every question, and calibrated
// probabilities within 1e-4 (the FP32 threshold).
func TestSyntheticParity(t *testing.T) {
	spec := os.Getenv("LAYA_CUDA_SYNTH")
	if spec == "" {
		t.Skip("LAYA_CUDA_SYNTH names no synthetic checkpoints (scripts/gpucheck/metal-on-gpu.sh sets it)")
	}
	// The checkpoints outlive both backends (UploadMapped's contract).
	var ckpts []*weights.Checkpoint
	defer func() {
		for _, c := range ckpts {
			c.Close()
		}
	}()
	gpu := open(t, cuda.Options{})
	defer gpu.Close()
	cpu, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	ctx := context.Background()
	for _, pair := range strings.Split(spec, ",") {
		dir, base, _ := strings.Cut(pair, ":")
		ckpt, err := weights.LoadCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		ckpts = append(ckpts, ckpt)
		mg, mc := newModel(t, gpu, ckpt), newModel(t, cpu, ckpt)
		for _, q := range []int{1, 10, 50} {
			for _, n := range []int{0, ckpt.Agent.MaxLen} {
				rows := syntheticRows(t, base, q, n)
				start := time.Now()
				_, _, err := mg.forward(ctx, gpu, rows)
				if err != nil {
					t.Fatalf("%s q=%d n=%d metal-cuda: %v", dir, q, n, err)
				}
				first := time.Since(start)
				start = time.Now()
				lg, ag, err := mg.forward(ctx, gpu, rows)
				if err != nil {
					t.Fatal(err)
				}
				gpuTime := time.Since(start)
				start = time.Now()
				lc, ac, err := mc.forward(ctx, cpu, rows)
				if err != nil {
					t.Fatalf("%s q=%d n=%d cpu: %v", dir, q, n, err)
				}
				cpuTime := time.Since(start)
				agree := 0
				var dLogit, dProb, dAct float64
				for i := range rows {
					if argmax(lg[i]) == argmax(lc[i]) {
						agree++
					} else {
						t.Errorf("%s q=%d n=%d row %d: answer %d on metal-cuda, %d on cpu (logits %v vs %v)", dir, q, n, i, argmax(lg[i]), argmax(lc[i]), lg[i], lc[i])
					}
					pg, pc := softmax(lg[i]), softmax(lc[i])
					for j := range lg[i] {
						dLogit = max(dLogit, math.Abs(float64(lg[i][j]-lc[i][j])))
						dProb = max(dProb, math.Abs(pg[j]-pc[j]))
					}
					for j := range ag[i] {
						dAct = max(dAct, math.Abs(float64(ag[i][j]-ac[i][j])))
					}
				}
				if dProb > 1e-4 || dAct > 1e-4 {
					t.Errorf("%s q=%d n=%d: probabilities differ by %.2g (options), %.2g (act) > 1e-4", dir, q, n, dProb, dAct)
				}
				tokens := len(rows[0].IDs)
				if q == 1 {
					t.Logf("LAYERS | %s | %d | %s |", dir, tokens, layerDiffs(t, ctx, mg, gpu, mc, cpu, rows))
				}
				t.Logf("PARITY | %s | %d | %d | %d/%d | %.2g | %.2g | %.2g | %.1f | %.1f | %.1f |", dir, q, tokens, agree, len(rows),
					dLogit, dProb, dAct, float64(first.Microseconds())/1e3, float64(gpuTime.Microseconds())/1e3, float64(cpuTime.Microseconds())/1e3)
			}
		}
	}
}

// Per-kernel GPU time of one forward at 1 short question and at 10
// max_len questions on the first synthetic checkpoint: NVIDIA timings of
// Apple-tuned kernels, not an Apple estimate.
func TestSyntheticProfile(t *testing.T) {
	spec := os.Getenv("LAYA_CUDA_SYNTH")
	if spec == "" {
		t.Skip("LAYA_CUDA_SYNTH names no synthetic checkpoints")
	}
	for _, pair := range strings.Split(spec, ",") {
		dir, base, _ := strings.Cut(pair, ":")
		ckpt, err := weights.LoadCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ q, n int }{{1, 0}, {10, ckpt.Agent.MaxLen}} {
			be := open(t, cuda.Options{Profile: true})
			m := newModel(t, be, ckpt)
			rows := syntheticRows(t, base, c.q, c.n)
			// The first forward compiles the pipelines and moves the
			// weights into device memory; the second is timed.
			if _, _, err := m.forward(context.Background(), be, rows); err != nil {
				t.Fatal(err)
			}
			before, _ := cuda.Stats(be.Device())
			if _, _, err := m.forward(context.Background(), be, rows); err != nil {
				t.Fatal(err)
			}
			after, _ := cuda.Stats(be.Device())
			prev := map[string]cuda.KernelTime{}
			for _, k := range before.Kernels {
				prev[k.Kernel] = k
			}
			var total float64
			for _, k := range after.Kernels {
				n, sec := k.Dispatches-prev[k.Kernel].Dispatches, k.Seconds-prev[k.Kernel].Seconds
				total += sec
				t.Logf("KERNEL | %s | %d | %d | %s | %d | %.3f | %.1f |", dir, c.q, len(rows[0].IDs), k.Kernel, n, sec*1e3, sec*1e6/float64(max(n, 1)))
			}
			t.Logf("KERNEL | %s | %d | %d | all | - | %.3f | - | NVRTC %d compiles in %v", dir, c.q, len(rows[0].IDs), total*1e3, after.Compiles, after.CompileTime)
			be.Close()
		}
		ckpt.Close()
	}
}

// layerDiffs runs rows on both models and gives max |Δ| of every stage the
// observers see (embeddings, each encoder layer, the final norm, each head
// layer), in order.
func layerDiffs(t *testing.T, ctx context.Context, mg *model, gpu backend.Backend, mc *model, cpu backend.Backend, rows []forwardpass.Row) string {
	capture := func(m *model, be backend.Backend) ([]string, map[string][]float32) {
		var order []string
		got := map[string][]float32{}
		obs := func(s backend.Stream, stage string, i int, x backend.Tensor) {
			buf := make([]float32, x.Rows()*x.Cols())
			if err := s.Read(ctx, x, buf); err != nil {
				t.Fatalf("%s %d: %v", stage, i, err)
			}
			key := fmt.Sprintf("%s %d", stage, i)
			order = append(order, key)
			got[key] = buf
		}
		if _, _, err := m.forwardObserved(ctx, be, rows, obs); err != nil {
			t.Fatal(err)
		}
		return order, got
	}
	order, g := capture(mg, gpu)
	_, c := capture(mc, cpu)
	var parts []string
	for _, k := range order {
		var d float64
		for i := range g[k] {
			d = max(d, math.Abs(float64(g[k][i]-c[k][i])))
		}
		parts = append(parts, fmt.Sprintf("%s: %.2g", k, d))
	}
	return strings.Join(parts, "; ")
}
