package gpuplan

import (
	"context"
	"testing"

	"github.com/laya-metal/laya/weights/synthetic"
)

// The variants prebuilt at load cover the requests that follow: requests
// of other shapes than Variants records (with split-K on and off) dispatch
// no pipeline outside the set, so none waits for the compiler.
func TestVariantsCoverRequests(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []synthetic.Spec{synthetic.English(), synthetic.Multilingual()} {
		ckpt, err := spec.ShapeCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		defer ckpt.Close()
		for _, splitK := range []int{0, 320} {
			vs, err := Variants(ctx, ckpt, 16, splitK)
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, v := range vs {
				have[variantKey(v.Kernel, v.Constants)] = true
			}
			t.Logf("%s, split-K target %d: %d pipeline variants", spec.Name, splitK, len(vs))
			if len(vs) < 5 {
				t.Errorf("%s: only %d variants", spec.Name, len(vs))
			}
			r, err := newRecorder(ckpt, true)
			if err != nil {
				t.Fatal(err)
			}
			r.be.SetSplitK(splitK)
			for _, req := range []Request{
				{Questions: 2, Tokens: 17, Markers: 3},
				{Questions: 5, Tokens: 130, Markers: 8},
				{Questions: 16, Tokens: 300, Markers: 20},
				{Questions: 1, Tokens: 700, Markers: 2},
			} {
				r.dev.Reset()
				if err := r.run(ctx, req); err != nil {
					t.Fatal(err)
				}
				for _, d := range r.dev.Log() {
					if k := variantKey(d.Kernel, d.Constants); !have[k] {
						t.Errorf("%s, split-K %d, %+v: %s not prebuilt", spec.Name, splitK, req, k)
						have[k] = true // once
					}
				}
			}
			r.close()
		}
	}
}
