//go:build linux

package cuda

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/weights"
	"github.com/laya-metal/laya/weights/synthetic"
)

// BenchmarkEmuHostForward is the host's share of a request on this backend:
// the ModernBERT-large encoder and the heads over q packed questions of 93
// tokens (laya-bench's short question), recorded, flushed, replayed from
// their graph and read back as a request is, with the emulated GPU doing no
// work (cuemu_skip_work: kernels and GEMMs are not run, so the answers are
// meaningless). On a GPU the request's wall time is this, the GPU's time
// and the driver's own calls; tokenizing and the answers' JSON are the root
// package's BenchmarkPrepareRequest and the server's. Options as the
// registered backend's (FP16X2, refinement off: the rows' zero logits
// would all be near-ties).
func BenchmarkEmuHostForward(b *testing.B) {
	if testing.Short() {
		b.Skip("full-size model skipped in -short mode")
	}
	lib := emuLib(b)
	ckpt, err := weights.LoadCheckpoint(syntheticCheckpoint(b, synthetic.English()))
	if err != nil {
		b.Fatal(err)
	}
	defer ckpt.Close()
	opts := emuOptions(b)
	opts.Precision = FP16X2
	be, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	skip := emuSkipWork(b, lib)
	skip(true)
	defer skip(false)
	parts, err := forwardpass.NewParts(be, ckpt)
	if err != nil {
		b.Fatal(err)
	}
	pad := int32(ckpt.Encoder.PadTokenID)
	for _, q := range []int{1, 10, 50} {
		rows := make([]forwardpass.Row, q)
		for i := range rows {
			ids := make([]int, 93)
			for j := range ids {
				ids[j] = 1000 + (37*j+i)%40000
			}
			ids[0], ids[92] = 50281, 50282 // ModernBERT's [CLS] … [SEP]
			rows[i] = forwardpass.Row{IDs: ids, Markers: []int{20, 25}, QType: heads.QType(i % 3)}
		}
		// The default, and a forward recorded whole before it starts
		// (submit=off): on a GPU the first overlaps most of its recording
		// with the GPU's work; here it shows what the extra segments cost.
		for _, submit := range []int{DefaultSubmitOps, -1} {
			name := fmt.Sprintf("questions=%d/submit=%d", q, submit)
			if submit < 0 {
				name = fmt.Sprintf("questions=%d/submit=off", q)
			}
			b.Run(name, func(b *testing.B) {
				be.(*Backend).opts.SubmitOps = submit
				ctx := context.Background()
				// Kernel by kernel, then captured: the loop replays.
				for range 2 {
					if _, _, err := parts.RunRowsPruned(ctx, be, rows, pad); err != nil {
						b.Fatal(err)
					}
				}
				before := be.(*Backend).Stats()
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := parts.RunRowsPruned(ctx, be, rows, pad); err != nil {
						b.Fatal(err)
					}
				}
				st := be.(*Backend).Stats()
				replays, early := st.Replays-before.Replays, st.Submitted-before.Submitted
				b.ReportMetric(float64(replays)/float64(b.N), "replays/op")
				if replays != b.N+early || st.Eager+st.Captures != before.Eager+before.Captures {
					b.Fatalf("%d replays in %d requests, %d segments started early: each should replay its graphs, and wait once", replays, b.N, early)
				}
			})
		}
	}
}

// emuSkipWork is libcuemu.so's cuemu_skip_work: on, its kernels and GEMMs
// do nothing.
func emuSkipWork(b *testing.B, lib string) func(bool) {
	fn := emuSym(b, lib, "cuemu_skip_work")
	return func(on bool) {
		v := uintptr(0)
		if on {
			v = 1
		}
		purego.SyscallN(fn, v)
	}
}

// syntheticCheckpoint is spec's checkpoint, written once (the root
// package's benchmarks share it), with the repository's ModernBERT
// tokenizer.
func syntheticCheckpoint(b *testing.B, spec synthetic.Spec) string {
	spec.TokenizerDir = filepath.Join("..", "..", "testdata", "tokenizers", "modernbert")
	dir, err := synthetic.TempCheckpoint(spec)
	if err != nil {
		b.Fatal(err)
	}
	return dir
}
