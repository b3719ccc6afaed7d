//go:build linux

package cuda

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
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

// Each kernel the backend looks up is compiled in the part of kernels.cu
// kernelTable puts it in (LAYA_PART 1 the core, 2 the extras) and in no
// other, and neither part has a kernel the backend does not know: a
// kernel on the wrong side would be missing from an Open that loads the
// core only. clang-19 writes each part's PTX (the GPU's NVRTC is not
// here); its entries are the kernels.
func TestKernelPartsMirrorSource(t *testing.T) {
	clang, err := exec.LookPath("clang-19")
	if err != nil {
		t.Skipf("clang-19 not installed: %v", err)
	}
	entry := regexp.MustCompile(`\.entry (\w+)\(`)
	entries := map[int]map[string]bool{}
	for _, part := range []int{partCore, partExtras} {
		out, err := exec.Command(clang, "-x", "cuda", "--cuda-gpu-arch=sm_90", "--cuda-device-only", "-nocudainc", "-nocudalib", "-O1", "-fno-builtin",
			"-w", "-S", "-o", "-", "-std=c++17", fmt.Sprintf("-DLAYA_PART=%d", part), "-include", "../../metal/cuda/testdata/cuda_stub.h",
			"-include", "testdata/nvrtc_extra.h", "kernels.cu").Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("clang-19, part %d: %v\n%s", part, err, stderr)
		}
		entries[part] = map[string]bool{}
		for _, m := range entry.FindAllStringSubmatch(string(out), -1) {
			entries[part][m[1]] = true
		}
	}
	table := (&Backend{}).kernelTable()
	for name, k := range table {
		want, other := partCore, partExtras
		if k.part == partExtras {
			want, other = partExtras, partCore
		}
		if !entries[want][name] || entries[other][name] {
			t.Errorf("%s: in part %d %v, in part %d %v; want only in part %d", name, want, entries[want][name], other, entries[other][name], want)
		}
	}
	for part, es := range entries {
		for name := range es {
			if _, ok := table[name]; !ok {
				t.Errorf("part %d has kernel %s, which the backend does not look up", part, name)
			}
		}
	}
	if len(entries[partCore]) == 0 || len(entries[partExtras]) == 0 {
		t.Errorf("entries: core %d, extras %d", len(entries[partCore]), len(entries[partExtras]))
	}
}

// The extras compile where an option asks for their kernels, or where the
// GPU's shared memory cannot hold a four-warp tensor-core attention kernel
// a precision uses (head dim 128 in two terms needs 104448 bytes), whose
// head dims then fall back to fewer warps.
func TestNeedExtras(t *testing.T) {
	for _, c := range []struct {
		opts   Options
		shared int
		want   bool
	}{
		{Options{Precision: FP16X2}, 232448, false},
		{Options{Precision: FP16X2}, 166912, false},
		{Options{Precision: FP16X2}, 101376, true},
		{Options{Precision: FP16X2, AttentionTerms: 1}, 101376, false},
		{Options{Precision: FP16}, 101376, false},
		{Options{Precision: FP16, AttentionTerms: 2}, 101376, true},
		{Options{Precision: FP32}, 101376, false},
		{Options{Precision: BF16}, 49152, false},
		{Options{Precision: FP16X2}, 0, false},
		{Options{Precision: FP16X2, MMAWarps: 4}, 232448, false},
		{Options{Precision: FP16X2, MMAWarps: 8}, 232448, true},
		{Options{Precision: FP16X2, AttentionSplit: true}, 232448, true},
		{Options{Precision: FP16X2, RowWarps: 4}, 232448, true},
		{Options{Precision: FP16X2, RowWarps: 6}, 232448, true},
		{Options{Precision: FP16X2, RowWarps: -1}, 232448, false},
		{Options{Precision: FP16X2, ClusterRows: 128}, 232448, true},
		{Options{Precision: FP16X2, MMARows: 256}, 232448, true},
		{Options{Precision: FP32, MMARows: 256}, 232448, true},
	} {
		b := &Backend{opts: c.opts, sharedOptin: c.shared}
		if got := b.needExtras(); got != c.want {
			t.Errorf("%+v, %d bytes: needExtras %v, want %v", c.opts, c.shared, got, c.want)
		}
	}
}
