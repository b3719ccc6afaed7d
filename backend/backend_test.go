package backend_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/laya-metal/laya/backend"
	_ "github.com/laya-metal/laya/backend/cpu"
)

func TestOpen(t *testing.T) {
	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if be.Name() != "cpu" {
		t.Errorf("Name() = %q", be.Name())
	}
	if !slices.Contains(backend.Names(), "cpu") {
		t.Errorf("Names() = %v, want cpu listed", backend.Names())
	}
	if _, err := backend.Open("tpu"); !errors.Is(err, backend.ErrUnknownBackend) {
		t.Errorf("Open(tpu): err = %v, want ErrUnknownBackend", err)
	}
}

func TestDType(t *testing.T) {
	for _, tt := range []struct {
		d    backend.DType
		name string
		size int
	}{{backend.F32, "F32", 4}, {backend.F16, "F16", 2}, {backend.BF16, "BF16", 2}} {
		if tt.d.String() != tt.name || tt.d.Size() != tt.size {
			t.Errorf("%v: String %q Size %d, want %q %d", tt.d, tt.d.String(), tt.d.Size(), tt.name, tt.size)
		}
	}
}
