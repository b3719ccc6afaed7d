//go:build darwin && arm64

package laya

// On Apple Silicon the Metal backend is linked in, so WithBackend("metal")
// works with nothing more than this package imported: a Mac user should not
// need to know about a blank import to use the GPU the library exists for.
// Elsewhere there is no Metal device to open, and linking the device layer
// (purego, Objective-C bindings) would only grow every binary; see doc.go.
import (
	"context"
	"time"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/gpu" // registers "metal"
	"github.com/laya-metal/laya/internal/gpuplan"
	"github.com/laya-metal/laya/weights"
)

// On the GPU, Load builds the pipelines the checkpoint's forward passes
// will dispatch (the variants a plan of its batch shapes records), so that
// the first request does not compile them one by one.
func init() {
	prebuildPipelines = func(ctx context.Context, be backend.Backend, ckpt *weights.Checkpoint, batchSize int) (int, time.Duration, error) {
		gb, ok := be.(*gpu.Backend)
		if !ok {
			return 0, 0, nil
		}
		start := time.Now()
		vs, err := gpuplan.Variants(ctx, ckpt, batchSize, gb.SplitK())
		if err != nil {
			return 0, 0, err
		}
		if _, err := gb.Prebuild(ctx, vs); err != nil {
			return 0, 0, err
		}
		return len(vs), time.Since(start), nil
	}
}
