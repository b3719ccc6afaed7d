package cuda

import (
	"fmt"
	"os"

	"github.com/laya-metal/laya/backend"
)

func init() {
	backend.Register(Name, func() (backend.Backend, error) {
		opts, err := ParseOptions(os.Getenv("LAYA_CUDA"))
		if err != nil {
			return nil, fmt.Errorf("cuda: LAYA_CUDA: %w", err)
		}
		return Open(opts)
	})
}
