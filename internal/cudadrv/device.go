//go:build linux

package cudadrv

import (
	"fmt"
	"strings"
	"unsafe"
)

// Device is a GPU found by Primary, with its primary context retained and
// current on the calling thread.
type Device struct {
	Handle int32
	Ctx    uintptr
	Name   string
	CC     [2]int // compute capability, major and minor
}

// Primary initialises the driver, finds GPU ordinal, reads its name and
// compute capability, retains its primary context (the one the CUDA
// runtime and its libraries use) and makes it current. It must run on the
// thread that will own the context (Worker.Do). Its errors wrap ErrNoCUDA.
// need, when not nil, vets the GPU before the context is taken.
func (d *Driver) Primary(ordinal int, need func(Device) error) (Device, error) {
	var dev Device
	if err := d.Call("cuInit", 0); err != nil {
		return dev, fmt.Errorf("%w: %w", ErrNoCUDA, err)
	}
	var count int32
	if err := d.Call("cuDeviceGetCount", uintptr(unsafe.Pointer(&count))); err != nil || count == 0 {
		return dev, fmt.Errorf("%w: the driver reports %d GPUs (%v)", ErrNoCUDA, count, err)
	}
	if ordinal < 0 || ordinal >= int(count) {
		return dev, fmt.Errorf("%w: device %d of %d", ErrNoCUDA, ordinal, count)
	}
	if err := d.Call("cuDeviceGet", uintptr(unsafe.Pointer(&dev.Handle)), uintptr(ordinal)); err != nil {
		return dev, fmt.Errorf("%w: %w", ErrNoCUDA, err)
	}
	name := make([]byte, 256)
	d.Call("cuDeviceGetName", uintptr(unsafe.Pointer(&name[0])), 255, uintptr(dev.Handle))
	dev.Name = strings.TrimRight(string(name), "\x00")
	dev.CC = [2]int{d.Attribute(dev, 75), d.Attribute(dev, 76)}
	if need != nil {
		if err := need(dev); err != nil {
			return dev, err
		}
	}
	if err := d.Call("cuDevicePrimaryCtxRetain", uintptr(unsafe.Pointer(&dev.Ctx)), uintptr(dev.Handle)); err != nil {
		return dev, fmt.Errorf("%w: %w", ErrNoCUDA, err)
	}
	if err := d.Call("cuCtxSetCurrent", dev.Ctx); err != nil {
		return dev, fmt.Errorf("%w: %w", ErrNoCUDA, err)
	}
	return dev, nil
}

// Attribute reads a CUdevice_attribute (0 if the driver refuses).
func (d *Driver) Attribute(dev Device, attr int) int {
	var v int32
	d.Call("cuDeviceGetAttribute", uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(dev.Handle))
	return int(v)
}
