//go:build linux

package cuda

import (
	"fmt"

	"github.com/ebitengine/purego"
	"github.com/laya-metal/laya/internal/cudadrv"
)

// cublas holds the cuBLAS entry points the GEMMs use. cuBLAS runs on the
// primary context, which is the one the backend retains.
type cublas struct {
	path                                     string // the library found
	create, destroy, setStream, setWorkspace uintptr
	setMathMode, sgemm, gemmEx, gemmBatched  uintptr
}

func loadCUBLAS(explicit string) (*cublas, error) {
	names := []string{"libcublas.so", "libcublas.so.13", "libcublas.so.12"}
	h, path, err := cudadrv.FindLibrary(explicit, names, cudadrv.LibraryDirs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCUBLAS, err)
	}
	c := &cublas{path: path}
	for name, p := range map[string]*uintptr{
		"cublasCreate_v2": &c.create, "cublasDestroy_v2": &c.destroy, "cublasSetStream_v2": &c.setStream,
		"cublasSetWorkspace_v2": &c.setWorkspace, "cublasSetMathMode": &c.setMathMode, "cublasSgemm_v2": &c.sgemm,
		"cublasGemmEx": &c.gemmEx, "cublasGemmStridedBatchedEx": &c.gemmBatched,
	} {
		if *p, err = purego.Dlsym(h, name); err != nil {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNoCUBLAS, path, name)
		}
	}
	return c, nil
}

// call invokes an entry point and turns a cublasStatus_t into an error.
//
//go:uintptrescapes
func (c *cublas) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if st := int32(r); st != 0 {
		return fmt.Errorf("cuda: %s failed with cuBLAS status %d", name, st)
	}
	return nil
}

// cuBLAS and CUDA enum values used (cublas_api.h, library_types.h).
const (
	cublasOpN         = 0
	cublasOpT         = 1
	cublasPedantic    = 2 // CUBLAS_PEDANTIC_MATH: no TF32, no reduced-precision shortcuts
	cublasDefaultMath = 0
	cudaR32F          = 0
	cudaR16F          = 2
	cudaR16BF         = 14
	cublasCompute32F  = 68
	cublasGemmDefault = 0xffffffff // CUBLAS_GEMM_DEFAULT (-1)
)
