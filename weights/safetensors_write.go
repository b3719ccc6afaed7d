package weights

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
)

// TensorHeader declares one tensor to write.
type TensorHeader struct {
	Name  string
	DType DType
	Shape []int
}

// Len is the element count of the declared shape.
func (h TensorHeader) Len() int {
	n := 1
	for _, d := range h.Shape {
		n *= d
	}
	return n
}

// headerAlign is the alignment of the data section start. Writers may pad
// the JSON header with spaces (it stays valid JSON); with the data on a
// 64-byte boundary every tensor of a mapped file starts at an offset that
// is a multiple of its element size, so a GPU buffer can bind it in place.
const headerAlign = 64

// WriteSafetensors streams a safetensors file: the header, then each
// tensor's bytes as written by fill(i, w), i indexing tensors. Like the
// reference serializer, the data is laid out by element size, widest
// first (stable otherwise), so that every tensor starts at a multiple of
// its element size. fill must write exactly Len()·DType.Size()
// bytes; nothing is buffered beyond one call, so large checkpoints are
// never held in memory twice.
func WriteSafetensors(w io.Writer, metadata map[string]string, tensors []TensorHeader, fill func(i int, w io.Writer) error) error {
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	first := true
	writeKey := func(key string) {
		if !first {
			hdr.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(key)
		hdr.Write(k)
		hdr.WriteByte(':')
	}
	if len(metadata) > 0 {
		writeKey("__metadata__")
		hdr.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(metadata)) {
			if i > 0 {
				hdr.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			vb, _ := json.Marshal(metadata[k])
			hdr.Write(kb)
			hdr.WriteByte(':')
			hdr.Write(vb)
		}
		hdr.WriteByte('}')
	}
	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return tensors[b].DType.Size() - tensors[a].DType.Size() })
	seen := map[string]bool{}
	var offset uint64
	for _, i := range order {
		t := tensors[i]
		if seen[t.Name] || t.Name == "__metadata__" {
			return fmt.Errorf("weights: writing safetensors: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		if t.DType.Size() == 0 {
			return fmt.Errorf("weights: writing tensor %q: %w %v", t.Name, ErrUnsupportedDType, t.DType)
		}
		size := uint64(t.Len() * t.DType.Size())
		writeKey(t.Name)
		shape, _ := json.Marshal(t.Shape)
		if t.Shape == nil {
			shape = []byte("[]")
		}
		fmt.Fprintf(&hdr, `{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.DType.String(), shape, offset, offset+size)
		offset += size
	}
	hdr.WriteByte('}')
	for (8+hdr.Len())%headerAlign != 0 {
		hdr.WriteByte(' ')
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(hdr.Len()))
	if _, err := w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr.Bytes()); err != nil {
		return err
	}
	for _, i := range order {
		t := tensors[i]
		cw := &countingWriter{w: w}
		if err := fill(i, cw); err != nil {
			return fmt.Errorf("weights: writing tensor %q: %w", t.Name, err)
		}
		if want := int64(t.Len() * t.DType.Size()); cw.n != want {
			return fmt.Errorf("weights: writing tensor %q: wrote %d bytes, want %d", t.Name, cw.n, want)
		}
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// EncodeFloat32 appends values in the given dtype, little-endian
// (round-to-nearest-even for F16 and BF16).
func EncodeFloat32(dst []byte, values []float32, dtype DType) []byte {
	for _, v := range values {
		switch dtype {
		case F32:
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		case F16:
			dst = binary.LittleEndian.AppendUint16(dst, Float32ToFloat16(v))
		case BF16:
			dst = binary.LittleEndian.AppendUint16(dst, Float32ToBFloat16(v))
		}
	}
	return dst
}
