package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The kernel cache compiles once per key and loads the kept cubin after;
// a kept cubin the loader refuses is compiled and replaced; a cache that
// cannot be written still loads what was compiled; "" keeps nothing.
func TestLoadCubin(t *testing.T) {
	dir := t.TempDir()
	compiled := 0
	compile := func(b []byte) func() ([]byte, error) {
		return func() ([]byte, error) { compiled++; return b, nil }
	}
	var loaded [][]byte
	load := func(b []byte) error {
		if bytes.HasPrefix(b, []byte("bad")) {
			return errors.New("refused")
		}
		loaded = append(loaded, b)
		return nil
	}
	check := func(what string, hit bool, err error, wantHit bool, wantCompiled int) {
		t.Helper()
		if err != nil || hit != wantHit || compiled != wantCompiled {
			t.Errorf("%s: hit %v, err %v, %d compiles; want hit %v, %d compiles", what, hit, err, compiled, wantHit, wantCompiled)
		}
	}
	hit, err := loadCubin(dir, "k1", compile([]byte("cubin1")), load)
	check("first", hit, err, false, 1)
	hit, err = loadCubin(dir, "k1", compile([]byte("other")), load)
	check("second", hit, err, true, 1)
	if got := loaded[len(loaded)-1]; string(got) != "cubin1" {
		t.Errorf("second load got %q, want the kept cubin1", got)
	}
	hit, err = loadCubin(dir, "k2", compile([]byte("cubin2")), load)
	check("another key", hit, err, false, 2)

	// A kept cubin the driver refuses: compiled again and replaced.
	if err := os.WriteFile(filepath.Join(dir, "k3.cubin"), []byte("bad cubin"), 0o644); err != nil {
		t.Fatal(err)
	}
	hit, err = loadCubin(dir, "k3", compile([]byte("cubin3")), load)
	check("refused", hit, err, false, 3)
	if b, _ := os.ReadFile(filepath.Join(dir, "k3.cubin")); string(b) != "cubin3" {
		t.Errorf("the refused cubin was not replaced: %q", b)
	}

	// A fresh compile the driver refuses is the error, and nothing is kept.
	_, err = loadCubin(dir, "k4", compile([]byte("bad new")), load)
	if err == nil {
		t.Error("a refused fresh cubin gave no error")
	}
	if _, serr := os.Stat(filepath.Join(dir, "k4.cubin")); serr == nil {
		t.Error("a refused fresh cubin was kept")
	}
	cerr := errors.New("nvrtc: no")
	if _, err := loadCubin(dir, "k5", func() ([]byte, error) { return nil, cerr }, load); !errors.Is(err, cerr) {
		t.Errorf("compile error %v, want %v", err, cerr)
	}

	// Unwritable directory (a file in the way) and no cache: loads anyway.
	blocked := filepath.Join(dir, "file")
	os.WriteFile(blocked, nil, 0o644)
	hit, err = loadCubin(filepath.Join(blocked, "sub"), "k1", compile([]byte("cubin1")), load)
	check("unwritable", hit, err, false, 5)
	hit, err = loadCubin("", "k1", compile([]byte("cubin1")), load)
	check("off", hit, err, false, 6)
	if entries, _ := filepath.Glob(filepath.Join(dir, ".cubin-*")); len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// A cubin's key changes with each of its inputs and with how they split.
func TestCubinKey(t *testing.T) {
	keys := map[string]bool{}
	for _, parts := range [][]string{{"src", "sm_90", "13.0"}, {"src", "sm_80", "13.0"}, {"src", "sm_90", "12.9"},
		{"src2", "sm_90", "13.0"}, {"srcs", "m_90", "13.0"}, {"src", "sm_90", "13.0", "-lineinfo"}} {
		k := cubinKey(parts...)
		if keys[k] {
			t.Errorf("cubinKey(%q) repeats another key", parts)
		}
		keys[k] = true
	}
	if cubinKey("a", "b") != cubinKey("a", "b") {
		t.Error("cubinKey is not deterministic")
	}
}

// The cache keeps the most recently written cubins, and tune files, and
// drops the rest of each; other files stay.
func TestPruneFiles(t *testing.T) {
	for _, c := range []struct {
		ext, other string
		keep       int
	}{{".cubin", ".tune", keptCubins}, {".tune", ".cubin", keptTuneFiles}} {
		dir := t.TempDir()
		base := time.Now().Add(-time.Hour)
		for i := range c.keep + 3 {
			for _, ext := range []string{c.ext, c.other} {
				p := filepath.Join(dir, fmt.Sprintf("k%02d%s", i, ext))
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				mod := base.Add(time.Duration(i) * time.Minute)
				os.Chtimes(p, mod, mod)
			}
		}
		os.WriteFile(filepath.Join(dir, "other.txt"), nil, 0o644)
		pruneFiles(dir, c.ext, c.keep)
		left, _ := filepath.Glob(filepath.Join(dir, "*"+c.ext))
		if len(left) != c.keep {
			t.Fatalf("%s: %d left, want %d: %v", c.ext, len(left), c.keep, left)
		}
		for i := range 3 {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("k%02d%s", i, c.ext))); err == nil {
				t.Errorf("%s: the old k%02d was kept", c.ext, i)
			}
		}
		others, _ := filepath.Glob(filepath.Join(dir, "*"+c.other))
		if len(others) != c.keep+3 {
			t.Errorf("pruning %s removed %s files: %d left of %d", c.ext, c.other, len(others), c.keep+3)
		}
		if _, err := os.Stat(filepath.Join(dir, "other.txt")); err != nil {
			t.Errorf("pruning %s removed another file", c.ext)
		}
	}
}

// cache=off keeps nothing, a directory is itself, and the default is the
// user cache directory's laya-metal/cuda.
func TestKernelCacheDir(t *testing.T) {
	if got := kernelCacheDir("off"); got != "" {
		t.Errorf(`kernelCacheDir("off") = %q, want ""`, got)
	}
	if got := kernelCacheDir("/tmp/k"); got != "/tmp/k" {
		t.Errorf(`kernelCacheDir("/tmp/k") = %q`, got)
	}
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	t.Setenv("HOME", "/tmp/home")
	if base, err := os.UserCacheDir(); err == nil {
		if got, want := kernelCacheDir(""), filepath.Join(base, "laya-metal", "cuda"); got != want {
			t.Errorf(`kernelCacheDir("") = %q, want %q`, got, want)
		}
	}
}
