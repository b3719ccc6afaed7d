package gpu

import (
	"context"
	"testing"
)

// The same checks on the Apple GPU (scripts/maccheck/mac-check.sh runs them): every
// op against the CPU backend, and every golden case of every model.

func openGPU(t *testing.T) *Backend {
	t.Helper()
	be, err := OpenSystem(context.Background())
	if err != nil {
		t.Fatalf("metal: %v", err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

func TestOpsMatchCPUGPU(t *testing.T) { runOps(t, openGPU(t)) }

func TestForwardGoldensGPU(t *testing.T) { runGoldens(t, openGPU(t), nil) }

func BenchmarkForwardGPU(b *testing.B) {
	be, err := OpenSystem(context.Background())
	if err != nil {
		b.Fatalf("metal: %v", err)
	}
	defer be.Close()
	for _, checkpoint := range []string{"tiny-en", "real-en"} {
		b.Run(checkpoint, func(b *testing.B) { benchForward(b, be, checkpoint, "email") })
	}
}
