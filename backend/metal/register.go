package metalbackend

import (
	"fmt"

	"github.com/laya-metal/laya/metal"
)

// OpenEmulator returns a backend named "metal-emu" on a new MSL emulator
// device (metal.OpenEmulator: the kernels compiled with clang, GPU threads
// run on the CPU). Close closes the device.
func OpenEmulator(opts metal.EmulatorOptions) (*Backend, error) {
	dev, err := metal.OpenEmulator(opts)
	if err != nil {
		return nil, fmt.Errorf("metalbackend: %w", err)
	}
	b := New("metal-emu", dev)
	b.ownsDevice = true
	return b, nil
}

// OpenSystem returns a backend named "metal" on the system's default GPU
// (metal.OpenSystemDefault; darwin only). Close closes the device.
func OpenSystem() (*Backend, error) {
	dev, err := metal.OpenSystemDefault()
	if err != nil {
		return nil, fmt.Errorf("metalbackend: %w", err)
	}
	b := New("metal", dev)
	b.ownsDevice = true
	return b, nil
}
