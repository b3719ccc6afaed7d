package cuda_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/laya-metal/laya/kernels"
	"github.com/laya-metal/laya/metal/cuda"
	"github.com/laya-metal/laya/metal/internal/mslpp"
)

// clangCUDACheck type-checks a CUDA translation with clang's CUDA front end
// against testdata/cuda_stub.h (what NVRTC declares implicitly), the way
// CI checks every kernel without a GPU or CUDA toolkit. It skips where
// clang-19 is absent.
func clangCUDACheck(t *testing.T, name, cu string) error {
	t.Helper()
	clang, err := exec.LookPath("clang-19")
	if err != nil {
		t.Skipf("clang-19 not installed: the CUDA translation check needs it (%v)", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "msl_cuda.h"), []byte(cuda.Shim), 0o644); err != nil {
		t.Fatal(err)
	}
	stub, err := filepath.Abs("testdata/cuda_stub.h")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".cu")
	if err := os.WriteFile(src, []byte(cu), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(clang, "-x", "cuda", "--cuda-gpu-arch=sm_90", "--cuda-device-only", "-nocudainc", "-nocudalib",
		"-fsyntax-only", "-std=c++17", "-include", stub, "-I", dir, src)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &checkError{out: string(out)}
	}
	return nil
}

type checkError struct{ out string }

func (e *checkError) Error() string { return e.out }

func translateCUDA(t *testing.T, name, text string) string {
	t.Helper()
	u, err := mslpp.TranslateFor(mslpp.Source{Name: name, Text: text}, nil, mslpp.CUDA)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return u.CPP
}

// Every .metal file of package kernels, and the shim test kernel,
// translates to CUDA and type-checks: in all function-constant branches at
// once, since unset constants are value-initialised but both sides of an
// if on them are still checked.
func TestTranslateAllKernels(t *testing.T) {
	names, err := fs.Glob(kernels.FS(), "*.metal")
	if err != nil || len(names) == 0 {
		t.Fatalf("no kernels: %v", err)
	}
	srcs := map[string]string{"testdata/shimtest.metal": shimSource}
	for _, n := range names {
		b, _ := fs.ReadFile(kernels.FS(), n)
		srcs["kernels/"+n] = string(b)
	}
	for name, text := range srcs {
		t.Run(name, func(t *testing.T) {
			cu := translateCUDA(t, name, text)
			if !strings.Contains(cu, "extern \"C\" __global__ void mslk_0(") {
				t.Errorf("%s: no entry point mslk_0 in the translation", name)
			}
			if err := clangCUDACheck(t, name, cu); err != nil {
				t.Errorf("%s: the CUDA translation does not type-check:\n%v", name, err)
			}
		})
	}
}

// The check is able to fail: MSL that mixes a vector into a scalar, and a
// call that only CUDA's global functions would take, are rejected, with the
// .metal line named.
func TestTranslateCheckFails(t *testing.T) {
	for _, c := range []struct{ name, body string }{
		{"vector-to-scalar", "float4 v = float4(1.0f); out[i] = v;"},
		{"unknown-function", "out[i] = erf(float(i));"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n  " +
				c.body + "\n}\n"
			err := clangCUDACheck(t, "bad.metal", translateCUDA(t, "bad.metal", src))
			if err == nil {
				t.Fatal("the check accepted a broken kernel")
			}
			if !strings.Contains(err.Error(), "bad.metal:4") {
				t.Errorf("the error does not name bad.metal:4:\n%v", err)
			}
		})
	}
}

// Threadgroup memory is __shared__, address spaces are gone, function
// constants are compile-time values and the source sits in metal::msl_user.
func TestTranslateShape(t *testing.T) {
	cu := translateCUDA(t, "testdata/shimtest.metal", shimSource)
	for _, want := range []string{
		"__shared__ float tg[128];",
		"static constexpr int fc_k = int{MSLFC_VALUE_0};",
		"static constexpr uint kRecord = 16;",
		"namespace metal { namespace msl_user {",
		"::metal::builtin<::metal::arg_t<F, 2>>(::metal::bi_tgpig(L))",
	} {
		if !strings.Contains(cu, want) {
			t.Errorf("translation lacks %q", want)
		}
	}
	for _, bad := range []string{"device float", "constant uint&", "threadgroup float", "[[buffer"} {
		if strings.Contains(cu, bad) {
			t.Errorf("translation still holds %q", bad)
		}
	}
}
