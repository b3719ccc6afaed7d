package metal

import (
	"context"
	"testing"

	"github.com/laya-metal/laya/weights/synthetic"
)

// BenchmarkEncodeRequest is the Go side of one request on a device that
// runs nothing (PlanDevice, counting only): the model's operations, fusion,
// barrier tracking, argument packing, arena and commits, everything the
// host does per request except the Objective-C sends of the real device
// (~0.6 µs per dispatch per antonellof/ferrox#149; not on this machine).
// The target is ≤ 150 µs per English request.
func BenchmarkEncodeRequest(b *testing.B) {
	for _, spec := range []synthetic.Spec{synthetic.English(), synthetic.Multilingual()} {
		b.Run(spec.Name+"/1q-93tok", func(b *testing.B) {
			ckpt, err := spec.ShapeCheckpoint()
			if err != nil {
				b.Fatal(err)
			}
			defer ckpt.Close()
			dev := NewPlanDevice(false)
			be := New("plan", dev)
			defer be.Close()
			net, err := newPlanNetwork(be, ckpt)
			if err != nil {
				b.Fatal(err)
			}
			req := PlanRequest{Questions: 1, Tokens: 93, Markers: 4}
			ctx := context.Background()
			if _, err := net.run(ctx, req, nil); err != nil {
				b.Fatal(err)
			}
			dev.Reset()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := net.run(ctx, req, nil); err != nil {
					b.Fatal(err)
				}
			}
			st := dev.Stats()
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/request")
			b.ReportMetric(float64(st.Dispatches)/float64(b.N), "dispatches/request")
			b.ReportMetric(float64(st.NewBuffers)/float64(b.N), "buffers/request")
		})
	}
}
