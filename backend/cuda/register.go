package cuda

import (
	"fmt"
	"os"

	"github.com/laya-metal/laya/backend"
)

// DefaultPrecision is the registered backend's precision unless LAYA_CUDA
// names one: the fastest that holds its gate on every bundled golden (the
// same answer as upstream, calibrated probabilities within 0.005). FP16 is
// faster and misses it on near-ties; FP32 holds upstream's 1e-4 logits.
const DefaultPrecision = FP16X2

func init() {
	backend.Register(Name, func() (backend.Backend, error) {
		opts, err := ParseOptions(fmt.Sprintf("precision=%v,refine=%g,kbatch=%d,%s", DefaultPrecision, DefaultRefine, DefaultKBatchRows,
			os.Getenv("LAYA_CUDA")))
		if err != nil {
			return nil, fmt.Errorf("cuda: LAYA_CUDA: %w", err)
		}
		opts.Log = func(msg string) { fmt.Fprintln(os.Stderr, msg) }
		return Open(opts)
	}, backend.Accelerator, backend.PassesSideBySide)
}
