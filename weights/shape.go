package weights

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// ShapeCheckpoint returns a checkpoint of the tensors enc and agent imply,
// all zero and of dtype, with nothing generated: the data section is a
// sparse temporary file (removed at once; the mapping keeps it alive on
// Linux and macOS), so a full-size model costs no disk and almost no
// memory. It is meant for work plans that only count a forward pass's
// operations (laya-bench --plan; package weights/synthetic's
// Spec.ShapeCheckpoint): the configurations are real, the values
// meaningless. Close it when done. No tokenizer is attached.
func ShapeCheckpoint(enc EncoderConfig, agent AgentConfig, dtype DType) (*Checkpoint, error) {
	head, err := DeriveHead(enc, agent)
	if err != nil {
		return nil, fmt.Errorf("weights: shape checkpoint: %w", err)
	}
	if dtype.Size() == 0 {
		return nil, fmt.Errorf("weights: shape checkpoint: unknown dtype %v", dtype)
	}
	specs := ExpectedTensors(enc, head)
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
	c := &Checkpoint{Agent: agent, Encoder: enc, Head: head, NameScheme: SchemeUpstream, Weights: st, expected: specs}
	var p problems
	c.canonicalize(&p)
	return c, nil
}
