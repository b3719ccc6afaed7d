//go:build linux

package cuda

import (
	"context"
	"errors"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
)

// emuWideRequest is three rows, one of each question type.
var emuWideRequest = []byte(`{"state": "I was charged twice for March and the box arrived damaged.", "questions": {
	"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"},
	"dept": {"type": "choice", "instructions": "Which team should answer?", "criteria": ["billing", "shipping", "technical"]},
	"anger": {"type": "score", "instructions": "How angry is the customer?", "criteria": ["calm", "annoyed", "furious"]}}}`)

// A checkpoint whose activations outgrow fp16: tiny-en with its embedding
// norm weight (0.68 to 1.35) times 1e6, whose output, layer 0's Wqkv
// operand (that layer has no attention norm), is then past 65504 at every
// token. On the emulated GPU, through the model: in FP16X2 every row's
// outputs are NaN, and a request fails with ErrNonFinite where the backend
// offers no FP32 streams; with them (backend.Widener) the model runs those
// rows again in FP32 and answers as the FP32 backend does, byte for byte,
// kernel by kernel, captured and replayed. With refinement the rows run in
// FP16, FP16X2, then FP32.
func TestEmuBackendWide(t *testing.T) {
	base := emuOptions(t)
	ctx := context.Background()
	open := func(t *testing.T, o Options) *Backend {
		o.Driver, o.NVRTC, o.CUBLAS = base.Driver, base.NVRTC, base.CUBLAS
		o.KernelCache, o.GEMMBLAS = base.KernelCache, base.GEMMBLAS
		be, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		return be.(*Backend)
	}
	scaled := func(be backend.Backend, noWide bool) *forwardtest.Scaled {
		return &forwardtest.Scaled{Backend: be, Weight: "encoder.embeddings.norm.weight", Factor: 1e6, NoWide: noWide}
	}
	// answer runs the request times times on one agent (kernel by kernel,
	// captured, replayed), each answer the first's.
	answer := func(t *testing.T, be *forwardtest.Scaled, times int) (*laya.Result, error) {
		agent, err := laya.Load(ctx, oracletest.Checkpoint("tiny-en"), laya.WithBackendInstance(be), laya.WithBatchSize(2))
		if err != nil {
			t.Fatal(err)
		}
		defer agent.Close()
		if !be.Uploaded() {
			t.Fatalf("no weight %s uploaded", be.Weight)
		}
		var first *laya.Result
		for i := range times {
			res, err := agent.PredictJSON(ctx, emuWideRequest)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				first = res
			} else if res.String() != first.String() {
				t.Errorf("run %d: %s, run 0: %s", i, res, first)
			}
		}
		return first, nil
	}
	ref := open(t, Options{Precision: FP32})
	defer ref.Close()
	want, err := answer(t, scaled(ref, false), 1)
	if err != nil {
		t.Fatalf("FP32: %v", err)
	}
	if ref.WideStream() != nil {
		t.Error("FP32 offers a wider stream")
	}
	for _, cf := range []emuConfig{
		{"FP16X2", Options{Precision: FP16X2}},
		{"FP16X2+refine", Options{Precision: FP16X2, Refine: DefaultRefine, RefineTokens: 1}},
	} {
		t.Run(cf.name, func(t *testing.T) {
			b := open(t, cf.opts)
			defer b.Close()
			if _, err := answer(t, scaled(b, true), 1); !errors.Is(err, laya.ErrNonFinite) {
				t.Fatalf("without FP32 streams: err = %v, want ErrNonFinite", err)
			}
			if st := b.Stats(); st.WideStreams != 0 || st.Streams == 0 {
				t.Fatalf("without FP32 streams: %+v", st)
			}
			before := b.Stats()
			got, err := answer(t, scaled(b, false), 3)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("answers %s, FP32's %s", got, want)
			}
			st := b.Stats()
			if st.WideStreams == 0 || b.Counters()["wide_streams"] != st.WideStreams {
				t.Errorf("%+v, counters %v: no FP32 stream counted", st, b.Counters())
			}
			if st.Captures == before.Captures || st.Replays == before.Replays {
				t.Errorf("%+v: no segment captured and replayed", st)
			}
			if (cf.opts.Refine > 0) != (st.ReducedStreams > 0) {
				t.Errorf("%+v: reduced streams with refine=%v", st, cf.opts.Refine)
			}
			t.Logf("%s | %+v", got, st)
		})
	}
}
