package forwardtest

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// Scaled is a backend that uploads the weight named Weight times Factor, as
// float32, and is otherwise Backend: a checkpoint's weights with one
// tensor grown, without writing the checkpoint again (a norm weight scaled
// up makes activations past fp16's 65504, as a checkpoint with massive
// activations has them). It is a backend.Refiner and a backend.Widener
// where Backend is; with NoWide its WideStream is nil, so the rows a
// narrow precision overflows stay non-finite. Its uploads are copies (it
// is no backend.MappedUploader).
type Scaled struct {
	backend.Backend
	Weight string
	Factor float32
	NoWide bool
	scaled bool
}

// Upload scales the weight named Weight.
func (s *Scaled) Upload(name string, dtype backend.DType, rows, cols int, raw []byte) (backend.Tensor, error) {
	if name != s.Weight {
		return s.Backend.Upload(name, dtype, rows, cols, raw)
	}
	v := make([]float32, rows*cols)
	if err := weights.DecodeFloat32(v, raw, dtype); err != nil {
		return nil, fmt.Errorf("scaled %s: %w", name, err)
	}
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x*s.Factor))
	}
	s.scaled = true
	return s.Backend.Upload(name, backend.F32, rows, cols, out)
}

// Uploaded reports whether the weight named Weight was uploaded (scaled).
func (s *Scaled) Uploaded() bool { return s.scaled }

// ReducedStream is Backend's (backend.Refiner), or nil.
func (s *Scaled) ReducedStream(tokens int) (backend.Stream, float32) {
	if r, ok := s.Backend.(backend.Refiner); ok {
		return r.ReducedStream(tokens)
	}
	return nil, 0
}

// WideStream is Backend's (backend.Widener), or nil, and nil with NoWide.
func (s *Scaled) WideStream() backend.Stream {
	if w, ok := s.Backend.(backend.Widener); ok && !s.NoWide {
		return w.WideStream()
	}
	return nil
}
