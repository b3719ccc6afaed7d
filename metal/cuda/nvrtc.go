//go:build linux

package cuda

import (
	"fmt"

	"github.com/laya-metal/laya/internal/cudadrv"
	"github.com/laya-metal/laya/metal"
)

// nvrtc is the shared NVRTC loader, compiling with the shim as an
// in-memory header.
type nvrtc struct{ *cudadrv.NVRTC }

func loadNVRTC(explicit string) (*nvrtc, error) {
	n, err := cudadrv.LoadNVRTC(explicit)
	if err != nil {
		return nil, err
	}
	return &nvrtc{n}, nil
}

// compile compiles one translation unit to a cubin for arch. A compile
// error wraps metal.ErrShaderCompile and carries NVRTC's log, whose
// positions are .metal lines through the translation's #line markers.
func (n *nvrtc) compile(name, src, arch string, options []string) ([]byte, error) {
	cubin, err := n.Compile(name, src, arch, options, cudadrv.Header{Name: "msl_cuda.h", Text: Shim})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", metal.ErrShaderCompile, err)
	}
	return cubin, nil
}
