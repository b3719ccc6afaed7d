package gpu

import (
	"context"
	"slices"
	"testing"

	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/metal"
)

// The emulator runs dispatches one after another, so a missing barrier
// cannot show there as a wrong answer; on a GPU's concurrent encoder it
// would. This test records the dispatches and barriers of a whole forward
// pass and checks that any two dispatches between which no barrier lies
// touch no buffer that either of them writes.

// outputArgs are the [[buffer(n)]]s each kernel writes (kernels/*.metal):
// the GEMM writes its GeGLU output (5) and residual (6) too when bound.
var outputArgs = map[string][]int{
	"gather_rows_f32": {2}, "gather_rows_f16": {2}, "layernorm_f32": {3}, "gemm_f32": {2, 5, 6}, "gemm_f32_f16w": {2, 5, 6}, "gemv_f32": {2, 6}, "gemv_f32_f16w": {2, 6},
	"rope_f32": {0}, "attention_f32": {2}, "attention_flash_f32": {2}, "vector_add": {2}, "activate_f32": {1}, "geglu_f32": {1},
	"softmax_f32": {1}, "act_features_f32": {3},
}

type dispatchRecord struct {
	kernel  string
	written []metal.Buffer
	touched []metal.Buffer
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
	r := dispatchRecord{kernel: p.Kernel()}
	outs, known := outputArgs[p.Kernel()]
	for _, a := range args {
		if a.Buffer == nil {
			continue
		}
		r.touched = append(r.touched, a.Buffer)
		if slices.Contains(outs, a.Index) {
			r.written = append(r.written, a.Buffer)
		}
	}
	if !known || r.written == nil {
		return &unknownKernelError{p.Kernel()}
	}
	runs := *c.log
	runs[len(runs)-1] = append(runs[len(runs)-1], r)
	return c.CommandBuffer.Dispatch(p, groups, threads, args...)
}

func (c *recordingCommandBuffer) Barrier(buffers ...metal.Buffer) {
	*c.log = append(*c.log, nil)
	c.CommandBuffer.Barrier(buffers...)
}

type unknownKernelError struct{ kernel string }

func (e *unknownKernelError) Error() string {
	return "barrier test: kernel " + e.kernel + " is not in outputArg"
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
	dispatches, concurrent := 0, 0
	for _, run := range log {
		dispatches += len(run)
		for j, later := range run {
			for _, earlier := range run[:j] {
				for _, b := range later.touched {
					if slices.Contains(earlier.written, b) {
						t.Errorf("%s reads or writes what %s wrote, with no barrier between", later.kernel, earlier.kernel)
					}
				}
				for _, b := range earlier.touched {
					if slices.Contains(later.written, b) {
						t.Errorf("%s overwrites what %s reads, with no barrier between", later.kernel, earlier.kernel)
					}
				}
			}
			if j > 0 {
				concurrent++
			}
		}
	}
	if dispatches == 0 {
		t.Fatal("no dispatch recorded")
	}
	// Independent operations (the scratch gathers of the decision head, for
	// one) share a barrier-free run; a backend that put a barrier after
	// every dispatch would show zero here.
	t.Logf("%d dispatches, %d of them run concurrently with an earlier one", dispatches, concurrent)
}
