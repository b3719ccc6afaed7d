//go:build linux

package cudadrv

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NVRTC holds the runtime compiler's entry points. It needs no CUDA
// context: programs compile on any goroutine.
type NVRTC struct {
	Path                                        string
	Major, Minor                                int32
	create, compileFn, logSize, getLog, destroy uintptr
	cubinSize, getCubin, vers                   uintptr
}

// LoadNVRTC loads libnvrtc (explicit, or the first found in the loader path
// and LibraryDirs).
func LoadNVRTC(explicit string) (*NVRTC, error) {
	names := []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}
	h, path, err := FindLibrary(explicit, names, LibraryDirs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoNVRTC, err)
	}
	n := &NVRTC{Path: path}
	for name, p := range map[string]*uintptr{
		"nvrtcCreateProgram": &n.create, "nvrtcCompileProgram": &n.compileFn, "nvrtcGetProgramLogSize": &n.logSize,
		"nvrtcGetProgramLog": &n.getLog, "nvrtcDestroyProgram": &n.destroy, "nvrtcGetCUBINSize": &n.cubinSize,
		"nvrtcGetCUBIN": &n.getCubin, "nvrtcVersion": &n.vers,
	} {
		if *p, err = purego.Dlsym(h, name); err != nil {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNoNVRTC, path, name)
		}
	}
	purego.SyscallN(n.vers, uintptr(unsafe.Pointer(&n.Major)), uintptr(unsafe.Pointer(&n.Minor)))
	return n, nil
}

// Header is an in-memory header a program may #include.
type Header struct{ Name, Text string }

// Compile compiles one translation unit to a cubin for arch (e.g. "sm_90").
// A refused program's error wraps ErrCompile (and ErrProgram where the
// source has errors) and carries NVRTC's log.
func (n *NVRTC) Compile(name, src, arch string, options []string, headers ...Header) ([]byte, error) {
	csrc, cname := CString(src), CString(name)
	var hdrs, hdrNames []uintptr
	var keep [][]byte
	for _, h := range headers {
		t, nm := CString(h.Text), CString(h.Name)
		keep = append(keep, t, nm)
		hdrs = append(hdrs, uintptr(unsafe.Pointer(&t[0])))
		hdrNames = append(hdrNames, uintptr(unsafe.Pointer(&nm[0])))
	}
	var hp, hnp uintptr
	if len(hdrs) > 0 {
		hp, hnp = uintptr(unsafe.Pointer(&hdrs[0])), uintptr(unsafe.Pointer(&hdrNames[0]))
	}
	var prog uintptr
	r, _, _ := purego.SyscallN(n.create, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])),
		uintptr(len(hdrs)), hp, hnp)
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)
	runtime.KeepAlive(hdrs)
	runtime.KeepAlive(hdrNames)
	if r != 0 {
		return nil, fmt.Errorf("%w: %s: nvrtcCreateProgram failed with %d", ErrCompile, name, r)
	}
	defer purego.SyscallN(n.destroy, uintptr(unsafe.Pointer(&prog)))
	opts := append([]string{"--gpu-architecture=" + arch}, options...)
	copts := make([][]byte, len(opts))
	ptrs := make([]uintptr, len(opts))
	for i, o := range opts {
		copts[i] = CString(o)
		ptrs[i] = uintptr(unsafe.Pointer(&copts[i][0]))
	}
	r, _, _ = purego.SyscallN(n.compileFn, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(copts)
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(keep)
	if r == nvrtcErrorCompilation {
		return nil, fmt.Errorf("%w: %w: %s (NVRTC %d.%d, %s):\n%s", ErrCompile, ErrProgram, name, n.Major, n.Minor, arch, n.log(prog))
	}
	if r != 0 {
		return nil, fmt.Errorf("%w: %s (NVRTC %d.%d, %s, result %d):\n%s", ErrCompile, name, n.Major, n.Minor, arch, r, n.log(prog))
	}
	var size uintptr
	purego.SyscallN(n.cubinSize, prog, uintptr(unsafe.Pointer(&size)))
	if size == 0 {
		return nil, fmt.Errorf("%w: %s: NVRTC produced no cubin for %s", ErrCompile, name, arch)
	}
	out := make([]byte, size)
	purego.SyscallN(n.getCubin, prog, uintptr(unsafe.Pointer(&out[0])))
	return out, nil
}

func (n *NVRTC) log(prog uintptr) string {
	var size uintptr
	purego.SyscallN(n.logSize, prog, uintptr(unsafe.Pointer(&size)))
	if size <= 1 {
		return "(no log)"
	}
	b := make([]byte, size)
	purego.SyscallN(n.getLog, prog, uintptr(unsafe.Pointer(&b[0])))
	return string(b[:size-1])
}

// nvrtcErrorCompilation is NVRTC_ERROR_COMPILATION (nvrtc.h): the program
// has errors, where NVRTC_ERROR_INVALID_OPTION (5) and others are about
// the options or NVRTC itself.
const nvrtcErrorCompilation = 6
