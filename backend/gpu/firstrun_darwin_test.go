package gpu

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/backendtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

// The backend conformance suite on the Apple GPU: every op against its
// float64 reference and every contract rejection.
func TestConformanceGPU(t *testing.T) {
	backendtest.Run(t, func() (backend.Backend, error) { return OpenSystem(context.Background()) })
}

// TestRSSAfterLoadGPU loads every weight of a checkpoint onto the GPU the
// way laya.Load does (backend.Loader over the mmap'd file) and logs one
// line for scripts/maccheck/mac-check.sh: the backend's MappingReport and the peak
// resident set before and after. Run it alone in its process (-run
// TestRSSAfterLoadGPU): ru_maxrss is a peak. With zero-copy wrapping the
// growth stays near the pages the loader touches; a silent copy would add
// the whole weights file. The checkpoint is LAYA_RSS_CHECKPOINT (a
// directory) or the bundled real-en. A fallback copy fails the test.
func TestRSSAfterLoadGPU(t *testing.T) {
	dir := os.Getenv("LAYA_RSS_CHECKPOINT")
	if dir == "" {
		dir = oracletest.Checkpoint("real-en")
	}
	before := maxRSS(t)
	be := openGPU(t)
	ckpt, err := weights.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ckpt.Close() })
	t.Cleanup(func() { be.Close() }) // before the checkpoint: it reads the mapping
	loader := backend.NewLoader(be, ckpt)
	for _, spec := range ckpt.Expected() {
		switch len(spec.Shape) {
		case 1:
			loader.Vector(spec.Name, spec.Shape[0])
		case 2:
			loader.Matrix(spec.Name, spec.Shape[0], spec.Shape[1])
		}
	}
	if err := loader.Err(); err != nil {
		t.Fatal(err)
	}
	after := maxRSS(t)
	file := int64(0)
	if st, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		file = st.Size()
	}
	rep := be.Mapping()
	t.Logf("rss-after-load checkpoint=%s weights-file=%d in-place=%d copied=%d fallback=%d max-rss-before=%d max-rss-after=%d growth=%d",
		filepath.Base(dir), file, rep.InPlaceBytes, rep.CopiedBytes, rep.FallbackBytes, before, after, after-before)
	t.Log(rep.String())
	if rep.FallbackBytes != 0 {
		t.Errorf("weights were copied instead of mapped: %v", rep)
	}
}

// maxRSS is the process's peak resident set in bytes (darwin reports
// ru_maxrss in bytes, Linux in KiB).
func maxRSS(t *testing.T) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Maxrss
}
