package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/metal"
)

// Stream is backend.Stream on a Metal device: operations are encoded into
// one command buffer as they are called and run when Read commits it.
type Stream struct {
	be *Backend
	cb metal.CommandBuffer // nil until the first operation after a Read
	// committed are command buffers already submitted (chunked commits,
	// see commitChunk) and not yet waited for, oldest first; a wait cut
	// short by its context leaves them here, and Close waits for them
	// before giving buffers back.
	committed []metal.CommandBuffer
	// inChunk counts the dispatches in cb.
	inChunk int
	err     error
	closed  bool
	owned   []metal.Buffer // tensors and index arrays, released by Close

	// track is cb as the kernels' dispatch functions see it: it encodes
	// the barriers the dispatches' buffer roles call for.
	track hazards

	// pending is the operation recorded but not yet encoded, so that the
	// next one can join its dispatch (fuse.go): a *pendingLN,
	// *pendingLinear, *pendingRope or *pendingAttention, or nil. Every
	// operation that does not join it encodes it first.
	pending any
	// lnSlot and linearSlot hold the pending LayerNorm and Linear (one of
	// each at most is pending, and a slot is only refilled after what it
	// held was encoded), so deferring costs no allocation.
	lnSlot     pendingLN
	linearSlot pendingLinear
	ropeSlot   pendingRope
	attnSlot   pendingAttention
	lengths    []int // attnSlot's inline lengths
	ints       []int // scratch for small host arrays (ActFeatures' offsets)

	// tensors is the slab New hands tensors out of: one allocation for
	// a request's tensors rather than one each (slabs are never reused by
	// another stream, so a handle kept past Close still fails as foreign).
	tensors []tensor
	made    int // tensors made, the next stream's slab size
	hint    int // tensors the stream before made: the first slab's size
	// lists is the carrier the lists came in (NewStream), for Close to
	// hand them on.
	lists *streamLists
	// partial holds split-K GEMMs' partial matrices (encodeSplitK).
	partial metal.Buffer
	// log names the dispatches of the command buffers not yet waited for
	// (oplabels.go).
	log opLog
}

// streamLists are the growable lists of a closed stream, handed to the
// next new stream so that a warm request grows none of them.
type streamLists struct {
	owned     []metal.Buffer
	committed []metal.CommandBuffer
	written   bufferSet
	read      bufferSet
	lengths   []int
	ints      []int
	tensors   int // the last stream's tensor count
	log       opLog
}

// fail records the first error; later operations become no-ops.
func (s *Stream) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *Stream) shapeErr(op, format string, args ...any) {
	s.fail(fmt.Errorf("backend/gpu: %s: %w: %s", op, backend.ErrShape, fmt.Sprintf(format, args...)))
}

// check records err, the error of one of package backend's op contracts
// (backend.CheckLinear, …), and reports whether there was none.
func (s *Stream) check(err error) bool {
	if err != nil {
		s.fail(fmt.Errorf("backend/gpu: %w", err))
		return false
	}
	return true
}

// ok reports whether the stream can run op on ts, all of which must be
// tensors of this stream or weights of its backend; nil entries are allowed
// (optional operands). It encodes the pending Linear first: op comes after
// it.
func (s *Stream) ok(op string, ts ...backend.Tensor) bool {
	s.flush()
	return s.valid(op, ts...)
}

// valid is ok without the flush.
func (s *Stream) valid(op string, ts ...backend.Tensor) bool {
	if s.err != nil {
		return false
	}
	if s.closed {
		s.fail(fmt.Errorf("backend/gpu: %s: %w: stream closed", op, backend.ErrForeignTensor))
		return false
	}
	for _, t := range ts {
		if t == nil {
			continue
		}
		mt, isMetal := t.(*tensor)
		if !isMetal || mt == nil || mt.buf == nil || mt.be != s.be || (mt.stream != nil && mt.stream != s) {
			s.fail(fmt.Errorf("backend/gpu: %s: %w (%T)", op, backend.ErrForeignTensor, t))
			return false
		}
	}
	return true
}

// f32 is t's float32 buffer (see tensor.f32Buffer); nil for a nil t.
func (s *Stream) f32(op string, t backend.Tensor) metal.Buffer {
	if t == nil || s.err != nil {
		return nil
	}
	s.readable(t)
	buf, err := t.(*tensor).f32Buffer()
	if err != nil {
		s.fail(fmt.Errorf("backend/gpu: %s: widening an fp16 weight: %w", op, err))
	}
	return buf
}

// f32At is t's float32 values for a kernel that binds an offset: t's own
// buffer and offset when it holds float32 (a weight in place in a
// checkpoint mapping among them), else the float32 twin of an fp16 weight
// at offset 0. A nil t gives a nil buffer.
func (s *Stream) f32At(op string, t backend.Tensor) (metal.Buffer, int) {
	if t == nil || s.err != nil {
		return nil, 0
	}
	if mt := t.(*tensor); mt.elem == metal.ElemF32 {
		s.readable(t)
		return mt.buf, mt.off
	}
	return s.f32(op, t), 0
}

// dst is t's buffer as an operation's output: a float32 stream tensor the
// operation overwrites whole (an operation that also reads it calls
// readable first).
func (s *Stream) dst(op string, t backend.Tensor) metal.Buffer {
	mt := t.(*tensor)
	if mt.stream == nil {
		s.fail(fmt.Errorf("backend/gpu: %s: %w: the destination is a weight, and weights are read-only", op, backend.ErrForeignTensor))
		return nil
	}
	mt.stale = false
	return mt.buf
}

// readable zeroes a stream tensor whose arena buffer still holds a former
// user's values, before anything reads it: New promises zeros, and paying
// for them only when a tensor is read before being written keeps the
// arena free (almost every scratch tensor is written first). The host
// clears it: no recorded work references the buffer yet, since any that
// wrote it would have made it fresh.
func (s *Stream) readable(t backend.Tensor) {
	if mt, ok := t.(*tensor); ok && mt != nil && mt.stale {
		clear(mt.buf.Bytes())
		mt.stale = false
	}
}

// begin prepares s.cb for one dispatch of op and reports whether to encode
// it; the caller encodes on s.enc(), which places the barriers, and hands
// the result to end. (Two calls rather than one taking a closure: the
// closure and its captured operation would be allocated per dispatch.)
func (s *Stream) begin(op string) bool {
	if s.err != nil {
		return false
	}
	if s.cb == nil {
		cb, err := s.be.dev.NewCommandBuffer()
		if err != nil {
			s.fail(fmt.Errorf("backend/gpu: %s: %w", op, err))
			return false
		}
		s.cb = cb
	}
	s.track.cb, s.track.log = s.cb, &s.log
	s.log.begin(op)
	if l, ok := s.cb.(opLabeler); ok {
		l.labelNext(op)
	}
	return true
}

// enc is the command buffer the kernels' dispatch functions encode on:
// s.cb behind the hazard tracking.
func (s *Stream) enc() metal.CommandBuffer { return &s.track }

// end records the dispatch begun by begin: its error, or a dispatch more
// in the chunk, and commits a full chunk.
func (s *Stream) end(op string, err error) {
	if err != nil {
		s.fail(fmt.Errorf("backend/gpu: %s: %w", op, err))
		return
	}
	s.inChunk++
	if s.be.profiling.Load() {
		s.syncOp(op)
		return
	}
	s.commitChunk()
}

// Chunked commits: the first command buffer is submitted after
// firstChunk dispatches and the next ones every chunkDispatches, so the GPU
// starts on the first layers while Go is still encoding the rest (MLX
// commits every ~20–50 operations, candle every 50; ExecuTorch's Metal
// backend went from 125 to 85 ms per token with commitAndContinue). Command
// buffers of one queue run in order, and the buffers of a stream are
// hazard-tracked across them, so the split needs no extra barrier. The
// host still waits once per request: Read waits on the last buffer, the
// earlier ones have finished by then.
const (
	firstChunk      = 16
	chunkDispatches = 48
)

// commitChunk submits cb once it holds a chunk's worth of dispatches.
func (s *Stream) commitChunk() {
	limit := chunkDispatches
	if len(s.committed) == 0 {
		limit = firstChunk
	}
	if s.inChunk < limit {
		return
	}
	s.commit()
}

// commit submits the command buffer being recorded, s.cb, and starts a new
// chunk: the next dispatch opens a fresh command buffer, with no hazards
// tracked against the submitted one (the queue orders them). A failed
// commit fails the stream; commit reports whether it went through.
func (s *Stream) commit() bool {
	cb := s.cb
	s.cb, s.inChunk = nil, 0
	s.track.reset()
	if err := cb.Commit(); err != nil {
		s.fail(fmt.Errorf("backend/gpu: commit: %w", err))
		return false
	}
	s.committed = append(s.committed, cb)
	s.log.committed()
	return true
}

// waitCommitted waits for the submitted command buffers: the CPU blocks
// once, on the last one (a queue runs its command buffers in order, so the
// earlier ones are done by then), then collects the earlier ones' timing
// and errors without blocking.
func (s *Stream) waitCommitted(ctx context.Context) error {
	if len(s.committed) == 0 {
		return nil
	}
	last := s.committed[len(s.committed)-1]
	lastTiming, err := last.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		return err // still running: stays in committed for Close
	}
	var first error
	for i, cb := range s.committed[:len(s.committed)-1] {
		timing, err := cb.Wait(ctx)
		if err != nil && first == nil {
			first = s.log.heldErr(i, err)
		}
		s.be.recordTiming("", timing)
	}
	if err != nil {
		err = s.log.heldErr(len(s.committed)-1, err)
	}
	s.committed = s.committed[:0]
	s.log.waited()
	// The earliest failure is the one to report: later command buffers may
	// fail only because they read what it left wrong.
	if first != nil {
		return first
	}
	if err != nil {
		return err
	}
	s.be.recordTiming("", lastTiming)
	return first
}

// opLabeler is a command buffer that wants to know which stream operation
// its next dispatch encodes (PlanDevice's, for per-operation plans).
type opLabeler interface{ labelNext(op string) }

// syncOp commits the command buffer holding the one operation op and waits
// for it, charging its GPU time to op (backend.Profiler).
func (s *Stream) syncOp(op string) {
	cb := s.cb
	s.cb, s.inChunk = nil, 0
	s.track.reset()
	if err := cb.Commit(); err != nil {
		s.fail(fmt.Errorf("backend/gpu: %s: commit: %w", op, err))
		return
	}
	s.log.committed()
	timing, err := cb.Wait(context.Background())
	if err != nil {
		s.fail(fmt.Errorf("backend/gpu: %s: %w", op, s.log.heldErr(len(s.log.ends)-1, err)))
		return
	}
	s.log.waited()
	s.be.recordTiming(op, timing)
}

// newBuffer takes a buffer of at least size bytes from the backend's arena
// (reused: it holds its last user's values); the stream owns it until
// Close gives it back.
func (s *Stream) newBuffer(op string, size int) (buf metal.Buffer, reused bool) {
	buf, reused, err := s.be.take(size)
	if err != nil {
		s.fail(fmt.Errorf("backend/gpu: %s: %w", op, err))
		return nil, false
	}
	s.owned = append(s.owned, buf)
	return buf, reused
}

// u32Buffer uploads small host integer arrays (indices, lengths, offsets).
// The buffer is new, so writing it now races with no recorded dispatch.
func (s *Stream) u32Buffer(op string, vs []int) metal.Buffer {
	buf, _ := s.newBuffer(op, 4*max(len(vs), 1))
	if buf == nil {
		return nil
	}
	for i, v := range vs {
		binary.LittleEndian.PutUint32(buf.Bytes()[4*i:], uint32(v))
	}
	return buf
}

// newTensor is a zero tensor of s from its slab.
func (s *Stream) newTensor() *tensor {
	if len(s.tensors) == cap(s.tensors) {
		s.tensors = make([]tensor, 0, max(16, s.hint, 2*cap(s.tensors)))
	}
	s.tensors = s.tensors[:len(s.tensors)+1]
	s.made++
	return &s.tensors[len(s.tensors)-1]
}

// New implements backend.Stream.
func (s *Stream) New(rows, cols int) backend.Tensor {
	t := s.newTensor()
	t.rows, t.cols, t.be, t.stream = max(rows, 1), max(cols, 1), s.be, s
	if s.closed {
		s.fail(fmt.Errorf("backend/gpu: new: %w: stream closed", backend.ErrForeignTensor))
		return t
	}
	if !s.check(backend.CheckDims(rows, cols)) {
		// A placeholder keeps later shape checks meaningful; every
		// operation is a no-op from now on.
		return t
	}
	t.buf, t.stale = s.newBuffer("new", 4*rows*cols)
	return t
}

// FromHost implements backend.Stream.
func (s *Stream) FromHost(rows, cols int, src []float32) backend.Tensor {
	t := s.New(rows, cols)
	if s.err != nil {
		return t
	}
	if !s.check(backend.CheckFromHost(rows, cols, len(src))) {
		return t
	}
	// A fresh buffer: no recorded dispatch can be using it yet.
	mt := t.(*tensor)
	copy(mt.buf.Bytes(), f32Bytes(src))
	mt.stale = false
	return t
}

// Read implements backend.Stream: it commits what was recorded, waits for
// it and copies t out.
func (s *Stream) Read(ctx context.Context, t backend.Tensor, dst []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.ok("read", t) {
		return s.err
	}
	if !s.check(backend.CheckRead(t, len(dst))) {
		return s.err
	}
	src := s.f32("read", t)
	if s.err != nil {
		return s.err
	}
	if err := s.sync(ctx); err != nil {
		return err
	}
	b := src.Bytes()
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

// sync commits the recorded work and waits for it and the chunks committed
// before it. A wait cut short by ctx leaves the GPU running on the
// stream's buffers, so it fails the stream.
func (s *Stream) sync(ctx context.Context) error {
	if s.cb != nil && !s.commit() {
		return s.err
	}
	if err := s.waitCommitted(ctx); err != nil {
		s.fail(fmt.Errorf("backend/gpu: %w", err))
		return s.err
	}
	return nil
}

// Err implements backend.Stream. A pending Linear is encoded first, so that
// its encoding error, if any, is reported now rather than at the next
// operation.
func (s *Stream) Err() error {
	s.flush()
	return s.err
}

// Close implements backend.Stream. Work recorded and not read is still
// run to its end first, so that no buffer is released under the GPU.
func (s *Stream) Close() {
	if s.closed {
		return
	}
	// Recorded work runs, not dropped: a caller may Close instead of
	// Read after work whose side effects it does not need, and the
	// buffers below may only be released once the GPU is done with them.
	s.flush()
	if s.cb != nil {
		if err := s.cb.Commit(); err == nil {
			s.committed = append(s.committed, s.cb)
		}
		s.cb = nil
	}
	for _, cb := range s.committed {
		if timing, err := cb.Wait(context.Background()); err == nil {
			s.be.recordTiming("", timing)
		}
	}
	s.log.waited()
	s.closed = true
	s.be.giveBack(s.owned)
	// The lists go to the next stream, emptied of references (the pool
	// must not keep buffers or command buffers alive).
	l := s.lists
	if l == nil {
		l = new(streamLists)
	}
	clear(s.owned)
	clear(s.committed)
	clear(s.track.written)
	clear(s.track.read)
	*l = streamLists{owned: s.owned[:0], committed: s.committed[:0], written: s.track.written[:0], read: s.track.read[:0],
		lengths: s.lengths[:0], ints: s.ints[:0], tensors: s.made,
		log: opLog{counts: s.log.counts[:0], labels: s.log.labels[:0], ends: s.log.ends[:0]}}
	s.owned, s.committed, s.lengths, s.ints, s.tensors, s.lists, s.partial = nil, nil, nil, nil, nil, nil, nil
	s.track = hazards{}
	s.log = opLog{}
	s.be.keepLists(l)
}

// bufferSet is a small set of buffers.
type bufferSet []metal.Buffer

func (bs bufferSet) has(b metal.Buffer) bool {
	if b == nil {
		return false
	}
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

func (bs *bufferSet) add(b metal.Buffer) {
	if b != nil && !bs.has(b) {
		*bs = append(*bs, b)
	}
}

func (bs *bufferSet) clear() { *bs = (*bs)[:0] }

// remove takes b out of the set.
func (bs *bufferSet) remove(b metal.Buffer) {
	for i, x := range *bs {
		if x == b {
			*bs = append((*bs)[:i], (*bs)[i+1:]...)
			return
		}
	}
}

// hazards is a command buffer that encodes a barrier before a dispatch
// that depends on the dispatches since the last one: one that reads a
// buffer written since, or writes one read or written since
// (read-after-write, write-after-read and write-after-write hazards of a
// concurrent encoder). What a dispatch reads and writes is what its
// arguments declare (metal.Arg.Access, set where each kernel binds them),
// so the roles are stated once, in package metal; a buffer bound with no
// access declared is refused, since its hazards would be unknown.
type hazards struct {
	cb  metal.CommandBuffer
	log *opLog // the stream's, to label each dispatch
	// The buffers read and written since the last barrier. A run between
	// barriers touches a handful of buffers, so two small sets (slices,
	// scanned) are cheaper than maps.
	written, read bufferSet
}

func (h *hazards) Dispatch(p metal.Pipeline, groups, threads metal.Size3, args ...metal.Arg) error {
	hazard := false
	for i := range args {
		a := &args[i]
		if a.Buffer == nil {
			continue
		}
		if a.Access == metal.AccessNone || a.Access&^metal.AccessReadWrite != 0 {
			return fmt.Errorf("%w: %s: buffer(%d) bound with access %v, want read, write or read-write", metal.ErrInvalidDispatch, p.Kernel(), a.Index, a.Access)
		}
		hazard = hazard || a.Access.Reads() && h.written.has(a.Buffer) ||
			a.Access.Writes() && (h.written.has(a.Buffer) || h.read.has(a.Buffer))
	}
	if hazard {
		h.Barrier()
	}
	if h.log != nil {
		h.log.dispatched(p.Kernel())
		if end := labelDispatch(h.cb, h.log, p.Kernel()); end != nil {
			defer end()
		}
	}
	if err := h.cb.Dispatch(p, groups, threads, args...); err != nil {
		return err
	}
	for i := range args {
		if a := &args[i]; a.Buffer != nil {
			if a.Access.Reads() {
				h.read.add(a.Buffer)
			}
			if a.Access.Writes() {
				h.written.add(a.Buffer)
			}
		}
	}
	return nil
}

// Barrier orders what follows after what came before: for the buffers
// named, or for all of them.
func (h *hazards) Barrier(buffers ...metal.Buffer) {
	h.cb.Barrier(buffers...)
	if len(buffers) == 0 {
		h.reset()
		return
	}
	for _, b := range buffers {
		h.written.remove(b)
		h.read.remove(b)
	}
}

func (h *hazards) Commit() error { return h.cb.Commit() }

func (h *hazards) Wait(ctx context.Context) (metal.Timing, error) { return h.cb.Wait(ctx) }

// reset forgets the buffers touched: a barrier or a new command buffer
// (the queue orders command buffers) separates what comes next.
func (h *hazards) reset() {
	h.written.clear()
	h.read.clear()
}
