package metalemu_test

import (
	"testing"

	"github.com/laya-metal/laya/backend"
	_ "github.com/laya-metal/laya/backend/metalemu"
)

// Importing the package registers "metal-emu" (moved here from
// backend/metal, which no longer registers it).
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
