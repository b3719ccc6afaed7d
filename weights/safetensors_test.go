package weights

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// rawFile assembles a safetensors file from a literal header and data, so
// that hostile inputs can be built byte by byte.
func rawFile(header string, data []byte) []byte {
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	buf = append(buf, header...)
	return append(buf, data...)
}

func writeTemp(t *testing.T, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenSafetensorsHostile(t *testing.T) {
	hugeLen := binary.LittleEndian.AppendUint64(nil, 200_000_000)
	maxLen := binary.LittleEndian.AppendUint64(nil, 1<<63)
	tests := []struct {
		name     string
		file     []byte
		sentinel error
		mention  []string // substrings the error must contain
	}{
		{"empty file", nil, ErrInvalidSafetensors, []string{"shorter than"}},
		{"seven bytes", []byte{1, 2, 3, 4, 5, 6, 7}, ErrInvalidSafetensors, []string{"shorter than"}},
		{"header length past EOF", append(binary.LittleEndian.AppendUint64(nil, 100), "{}"...), ErrInvalidSafetensors, []string{"past the end"}},
		{"header length over limit", append(hugeLen, "{}"...), ErrInvalidSafetensors, []string{"limit"}},
		{"header length 2^63", append(maxLen, "{}"...), ErrInvalidSafetensors, []string{"limit"}},
		{"header length zero", binary.LittleEndian.AppendUint64(nil, 0), ErrInvalidSafetensors, []string{"too short"}},
		{"truncated JSON", rawFile(`{"a":`, nil), ErrInvalidSafetensors, []string{"invalid JSON"}},
		{"not an object", rawFile(`[1, 2]`, nil), ErrInvalidSafetensors, []string{"not a JSON object"}},
		{"trailing garbage", rawFile(`{} x`, nil), ErrInvalidSafetensors, []string{"trailing"}},
		{"second object", rawFile(`{}{}`, nil), ErrInvalidSafetensors, []string{"trailing"}},
		{"invalid UTF-8", rawFile("{\"\xff\":1}", nil), ErrInvalidSafetensors, []string{"UTF-8"}},
		{"duplicate tensor", rawFile(`{"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"w":{"dtype":"F16","shape":[1],"data_offsets":[2,4]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`duplicate key "w"`}},
		{"duplicate field", rawFile(`{"w":{"dtype":"F16","dtype":"F32","shape":[1],"data_offsets":[0,2]}}`, make([]byte, 2)), ErrInvalidSafetensors, []string{`"w"`, `duplicate key "dtype"`}},
		{"duplicate metadata key", rawFile(`{"__metadata__":{"a":"1","a":"2"}}`, nil), ErrInvalidSafetensors, []string{"__metadata__", "duplicate"}},
		{"metadata not string", rawFile(`{"__metadata__":{"format":1}}`, nil), ErrInvalidSafetensors, []string{"__metadata__", "format"}},
		{"unknown dtype", rawFile(`{"emb":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2)), ErrUnsupportedDType, []string{`"emb"`, "F8_E4M3"}},
		{"dtype not a string", rawFile(`{"emb":{"dtype":7,"shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "dtype"}},
		{"missing dtype", rawFile(`{"emb":{"shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "missing dtype"}},
		{"missing offsets", rawFile(`{"emb":{"dtype":"F16","shape":[2]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "data_offsets"}},
		{"negative dim", rawFile(`{"emb":{"dtype":"F16","shape":[-2],"data_offsets":[0,4]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "-2"}},
		{"fractional dim", rawFile(`{"emb":{"dtype":"F16","shape":[2.0],"data_offsets":[0,4]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "2.0"}},
		{"string dim", rawFile(`{"emb":{"dtype":"F16","shape":["2"],"data_offsets":[0,4]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "shape"}},
		{"shape overflow", rawFile(`{"emb":{"dtype":"F16","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "overflow"}},
		{"three offsets", rawFile(`{"emb":{"dtype":"F16","shape":[2],"data_offsets":[0,2,4]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "want 2"}},
		{"reversed offsets", rawFile(`{"emb":{"dtype":"F16","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "reversed"}},
		{"size mismatch", rawFile(`{"emb":{"dtype":"F32","shape":[2,3],"data_offsets":[0,12]}}`, make([]byte, 12)), ErrInvalidSafetensors, []string{`"emb"`, "needs 24 bytes"}},
		{"offsets past data", rawFile(`{"emb":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, make([]byte, 4)), ErrInvalidSafetensors, []string{`"emb"`, "past"}},
		{"overlap", rawFile(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[2],"data_offsets":[2,6]}}`, make([]byte, 6)), ErrInvalidSafetensors, []string{`"b"`, "overlap", `"a"`}},
		{"gap", rawFile(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"F16","shape":[1],"data_offsets":[4,6]}}`, make([]byte, 6)), ErrInvalidSafetensors, []string{`"b"`, "gap"}},
		{"unused trailing data", rawFile(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}}`, make([]byte, 6)), ErrInvalidSafetensors, []string{"cover 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "model.safetensors", tt.file)
			s, err := OpenSafetensors(path)
			if err == nil {
				s.Close()
				t.Fatal("OpenSafetensors succeeded on a hostile file")
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %q does not wrap %v", err, tt.sentinel)
			}
			for _, m := range append(tt.mention, path) {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			// The in-memory parser must agree.
			if _, err := ParseSafetensors(tt.file); err == nil {
				t.Error("ParseSafetensors succeeded on a hostile file")
			}
		})
	}
}

func TestOpenSafetensorsValid(t *testing.T) {
	tests := []struct {
		name    string
		file    []byte
		tensors map[string][]int
		meta    map[string]string
	}{
		{"empty header", rawFile(`{}`, nil), map[string][]int{}, nil},
		{"metadata only", rawFile(`{"__metadata__":{"format":"pt"}}`, nil), map[string][]int{}, map[string]string{"format": "pt"}},
		{"null metadata", rawFile(`{"__metadata__":null}`, nil), map[string][]int{}, nil},
		{"padded header, unknown keys ignored", rawFile(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4],"extra":[1,{"x":2}]}}    `, make([]byte, 4)), map[string][]int{"a": {2}}, nil},
		{"scalar and empty tensors", rawFile(`{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"e":{"dtype":"F16","shape":[0,5],"data_offsets":[4,4]}}`, make([]byte, 4)), map[string][]int{"s": {}, "e": {0, 5}}, nil},
		{"out of name order", rawFile(`{"b":{"dtype":"F16","shape":[1],"data_offsets":[2,4]},"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}}`, make([]byte, 4)), map[string][]int{"a": {1}, "b": {1}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := OpenSafetensors(writeTemp(t, "m.safetensors", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if len(s.Tensors) != len(tt.tensors) {
				t.Fatalf("got %d tensors, want %d", len(s.Tensors), len(tt.tensors))
			}
			for name, shape := range tt.tensors {
				tensor, ok := s.Tensor(name)
				if !ok {
					t.Fatalf("tensor %q missing", name)
				}
				if len(tensor.Shape) != len(shape) || tensor.Len()*tensor.DType.Size() != len(tensor.Raw) {
					t.Errorf("tensor %q: shape %v raw %d bytes, want shape %v", name, tensor.Shape, len(tensor.Raw), shape)
				}
			}
			for k, v := range tt.meta {
				if s.Metadata[k] != v {
					t.Errorf("metadata[%q] = %q, want %q", k, s.Metadata[k], v)
				}
			}
			for i := 1; i < len(s.Tensors); i++ {
				if s.Tensors[i].Offset < s.Tensors[i-1].Offset {
					t.Errorf("tensors not in file order")
				}
			}
		})
	}
}

// The mapping is page-aligned, page-rounded, and every Raw view is the
// mapping itself at Offset (zero copy).
func TestMappingZeroCopy(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("mmap is used on linux and darwin only")
	}
	values := []float32{1, 2, 3, -4.5, 1024}
	var buf bytes.Buffer
	headers := []TensorHeader{{"a", F16, []int{5}}, {"b", F32, []int{5}}, {"c", BF16, []int{1, 5}}}
	err := WriteSafetensors(&buf, map[string]string{"format": "pt"}, headers, func(i int, w io.Writer) error {
		_, err := w.Write(EncodeFloat32(nil, values, headers[i].DType))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSafetensors(writeTemp(t, "m.safetensors", buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := s.Mapping()
	page := os.Getpagesize()
	if m == nil || uintptr(unsafe.Pointer(&m[0]))%uintptr(page) != 0 || len(m)%page != 0 || int64(len(m)) < s.FileSize {
		t.Fatalf("mapping of %d bytes is not page-aligned and page-rounded (file %d bytes)", len(m), s.FileSize)
	}
	if !bytes.Equal(m[:s.FileSize], buf.Bytes()) {
		t.Fatal("mapping does not hold the file")
	}
	for _, tensor := range s.Tensors {
		if &m[tensor.Offset] != &tensor.Raw[0] {
			t.Errorf("tensor %q: Raw is not the mapping at Offset %d", tensor.Name, tensor.Offset)
		}
		if tensor.Offset%int64(tensor.DType.Size()) != 0 {
			t.Errorf("tensor %q at offset %d is not aligned to its element size", tensor.Name, tensor.Offset)
		}
		got := tensor.Float32()
		for i, v := range values {
			if got[i] != v {
				t.Errorf("tensor %q[%d] = %v, want %v", tensor.Name, i, got[i], v)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Mapping() != nil {
		t.Error("Mapping after Close is not nil")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}}`))
	f.Add([]byte(`{"a":{"dtype":"BF16","shape":[],"data_offsets":[0,2]},"b":{"dtype":"F32","shape":[0],"data_offsets":[2,2]}}`))
	f.Add([]byte(`{"a":{"dtype":"F16","shape":[4294967296,4294967296],"data_offsets":[0,2]}}`))
	f.Add([]byte(`{"a":{"dtype":"F16","dtype":"F16","shape":[1],"data_offsets":[0,2]}}`))
	f.Fuzz(func(t *testing.T, header []byte) {
		meta, entries, err := parseHeader(header)
		if err != nil {
			if !errors.Is(err, ErrInvalidSafetensors) && !errors.Is(err, ErrUnsupportedDType) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		_ = meta
		for _, e := range entries {
			if e.end < e.begin || e.dtype.Size() == 0 {
				t.Fatalf("accepted entry %+v", e)
			}
		}
		// A whole file around the header, with a data section as long as
		// the largest end offset when that is small, must parse or fail
		// cleanly.
		var dataLen uint64
		for _, e := range entries {
			dataLen = max(dataLen, e.end)
		}
		if dataLen > 1<<16 {
			return
		}
		file := rawFile(string(header), make([]byte, dataLen))
		if s, err := ParseSafetensors(file); err == nil {
			for _, tensor := range s.Tensors {
				_ = tensor.Float32()
			}
		}
	})
}
