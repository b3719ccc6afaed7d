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
	// ErrProgram is the ErrCompile of a program with errors in it
	// (NVRTC_ERROR_COMPILATION), as opposed to an option NVRTC does not
	// take or a failure of its own: compiling it again with other options
	// fails the same way.
	ErrProgram = errors.New("the program has errors")
)
