//go:build linux

package cuda

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/laya-metal/laya/metal"
)

// nvrtc holds the NVRTC entry points. NVRTC needs no CUDA context: programs
// compile on any goroutine.
type nvrtc struct {
	path                                        string
	create, compileFn, logSize, getLog, destroy uintptr
	cubinSize, getCubin, ptxSize, getPTX, vers  uintptr
	major, minor                                int32
}

func loadNVRTC(explicit string) (*nvrtc, error) {
	names := []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}
	dirs := []string{"/usr/local/cuda/lib64", "/usr/local/cuda-*/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/lib/x86_64-linux-gnu", "/opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib", "/usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib",
		"/usr/lib/python3/dist-packages/nvidia/cuda_nvrtc/lib"}
	h, path, err := findLibrary(explicit, names, dirs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoNVRTC, err)
	}
	n := &nvrtc{path: path}
	for name, p := range map[string]*uintptr{
		"nvrtcCreateProgram": &n.create, "nvrtcCompileProgram": &n.compileFn, "nvrtcGetProgramLogSize": &n.logSize,
		"nvrtcGetProgramLog": &n.getLog, "nvrtcDestroyProgram": &n.destroy, "nvrtcGetCUBINSize": &n.cubinSize,
		"nvrtcGetCUBIN": &n.getCubin, "nvrtcGetPTXSize": &n.ptxSize, "nvrtcGetPTX": &n.getPTX, "nvrtcVersion": &n.vers,
	} {
		if *p, err = purego.Dlsym(h, name); err != nil {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNoNVRTC, path, name)
		}
	}
	purego.SyscallN(n.vers, uintptr(unsafe.Pointer(&n.major)), uintptr(unsafe.Pointer(&n.minor)))
	return n, nil
}

// compile compiles one translation unit to a cubin for arch (e.g. "sm_90"),
// with the shim as an in-memory header. A compile error wraps
// metal.ErrShaderCompile and carries NVRTC's log, whose positions are
// .metal lines through the translation's #line markers.
func (n *nvrtc) compile(name, src, arch string, options []string) ([]byte, error) {
	csrc, cname := cString(src), cString(name)
	hdr, hdrName := cString(Shim), cString("msl_cuda.h")
	hdrs := []uintptr{uintptr(unsafe.Pointer(&hdr[0]))}
	hdrNames := []uintptr{uintptr(unsafe.Pointer(&hdrName[0]))}
	var prog uintptr
	r, _, _ := purego.SyscallN(n.create, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])),
		1, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(unsafe.Pointer(&hdrNames[0])))
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)
	if r != 0 {
		return nil, fmt.Errorf("%w: %s: nvrtcCreateProgram failed with %d", metal.ErrShaderCompile, name, r)
	}
	defer purego.SyscallN(n.destroy, uintptr(unsafe.Pointer(&prog)))
	opts := append([]string{"--gpu-architecture=" + arch}, options...)
	copts := make([][]byte, len(opts))
	ptrs := make([]uintptr, len(opts))
	for i, o := range opts {
		copts[i] = cString(o)
		ptrs[i] = uintptr(unsafe.Pointer(&copts[i][0]))
	}
	r, _, _ = purego.SyscallN(n.compileFn, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(copts)
	runtime.KeepAlive(hdr)
	runtime.KeepAlive(hdrName)
	if r != 0 {
		return nil, fmt.Errorf("%w: %s (NVRTC %d.%d, %s):\n%s", metal.ErrShaderCompile, name, n.major, n.minor, arch, n.log(prog))
	}
	var size uintptr
	purego.SyscallN(n.cubinSize, prog, uintptr(unsafe.Pointer(&size)))
	if size == 0 {
		return nil, fmt.Errorf("%w: %s: NVRTC produced no cubin for %s", metal.ErrShaderCompile, name, arch)
	}
	out := make([]byte, size)
	purego.SyscallN(n.getCubin, prog, uintptr(unsafe.Pointer(&out[0])))
	return out, nil
}

func (n *nvrtc) log(prog uintptr) string {
	var size uintptr
	purego.SyscallN(n.logSize, prog, uintptr(unsafe.Pointer(&size)))
	if size <= 1 {
		return "(no log)"
	}
	b := make([]byte, size)
	purego.SyscallN(n.getLog, prog, uintptr(unsafe.Pointer(&b[0])))
	return string(b[:size-1])
}
