//go:build linux

package cuda

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

// A GPU whose memory the cached request shapes have filled still runs a
// new shape: the allocation it refuses is asked for again after idle
// shapes, oldest first, are freed, as many as it needs. A shape that could
// not fit even without all of them fails with ErrOutOfMemory, naming what
// it asked for, and frees none; a shape a stream still holds is never
// freed; and the backend runs the next request that fits. On the
// emulator, whose GPU a test can shrink.
func TestEmuOutOfMemoryEvictsIdleShapes(t *testing.T) {
	lib := emuLib(t)
	setFree := emuSym(t, lib, "cuemu_set_free")
	shrink := func(free int64) { purego.SyscallN(setFree, uintptr(free), 0) }
	restore := func() { purego.SyscallN(setFree, 0, 1) }
	defer restore()
	// A request one segment (one entry a shape), as the counts below
	// assume.
	m := emuTinyModelWith(t, FP32, func(o *Options) { o.SubmitOps = -1 })
	b := m.b
	evictAll := func() {
		b.onThread(func() {
			for b.evictFor(0) {
			}
		})
	}
	// The largest one-question shape first, alone, to learn its size.
	const big = 120
	if err := m.run(m.rows(big, 1)); err != nil {
		t.Fatal(err)
	}
	var need int64
	for k := range b.cache {
		need = k.arena
	}
	if st := b.Stats(); st.Entries != 1 || need == 0 {
		t.Fatalf("stats %+v after one request: want one cached shape", st)
	}
	evictAll()
	for _, n := range []int{40, 72, 100} {
		if err := m.run(m.rows(n, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if st := b.Stats(); st.Entries != 3 {
		t.Fatalf("stats %+v: want three cached shapes", st)
	}
	// Room for all but the last byte of the big shape's activations: the
	// oldest idle shape (40 tokens) is enough to free.
	shrink(need - 1)
	before := b.Stats()
	if err := m.run(m.rows(big, 1)); err != nil {
		t.Fatalf("a shape that fits once an idle one is freed: %v", err)
	}
	if st := b.Stats(); st.Evicted-before.Evicted != 1 || st.Entries != 3 {
		t.Errorf("stats %+v after %+v: want the oldest idle shape evicted, three cached", st, before)
	}
	// No room, and forty big questions need more than every idle shape
	// holds (each holds its 8 MiB cuBLAS workspace and well under 1 MiB of
	// tiny-en's activations): a clear error, and the cache stays.
	shrink(0)
	before = b.Stats()
	err := m.run(m.rows(big, 40))
	if !errors.Is(err, ErrOutOfMemory) || !strings.HasPrefix(err.Error(), "cuda: out of device memory: activations: ") {
		t.Fatalf("a shape with no room: %v, want ErrOutOfMemory for its activations", err)
	}
	if st := b.Stats(); st.Evicted != before.Evicted || st.Entries != before.Entries {
		t.Errorf("stats %+v after %+v: a shape that cannot fit evicted", st, before)
	}
	restore()
	if err := m.run(m.rows(40, 1)); err != nil {
		t.Fatalf("a request after the refused one: %v", err)
	}

	// A stream holding its shape (read, not closed) while another request
	// needs memory that only an idle shape can give: the idle one goes, the
	// held one stays, and replays the same answers once given back.
	evictAll()
	held := m.rows(64, 1)
	s := b.NewStream()
	want, err := m.logits(s, held)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.run(m.rows(110, 1)); err != nil { // idle once it returns
		t.Fatal(err)
	}
	shrink(0)
	before = b.Stats()
	if err := m.run(m.rows(90, 1)); err != nil {
		t.Fatalf("a shape the idle one makes room for: %v", err)
	}
	if st := b.Stats(); st.Evicted-before.Evicted != 1 {
		t.Errorf("stats %+v after %+v: want the one idle shape evicted", st, before)
	}
	s.Close()
	before = b.Stats()
	s = b.NewStream()
	got, err := m.logits(s, held)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Eager != before.Eager {
		t.Errorf("stats %+v after %+v: the held shape ran kernel by kernel again, want its cached entry", st, before)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the held shape's logits %v, then %v", want, got)
	}
}

// emuTiny is tiny-en's parts on the emulated backend.
type emuTiny struct {
	b     *Backend
	parts forwardpass.Parts
	pad   int32
}

// emuTinyModel opens the emulated backend in precision p with tiny-en's
// parts, closed when the test ends.
func emuTinyModel(t *testing.T, p Precision) *emuTiny {
	return emuTinyModelWith(t, p, nil)
}

// emuTinyModelWith is emuTinyModel with options set by set (unless nil).
func emuTinyModelWith(t *testing.T, p Precision, set func(*Options)) *emuTiny {
	ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ckpt.Close() })
	opts := emuOptions(t)
	opts.Precision = p
	if set != nil {
		set(&opts)
	}
	be, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	parts, err := forwardpass.NewParts(be, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	return &emuTiny{be.(*Backend), parts, int32(ckpt.Encoder.PadTokenID)}
}

// rows is k questions of n tokens each: [CLS], words, two [MASK] options,
// [SEP] (tiny-en's ids).
func (m *emuTiny) rows(n, k int) []forwardpass.Row {
	out := make([]forwardpass.Row, k)
	for r := range out {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = 10 + (7*i+r)%600
		}
		ids[0], ids[n-1], ids[5], ids[9] = 631, 632, 634, 634
		out[r] = forwardpass.Row{IDs: ids, Markers: []int{5, 9}, QType: heads.QType(0)}
	}
	return out
}

// run runs rows as the library runs a batch, on a stream of its own.
func (m *emuTiny) run(rows []forwardpass.Row) error {
	_, _, err := m.parts.RunRowsPruned(context.Background(), m.b, rows, m.pad)
	return err
}

// logits runs rows on s and reads their scorer logits, leaving s open.
func (m *emuTiny) logits(s backend.Stream, rows []forwardpass.Row) ([]float32, error) {
	b := forwardpass.Layout(s, rows, m.pad)
	out, err := m.parts.RunPruned(context.Background(), s, b)
	if err != nil {
		return nil, err
	}
	z := make([]float32, len(b.MarkerRows))
	return z, s.Read(context.Background(), out.Logits, z)
}

// A request waits once (one segment besides those Submit started early,
// each one graph launch on a GPU), however short: its outputs are read in
// two Reads (the scorer's logits,
// the act head's probabilities), and the first flush brings the second
// back too (readback), where a short batch's own small tensors once took
// the places of the outputs.
func TestEmuShortRequestOneSegment(t *testing.T) {
	m := emuTinyModel(t, FP16X2)
	b := m.b
	for _, n := range []int{12, 40, 64, 100} {
		for step := range 3 {
			before := b.Stats()
			if err := m.run(m.rows(n, 1)); err != nil {
				t.Fatal(err)
			}
			st := b.Stats()
			ran := st.Eager + st.Captures + st.Replays - before.Eager - before.Captures - before.Replays
			if early := st.Submitted - before.Submitted; ran-early != 1 || early > 2 {
				t.Errorf("a question of %d tokens, run %d: %d segments, %d of them started early; want 1 more than those, at most 3", n, step, ran, early)
			}
		}
	}
}

// A context CUDA gives up on (a kernel's illegal address, every later
// call failing with it) fails the request that met it with
// backend.ErrDeviceLost and the driver's words, turns Health, and fails
// every later request at once, even where the driver would answer again:
// only a new process recovers, and a server must learn it (Healther).
func TestEmuDeviceLost(t *testing.T) {
	lib := emuLib(t)
	setSticky := emuSym(t, lib, "cuemu_set_sticky")
	defer purego.SyscallN(setSticky, 0)
	m := emuTinyModel(t, FP16X2)
	var logged []string
	m.b.opts.Log = func(msg string) { logged = append(logged, msg) }
	if err := m.run(m.rows(40, 1)); err != nil || m.b.Health() != nil {
		t.Fatalf("a request on a working GPU: %v, health %v", err, m.b.Health())
	}
	purego.SyscallN(setSticky, 700)
	err := m.run(m.rows(40, 1))
	if !errors.Is(err, backend.ErrDeviceLost) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("a request meeting an illegal address: %v, want ErrDeviceLost naming it", err)
	}
	if h := m.b.Health(); !errors.Is(h, backend.ErrDeviceLost) {
		t.Errorf("health after it: %v, want ErrDeviceLost", h)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "device lost") {
		t.Errorf("logged %q, want the loss once", logged)
	}
	// The driver answering again does not make the context whole: later
	// requests still fail, before they reach it.
	purego.SyscallN(setSticky, 0)
	before := m.b.Stats()
	for range 2 {
		if err := m.run(m.rows(72, 1)); !errors.Is(err, backend.ErrDeviceLost) {
			t.Fatalf("a request after the loss: %v, want ErrDeviceLost", err)
		}
	}
	if st := m.b.Stats(); st.Eager+st.Captures+st.Replays != before.Eager+before.Captures+before.Replays {
		t.Errorf("stats %+v after %+v: a request ran after the loss", st, before)
	}
	if len(logged) != 1 {
		t.Errorf("logged %q, want the loss once", logged)
	}
}
