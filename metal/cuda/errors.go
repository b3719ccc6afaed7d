package cuda

import "errors"

// Errors of the CUDA device besides metal's sentinels (metal.ErrPipeline,
// metal.ErrShaderCompile, metal.ErrInvalidDispatch, metal.ErrGPUExecution,
// metal.ErrNoCopy, metal.ErrDeviceClosed), which it returns in the same
// situations as the Apple GPU device.
var (
	// ErrNoCUDA means no CUDA driver could be loaded or it reports no GPU.
	ErrNoCUDA = errors.New("cuda: no CUDA driver or GPU")
	// ErrNoNVRTC means the NVRTC runtime compiler could not be loaded.
	ErrNoNVRTC = errors.New("cuda: NVRTC (libnvrtc.so) not found")
	// ErrOutOfMemory means an allocation was refused: more managed memory
	// than the GPU had free.
	ErrOutOfMemory = errors.New("cuda: out of device memory")
)
