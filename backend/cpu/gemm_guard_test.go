//go:build linux || darwin

package cpu

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// guardedFloats returns n floats that end exactly where an inaccessible page
// begins, so a kernel that reads past the end of its last row faults.
func guardedFloats(t *testing.T, n int) []float32 {
	t.Helper()
	page := syscall.Getpagesize()
	size := (4*n+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if n == 0 {
		return nil
	}
	end := size - page
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[end-4*n])), n)
}

// TestGemmNoOverread puts X and W flush against a guard page: the SIMD
// kernels must read the last k mod 8 floats of a row without touching the
// bytes after it (masked loads on amd64, a padded copy on arm64).
func TestGemmNoOverread(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, kernel := range gemmKernels(t) {
		for _, shape := range []struct{ m, n, k int }{{1, 1, 1}, {3, 4, 5}, {4, 5, 13}, {7, 9, 1}, {5, 6, 1027}} {
			m, n, k := shape.m, shape.n, shape.k
			t.Run(fmt.Sprintf("%s/%dx%dx%d", kernel.name, m, n, k), func(t *testing.T) {
				x, w := guardedFloats(t, m*k), guardedFloats(t, n*k)
				copy(x, smallInts(rng, m*k))
				copy(w, smallInts(rng, n*k))
				got := runGemm(t, kernel, x, w, nil, m, n, k, backend.Identity)
				for i := range m {
					for j := range n {
						var sum float32
						for kk := range k {
							sum += x[i*k+kk] * w[j*k+kk]
						}
						if got[i*n+j] != sum {
							t.Fatalf("y[%d, %d] = %v, want %v", i, j, got[i*n+j], sum)
						}
					}
				}
			})
		}
	}
}
