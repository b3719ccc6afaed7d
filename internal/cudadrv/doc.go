// Package cudadrv is the CUDA plumbing shared by the repository's two CUDA
// users, the Metal device on NVIDIA GPUs (metal/cuda) and the cuda backend
// (backend/cuda): the driver API, the NVRTC runtime compiler and any other
// NVIDIA library, loaded with purego (no cgo), and a worker goroutine locked
// to its OS thread, on which a context stays current.
//
// It knows nothing of Metal or of the model: it loads libraries, calls
// their entry points and turns their status codes into errors.
package cudadrv
