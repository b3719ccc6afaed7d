package backend

import (
	"errors"
	"fmt"
	"slices"

	"github.com/laya-metal/laya/weights"
)

// ErrMissingWeight reports a weight the model needs that the checkpoint
// does not have, or has with another shape.
var ErrMissingWeight = errors.New("backend: missing or misshapen weight")

// Loader uploads a checkpoint's weights by canonical (upstream) name and
// collects every problem, so model constructors read as a list of weights
// and report all bad ones at once.
type Loader struct {
	be   Backend
	ckpt *weights.Checkpoint
	errs []error
}

// NewLoader returns a loader of ckpt's weights onto be.
func NewLoader(be Backend, ckpt *weights.Checkpoint) *Loader {
	return &Loader{be: be, ckpt: ckpt}
}

// Matrix uploads the weight name, which must have shape [rows, cols]. On a
// problem it records an error and returns nil.
func (l *Loader) Matrix(name string, rows, cols int) Tensor {
	return l.load(name, []int{rows, cols}, rows, cols)
}

// Vector uploads the weight name, which must have shape [n], as [1, n].
func (l *Loader) Vector(name string, n int) Tensor {
	return l.load(name, []int{n}, 1, n)
}

func (l *Loader) load(name string, want []int, rows, cols int) Tensor {
	src := l.ckpt.Tensor(name)
	if src == nil {
		l.errs = append(l.errs, fmt.Errorf("%w: %s not in the checkpoint", ErrMissingWeight, name))
		return nil
	}
	if !slices.Equal(src.Shape, want) {
		l.errs = append(l.errs, fmt.Errorf("%w: %s has shape %v, the model needs %v", ErrMissingWeight, name, src.Shape, want))
		return nil
	}
	t, err := l.upload(name, src, rows, cols)
	if err != nil {
		l.errs = append(l.errs, err)
		return nil
	}
	return t
}

// Err joins every problem met so far (nil when none).
func (l *Loader) Err() error { return errors.Join(l.errs...) }

// upload hands src to the backend: in place when the backend can use the
// checkpoint's file mapping (MappedUploader), else as a copy of its bytes.
func (l *Loader) upload(name string, src *weights.Tensor, rows, cols int) (Tensor, error) {
	mu, ok := l.be.(MappedUploader)
	if ok && l.ckpt.Weights != nil && len(src.Raw) > 0 {
		mapping := l.ckpt.Weights.Mapping()
		off := int(src.Offset)
		// Raw is a view of the mapping at Offset (weights.Tensor); checking
		// it costs nothing and keeps a file read into memory, or a tensor
		// made some other way, on the copying path.
		if off >= 0 && off+len(src.Raw) <= len(mapping) && &mapping[off] == &src.Raw[0] {
			return mu.UploadMapped(name, src.DType, rows, cols, mapping, off)
		}
	}
	return l.be.Upload(name, src.DType, rows, cols, src.Raw)
}
