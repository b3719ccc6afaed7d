//go:build !darwin

package metal

import "fmt"

// OpenSystemDefault opens the Apple GPU with the kernels package's sources.
// Metal exists only on macOS; elsewhere it reports ErrNoMetal (use
// metal/emu.Open to run the kernels on this machine).
func OpenSystemDefault() (Device, error) { return OpenSystem(SystemOptions{}) }

// OpenSystem opens the Apple GPU. Metal exists only on macOS; elsewhere it
// reports ErrNoMetal.
func OpenSystem(SystemOptions) (Device, error) {
	return nil, fmt.Errorf("%w: this build is not for macOS", ErrNoMetal)
}
