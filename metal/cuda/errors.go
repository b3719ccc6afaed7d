package cuda

import (
	"errors"

	"github.com/laya-metal/laya/internal/cudadrv"
)

// Errors of the CUDA device besides metal's sentinels (metal.ErrPipeline,
// metal.ErrShaderCompile, metal.ErrInvalidDispatch, metal.ErrGPUExecution,
// metal.ErrNoCopy, metal.ErrDeviceClosed), which it returns in the same
// situations as the Apple GPU device.
var (
	// ErrNoCUDA means no CUDA driver could be loaded or it reports no GPU.
	// It is the value backend/cuda returns too.
	ErrNoCUDA = cudadrv.ErrNoCUDA
	// ErrNoNVRTC means the NVRTC runtime compiler could not be loaded.
	ErrNoNVRTC = cudadrv.ErrNoNVRTC
	// ErrOutOfMemory means an allocation was refused: more managed memory
	// than the GPU had free.
	ErrOutOfMemory = errors.New("cuda: out of device memory")
)
