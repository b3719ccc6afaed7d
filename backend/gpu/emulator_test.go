//go:build linux || darwin

package gpu

import "github.com/laya-metal/laya/metal/emu"

// openEmulator is what package backend/metalemu registers as "metal-emu";
// the tests here cannot import that package (it imports this one).
func openEmulator() (*Backend, error) {
	dev, err := emu.Open(emu.Options{})
	if err != nil {
		return nil, err
	}
	return NewOwning("metal-emu", dev), nil
}
