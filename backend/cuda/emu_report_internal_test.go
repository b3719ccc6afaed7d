//go:build linux

package cuda

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

// TestEmuGoldenReport runs every oracle golden of tiny-en and tiny-ml once,
// packed, on the emulated backend under the options of
// LAYA_CUEMU_REPORT_OPTIONS (ParseOptions' form, e.g.
// "precision=fp16,mmawarps=4,attnterms=2", define= tunables included:
// the emulator is built with them; skipped without it) and reports
// what TestForwardGoldens reports on a GPU: answers that agree with
// upstream's, the largest calibrated- and act-probability errors. A
// precision experiment's numbers without a GPU: the emulator computes the
// GPU's operations (fp16 operands, float32 accumulation) in another order,
// so its largest errors come near the GPU's, not equal to them (the
// one-term fp16 attention on tiny-ml: 0.0051 here, 0.0053 on an H100 and an
// H200; two terms 0.0027 here, 0.0025 there). It fails only on a forward
// that errs or answers NaN: it reports, it does not gate.
//
//	LAYA_CUEMU_REPORT_OPTIONS=precision=fp16,mmawarps=4 go test -run TestEmuGoldenReport -v ./backend/cuda
func TestEmuGoldenReport(t *testing.T) {
	spec := os.Getenv("LAYA_CUEMU_REPORT_OPTIONS")
	if spec == "" {
		t.Skip("LAYA_CUEMU_REPORT_OPTIONS names the options to report on")
	}
	set, err := ParseOptions(spec)
	if err != nil {
		t.Fatal(err)
	}
	// The emulator runs the kernels its library was built with: one built
	// with the options' tunables (define=).
	var defines []string
	for _, name := range slices.Sorted(maps.Keys(set.Defines)) {
		defines = append(defines, fmt.Sprintf("%s=%d", name, set.Defines[name]))
	}
	base := emuOptions(t, defines...)
	set.Driver, set.NVRTC, set.CUBLAS = base.Driver, base.NVRTC, base.CUBLAS
	set.KernelCache, set.GEMMBLAS = base.KernelCache, base.GEMMBLAS || set.GEMMBLAS
	for _, name := range []string{"tiny-en", "tiny-ml"} {
		t.Run(name, func(t *testing.T) {
			ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint(name))
			if err != nil {
				t.Fatal(err)
			}
			defer ckpt.Close()
			be, err := Open(set)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			parts, err := forwardpass.NewParts(be, ckpt)
			if err != nil {
				t.Fatal(err)
			}
			ctx, pad, run := context.Background(), int32(ckpt.Encoder.PadTokenID), forwardtest.RunPacked(parts)
			var worstProb, worstAct float64
			var worstAt string
			rows, agree, refined := 0, 0, 0
			for _, c := range oracletest.Cases(t, name) {
				in := forwardtest.Rows(c.Rows)
				var logits, probs [][]float32
				if set.Refine > 0 {
					logits, probs, refined, err = forwardtest.RunRefined(ctx, be, run, in, pad, refined)
				} else {
					logits, probs, err = run(ctx, be, in, pad, nil)
				}
				if err != nil {
					t.Fatalf("case %s: %v", c.Name, err)
				}
				for i, want := range c.Rows {
					rows++
					wl := make([]float32, len(want.Logits))
					for j, v := range want.Logits {
						wl[j] = float32(v)
					}
					temp := emuTemperature(ckpt, heads.QType(want.QType), len(wl))
					pg, pw := heads.Softmax(logits[i], temp), heads.Softmax(wl, temp)
					if heads.Argmax(pg) == heads.Argmax(pw) {
						agree++
					}
					for j := range pg {
						d := math.Abs(float64(pg[j] - pw[j]))
						if d != d {
							t.Fatalf("case %s %s: calibrated probabilities %v", c.Name, want.QID, pg)
						}
						if d > worstProb {
							worstProb, worstAt = d, c.Name+" "+want.QID
						}
					}
					for j, v := range want.ActProbs {
						worstAct = max(worstAct, math.Abs(v-float64(probs[i][j])))
					}
				}
			}
			t.Logf("REPORT | %s | %s | %d rows | argmax %d/%d (%d refined) | max |Δcalibrated p| %.2g (%s) | max |Δact p| %.2g",
				name, spec, rows, agree, rows, refined, worstProb, worstAt, worstAct)
		})
	}
}
