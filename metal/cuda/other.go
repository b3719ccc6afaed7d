//go:build !linux

package cuda

import (
	"fmt"
	"runtime"

	"github.com/laya-metal/laya/metal"
)

// Open fails off Linux: the device needs the CUDA driver of a Linux host.
func Open(opts Options) (metal.Device, error) {
	return nil, fmt.Errorf("%w: %s has no CUDA driver this package can load", ErrNoCUDA, runtime.GOOS)
}

// Stats reports nothing off Linux.
func Stats(dev metal.Device) (DeviceStats, bool) { return DeviceStats{}, false }
