package gpu

import (
	"context"
	"fmt"
	"time"

	"github.com/laya-metal/laya/metal"
)

// PipelineVariant is one kernel specialisation (function-constant values)
// a forward pass dispatches: what internal/gpuplan records.
type PipelineVariant struct {
	Kernel    string
	Constants []metal.Constant
}

// Prebuild builds the pipelines of variants on the device now, so that the
// first request that dispatches them does not wait for the Metal compiler
// (it specialises each variant on first use: 15–25 of them for a
// checkpoint, seconds in all on a cold shader cache). It returns the time
// it took.
func (b *Backend) Prebuild(ctx context.Context, variants []PipelineVariant) (time.Duration, error) {
	start := time.Now()
	for _, v := range variants {
		if err := ctx.Err(); err != nil {
			return time.Since(start), err
		}
		if err := b.kern.Prepare(v.Kernel, v.Constants...); err != nil {
			return time.Since(start), fmt.Errorf("backend/gpu: prebuilding %s: %w", v.Kernel, err)
		}
	}
	return time.Since(start), nil
}

// SplitK is the split-K target SetSplitK set (0: off).
func (b *Backend) SplitK() int { return int(b.splitTarget.Load()) }
