package backend_test

import (
	"strings"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// On a platform without Metal (this test's build has no "metal"
// registered), auto opens cpu and says in one line why not metal; the
// emulator and metal-cuda are never chosen, registered or not.
func TestAutoPicksCPUAndSaysWhy(t *testing.T) {
	for range 2 { // the second call reuses the first's choice
		be, choice, err := backend.OpenAuto()
		if err != nil {
			t.Fatal(err)
		}
		be.Close()
		if be.Name() != "cpu" || choice.Name != "cpu" {
			t.Fatalf("auto opened %q (choice %+v), want cpu", be.Name(), choice)
		}
		if !choice.Fallback() || !strings.Contains(choice.Passed, "metal needs macOS on Apple Silicon") ||
			strings.Contains(choice.String(), "\n") {
			t.Errorf("choice = %q, want one line saying metal needs macOS on Apple Silicon", choice)
		}
	}
	be, err := backend.Open(backend.Auto)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if be.Name() != "cpu" {
		t.Errorf("Open(%q) = %q, want cpu", backend.Auto, be.Name())
	}
}
