package backend_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
)

// A second registration of one name is a programming error (two packages
// claiming it): Register panics, as database/sql.Register does, and the
// first registration stays.
func TestRegisterRefusesDuplicate(t *testing.T) {
	open := func() (backend.Backend, error) { return cpu.New(), nil }
	backend.Register("test-dup", open)
	for _, tt := range []struct {
		name string
		open backend.Opener
	}{{"test-dup", open}, {"cpu", open}, {"", open}, {"test-nil", nil}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", tt.name)
				}
			}()
			backend.Register(tt.name, tt.open)
		}()
	}
	if _, err := backend.Open("test-nil"); !errors.Is(err, backend.ErrUnknownBackend) {
		t.Errorf("a refused registration was kept: Open(test-nil) err = %v", err)
	}
}

// registerAccelerator registers TestTraits' backend once, however often the
// test runs (-count).
var registerAccelerator sync.Once

// Traits are the registering package's, by name, each on its own; unknown
// names have none.
func TestTraits(t *testing.T) {
	registerAccelerator.Do(func() {
		open := func() (backend.Backend, error) { return cpu.New(), nil }
		backend.Register("test-accelerator", open, backend.Accelerator)
		backend.Register("test-side-by-side", open, backend.Accelerator, backend.PassesSideBySide)
	})
	for _, tt := range []struct {
		name                   string
		accelerator, twoPasses bool
	}{
		{"test-accelerator", true, false},
		{"test-side-by-side", true, true},
		{"cpu", false, false},
		{"test-nobody", false, false},
	} {
		if got := backend.HasTrait(tt.name, backend.Accelerator); got != tt.accelerator {
			t.Errorf("HasTrait(%q, Accelerator) = %v, want %v", tt.name, got, tt.accelerator)
		}
		if got := backend.HasTrait(tt.name, backend.PassesSideBySide); got != tt.twoPasses {
			t.Errorf("HasTrait(%q, PassesSideBySide) = %v, want %v", tt.name, got, tt.twoPasses)
		}
	}
}

// An unknown or unavailable name says what this program has and what the
// module's other backends need.
func TestOpenUnknownSaysWhy(t *testing.T) {
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"tpu", []string{`"tpu"`, "registered: auto, cpu", "metal (needs macOS on Apple Silicon (darwin/arm64))",
			"metal-emu (needs clang ≥ 16 and a blank import of github.com/laya-metal/laya/backend/metalemu)"}},
		{"metal-emu", []string{`"metal-emu": not in this program; it needs clang ≥ 16 and a blank import of github.com/laya-metal/laya/backend/metalemu`,
			"registered: auto, cpu"}},
	} {
		_, err := backend.Open(tt.name)
		if !errors.Is(err, backend.ErrUnknownBackend) {
			t.Fatalf("Open(%q): err = %v, want ErrUnknownBackend", tt.name, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%q) = %q, want it to contain %q", tt.name, err, w)
			}
		}
	}
}
