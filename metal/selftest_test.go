//go:build linux || darwin

package metal_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/laya-metal/laya/kernels"
	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// The self-test on the emulator: every canary within tolerance, and each
// kernel family the backends dispatch is among them.
func TestSelfTestEmu(t *testing.T) {
	d := openEmu(t, emu.Options{}, "default")
	rep, err := SelfTest(context.Background(), NewKernels(d))
	if err != nil {
		t.Fatal(err)
	}
	kernelsRun := map[string]bool{}
	for _, r := range rep.Results {
		if r.Worst > 1 {
			t.Errorf("%s: over tolerance without an error", r)
		}
		for k := range strings.SplitSeq(r.Kernel, " + ") {
			kernelsRun[k] = true
		}
	}
	for _, k := range []string{"gemm_f32", "gemm_f32_f16w", "gemv_f32", "gemv_f32_f16w", "gemm_reduce_f32",
		"attention_flash_f32", "attention_f32", "layernorm_f32", "softmax_f32", "gather_rows_f32", "gather_rows_f16",
		"rope_f32", "activate_f32", "geglu_f32", "vector_add_f32", "act_features_f32"} {
		if !kernelsRun[k] {
			t.Errorf("no canary runs %s", k)
		}
	}
	t.Logf("self-test on %s (the emulator, on this host's CPU): %d canaries in %v", rep.Device, len(rep.Results), rep.Elapsed)
}

// A broken reference is caught and named: each kernel's reference in turn
// is nudged by a few tolerances at one element.
func TestSelfTestCatchesBrokenReference(t *testing.T) {
	d := openEmu(t, emu.Options{}, "default")
	for _, kernel := range []string{"attention_flash_f32", "gemm_f32_f16w + gemm_reduce_f32", "layernorm_f32", "gather_rows_f16"} {
		restore := ExportSetSelfTestWant(func(k string, want []float64) {
			if k == kernel {
				want[len(want)/2] += 0.01
			}
		})
		_, err := SelfTest(context.Background(), NewKernels(d))
		restore()
		if !errors.Is(err, ErrSelfTest) || !strings.Contains(err.Error(), kernel+" (") || !strings.Contains(err.Error(), "element ") {
			t.Errorf("broken %s reference: err = %v, want ErrSelfTest naming the kernel and the element", kernel, err)
		}
	}
}

// A broken kernel is caught and named: softmax's sum of exponentials loses
// its last simdgroup's partial, the kind of reduction slip a compiler or
// a hand edit makes.
func TestSelfTestCatchesBrokenKernel(t *testing.T) {
	srcs := kernelSources(t, func(name, text string) string {
		if name != "kernels/softmax.metal" {
			return text
		}
		broken := strings.Replace(text, "sum = simd_sum(lane < simds ? partial[lane] : 0.0f);",
			"sum = simd_sum(lane + 1 < simds ? partial[lane] : 0.0f);", 1)
		if broken == text {
			t.Fatal("softmax.metal no longer has the line the planted bug edits")
		}
		return broken
	})
	d := openEmu(t, emu.Options{Sources: srcs}, "broken-softmax")
	_, err := SelfTest(context.Background(), NewKernels(d))
	if !errors.Is(err, ErrSelfTest) || !strings.Contains(err.Error(), "softmax_f32 (") || !strings.Contains(err.Error(), "4×130") {
		t.Fatalf("err = %v, want ErrSelfTest naming softmax_f32 and its shape", err)
	}
	t.Log(err)
}

// kernelSources is package kernels' sources, each passed through edit.
func kernelSources(t *testing.T, edit func(name, text string) string) []KernelSource {
	t.Helper()
	var srcs []KernelSource
	err := fs.WalkDir(kernels.FS(), ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(kernels.FS(), name)
		srcs = append(srcs, KernelSource{Name: "kernels/" + name, Text: edit("kernels/"+name, string(b))})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return srcs
}
