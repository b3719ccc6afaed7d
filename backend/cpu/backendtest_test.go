package cpu_test

import (
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/backendtest"
	"github.com/laya-metal/laya/backend/cpu"
)

// The backend conformance suite: every op against its float64 reference
// and every contract rejection.
func TestConformance(t *testing.T) {
	backendtest.Run(t, func() (backend.Backend, error) { return cpu.New(), nil })
}
