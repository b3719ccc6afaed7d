package metalemu_test

import (
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/backendtest"
	"github.com/laya-metal/laya/backend/metalemu"
	"github.com/laya-metal/laya/metal/emu"
)

func TestRegistered(t *testing.T) {
	be, err := backend.Open("metal-emu")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if be.Name() != "metal-emu" {
		t.Errorf("Name() = %q", be.Name())
	}
}

// The backend conformance suite on the Metal kernels, run by the emulator:
// every op against its float64 reference and every contract rejection.
func TestConformance(t *testing.T) {
	backendtest.Run(t, func() (backend.Backend, error) { return metalemu.Open(emu.Options{}) })
}
