//go:build !linux

package cuda

import (
	"context"
	"fmt"
	"runtime"

	"github.com/laya-metal/laya/backend"
)

// Open fails off Linux: the backend needs the CUDA driver of a Linux host.
func Open(opts Options) (backend.Backend, error) {
	return nil, fmt.Errorf("%w: %s has no CUDA driver this package can load", ErrNoCUDA, runtime.GOOS)
}

// SelfTest fails off Linux, as Open does.
func SelfTest(ctx context.Context, opts Options) error {
	_, err := Open(opts)
	return err
}
