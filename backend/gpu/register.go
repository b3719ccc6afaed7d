package gpu

import (
	"context"
	"fmt"

	"github.com/laya-metal/laya/metal"
)

// NewOwning is New for a backend that owns dev: its Close closes the device
// too. It runs no self-test; the registered backends open through Open,
// which does.
func NewOwning(name string, dev metal.Device) *Backend {
	b := New(name, dev)
	b.ownsDevice = true
	return b
}

// OpenSystem returns a backend named "metal" on the system's default GPU
// (metal.OpenSystemDefault; darwin only) once it passed the self-test
// (Open). Close closes the device.
func OpenSystem(ctx context.Context) (*Backend, error) {
	dev, err := metal.OpenSystemDefault()
	if err != nil {
		return nil, fmt.Errorf("backend/gpu: %w", err)
	}
	return Open(ctx, "metal", dev)
}
