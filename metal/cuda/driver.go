//go:build linux

package cuda

import "github.com/laya-metal/laya/internal/cudadrv"

// driver is the shared driver layer with the entry points this device uses.
// Every call must run on the thread the context is current on (device.w).
type driver struct{ *cudadrv.Driver }

var driverFuncs = []string{
	"cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
	"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent", "cuCtxSynchronize",
	"cuMemGetInfo_v2", "cuMemAllocManaged", "cuMemFree_v2", "cuMemsetD8_v2", "cuMemHostRegister_v2",
	"cuMemHostUnregister", "cuMemHostGetDevicePointer_v2", "cuMemHostAlloc", "cuMemFreeHost",
	"cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction", "cuFuncGetAttribute", "cuLaunchKernel",
	"cuStreamCreate", "cuStreamDestroy_v2", "cuStreamWaitEvent", "cuEventCreate", "cuEventRecord",
	"cuEventSynchronize", "cuEventDestroy_v2",
}

func loadDriver(name string) (*driver, error) {
	d, err := cudadrv.LoadDriver(name, driverFuncs)
	if err != nil {
		return nil, err
	}
	return &driver{d}, nil
}

// call is Driver.Call; like it, it keeps the memory of pointers converted
// to uintptr in its arguments alive over the call.
//
//go:uintptrescapes
func (d *driver) call(name string, args ...uintptr) error { return d.Call(name, args...) }

var (
	ptrAt   = cudadrv.PtrAt
	cString = cudadrv.CString
)
