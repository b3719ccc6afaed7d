package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// --asan with a relative FILE names a file that exists. The compiled
// kernel is cached by content, so the second directory's run reuses what
// the first one compiled; the first directory is gone by then, as a
// checkout or temporary copy may be.
func TestASanRelativePathExists(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles with AddressSanitizer")
	}
	src, err := os.ReadFile("../../metal/emu/testdata/bugs.metal")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // a cache of this test's own
	where := regexp.MustCompile(`at (\S+\.metal):43:\d+`)
	first := t.TempDir()
	for i, dir := range []string{first, t.TempDir()} {
		if err := os.WriteFile(filepath.Join(dir, "bugs.metal"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"run", "bugs.metal", "--kernel", "oob_read", "--asan", "--threadgroup", "4",
			"--buffer", "0=zeros:16", "--buffer", "1=zeros:16", "--bytes", "2=u32:4"}, &stdout, &stderr)
		if err == nil {
			t.Fatal("no out-of-bounds read reported")
		}
		m := where.FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("run %d: no .metal line 43 in %v", i+1, err)
		}
		if _, statErr := os.Stat(m[1]); statErr != nil {
			t.Errorf("run %d: reported %s, which does not exist (%v)", i+1, m[1], statErr)
		}
		if code := exitCode(err, &stderr); code != 1 {
			t.Errorf("run %d: exit %d, want 1", i+1, code)
		}
		if i == 0 {
			t.Chdir("..")
			os.RemoveAll(first)
		}
	}
}

func TestUsageErrorsOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "../../kernels/elementwise.metal", "--nope"}, "msl-emu: unknown flag --nope (flags: -D, --asan, --buffer, "},
		{[]string{"run", "../../kernels/elementwise.metal", "--kernel"}, "msl-emu: --kernel needs a value: kernel NAME"},
		{[]string{"run", "../../kernels/elementwise.metal", "--kernel", "vector_add", "--threadgroup", "32", "--asan=maybe"}, `msl-emu: --asan "maybe": want true or false`},
		{[]string{"frobnicate"}, `msl-emu: unknown command "frobnicate" (want run or list)`},
	} {
		var stdout, stderr bytes.Buffer
		code := exitCode(run(context.Background(), tc.args, &stdout, &stderr), &stderr)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if code != 2 || len(lines) != 2 || !strings.HasPrefix(lines[0], tc.want) || lines[1] != "run 'msl-emu -h' for usage" {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant 2 and %s...", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &stdout, &stderr); err != nil || !strings.HasPrefix(stdout.String(), "msl-emu ") {
		t.Errorf("%v, %q", err, stdout.String())
	}
}
