//go:build linux

package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driver holds the CUDA driver API entry points. Every call must run on the
// thread the context is current on (device.do).
type driver struct {
	handle uintptr
	fn     map[string]uintptr
}

// driverFuncs are the entry points used, by their exported names (the _v2
// names are the ABI that cuda.h's macros select).
var driverFuncs = []string{
	"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
	"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent", "cuCtxSynchronize",
	"cuMemGetInfo_v2", "cuMemAllocManaged", "cuMemFree_v2", "cuMemsetD8_v2", "cuMemHostRegister_v2",
	"cuMemHostUnregister", "cuMemHostGetDevicePointer_v2", "cuMemHostAlloc", "cuMemFreeHost",
	"cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction", "cuFuncGetAttribute", "cuLaunchKernel",
	"cuStreamCreate", "cuStreamDestroy_v2", "cuStreamWaitEvent", "cuEventCreate", "cuEventRecord",
	"cuEventSynchronize", "cuEventDestroy_v2", "cuGetErrorName", "cuGetErrorString",
}

func loadDriver(name string) (*driver, error) {
	if name == "" {
		name = "libcuda.so.1"
	}
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: loading %s: %v", ErrNoCUDA, name, err)
	}
	d := &driver{handle: h, fn: map[string]uintptr{}}
	for _, f := range driverFuncs {
		p, err := purego.Dlsym(h, f)
		if err != nil {
			return nil, fmt.Errorf("%w: %s has no %s: %v", ErrNoCUDA, name, f, err)
		}
		d.fn[f] = p
	}
	// cuEventElapsedTime_v2 (CUDA 12.8+) is preferred; older drivers have
	// only the first version, with the same signature.
	for _, f := range []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"} {
		if p, err := purego.Dlsym(h, f); err == nil {
			d.fn["cuEventElapsedTime"] = p
			break
		}
	}
	if d.fn["cuEventElapsedTime"] == 0 {
		return nil, fmt.Errorf("%w: %s has no cuEventElapsedTime", ErrNoCUDA, name)
	}
	return d, nil
}

// call invokes an entry point and turns a CUresult into an error naming the
// call. Like purego.SyscallN, it keeps the memory of pointers converted to
// uintptr in its arguments alive and in place (on the heap) over the call.
//
//go:uintptrescapes
func (d *driver) call(name string, args ...uintptr) error {
	r, _, _ := purego.SyscallN(d.fn[name], args...)
	if res := int32(r); res != 0 {
		return &cuError{call: name, code: res, text: d.errorText(res)}
	}
	return nil
}

func (d *driver) errorText(code int32) string {
	var name, text uintptr
	purego.SyscallN(d.fn["cuGetErrorName"], uintptr(code), uintptr(unsafe.Pointer(&name)))
	purego.SyscallN(d.fn["cuGetErrorString"], uintptr(code), uintptr(unsafe.Pointer(&text)))
	s := goString(name)
	if t := goString(text); t != "" {
		s += ": " + t
	}
	return s
}

// cuError is a failed driver call.
type cuError struct {
	call string
	code int32
	text string
}

func (e *cuError) Error() string {
	return fmt.Sprintf("%s failed with %d (%s)", e.call, e.code, e.text)
}

// CUresult values the device tells apart.
const (
	cuErrorNoDevice        = 100
	cuErrorNotSupported    = 801
	cuErrorOutOfMemory     = 2
	cuErrorNotFound        = 500
	cuErrorHostMemoryTaken = 712
)

// goString copies a NUL-terminated C string.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	var b []byte
	for i := 0; i < 1<<16; i++ {
		c := *(*byte)(ptrAt(p, i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// ptrAt is the address p+off as a pointer. Addresses handed out by the
// driver are not Go memory; the conversion goes through memory so that it
// does not read as uintptr arithmetic on a Go pointer.
func ptrAt(p uintptr, off int) unsafe.Pointer {
	a := p + uintptr(off)
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}

// cString is s NUL-terminated; the caller keeps it alive over the call.
func cString(s string) []byte { return append([]byte(s), 0) }

// findLibrary returns the first of names that dlopen can load, trying the
// directories of candidates too.
func findLibrary(explicit string, names []string, dirs []string) (uintptr, string, error) {
	if explicit != "" {
		h, err := purego.Dlopen(explicit, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		return h, explicit, err
	}
	var firstErr error
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, n, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, dir := range dirs {
		matches, _ := filepath.Glob(dir)
		for _, m := range matches {
			for _, n := range names {
				p := filepath.Join(m, n)
				if _, err := os.Stat(p); err != nil {
					continue
				}
				if h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
					return h, p, nil
				}
			}
		}
	}
	return 0, "", fmt.Errorf("tried %s in the loader path and %s: %v", strings.Join(names, ", "), strings.Join(dirs, ", "), firstErr)
}
