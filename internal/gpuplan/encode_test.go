package gpuplan

import (
	"context"
	"testing"

	"github.com/laya-metal/laya/weights/synthetic"
)

// BenchmarkEncodeRequest is the Go side of one request on a device that
// runs nothing (PlanDevice, counting only): the model's operations, fusion,
// barrier tracking, argument packing, arena and commits, everything the
// host does per request except the Objective-C sends of the real device
// (~0.6 µs per dispatch per antonellof/ferrox#149), which PlanDevice does
// not make. The host's budget is ≤ 150 µs per English request.
func BenchmarkEncodeRequest(b *testing.B) {
	for _, spec := range []synthetic.Spec{synthetic.English(), synthetic.Multilingual()} {
		b.Run(spec.Name+"/1q-93tok", func(b *testing.B) {
			r := newEncodeRecorder(b, spec)
			req := Request{Questions: 1, Tokens: 93, Markers: 4}
			ctx := context.Background()
			if err := r.run(ctx, req); err != nil {
				b.Fatal(err)
			}
			r.dev.Reset()
			b.ReportAllocs()
			for b.Loop() {
				if err := r.run(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			st := r.dev.Stats()
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/request")
			b.ReportMetric(float64(st.Dispatches)/float64(b.N), "dispatches/request")
			b.ReportMetric(float64(st.NewBuffers)/float64(b.N), "buffers/request")
		})
	}
}

// newEncodeRecorder is spec's model (shapes only) on a plan device that
// only counts, closed when the test ends.
func newEncodeRecorder(tb testing.TB, spec synthetic.Spec) *recorder {
	tb.Helper()
	ckpt, err := spec.ShapeCheckpoint()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ckpt.Close() })
	r, err := newRecorder(ckpt, false)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.close)
	return r
}

// maxRequestAllocs bounds the heap allocations of a warm request's host
// encoding: the stream, its tensor slab and the decision head's index
// array are 3, forwardpass.RunPruned's lists of the rows it keeps 3 more;
// the rest is slack for a sync.Pool emptied by a GC. Per dispatch there
// must be none (166 dispatches per English request: a per-dispatch
// allocation would add at least that many).
const maxRequestAllocs = 8

// TestEncodeRequestAllocs: a repeated request allocates at most a small
// fixed number of times, however many dispatches it encodes (it was 736
// allocations per English request before arguments, lists and tensors were
// pooled).
func TestEncodeRequestAllocs(t *testing.T) {
	for _, spec := range []synthetic.Spec{synthetic.English(), synthetic.Multilingual(), synthetic.Tiny()} {
		t.Run(spec.Name, func(t *testing.T) {
			r := newEncodeRecorder(t, spec)
			req := Request{Questions: 2, Tokens: 61, Markers: 3}
			ctx := context.Background()
			var runErr error
			run := func() {
				if err := r.run(ctx, req); err != nil && runErr == nil {
					runErr = err
				}
			}
			run() // the first request of a shape fills the arena and the pipeline cache
			allocs := testing.AllocsPerRun(20, run)
			if runErr != nil {
				t.Fatal(runErr)
			}
			r.dev.Reset()
			run()
			st := r.dev.Stats()
			t.Logf("%.1f allocations per request of %d dispatches", allocs, st.Dispatches)
			if allocs > maxRequestAllocs {
				t.Errorf("%.1f heap allocations per warm request (%d dispatches); want at most %d", allocs, st.Dispatches, maxRequestAllocs)
			}
			if st.NewBuffers != 0 {
				t.Errorf("%d device buffers allocated by a warm request; want 0", st.NewBuffers)
			}
		})
	}
}
