//go:build !linux && !darwin

package metal

import (
	"errors"
	"fmt"
)

// OpenEmulator needs mmap and a dynamic loader, which only the linux and
// darwin builds use.
func OpenEmulator(opts EmulatorOptions) (Device, error) {
	return nil, fmt.Errorf("metal: the MSL emulator runs on linux and darwin only: %w", errors.ErrUnsupported)
}
