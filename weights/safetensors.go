package weights

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderSize is the largest JSON header accepted, the limit of the
// reference implementation (safetensors' MAX_HEADER_SIZE = 100_000_000):
// a larger length field is treated as hostile before anything is read.
const MaxHeaderSize = 100_000_000

// Tensor is one tensor of a safetensors file. Raw is a zero-copy view into
// the file's mapping: it stays valid until the owning Safetensors is closed.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Raw   []byte // little-endian elements, len = Len()*DType.Size()
	// Offset is the position of Raw within the file (and so within
	// Mapping()): 8 + header length + data_offsets[0]. The Metal layer
	// binds a no-copy buffer over the mapping at this offset.
	Offset int64
}

// Len is the number of elements (the product of Shape; 1 for a scalar).
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Float32 returns the elements converted to a new float32 slice.
func (t *Tensor) Float32() []float32 {
	dst := make([]float32, t.Len())
	convertToFloat32(dst, t.Raw, t.DType)
	return dst
}

// Float32Into converts the elements into dst, which must hold exactly Len()
// elements.
func (t *Tensor) Float32Into(dst []float32) error {
	if len(dst) != t.Len() {
		return fmt.Errorf("weights: tensor %q has %d elements, destination holds %d", t.Name, t.Len(), len(dst))
	}
	if len(t.Raw) != len(dst)*t.DType.Size() {
		return fmt.Errorf("weights: tensor %q: %w: %d bytes for %d %s elements", t.Name, ErrInvalidSafetensors, len(t.Raw), len(dst), t.DType)
	}
	convertToFloat32(dst, t.Raw, t.DType)
	return nil
}

// Safetensors is an open safetensors file.
type Safetensors struct {
	Path       string
	Metadata   map[string]string // the __metadata__ object (nil when absent)
	Tensors    []*Tensor         // in file (data offset) order
	FileSize   int64
	HeaderSize int64 // length of the JSON header; data starts at 8+HeaderSize

	byName map[string]*Tensor
	data   []byte // mapping (page-rounded) or the file read into memory
	mapped bool
	closed bool
}

// OpenSafetensors maps path read-only and validates its header. Every
// tensor's bytes are checked to lie inside the data section, without gaps
// or overlaps, with exactly prod(shape)·dtype-size bytes.
func OpenSafetensors(path string) (*Safetensors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("weights: %s: %w: not a regular file", path, ErrInvalidSafetensors)
	}
	// Check the length prefix before mapping so a short or empty file
	// fails with a clear message (mmap of length 0 is an error anyway).
	if size < 8 {
		return nil, fmt.Errorf("weights: %s: %w: file is %d bytes, shorter than the 8-byte header length", path, ErrInvalidSafetensors, size)
	}
	var prefix [8]byte
	if _, err := io.ReadFull(f, prefix[:]); err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	if err := checkHeaderLength(binary.LittleEndian.Uint64(prefix[:]), uint64(size)); err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	data, mapped, err := mapFile(f, size)
	if err != nil {
		return nil, fmt.Errorf("weights: mapping %s: %w", path, err)
	}
	s, err := parseSafetensors(path, data[:size])
	if err != nil {
		if mapped {
			unmapFile(data)
		}
		return nil, err
	}
	s.data, s.mapped = data, mapped
	return s, nil
}

// ParseSafetensors validates an in-memory safetensors file; the tensors
// view buf, which must stay unchanged while they are used.
func ParseSafetensors(buf []byte) (*Safetensors, error) {
	s, err := parseSafetensors("<memory>", buf)
	if err != nil {
		return nil, err
	}
	s.data = buf
	return s, nil
}

// Tensor returns the tensor stored under name.
func (s *Safetensors) Tensor(name string) (*Tensor, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Mapping returns the whole read-only mapping: page-aligned, its length
// rounded up to the page size (bytes past FileSize read as zero). It is nil
// when the file was read into memory rather than mapped.
func (s *Safetensors) Mapping() []byte {
	if !s.mapped || s.closed {
		return nil
	}
	return s.data
}

// Close releases the mapping. Tensor.Raw slices must not be used afterwards.
func (s *Safetensors) Close() error {
	if s == nil || s.closed {
		return nil
	}
	s.closed = true
	data := s.data
	s.data = nil
	if s.mapped {
		if err := unmapFile(data); err != nil {
			return fmt.Errorf("weights: unmapping %s: %w", s.Path, err)
		}
	}
	return nil
}

func checkHeaderLength(n, fileSize uint64) error {
	if n > MaxHeaderSize {
		return fmt.Errorf("%w: header length %d exceeds the %d-byte limit", ErrInvalidSafetensors, n, MaxHeaderSize)
	}
	if n < 2 {
		return fmt.Errorf("%w: header length %d is too short for a JSON object", ErrInvalidSafetensors, n)
	}
	if n > fileSize-8 {
		return fmt.Errorf("%w: header length %d runs past the end of the %d-byte file", ErrInvalidSafetensors, n, fileSize)
	}
	return nil
}

// headerEntry is one tensor as declared by the header.
type headerEntry struct {
	name       string
	dtype      DType
	shape      []int
	begin, end uint64
}

func parseSafetensors(path string, buf []byte) (*Safetensors, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("weights: %s: %w: %s", path, ErrInvalidSafetensors, fmt.Sprintf(format, args...))
	}
	if len(buf) < 8 {
		return nil, fail("file is %d bytes, shorter than the 8-byte header length", len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if err := checkHeaderLength(n, uint64(len(buf))); err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	header := buf[8 : 8+n]
	meta, entries, err := parseHeader(header)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	dataStart := 8 + n
	dataLen := uint64(len(buf)) - dataStart

	// Like the reference reader: sorted by offset, the tensors must tile the
	// data section exactly, which rules out overlaps, gaps and trailing bytes.
	slices.SortStableFunc(entries, func(a, b headerEntry) int {
		if a.begin != b.begin {
			if a.begin < b.begin {
				return -1
			}
			return 1
		}
		if a.end < b.end {
			return -1
		} else if a.end > b.end {
			return 1
		}
		return 0
	})
	s := &Safetensors{
		Path:       path,
		Metadata:   meta,
		FileSize:   int64(len(buf)),
		HeaderSize: int64(n),
		Tensors:    make([]*Tensor, 0, len(entries)),
		byName:     make(map[string]*Tensor, len(entries)),
	}
	var next uint64
	for i, e := range entries {
		if e.end > dataLen {
			return nil, fail("tensor %q: data_offsets [%d, %d] run past the %d-byte data section", e.name, e.begin, e.end, dataLen)
		}
		if e.begin != next {
			if e.begin < next {
				return nil, fail("tensor %q: data_offsets [%d, %d] overlap tensor %q, which ends at %d", e.name, e.begin, e.end, entries[i-1].name, next)
			}
			return nil, fail("tensor %q: data_offsets [%d, %d] leave a gap after byte %d", e.name, e.begin, e.end, next)
		}
		next = e.end
		t := &Tensor{
			Name:   e.name,
			DType:  e.dtype,
			Shape:  e.shape,
			Raw:    buf[dataStart+e.begin : dataStart+e.end : dataStart+e.end],
			Offset: int64(dataStart + e.begin),
		}
		s.Tensors = append(s.Tensors, t)
		s.byName[e.name] = t
	}
	if next != dataLen {
		return nil, fail("the data section has %d bytes but the tensors cover %d", dataLen, next)
	}
	return s, nil
}

// parseHeader validates a safetensors JSON header (the bytes after the
// length prefix) and returns its metadata and tensor entries, each entry
// already checked on its own (dtype, shape, offsets in order, byte length =
// prod(shape)·size). Checks that need the file (bounds, tiling) are left to
// the caller. Duplicate keys are an error at every level: encoding/json
// would silently keep the last one, so the object is walked token by token.
func parseHeader(header []byte) (map[string]string, []headerEntry, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: header: %s", ErrInvalidSafetensors, fmt.Sprintf(format, args...))
	}
	if !utf8.Valid(header) {
		return nil, nil, fail("not valid UTF-8")
	}
	trimmed := bytes.TrimLeft(header, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, nil, fail("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // '{'
		return nil, nil, fail("invalid JSON: %v", err)
	}
	var (
		meta    map[string]string
		entries []headerEntry
		seen    = map[string]bool{}
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fail("invalid JSON: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, fail("invalid JSON: key %v is not a string", tok)
		}
		if seen[name] {
			return nil, nil, fail("duplicate key %q", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fail("invalid JSON in %q: %v", name, err)
		}
		if name == "__metadata__" {
			meta, err = parseMetadata(raw)
			if err != nil {
				return nil, nil, fail("__metadata__: %v", err)
			}
			continue
		}
		e, err := parseEntry(name, raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: header: tensor %q: %w", ErrInvalidSafetensors, name, err)
		}
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, nil, fail("invalid JSON: %v", err)
	}
	// Only whitespace (writers pad with spaces for alignment) may follow.
	if rest, _ := io.ReadAll(dec.Buffered()); len(bytes.TrimSpace(rest)) != 0 {
		return nil, nil, fail("trailing data after the JSON object")
	}
	if tok, err := dec.Token(); err != io.EOF {
		return nil, nil, fail("trailing data after the JSON object (%v)", tok)
	}
	return meta, entries, nil
}

// objectFields walks one JSON object, calling field for every key and
// rejecting duplicates.
func objectFields(raw []byte, field func(key string, value json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("expected a JSON object, got %s", truncate(raw))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // inside an object the decoder only yields string keys
		if seen[key] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		if err := field(key, value); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	meta := map[string]string{}
	err := objectFields(raw, func(key string, value json.RawMessage) error {
		var s string
		if err := json.Unmarshal(value, &s); err != nil || string(value) == "null" {
			return fmt.Errorf("value of %q is not a string", key)
		}
		meta[key] = s
		return nil
	})
	return meta, err
}

func parseEntry(name string, raw json.RawMessage) (headerEntry, error) {
	e := headerEntry{name: name}
	var haveDType, haveShape, haveOffsets bool
	err := objectFields(raw, func(key string, value json.RawMessage) error {
		switch key {
		case "dtype":
			var s string
			if err := json.Unmarshal(value, &s); err != nil || string(value) == "null" {
				return fmt.Errorf("dtype %s is not a string", truncate(value))
			}
			d, err := ParseDType(s)
			if err != nil {
				return err
			}
			e.dtype, haveDType = d, true
		case "shape":
			dims, err := parseUints(value)
			if err != nil {
				return fmt.Errorf("shape: %v", err)
			}
			e.shape = make([]int, len(dims))
			for i, d := range dims {
				if d > math.MaxInt32*uint64(1<<20) { // far beyond any real tensor; keeps int math safe
					return fmt.Errorf("shape dimension %d is too large", d)
				}
				e.shape[i] = int(d)
			}
			haveShape = true
		case "data_offsets":
			offs, err := parseUints(value)
			if err != nil {
				return fmt.Errorf("data_offsets: %v", err)
			}
			if len(offs) != 2 {
				return fmt.Errorf("data_offsets has %d entries, want 2", len(offs))
			}
			e.begin, e.end = offs[0], offs[1]
			haveOffsets = true
		}
		// Other keys are ignored, as by the reference reader.
		return nil
	})
	if err != nil {
		return e, err
	}
	switch {
	case !haveDType:
		return e, errors.New("missing dtype")
	case !haveShape:
		return e, errors.New("missing shape")
	case !haveOffsets:
		return e, errors.New("missing data_offsets")
	}
	if e.end < e.begin {
		return e, fmt.Errorf("data_offsets [%d, %d] are reversed", e.begin, e.end)
	}
	numel := uint64(1)
	for _, d := range e.shape {
		hi, lo := bits.Mul64(numel, uint64(d))
		if hi != 0 || lo > math.MaxInt64/8 {
			return e, fmt.Errorf("shape %v overflows", e.shape)
		}
		numel = lo
	}
	if want := numel * uint64(e.dtype.Size()); e.end-e.begin != want {
		return e, fmt.Errorf("shape %v of %s needs %d bytes, data_offsets [%d, %d] hold %d", e.shape, e.dtype, want, e.begin, e.end, e.end-e.begin)
	}
	return e, nil
}

// parseUints reads a JSON array of non-negative integers (no fractions, no
// exponents, no signs: what the reference reader's usize fields accept).
func parseUints(raw json.RawMessage) ([]uint64, error) {
	// Walk tokens rather than decode into []json.Number: that would accept
	// numeric strings such as "5".
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	notArray := fmt.Errorf("%s is not an array of integers", truncate(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, notArray
	}
	var out []uint64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notArray
		}
		n, ok := tok.(json.Number)
		if !ok {
			return nil, notArray
		}
		v, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not a non-negative integer", truncate([]byte(n)))
		}
		out = append(out, v)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, notArray
	}
	return out, nil
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
