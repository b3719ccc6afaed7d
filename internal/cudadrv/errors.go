package cudadrv

import "errors"

// Sentinel errors, checkable with errors.Is. metal/cuda and backend/cuda
// return them as their own (the same values), so one check serves both.
var (
	// ErrNoCUDA means no CUDA driver could be loaded or it reports no GPU.
	ErrNoCUDA = errors.New("cuda: no CUDA driver or GPU")
	// ErrNoNVRTC means the NVRTC runtime compiler could not be loaded.
	ErrNoNVRTC = errors.New("cuda: NVRTC (libnvrtc.so) not found")
	// ErrCompile means NVRTC refused a program; the error carries its log.
	ErrCompile = errors.New("cuda: NVRTC compilation failed")
)
