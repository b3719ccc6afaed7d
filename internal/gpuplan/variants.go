package gpuplan

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

// Variants records ckpt's forward pass on a plan device at the batch
// shapes that take different kernels, and returns the distinct pipelines
// (kernel and function constants) they dispatch, for gpu.Backend.Prebuild:
// 1, 2 and batchSize questions of a few tokens up to the checkpoint's
// max_len (GEMV-sized and tiled GEMMs, and split-K with splitK as
// gpu.Backend.SetSplitK takes it).
func Variants(ctx context.Context, ckpt *weights.Checkpoint, batchSize, splitK int) ([]gpu.PipelineVariant, error) {
	r, err := newRecorder(ckpt, true)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.be.SetSplitK(splitK)
	maxLen := max(ckpt.Agent.MaxLen, 8)
	if n := ckpt.Encoder.MaxPositionEmbeddings; n > 0 {
		maxLen = min(maxLen, n)
	}
	seen := map[string]bool{}
	var out []gpu.PipelineVariant
	// Which kernel a GEMM takes depends on its rows (GEMV up to 8, split-K
	// only where the tiles leave the GPU idle), so the shapes step through
	// the row counts a batch can have, up to the largest. A batch size of
	// 1 or 2, or a short max_len, repeats shapes; each is recorded once.
	var reqs []Request
	for _, q := range []int{1, 2, max(batchSize, 1)} {
		for _, n := range []int{4, 17, 64, 160, maxLen} {
			n = min(n, maxLen)
			if req := (Request{Questions: q, Tokens: n, Markers: min(q+1, n-2)}); !slices.Contains(reqs, req) {
				reqs = append(reqs, req)
			}
		}
	}
	for _, req := range reqs {
		r.dev.Reset()
		if err := r.run(ctx, req); err != nil {
			return nil, err
		}
		for _, d := range r.dev.Log() {
			key := variantKey(d.Kernel, d.Constants)
			if !seen[key] {
				seen[key] = true
				out = append(out, gpu.PipelineVariant{Kernel: d.Kernel, Constants: slices.Clone(d.Constants)})
			}
		}
	}
	return out, nil
}

func variantKey(kernel string, cs []metal.Constant) string {
	var b strings.Builder
	b.WriteString(kernel)
	for _, c := range cs {
		fmt.Fprintf(&b, "|%d=%v", c.Index, c.Value)
	}
	return b.String()
}
