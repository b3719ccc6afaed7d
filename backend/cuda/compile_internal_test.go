//go:build linux

package cuda

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/laya-metal/laya/internal/cudadrv"
)

// kernels.cu compiles with the optimizer on every core from NVRTC 12.1 on,
// and again without that flag where it is refused, but not where the
// program itself has errors (ErrProgram), which a second compile would
// only report again; a program NVRTC rejects is an ErrCompile prefixed
// with the package.
func TestCompileKernels(t *testing.T) {
	for _, c := range []struct {
		major, minor int
		refuseSplit  bool // the compiler fails with --split-compile
		broken       bool // the program has errors
		want         []string
	}{
		{11, 8, false, false, []string{""}},
		{12, 0, false, false, []string{""}},
		{12, 1, false, false, []string{"--split-compile=0"}},
		{13, 0, false, false, []string{"--split-compile=0"}},
		{13, 0, true, false, []string{"--split-compile=0", ""}},
		{13, 0, true, true, []string{"--split-compile=0"}},
		{12, 0, false, true, []string{""}},
	} {
		t.Run(fmt.Sprintf("%d.%d,refuse=%v,broken=%v", c.major, c.minor, c.refuseSplit, c.broken), func(t *testing.T) {
			var calls []string
			cubin, err := compileKernels(func(extra ...string) ([]byte, error) {
				calls = append(calls, strings.Join(extra, " "))
				if c.broken {
					return nil, fmt.Errorf("%w: %w: kernels.cu: errors", cudadrv.ErrCompile, cudadrv.ErrProgram)
				}
				if c.refuseSplit && len(extra) > 0 {
					return nil, fmt.Errorf("%w: kernels.cu: an option refused", cudadrv.ErrCompile)
				}
				return []byte("cubin " + strings.Join(extra, " ")), nil
			}, c.major, c.minor)
			if !slices.Equal(calls, c.want) {
				t.Errorf("compiled with %q, want %q", calls, c.want)
			}
			switch {
			case c.broken:
				if !errors.Is(err, cudadrv.ErrCompile) || !strings.HasPrefix(err.Error(), "cuda: ") {
					t.Errorf("err %v, want a cuda: ErrCompile", err)
				}
			case err != nil:
				t.Errorf("err %v", err)
			case string(cubin) != "cubin "+c.want[len(c.want)-1]:
				t.Errorf("cubin %q, want the last compile's", cubin)
			}
		})
	}
}

// Registers are allocated 256 to a warp from one of four partitions: a
// thread's count rounds up to a multiple of 8, each partition holds whole
// warps, and the multiprocessor's thread limit caps the result.
func TestWarpsByRegisters(t *testing.T) {
	for _, c := range []struct{ regs, want int }{
		{0, 64}, {16, 64}, {32, 64}, {33, 48}, {40, 48}, {64, 32}, {80, 24}, {128, 16}, {168, 12}, {201, 8}, {255, 8},
	} {
		if got := warpsByRegisters(c.regs, 65536, 2048); got != c.want {
			t.Errorf("warpsByRegisters(%d) = %d, want %d", c.regs, got, c.want)
		}
	}
}
