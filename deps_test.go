package laya_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// A program that imports only package laya links the cpu backend, and on
// Apple Silicon the Metal backend, but never the MSL emulator (its clang
// driver and C++ runtime): metal-emu comes only with an explicit import of
// backend/metalemu (doc.go, "Backends"). Off darwin/arm64 nothing of the
// Metal layer or purego is linked at all.
func TestRootLinksNoEmulator(t *testing.T) {
	const root = "github.com/laya-metal/laya"
	for _, target := range []struct{ goos, goarch string }{{"linux", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}} {
		deps := goListDeps(t, target.goos, target.goarch, root)
		mac := target.goos == "darwin" && target.goarch == "arm64"
		for _, p := range deps {
			if isEmulatorPackage(p) {
				t.Errorf("%s/%s: package laya links the emulator package %s", target.goos, target.goarch, p)
			}
			metalLayer := p == root+"/metal" || strings.HasPrefix(p, root+"/metal/") || p == root+"/backend/gpu" ||
				strings.HasPrefix(p, "github.com/ebitengine/purego")
			if metalLayer && !mac {
				t.Errorf("%s/%s: package laya links %s; the Metal layer belongs to darwin/arm64 builds only", target.goos, target.goarch, p)
			}
		}
		if mac && !slices.Contains(deps, root+"/backend/gpu") {
			t.Errorf("darwin/arm64: package laya does not link backend/gpu; a Mac user must get \"metal\" with no extra import")
		}
	}
	// The rule finds the emulator where it is linked, so it can fail.
	if deps := goListDeps(t, "linux", "amd64", root+"/backend/metalemu"); !slices.ContainsFunc(deps, isEmulatorPackage) {
		t.Errorf("backend/metalemu's dependencies %v contain no package isEmulatorPackage recognises", deps)
	}
}

// The op layer never imports the model it serves: no package under backend/
// links the root package, encoder, heads or internal/forwardpass (a plan of
// the model's work on the GPU backend lives above both, in
// internal/gpuplan).
func TestBackendsImportNoModel(t *testing.T) {
	const root = "github.com/laya-metal/laya"
	for _, target := range []struct{ goos, goarch string }{{"linux", "amd64"}, {"darwin", "arm64"}} {
		for _, p := range goListDeps(t, target.goos, target.goarch, root+"/backend/...") {
			if isModelPackage(p) {
				t.Errorf("%s/%s: a package under backend/ links %s", target.goos, target.goarch, p)
			}
		}
	}
	// The rule finds the model where it is linked, so it can fail.
	if deps := goListDeps(t, "linux", "amd64", root+"/internal/gpuplan"); !slices.ContainsFunc(deps, isModelPackage) {
		t.Errorf("internal/gpuplan's dependencies %v contain no package isModelPackage recognises", deps)
	}
}

// isModelPackage reports the packages of the model: the root package, the
// encoder, the heads and the forward pass that joins them.
func isModelPackage(path string) bool {
	switch strings.TrimPrefix(path, "github.com/laya-metal/laya") {
	case "", "/encoder", "/heads", "/internal/forwardpass":
		return true
	}
	return false
}

// isEmulatorPackage reports the packages only the MSL emulator needs:
// backend/metalemu and anything under a path element "emu" (metal/emu).
func isEmulatorPackage(path string) bool {
	const root = "github.com/laya-metal/laya/"
	rest, ok := strings.CutPrefix(path, root)
	if !ok {
		return false
	}
	return rest == "backend/metalemu" || slices.Contains(strings.Split(rest, "/"), "emu")
}

// goListDeps lists the import paths pkg links for goos/goarch (cgo off, as
// the project builds for Macs).
func goListDeps(t *testing.T, goos, goarch, pkg string) []string {
	t.Helper()
	// go test puts its own toolchain's bin directory first in PATH.
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s (%s/%s): %v\n%s", pkg, goos, goarch, err, out)
	}
	return strings.Fields(string(out))
}
