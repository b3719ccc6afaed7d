//go:build linux

package cuda

import "github.com/laya-metal/laya/metal"

// KernelNames lists the kernels a device's sources define.
func KernelNames(dev metal.Device) []string {
	var out []string
	for name := range dev.(*device).kernels {
		out = append(out, name)
	}
	return out
}
