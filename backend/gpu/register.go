package gpu

import (
	"fmt"

	"github.com/laya-metal/laya/metal"
)

// NewOwning is New for a backend that owns dev: its Close closes the device
// too. The registered backends ("metal" here, "metal-emu" in package
// backend/metalemu) are made this way.
func NewOwning(name string, dev metal.Device) *Backend {
	b := New(name, dev)
	b.ownsDevice = true
	return b
}

// OpenSystem returns a backend named "metal" on the system's default GPU
// (metal.OpenSystemDefault; darwin only). Close closes the device.
func OpenSystem() (*Backend, error) {
	dev, err := metal.OpenSystemDefault()
	if err != nil {
		return nil, fmt.Errorf("backend/gpu: %w", err)
	}
	return NewOwning("metal", dev), nil
}
