//go:build linux

package cuda

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

// A GPU whose memory the cached request shapes have filled still runs a
// new shape: the allocation it refuses is asked for again after the idle
// shapes are freed. A shape that does not fit even then fails with
// ErrOutOfMemory, naming what it asked for, and the backend runs the next
// request that fits. On the emulator, whose GPU a test can shrink.
func TestEmuOutOfMemoryEvictsIdleShapes(t *testing.T) {
	lib := emuLib(t)
	setFree := emuSym(t, lib, "cuemu_set_free")
	shrink := func(free int64) { purego.SyscallN(setFree, uintptr(free), 0) }
	defer purego.SyscallN(setFree, 0, 1)
	b, run := emuQuestions(t, FP32)
	// The largest shape's entry first, alone, to learn its size.
	const big = 120
	if err := run(big); err != nil {
		t.Fatal(err)
	}
	var need int64
	for k := range b.cache {
		need = k.arena
	}
	if st := b.Stats(); st.Entries != 1 || need == 0 {
		t.Fatalf("stats %+v after one request: want one cached shape", st)
	}
	b.onThread(func() { b.evictIdle() })
	for _, n := range []int{40, 72, 100} {
		before := b.Stats()
		if err := run(n); err != nil {
			t.Fatal(err)
		}
		// One segment a request (readback): one new shape each.
		if st := b.Stats(); st.Eager-before.Eager != 1 || st.Captures != before.Captures || st.Replays != before.Replays {
			t.Fatalf("a question of %d tokens: stats %+v after %+v, want one segment run kernel by kernel", n, st, before)
		}
	}
	if st := b.Stats(); st.Entries != 3 {
		t.Fatalf("stats %+v: want three cached shapes", st)
	}
	// Room for all but the last byte of the big shape's activations: the
	// three idle shapes must go for it to run.
	shrink(need - 1)
	before := b.Stats()
	if err := run(big); err != nil {
		t.Fatalf("a shape that fits once the idle ones are freed: %v", err)
	}
	if st := b.Stats(); st.Evicted-before.Evicted != 3 || st.Entries != 1 {
		t.Errorf("stats %+v: want the three idle shapes evicted and the big one cached", st)
	}
	// Nothing idle to free (the big shape's entry is idle now: evict it
	// first) and no room: a clear error, and the backend goes on.
	b.onThread(func() { b.evictIdle() })
	shrink(0)
	err := run(big)
	if !errors.Is(err, ErrOutOfMemory) || !strings.HasPrefix(err.Error(), "cuda: out of device memory: activations: ") {
		t.Fatalf("a shape with no room: %v, want ErrOutOfMemory for its activations", err)
	}
	purego.SyscallN(setFree, 0, 1)
	if err := run(40); err != nil {
		t.Fatalf("a request after the refused one: %v", err)
	}
}

// emuQuestions opens the emulated backend in precision p with tiny-en's
// parts and returns it with a function that runs one question of n tokens
// on it as the library runs a batch: [CLS], words, two [MASK] options,
// [SEP] (tiny-en's ids).
func emuQuestions(t *testing.T, p Precision) (*Backend, func(n int) error) {
	ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ckpt.Close() })
	opts := emuOptions(t)
	opts.Precision = p
	be, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	parts, err := forwardpass.NewParts(be, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	pad := int32(ckpt.Encoder.PadTokenID)
	return be.(*Backend), func(n int) error {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = 10 + (7*i)%600
		}
		ids[0], ids[n-1], ids[5], ids[9] = 631, 632, 634, 634
		rows := []forwardpass.Row{{IDs: ids, Markers: []int{5, 9}, QType: heads.QType(0)}}
		_, _, err := parts.RunRowsPruned(context.Background(), be, rows, pad)
		return err
	}
}

// A request runs as one segment (one graph launch and one wait on a GPU),
// however short: its outputs are read in two Reads (the scorer's logits,
// the act head's probabilities), and the first flush brings the second
// back too (readback), where a short batch's own small tensors once took
// the places of the outputs.
func TestEmuShortRequestOneSegment(t *testing.T) {
	b, run := emuQuestions(t, FP16X2)
	for _, n := range []int{12, 40, 64, 100} {
		for step := range 3 {
			before := b.Stats()
			if err := run(n); err != nil {
				t.Fatal(err)
			}
			st := b.Stats()
			if ran := st.Eager + st.Captures + st.Replays - before.Eager - before.Captures - before.Replays; ran != 1 {
				t.Errorf("a question of %d tokens, run %d: %d segments, want 1", n, step, ran)
			}
		}
	}
}
