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

// RefineGate opens while few rows of reduced batches run again; once more
// than MaxShare of them do, it opens for one batch in ProbeEvery, and it
// opens again for good once the share falls.
func TestRefineGate(t *testing.T) {
	var g backend.RefineGate
	for i := range 20 {
		if !g.Open() {
			t.Fatalf("batch %d: closed with no rows run again", i)
		}
		g.Observe(10, 0)
	}
	// Every row runs again: the moving average passes MaxShare within a
	// few batches, after which only probes open.
	opened := 0
	for range 8 * backend.ProbeEvery {
		if g.Open() {
			opened++
			g.Observe(10, 10)
		}
	}
	if opened > 2+8 {
		t.Errorf("opened %d of %d batches with every row run again, want about one in %d", opened, 8*backend.ProbeEvery, backend.ProbeEvery)
	}
	// The probes now find no near-tie: the share falls and the gate stays open.
	for range 10 * backend.ProbeEvery {
		if g.Open() {
			g.Observe(10, 0)
		}
	}
	for i := range 10 {
		if !g.Open() {
			t.Fatalf("batch %d: closed after the near-ties stopped", i)
		}
		g.Observe(10, 0)
	}
	// A share at MaxShare keeps it open; odd reports change nothing.
	var h backend.RefineGate
	for range 50 {
		h.Observe(4, 1)
		h.Observe(0, 5)
		if !h.Open() {
			t.Fatal("closed at a share of exactly MaxShare")
		}
	}
}
