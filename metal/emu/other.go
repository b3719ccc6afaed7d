//go:build !linux && !darwin

package emu

import (
	"errors"
	"fmt"
	"github.com/laya-metal/laya/metal"
)

// Open needs mmap and a dynamic loader, which only the linux and
// darwin builds use.
func Open(opts Options) (metal.Device, error) {
	return nil, fmt.Errorf("metal: the MSL emulator runs on linux and darwin only: %w", errors.ErrUnsupported)
}
