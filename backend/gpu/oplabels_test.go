package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/metal"
)

// failingDevice's command buffers fail on the GPU from the failAt-th
// committed one on, as a Metal command buffer that ends in the error state
// does, and take debug labels, recording them.
type failingDevice struct {
	metal.Device
	failAt    int
	committed *int
	groups    *[]string
}

func (d failingDevice) NewCommandBuffer() (metal.CommandBuffer, error) {
	cb, err := d.Device.NewCommandBuffer()
	return &failingCommandBuffer{CommandBuffer: cb, dev: d}, err
}

type failingCommandBuffer struct {
	metal.CommandBuffer
	dev   failingDevice
	fails bool
}

func (c *failingCommandBuffer) Commit() error {
	*c.dev.committed++
	c.fails = *c.dev.committed >= c.dev.failAt
	return c.CommandBuffer.Commit()
}

func (c *failingCommandBuffer) Wait(ctx context.Context) (metal.Timing, error) {
	t, err := c.CommandBuffer.Wait(ctx)
	if c.fails && err == nil {
		err = fmt.Errorf("%w: status error, code 3 (Caused GPU Timeout Error)", metal.ErrGPUExecution)
	}
	return t, err
}

func (c *failingCommandBuffer) Labels() bool { return true }
func (c *failingCommandBuffer) PushDebugGroup(label string) {
	*c.dev.groups = append(*c.dev.groups, label)
}
func (c *failingCommandBuffer) PopDebugGroup() {}

// A command buffer that fails names the dispatches it held (operation,
// ordinal, kernel), and every dispatch went into a debug group of that name
// for GPU tools.
func TestFailedCommandBufferNamesItsOps(t *testing.T) {
	for _, failAt := range []int{1, 2} {
		var committed int
		var groups []string
		be := New("plan-failing", failingDevice{Device: NewPlanDevice(false), failAt: failAt, committed: &committed, groups: &groups})
		m := loadModel(t, be, "tiny-en")
		cases := oracletest.Cases(t, "tiny-en")
		_, _, err := m.forward(context.Background(), be, cases[0].Rows)
		be.Close()
		if !errors.Is(err, metal.ErrGPUExecution) {
			t.Fatalf("fail at command buffer %d: err = %v, want ErrGPUExecution", failAt, err)
		}
		for _, w := range []string{"the command buffer held", " #1 (", "Caused GPU Timeout Error"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("fail at command buffer %d: err = %v, want it to contain %q", failAt, err, w)
			}
		}
		if failAt == 1 && !strings.Contains(err.Error(), "gather #1 (gather_rows_") {
			t.Errorf("the first command buffer's error does not name the embedding gather: %v", err)
		}
		if len(groups) == 0 || !strings.HasPrefix(groups[0], "gather #1 (gather_rows_") {
			t.Errorf("debug groups %q, want the first to be the embedding gather", groups[:min(3, len(groups))])
		}
		t.Log(err)
	}
}
