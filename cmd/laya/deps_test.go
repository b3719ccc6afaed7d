package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// laya is a user's command: built with CGO_ENABLED=0 on Linux it must be a
// static binary, so it links neither the MSL emulator (a kernel-testing
// tool: laya-bench and msl-emu carry it) nor purego, whose runtime loader
// makes a Linux binary dynamically linked. -tags metalemu brings the
// emulator back on purpose, which also shows the rule can fail.
func TestLayaLinksNoEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("go list -deps takes a while")
	}
	const cmd = "github.com/laya-metal/laya/cmd/laya"
	for _, target := range []struct{ goos, goarch string }{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}} {
		for _, p := range goListDeps(t, target.goos, target.goarch, cmd) {
			if isEmulatorPackage(p) {
				t.Errorf("%s/%s: laya links the emulator package %s", target.goos, target.goarch, p)
			}
			if target.goos == "linux" && strings.HasPrefix(p, "github.com/ebitengine/purego") {
				t.Errorf("%s/%s: laya links %s, which makes it a dynamic binary", target.goos, target.goarch, p)
			}
		}
	}
	deps := goListDeps(t, "linux", "amd64", "-tags=metalemu", cmd)
	if !slices.ContainsFunc(deps, isEmulatorPackage) || !slices.Contains(deps, "github.com/ebitengine/purego") {
		t.Errorf("with -tags metalemu laya links no emulator and no purego: %v", deps)
	}
	// The cuda backend likewise comes only with its tag, and without the
	// emulator.
	deps = goListDeps(t, "linux", "amd64", "-tags=cuda", cmd)
	if !slices.Contains(deps, "github.com/laya-metal/laya/backend/cuda") || slices.ContainsFunc(deps, isEmulatorPackage) {
		t.Errorf("with -tags cuda laya links no cuda backend, or the emulator: %v", deps)
	}
	for _, p := range goListDeps(t, "linux", "amd64", cmd) {
		if p == "github.com/laya-metal/laya/backend/cuda" {
			t.Errorf("laya links %s without -tags cuda", p)
		}
	}
}

// isEmulatorPackage reports the packages of the MSL emulator.
func isEmulatorPackage(path string) bool {
	rest, ok := strings.CutPrefix(path, "github.com/laya-metal/laya/")
	return ok && (rest == "backend/metalemu" || slices.Contains(strings.Split(rest, "/"), "emu"))
}

// goListDeps lists the import paths that the packages of args link for
// goos/goarch with cgo off, as the release binaries are built.
func goListDeps(t *testing.T, goos, goarch string, args ...string) []string {
	t.Helper()
	// go test puts its own go first on the PATH.
	cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, args...)...)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %v (%s/%s): %v\n%s", args, goos, goarch, err, out)
	}
	return strings.Fields(string(out))
}
