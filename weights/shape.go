package weights

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// ShapeCheckpoint returns a checkpoint of the tensors the spec implies, all
// zero, with nothing generated: the data section is a sparse temporary
// file (removed at once; the mapping keeps it alive on Linux and macOS), so
// a full-size model costs no disk and almost no memory. It is meant for
// work plans that only count a forward pass's operations (laya-bench
// --plan): the configs are the spec's, the values meaningless. Close it
// when done. No tokenizer is attached.
func (s SyntheticSpec) ShapeCheckpoint() (*Checkpoint, error) {
	v := s
	if v.TokenizerDir == "" {
		v.TokenizerDir = "-" // no tokenizer is attached: nothing is copied
	}
	if err := v.validate(); err != nil {
		return nil, err
	}
	enc, head := s.configs()
	specs := ExpectedTensors(enc, head)
	dtype := s.dtype()
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	offset := 0
	for i, t := range specs {
		n := dtype.Size()
		for _, d := range t.Shape {
			n *= d
		}
		if i > 0 {
			hdr.WriteByte(',')
		}
		name, _ := json.Marshal(t.Name)
		shape, _ := json.Marshal(t.Shape)
		fmt.Fprintf(&hdr, `%s:{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}`, name, dtype, shape, offset, offset+n)
		offset += n
	}
	hdr.WriteByte('}')
	// Pad with spaces so the data starts on a 64-byte boundary, as the
	// writer does (every tensor aligned for in-place binding).
	for (8+hdr.Len())%headerAlign != 0 {
		hdr.WriteByte(' ')
	}
	f, err := os.CreateTemp("", "laya-shape-*.safetensors")
	if err != nil {
		return nil, fmt.Errorf("weights: shape checkpoint: %w", err)
	}
	path := f.Name()
	defer os.Remove(path)
	var size [8]byte
	n := uint64(hdr.Len())
	for i := range size {
		size[i] = byte(n >> (8 * i))
	}
	_, err = f.Write(size[:])
	if err == nil {
		_, err = f.Write(hdr.Bytes())
	}
	if err == nil {
		err = f.Truncate(int64(8 + hdr.Len() + offset))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("weights: shape checkpoint: %w", err)
	}
	st, err := OpenSafetensors(path)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{
		Agent:   AgentConfig{EncoderID: s.Name, HeadLayers: s.HeadLayers, MaxLen: s.MaxLen, HeadMaxLen: s.HeadMaxLen, ActCosts: s.actCosts(), NAct: len(s.actCosts()) + 1},
		Encoder: enc, Head: head, NameScheme: SchemeUpstream, Weights: st, expected: specs,
	}
	var p problems
	c.canonicalize(&p)
	return c, nil
}

// Configs returns the encoder and decision-head configurations the spec's
// checkpoint would load as.
func (s SyntheticSpec) Configs() (EncoderConfig, HeadConfig) { return s.configs() }
