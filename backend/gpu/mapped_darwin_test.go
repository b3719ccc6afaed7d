package gpu

import (
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/metal"
)

// Mapped weights alias the checkpoint's file mapping through the real
// device: Metal's own contents pointer of the wrapped buffer is the
// mapping's first byte, and the backend reports no fallback copy
// (scripts/maccheck/mac-check.sh also reports the RSS after loading).
func TestLoaderWrapsMappingInPlaceGPU(t *testing.T) {
	runLoaderWrapsMapping(t, openGPU, func(b metal.Buffer) unsafe.Pointer {
		c, ok := b.(interface{ Contents() unsafe.Pointer })
		if !ok {
			t.Fatalf("buffer %T does not report Metal's contents pointer", b)
		}
		return c.Contents()
	})
}
