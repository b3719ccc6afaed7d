package gpu

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/metal"
)

// The emulator runs dispatches one after another, so a missing barrier
// cannot show there as a wrong answer; on a GPU's concurrent encoder it
// would. These tests record the dispatches and barriers of a whole forward
// pass and check that any two dispatches between which no barrier lies
// touch no buffer that either of them writes. What a dispatch writes is
// what its arguments declare (metal.Arg.Access), which package metal's
// tests hold to each kernel's signature in kernels/*.metal.

type dispatchRecord struct {
	kernel  string
	written []metal.Buffer
	touched []metal.Buffer
}

// record is one dispatch's buffers by their declared roles; a buffer bound
// with no role is an error (its hazards would be unknown).
func record(kernel string, args []metal.Arg) (dispatchRecord, error) {
	r := dispatchRecord{kernel: kernel}
	for _, a := range args {
		if a.Buffer == nil {
			continue
		}
		if a.Access == metal.AccessNone {
			return r, fmt.Errorf("barrier test: %s binds buffer(%d) with no access declared", kernel, a.Index)
		}
		r.touched = append(r.touched, a.Buffer)
		if a.Access.Writes() {
			r.written = append(r.written, a.Buffer)
		}
	}
	return r, nil
}

// hazardsIn reports every pair of dispatches of one barrier-free run where
// one writes a buffer the other touches.
func hazardsIn(runs [][]dispatchRecord) (dispatches, concurrent int, found []string) {
	for _, run := range runs {
		dispatches += len(run)
		for j, later := range run {
			for _, earlier := range run[:j] {
				for _, b := range later.touched {
					if slices.Contains(earlier.written, b) {
						found = append(found, fmt.Sprintf("%s reads or writes what %s wrote, with no barrier between", later.kernel, earlier.kernel))
					}
				}
				for _, b := range earlier.touched {
					if slices.Contains(later.written, b) {
						found = append(found, fmt.Sprintf("%s overwrites what %s reads, with no barrier between", later.kernel, earlier.kernel))
					}
				}
			}
			if j > 0 {
				concurrent++
			}
		}
	}
	return dispatches, concurrent, found
}

type recordingDevice struct {
	metal.Device
	log *[][]dispatchRecord // one slice of dispatches per barrier-free run
}

func (d recordingDevice) NewCommandBuffer() (metal.CommandBuffer, error) {
	cb, err := d.Device.NewCommandBuffer()
	*d.log = append(*d.log, nil)
	return &recordingCommandBuffer{CommandBuffer: cb, log: d.log}, err
}

type recordingCommandBuffer struct {
	metal.CommandBuffer
	log *[][]dispatchRecord
}

func (c *recordingCommandBuffer) Dispatch(p metal.Pipeline, groups, threads metal.Size3, args ...metal.Arg) error {
	r, err := record(p.Kernel(), args)
	if err != nil {
		return err
	}
	runs := *c.log
	runs[len(runs)-1] = append(runs[len(runs)-1], r)
	if c.CommandBuffer == nil {
		return nil
	}
	return c.CommandBuffer.Dispatch(p, groups, threads, args...)
}

func (c *recordingCommandBuffer) Barrier(buffers ...metal.Buffer) {
	*c.log = append(*c.log, nil)
	if c.CommandBuffer != nil {
		c.CommandBuffer.Barrier(buffers...)
	}
}

func TestBarriersCoverHazards(t *testing.T) {
	var log [][]dispatchRecord
	be := New("metal-emu-recorded", recordingDevice{Device: emulator(t).Device(), log: &log})
	defer be.Close()
	m := loadModel(t, be, "tiny-en")
	cases := oracletest.Cases(t, "tiny-en")
	if _, _, err := m.forward(context.Background(), be, cases[0].Rows); err != nil {
		t.Fatal(err)
	}
	dispatches, concurrent, found := hazardsIn(log)
	for _, f := range found {
		t.Error(f)
	}
	if dispatches == 0 {
		t.Fatal("no dispatch recorded")
	}
	// Independent operations (the scratch gathers of the decision head, for
	// one) share a barrier-free run; a backend that put a barrier after
	// every dispatch would show zero here.
	t.Logf("%d dispatches, %d of them run concurrently with an earlier one", dispatches, concurrent)
}

// A binding that declared a write as a read would lose the barrier before
// the next reader of that buffer, and the check above, given the true
// roles, must catch it. The forward pass is recorded on a plan device, its
// dispatches replayed through the stream's hazard tracking with one
// output's role changed from write to read, and the placement the tracking
// then derives is checked against the roles as bound.
func TestBarrierCheckCatchesWriteDeclaredAsRead(t *testing.T) {
	dev := NewPlanDevice(true)
	be := New("plan", dev)
	defer be.Close()
	m := loadModel(t, be, "tiny-en")
	cases := oracletest.Cases(t, "tiny-en")
	if _, _, err := m.forward(context.Background(), be, cases[0].Rows); err != nil {
		t.Fatal(err)
	}
	logged := dev.Log()
	// replay derives the barriers of logged, with dispatch mutate's
	// output declared as read (-1: none), and returns the runs by the
	// roles as bound.
	replay := func(mutate int) [][]dispatchRecord {
		runs := [][]dispatchRecord{nil}
		h := hazards{cb: &recordingCommandBuffer{log: &runs}}
		for i, d := range logged {
			args := slices.Clone(d.Args)
			if i == mutate {
				for j := range args {
					if args[j].Access == metal.AccessWrite {
						args[j].Access = metal.AccessRead
					}
				}
			}
			// The recording below the tracking sees the mutated roles;
			// the check must see the true ones.
			var truth dispatchRecord
			var err error
			if truth, err = record(d.Kernel, d.Args); err != nil {
				t.Fatal(err)
			}
			if err := h.Dispatch(&planPipeline{kernel: d.Kernel}, d.Groups, d.Threads, args...); err != nil {
				t.Fatal(err)
			}
			runs[len(runs)-1][len(runs[len(runs)-1])-1] = truth
		}
		return runs
	}
	placement := func(runs [][]dispatchRecord) string {
		lens := make([]int, len(runs))
		for i, r := range runs {
			lens[i] = len(r)
		}
		return fmt.Sprint(lens)
	}
	asBound := replay(-1)
	if _, _, found := hazardsIn(asBound); len(found) != 0 {
		t.Fatalf("the replay as recorded has hazards: %v", found)
	}
	// Each dispatch's outputs declared as reads in turn: wherever that
	// moves a barrier, the check must find the hazard left behind.
	moved := 0
	for i := range logged {
		mutant := replay(i)
		if placement(mutant) == placement(asBound) {
			continue // another hazard kept every barrier in place
		}
		moved++
		if _, _, found := hazardsIn(mutant); len(found) == 0 {
			t.Errorf("dispatch %d (%s): its output declared as read moves a barrier, and the check finds no hazard", i, logged[i].Kernel)
		}
	}
	if moved == 0 {
		t.Fatal("no output declared as read moved a barrier: the mutation tests nothing")
	}
	t.Logf("%d of %d dispatches lose a barrier with their outputs declared as reads; each is caught", moved, len(logged))
}
