package gpu

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestSelfTestGPU opens the Apple GPU as the "metal" backend does, which
// runs the self-test, and logs one line for scripts/maccheck/mac-check.sh:
// the device, the canaries, the time the self-test took and the worst
// canary's share of its tolerance; then one line per canary.
func TestSelfTestGPU(t *testing.T) {
	be, err := OpenSystem(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	rep := be.SelfTest()
	worst, at := 0.0, ""
	var lines []string
	for _, r := range rep.Results {
		if r.Worst >= worst {
			worst, at = r.Worst, r.Kernel+" ("+r.Case+")"
		}
		lines = append(lines, fmt.Sprintf("  %-34s %-26s %.3g× tolerance", r.Kernel, r.Case, r.Worst))
	}
	t.Logf("self-test device=%q canaries=%d elapsed=%v worst=%.3g at %s", rep.Device, len(rep.Results), rep.Elapsed, worst, at)
	t.Logf("self-test canaries:\n%s", strings.Join(lines, "\n"))
}
