package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

// ErrClosed reports a use of a backend after Close.
var ErrClosed = errors.New("backend/gpu: backend closed")

// Backend is backend.Backend over a metal.Device. It is safe for concurrent
// use; each Stream is used by one goroutine at a time.
type Backend struct {
	name string
	dev  metal.Device
	kern *metal.Kernels
	// ownsDevice: Close closes dev too (the registry's backends).
	ownsDevice bool
	selfTest   metal.SelfTestReport // what Open checked (SelfTest)

	mu      sync.Mutex
	closed  bool
	buffers []metal.Buffer        // weights, widened copies, rope tables, wrapped mappings
	ropes   map[ropeKey]ropeTable // by (θ, Dh), grown on demand
	// mapped holds the wrapped ranges of each checkpoint mapping handed to
	// UploadMapped, by the mapping's first byte and length. Both: a closed
	// checkpoint's address range is reused by the next mmap, and a backend
	// shared by several agents must not hand a new checkpoint the buffers
	// that wrapped (or, on a copying device, copied) an old one
	// (ForgetMapping drops them when the old one closes).
	mapped map[mappingKey][]mappedChunk

	// mapping counts how mapped weights reached the device (Mapping).
	mapping MappingReport // under mu

	// deviceNanos sums the GPU time of every finished command buffer
	// (backend.Timer).
	arena arena // stream buffers kept for reuse (arena.go), under mu
	// spareLists are closed streams' lists for new streams (NewStream),
	// under mu.
	spareLists []*streamLists

	deviceNanos atomic.Int64
	profiling   atomic.Bool
	// splitTarget is the threadgroups the GPU runs at once, for split-K
	// (SetSplitK); 0: GEMMs are not split.
	splitTarget atomic.Int64
	opTimes     map[string]*backend.OpTime // under mu
}

// mappedChunk is one device buffer wrapping mapping[start:end) without a
// copy.
type mappedChunk struct {
	start, end int
	buf        metal.Buffer
}

type mappingKey struct {
	base *byte
	size int
}

func keyOf(mapping []byte) mappingKey { return mappingKey{unsafe.SliceData(mapping), len(mapping)} }

type ropeKey struct {
	theta   float64
	headDim int
}

type ropeTable struct {
	buf    metal.Buffer
	seqLen int // positions the table holds
}

// New returns a backend named name that runs on dev. The caller keeps
// ownership of dev: Close releases the backend's buffers, not the device.
func New(name string, dev metal.Device) *Backend {
	return &Backend{name: name, dev: dev, kern: metal.NewKernels(dev), ropes: map[ropeKey]ropeTable{},
		mapped: map[mappingKey][]mappedChunk{}, opTimes: map[string]*backend.OpTime{}}
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return b.name }

// Device is the device the backend runs on.
func (b *Backend) Device() metal.Device { return b.dev }

// tensor is the handle of a device buffer holding a row-major matrix.
// Stream tensors and float32 weights hold float32; fp16 weight matrices
// hold halves (elem ElemF16) and get a float32 twin the first time an
// operation other than Linear's weight or Gather's table reads them. A
// weight read in place from a checkpoint mapping starts off bytes into a
// buffer that wraps the mapping; the GEMM (weight, bias), the gather
// (table) and LayerNorm (weight, bias) bind such an offset, other kernels
// get a copy at offset 0 (see dense).
type tensor struct {
	rows, cols int
	buf        metal.Buffer
	off        int // byte offset of element 0 in buf
	elem       metal.Elem
	be         *Backend
	stream     *Stream // nil for weights
	// stale: buf came from the arena holding a former tensor's values;
	// zeroed before the first read (Stream.readable).
	stale bool

	wideOnce sync.Once
	wide     metal.Buffer
	wideErr  error

	denseOnce sync.Once
	denseBuf  metal.Buffer
	denseErr  error
}

func (t *tensor) Rows() int { return t.rows }
func (t *tensor) Cols() int { return t.cols }

// Upload implements backend.Backend: raw is copied into a device buffer
// (UploadMapped reads weights in place instead).
func (b *Backend) Upload(name string, dtype backend.DType, rows, cols int, raw []byte) (backend.Tensor, error) {
	if err := backend.CheckUpload(name, dtype, rows, cols, len(raw)); err != nil {
		return nil, fmt.Errorf("backend/gpu: %w", err)
	}
	n := rows * cols
	t := &tensor{rows: rows, cols: cols, be: b}
	var err error
	switch {
	case dtype == backend.F32:
		t.buf, err = b.newBuffer(raw)
	case dtype == backend.F16 && rows > 1:
		// Kept as stored: the GEMM and the gather read halves.
		t.elem = metal.ElemF16
		t.buf, err = b.newBuffer(raw)
	default:
		// bf16 (no kernel reads it) and fp16 vectors (norm weights and
		// biases, which the row kernels read as float) widen once here.
		wide := make([]float32, n)
		if err := weights.DecodeFloat32(wide, raw, dtype); err != nil {
			return nil, fmt.Errorf("backend/gpu: upload %s: %w", name, err)
		}
		t.buf, err = b.newBuffer(f32Bytes(wide))
	}
	if err != nil {
		return nil, fmt.Errorf("backend/gpu: upload %s: %w", name, err)
	}
	return t, nil
}

// UploadMapped implements backend.MappedUploader. float32 tensors of any
// shape and fp16 matrices (the GEMM weights and embedding tables, nearly
// all of a checkpoint's bytes, and the float32 norm weights and biases)
// are bound in place, inside a buffer that wraps the mapping: the GEMM,
// the gather and LayerNorm bind them at their offset. fp16 vectors (norm
// weights and biases, which the kernels read as float) widen to a float32
// copy, and bf16 is copied, as by Upload. The mapping must outlive the
// backend.
func (b *Backend) UploadMapped(name string, dtype backend.DType, rows, cols int, mapping []byte, offset int) (backend.Tensor, error) {
	size := rows * cols * dtype.Size()
	if err := backend.CheckUpload(name, dtype, rows, cols, size); err != nil {
		return nil, fmt.Errorf("backend/gpu: %w", err)
	}
	if offset < 0 || offset+size > len(mapping) {
		return nil, fmt.Errorf("backend/gpu: upload %s: %w: bytes [%d, %d) outside a mapping of %d", name, backend.ErrShape, offset, offset+size, len(mapping))
	}
	raw := mapping[offset : offset+size]
	// Metal wants a bound offset aligned to the element the kernel reads.
	inPlace := (dtype == backend.F32 || dtype == backend.F16 && rows > 1) && offset%dtype.Size() == 0
	if !inPlace {
		b.countMapped(0, size, 0, "")
		return b.Upload(name, dtype, rows, cols, raw)
	}
	chunk, err := b.chunk(mapping, offset, size)
	if err != nil {
		// The device took no range around the tensor: a copy still works,
		// but it is not silent (Mapping reports it).
		b.countMapped(0, 0, size, fmt.Sprintf("%s: %v", name, err))
		return b.Upload(name, dtype, rows, cols, raw)
	}
	b.countMapped(size, 0, 0, "")
	t := &tensor{rows: rows, cols: cols, be: b, buf: chunk.buf, off: offset - chunk.start}
	if dtype == backend.F16 {
		t.elem = metal.ElemF16
	}
	return t, nil
}

// pageSize is the granularity of no-copy wrapping: the mapping is aligned
// to the host's pages, and Metal's newBufferWithBytesNoCopy (and the
// emulator) want page-aligned base and length.
var pageSize = os.Getpagesize()

// chunk returns a wrapped range of mapping that holds [offset, offset+size).
// The first call for a mapping wraps all of it. A device whose buffers are
// smaller (Metal's maxBufferLength; a >1 GB checkpoint may exceed it)
// refuses that, and the range is then cut down, halving, from the tensor's
// page to the end of the mapping until the device takes it; later tensors
// reuse whichever range already holds them. Ranges may overlap by a page.
func (b *Backend) chunk(mapping []byte, offset, size int) (mappedChunk, error) {
	key := keyOf(mapping)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return mappedChunk{}, ErrClosed
	}
	for _, c := range b.mapped[key] {
		if c.start <= offset && offset+size <= c.end {
			return c, nil
		}
	}
	start, end := 0, len(mapping)
	if len(b.mapped[key]) > 0 {
		start = offset / pageSize * pageSize
	}
	need := min(len(mapping), (offset+size+pageSize-1)/pageSize*pageSize)
	for {
		buf, err := wrapNoCopy(b.dev, mapping[start:end])
		if err == nil {
			c := mappedChunk{start: start, end: end, buf: buf}
			b.mapped[key] = append(b.mapped[key], c)
			b.buffers = append(b.buffers, buf)
			return c, nil
		}
		if start != offset/pageSize*pageSize {
			// The whole mapping was too much: from here on, ranges start at
			// the tensor's page.
			start = offset / pageSize * pageSize
			continue
		}
		if end <= need {
			return mappedChunk{}, err
		}
		end = max(need, start+((end-start)/2+pageSize-1)/pageSize*pageSize)
	}
}

// ForgetMapping implements backend.MappingForgetter: it releases the
// buffers that wrap mapping, so that a checkpoint mapped later at the same
// address is wrapped afresh. The tensors uploaded from mapping must no
// longer be used.
func (b *Backend) ForgetMapping(mapping []byte) {
	key := keyOf(mapping)
	b.mu.Lock()
	defer b.mu.Unlock()
	chunks := b.mapped[key]
	if len(chunks) == 0 {
		return
	}
	delete(b.mapped, key)
	gone := make(map[metal.Buffer]bool, len(chunks))
	for _, c := range chunks {
		gone[c.buf] = true
		c.buf.Release()
	}
	kept := b.buffers[:0]
	for _, buf := range b.buffers {
		if !gone[buf] {
			kept = append(kept, buf)
		}
	}
	clear(b.buffers[len(kept):])
	b.buffers = kept
}

// wrapNoCopy wraps data in place or fails; it never hands back a copy. A
// device without NewBufferNoCopy (a wrapper in a test) is asked through
// NewBufferWithBytes, and a buffer that does not alias data is refused.
func wrapNoCopy(dev metal.Device, data []byte) (metal.Buffer, error) {
	if nc, ok := dev.(metal.NoCopyDevice); ok {
		return nc.NewBufferNoCopy(data)
	}
	buf, err := dev.NewBufferWithBytes(data)
	if err != nil {
		return nil, err
	}
	if host := buf.Bytes(); len(host) == 0 || unsafe.SliceData(host) != unsafe.SliceData(data) {
		buf.Release()
		return nil, fmt.Errorf("%w: device %T copied the memory", metal.ErrNoCopy, dev)
	}
	return buf, nil
}

// MappingReport says how the weights handed to UploadMapped reached the
// device: read in place from the file mapping, copied by design (bf16,
// fp16 vectors, misaligned offsets), or copied because the device would
// not wrap the mapping — the fallback that doubles a checkpoint's memory,
// which is reported rather than silent.
type MappingReport struct {
	InPlaceBytes  int64  // weights bound at their file offsets
	CopiedBytes   int64  // weights copied by design
	FallbackBytes int64  // weights copied because wrapping failed
	Fallback      string // the first failure: tensor and reason
}

func (r MappingReport) String() string {
	s := fmt.Sprintf("mapped weights: %d bytes in place, %d copied by design, %d copied as a fallback",
		r.InPlaceBytes, r.CopiedBytes, r.FallbackBytes)
	if r.Fallback != "" {
		s += " (first: " + r.Fallback + ")"
	}
	return s
}

// Mapping reports how the mapped weights uploaded so far reached the
// device.
func (b *Backend) Mapping() MappingReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mapping
}

func (b *Backend) countMapped(inPlace, copied, fallback int, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mapping.InPlaceBytes += int64(inPlace)
	b.mapping.CopiedBytes += int64(copied)
	b.mapping.FallbackBytes += int64(fallback)
	if why != "" && b.mapping.Fallback == "" {
		b.mapping.Fallback = why
	}
}

// newBuffer copies data into a new device buffer owned by the backend.
func (b *Backend) newBuffer(data []byte) (metal.Buffer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	buf, err := b.dev.NewBuffer(len(data))
	if err != nil {
		return nil, err
	}
	copy(buf.Bytes(), data)
	b.buffers = append(b.buffers, buf)
	return buf, nil
}

// f32Buffer returns a float32 buffer with t's values: its own, or for an
// fp16 weight a widened twin made once (weights never change, so the twin
// stays valid).
func (t *tensor) f32Buffer() (metal.Buffer, error) {
	if t.elem == metal.ElemF32 {
		return t.dense()
	}
	t.wideOnce.Do(func() {
		wide := make([]float32, t.rows*t.cols)
		if err := weights.DecodeFloat32(wide, t.bytes(), weights.F16); err != nil {
			t.wideErr = err
			return
		}
		t.wide, t.wideErr = t.be.newBuffer(f32Bytes(wide))
	})
	return t.wide, t.wideErr
}

// bytes is the host view of t's elements.
func (t *tensor) bytes() []byte {
	size := 4
	if t.elem == metal.ElemF16 {
		size = 2
	}
	return t.buf.Bytes()[t.off : t.off+size*t.rows*t.cols]
}

// dense returns a buffer holding t's elements from offset 0: its own, or
// for a weight inside a wrapped mapping a copy made once, for the kernels
// that bind no offset (an operand of Add, say: weights seldom are).
func (t *tensor) dense() (metal.Buffer, error) {
	if t.off == 0 {
		return t.buf, nil
	}
	t.denseOnce.Do(func() { t.denseBuf, t.denseErr = t.be.newBuffer(t.bytes()) })
	return t.denseBuf, t.denseErr
}

// rope returns a cos/sin table (backend.RopeTable) of at least seqLen
// positions. Tables only grow; a replaced one stays alive until Close, as a
// recorded command buffer may still read it.
func (b *Backend) rope(theta float64, headDim, seqLen int) (metal.Buffer, error) {
	key := ropeKey{theta, headDim}
	b.mu.Lock()
	table, ok := b.ropes[key]
	b.mu.Unlock()
	if ok && table.seqLen >= seqLen {
		return table.buf, nil
	}
	// 512 positions cover the usual inputs in one table.
	n := max(seqLen, 512, 2*table.seqLen)
	buf, err := b.newBuffer(f32Bytes(backend.RopeTable(theta, headDim, n)))
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.ropes[key]; cur.seqLen < n {
		b.ropes[key] = ropeTable{buf: buf, seqLen: n}
	}
	return buf, nil
}

// NewStream implements backend.Backend.
func (b *Backend) NewStream() backend.Stream {
	s := &Stream{be: b}
	b.mu.Lock()
	if n := len(b.spareLists); n > 0 {
		l := b.spareLists[n-1]
		b.spareLists = b.spareLists[:n-1]
		s.lists = l
		s.owned, s.committed, s.track.written, s.track.read, s.lengths, s.ints, s.hint = l.owned, l.committed, l.written, l.read, l.lengths, l.ints, l.tensors
		s.log = l.log
	}
	b.mu.Unlock()
	return s
}

// maxSpareLists bounds the closed streams' lists the backend keeps (one
// per stream that ran at the same time, at most).
const maxSpareLists = 64

// keepLists keeps a closed stream's lists for a later NewStream.
func (b *Backend) keepLists(l *streamLists) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.spareLists) < maxSpareLists {
		b.spareLists = append(b.spareLists, l)
	}
}

// Close implements backend.Backend: it releases every weight and table,
// the buffers wrapping checkpoint mappings, and the device when the backend
// opened it. Streams must be closed first; mapped checkpoints may be closed
// after it.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for _, buf := range b.buffers {
		buf.Release()
	}
	b.releaseArena()
	b.buffers, b.ropes, b.mapped = nil, nil, nil
	if b.ownsDevice {
		return b.dev.Close()
	}
	return nil
}

// SetSplitK turns deterministic split-K on for GEMMs whose tiles would
// leave the GPU idle (metal.GemmSplitSlices): targetGroups is the
// threadgroups the GPU runs at once (cores × tile threadgroups each core
// holds; internal/gpuplan's TimeModel.SplitKTarget models it for Apple's
// GPUs). 0 turns it off, the default: a split GEMM is two dependent
// dispatches, which takes an encoder layer from 5 dispatches to 7, past a
// budget of 5, so it is a choice to measure on a Mac (laya-bench --plan
// --split-k models it) rather than the default. It applies to the GEMMs
// encoded after the call.
func (b *Backend) SetSplitK(targetGroups int) { b.splitTarget.Store(int64(max(targetGroups, 0))) }

// DeviceTime implements backend.Timer: the GPU time of every command
// buffer the backend's streams waited for.
func (b *Backend) DeviceTime() time.Duration { return time.Duration(b.deviceNanos.Load()) }

// SetProfiling implements backend.Profiler. With it on, each operation is
// committed and waited for alone (see backend.Profiler for what that does
// to the numbers); turning it on clears earlier times.
func (b *Backend) SetProfiling(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if on {
		clear(b.opTimes)
	}
	b.profiling.Store(on)
}

// OpTimes implements backend.Profiler.
func (b *Backend) OpTimes() []backend.OpTime {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]backend.OpTime, 0, len(b.opTimes))
	for _, t := range b.opTimes {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Time != out[j].Time {
			return out[i].Time > out[j].Time
		}
		return out[i].Op < out[j].Op
	})
	return out
}

// recordTiming adds a finished command buffer's GPU time to the total and,
// when op is not empty, to op's profile.
func (b *Backend) recordTiming(op string, t metal.Timing) {
	d := max(t.GPUTime(), 0)
	b.deviceNanos.Add(int64(d))
	if op == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opTimes == nil {
		return
	}
	ot := b.opTimes[op]
	if ot == nil {
		ot = &backend.OpTime{Op: op}
		b.opTimes[op] = ot
	}
	ot.Count++
	ot.Time += d
}

// f32Bytes is the little-endian encoding of vs.
func f32Bytes(vs []float32) []byte {
	out := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}
