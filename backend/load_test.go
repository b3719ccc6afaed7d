package backend_test

import (
	"path/filepath"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/weights"
)

// mappedRecorder is a CPU backend that also accepts mapped uploads and
// records how each weight arrived.
type mappedRecorder struct {
	backend.Backend
	mapped map[string]int // name → offset given to UploadMapped
	copied map[string]bool
}

func (r *mappedRecorder) Upload(name string, dtype backend.DType, rows, cols int, raw []byte) (backend.Tensor, error) {
	r.copied[name] = true
	return r.Backend.Upload(name, dtype, rows, cols, raw)
}

func (r *mappedRecorder) UploadMapped(name string, dtype backend.DType, rows, cols int, mapping []byte, offset int) (backend.Tensor, error) {
	r.mapped[name] = offset
	return r.Backend.Upload(name, dtype, rows, cols, mapping[offset:offset+rows*cols*dtype.Size()])
}

// Loader hands a mapped checkpoint's weights to a MappedUploader by file
// offset (where weights.Tensor.Raw lies in the mapping), and to Upload
// otherwise.
func TestLoaderUsesMapping(t *testing.T) {
	ckpt, err := weights.LoadCheckpoint(filepath.Join("..", "testdata", "oracle", "checkpoints", "tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	mapping := ckpt.Weights.Mapping()
	if mapping == nil {
		t.Skip("checkpoints are not mmap'd on this platform")
	}
	rec := &mappedRecorder{Backend: cpu.New(), mapped: map[string]int{}, copied: map[string]bool{}}
	plain := cpu.New()
	for _, be := range []backend.Backend{rec, plain} {
		l := backend.NewLoader(be, ckpt)
		for _, spec := range ckpt.Expected() {
			if len(spec.Shape) == 2 {
				l.Matrix(spec.Name, spec.Shape[0], spec.Shape[1])
			}
		}
		if err := l.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.copied) != 0 || len(rec.mapped) == 0 {
		t.Fatalf("%d uploads by copy, %d mapped; want all mapped", len(rec.copied), len(rec.mapped))
	}
	for name, off := range rec.mapped {
		src := ckpt.Tensor(name)
		if off != int(src.Offset) || &mapping[off] != &src.Raw[0] {
			t.Errorf("%s: offset %d, want %d (where Raw lies)", name, off, src.Offset)
		}
	}
}
