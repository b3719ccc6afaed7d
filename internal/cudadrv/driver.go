//go:build linux

package cudadrv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Driver holds the CUDA driver API entry points that were asked for.
// Calls that need a context must run on the thread where it is current
// (Worker.Do).
type Driver struct {
	fn map[string]uintptr
}

// LoadDriver dlopens the driver library (default libcuda.so.1) and looks up
// funcs by their exported names (the _v2 names are the ABI that cuda.h's
// macros select), plus cuGetErrorName, cuGetErrorString and
// cuEventElapsedTime (its _v2 where the driver has one, CUDA 12.8+), and
// the optional ones where the driver has them (Has).
func LoadDriver(name string, funcs []string, optional ...string) (*Driver, error) {
	if name == "" {
		name = "libcuda.so.1"
	}
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: loading %s: %v", ErrNoCUDA, name, err)
	}
	d := &Driver{fn: map[string]uintptr{}}
	for _, f := range append([]string{"cuGetErrorName", "cuGetErrorString"}, funcs...) {
		p, err := purego.Dlsym(h, f)
		if err != nil {
			return nil, fmt.Errorf("%w: %s has no %s: %v", ErrNoCUDA, name, f, err)
		}
		d.fn[f] = p
	}
	for _, f := range optional {
		if p, err := purego.Dlsym(h, f); err == nil {
			d.fn[f] = p
		}
	}
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

// Has reports whether the driver has entry point name (one of LoadDriver's
// optional ones).
func (d *Driver) Has(name string) bool { return d.fn[name] != 0 }

// Result invokes an entry point and returns its CUresult as it is, for a
// caller that expects a non-zero result on its fast path (cuEventQuery's
// CUDA_ERROR_NOT_READY while it polls) and should not pay for Call's error
// text each time.
//
//go:uintptrescapes
func (d *Driver) Result(name string, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(d.fn[name], args...)
	return int32(r)
}

// Call invokes an entry point and turns a CUresult into an error naming the
// call. Like purego.SyscallN, it keeps the memory of pointers converted to
// uintptr in its arguments alive and in place (on the heap) over the call,
// but only where it is called directly: through a func value (c :=
// d.Call) the compiler cannot apply go:uintptrescapes, a local whose
// address is passed stays on the stack, and a stack growth inside the
// call moves it away from the address the driver writes to.
//
//go:uintptrescapes
func (d *Driver) Call(name string, args ...uintptr) error {
	r, _, _ := purego.SyscallN(d.fn[name], args...)
	if res := int32(r); res != 0 {
		return &Error{Call: name, Code: res, Text: d.ErrorText(res)}
	}
	return nil
}

// ErrorText is the driver's name and description of a CUresult.
func (d *Driver) ErrorText(code int32) string {
	var name, text uintptr
	purego.SyscallN(d.fn["cuGetErrorName"], uintptr(code), uintptr(unsafe.Pointer(&name)))
	purego.SyscallN(d.fn["cuGetErrorString"], uintptr(code), uintptr(unsafe.Pointer(&text)))
	s := GoString(name)
	if t := GoString(text); t != "" {
		s += ": " + t
	}
	return s
}

// Error is a failed library call.
type Error struct {
	Call string
	Code int32
	Text string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s failed with %d (%s)", e.Call, e.Code, e.Text)
}

// CUresult values callers tell apart.
const (
	ErrorOutOfMemory = 2
	ErrorNoDevice    = 100
)

// ContextLost reports whether err is a driver error after which the
// context is unusable: cuda.h documents each of these as leaving "the
// process in an inconsistent state", every later call failing the same
// way, until the process is relaunched (an illegal address, a launch
// timeout, a device-side assert, a hardware stack error, an illegal
// instruction, a misaligned address, an invalid address space or program
// counter, a kernel's exception).
func ContextLost(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case 700, 702, 710, 714, 715, 716, 717, 718, 719:
		return true
	}
	return false
}

// GoString copies a NUL-terminated C string.
func GoString(p uintptr) string {
	if p == 0 {
		return ""
	}
	var b []byte
	for i := 0; i < 1<<16; i++ {
		c := *(*byte)(PtrAt(p, i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// PtrAt is the address p+off as a pointer. Addresses handed out by the
// driver are not Go memory; the conversion goes through memory so that it
// does not read as uintptr arithmetic on a Go pointer.
func PtrAt(p uintptr, off int) unsafe.Pointer {
	a := p + uintptr(off)
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}

// CString is s NUL-terminated; the caller keeps it alive over the call.
func CString(s string) []byte { return append([]byte(s), 0) }

// FindLibrary returns the first of names that dlopen can load, trying the
// directories of dirs (glob patterns) too; explicit, when set, is the only
// one tried.
func FindLibrary(explicit string, names []string, dirs []string) (uintptr, string, error) {
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

// LibraryDirs are where NVIDIA's libraries live besides the loader path:
// the toolkit, Debian's packages and the pip wheels PyTorch brings.
var LibraryDirs = []string{"/usr/local/cuda/lib64", "/usr/local/cuda-*/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
	"/usr/lib/x86_64-linux-gnu", "/opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib",
	"/opt/*/.venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib", "/usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib",
	"/usr/lib/python3/dist-packages/nvidia/cuda_nvrtc/lib", "/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib",
	"/usr/local/lib/python3*/site-packages/nvidia/cu13/lib", "/opt/*/.venv/lib/python3*/site-packages/nvidia/cublas/lib",
	"/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib"}
