package kernels

import (
	"io/fs"
	"regexp"
	"testing"
)

// Both backends build one library from all files, so a kernel name must be
// unique across them; and every file must hold at least one kernel.
func TestKernelNamesUnique(t *testing.T) {
	kernelRe := regexp.MustCompile(`\bkernel\s+void\s+(\w+)\s*\(`)
	names, err := fs.Glob(FS(), "*.metal")
	if err != nil || len(names) == 0 {
		t.Fatalf("no .metal files embedded (err %v)", err)
	}
	seen := map[string]string{}
	for _, n := range names {
		src, err := Source(n)
		if err != nil {
			t.Fatal(err)
		}
		ms := kernelRe.FindAllStringSubmatch(src, -1)
		if len(ms) == 0 {
			t.Errorf("%s has no kernel", n)
		}
		for _, m := range ms {
			if prev, dup := seen[m[1]]; dup {
				t.Errorf("kernel %s is in both %s and %s", m[1], prev, n)
			}
			seen[m[1]] = n
		}
	}
	for _, want := range []string{"vector_add", "softmax_f32", "gemm_f32", "gemm_f16"} {
		if seen[want] == "" {
			t.Errorf("kernel %s missing", want)
		}
	}
}
