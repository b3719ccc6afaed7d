package gpu

import (
	"context"
	"encoding/binary"
	"math"
	"sync"

	"github.com/laya-metal/laya/metal"
)

// PlanDevice is a metal.Device that runs nothing: it records every
// dispatch (kernel, function constants, grid, arguments and the stream
// operation it encodes), barrier and commit, for work plans (laya-bench
// --plan, Plan) and host-side encoding benchmarks. It works on any OS and
// needs no GPU. Buffers are host memory; NewBufferWithBytes wraps the given
// bytes without copying, so a shape-only checkpoint's zero mapping is never
// touched. Command buffers complete as soon as they are committed.
type PlanDevice struct {
	mu sync.Mutex
	// Record turns the dispatch log on (off: only counts, for benchmarks).
	record bool
	stats  PlanStats
	log    []PlannedDispatch
	pipes  map[string]*planPipeline
	seq    int // command buffers created
	waited int // highest seq waited for
	// cbs is the slab NewCommandBuffer hands command buffers out of (one
	// allocation per 64 rather than one each: a plan device is also the
	// host-encoding benchmark's, whose allocations should be the stream's).
	cbs []planCommandBuffer
}

// PlanStats counts what a PlanDevice saw.
type PlanStats struct {
	Dispatches, Barriers, CommandBuffers int
	// Waits counts blocking waits: a Wait on a command buffer committed
	// after every one waited for so far (a Wait on an earlier one, whose
	// successor has finished, returns at once and is not counted).
	Waits int
	// NewBuffers and NewBufferBytes count NewBuffer calls (device
	// allocations; wrapped mappings are not counted).
	NewBuffers     int
	NewBufferBytes int
}

// PlannedDispatch is one recorded dispatch.
type PlannedDispatch struct {
	Op        string // the stream operation ("layerNorm+linear+geglu", ...)
	Kernel    string
	Constants []metal.Constant
	Groups    metal.Size3
	Threads   metal.Size3
	Args      []metal.Arg
	// AfterBarrier: a barrier separates it from the dispatch before it.
	AfterBarrier bool
}

// NewPlanDevice returns a device that records dispatches when record is
// set and only counts them otherwise.
func NewPlanDevice(record bool) *PlanDevice {
	return &PlanDevice{record: record, pipes: map[string]*planPipeline{}}
}

// Stats returns the counts so far.
func (d *PlanDevice) Stats() PlanStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Log returns the dispatches recorded so far.
func (d *PlanDevice) Log() []PlannedDispatch {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]PlannedDispatch(nil), d.log...)
}

// Reset clears the counts and the log (kept: pipelines, buffers).
func (d *PlanDevice) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats, d.log = PlanStats{}, nil
}

func (d *PlanDevice) Name() string { return "plan (records, runs nothing)" }

func (d *PlanDevice) NewBuffer(size int) (metal.Buffer, error) {
	d.mu.Lock()
	d.stats.NewBuffers++
	d.stats.NewBufferBytes += size
	d.mu.Unlock()
	return &planBuffer{size: size}, nil
}

func (d *PlanDevice) NewBufferWithBytes(data []byte) (metal.Buffer, error) {
	return &planBuffer{data: data, size: len(data)}, nil
}

func (d *PlanDevice) Pipeline(kernel string, constants ...metal.Constant) (metal.Pipeline, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := make([]byte, 0, len(kernel)+6*len(constants))
	key = append(key, kernel...)
	for _, c := range constants {
		key = append(key, '|', byte(c.Index))
		switch v := c.Value.(type) {
		case bool:
			if v {
				key = append(key, 1)
			} else {
				key = append(key, 0)
			}
		case uint32:
			key = binary.LittleEndian.AppendUint32(key, v)
		case int32:
			key = binary.LittleEndian.AppendUint32(key, uint32(v))
		case float32:
			key = binary.LittleEndian.AppendUint32(key, math.Float32bits(v))
		}
	}
	if p, ok := d.pipes[string(key)]; ok {
		return p, nil
	}
	p := &planPipeline{kernel: kernel, constants: append([]metal.Constant(nil), constants...)}
	d.pipes[string(key)] = p
	return p, nil
}

func (d *PlanDevice) NewCommandBuffer() (metal.CommandBuffer, error) {
	d.mu.Lock()
	d.stats.CommandBuffers++
	d.seq++
	if len(d.cbs) == cap(d.cbs) {
		d.cbs = make([]planCommandBuffer, 0, 64)
	}
	d.cbs = append(d.cbs, planCommandBuffer{dev: d, seq: d.seq})
	cb := &d.cbs[len(d.cbs)-1]
	d.mu.Unlock()
	return cb, nil
}

func (d *PlanDevice) Close() error { return nil }

// planBuffer allocates its host memory only when the host touches it (an
// upload, a read, zeroing): nothing runs on a plan device, so the
// activations of a large planned batch (internal/gpuplan.Variants records
// 16 questions at max_len while a checkpoint loads) cost no memory.
type planBuffer struct {
	once sync.Once
	data []byte
	size int
}

func (b *planBuffer) Bytes() []byte {
	b.once.Do(func() {
		if b.data == nil {
			b.data = make([]byte, b.size)
		}
	})
	return b.data
}
func (b *planBuffer) Len() int { return b.size }
func (b *planBuffer) Release() {}

type planPipeline struct {
	kernel    string
	constants []metal.Constant
}

func (p *planPipeline) Kernel() string                { return p.kernel }
func (p *planPipeline) MaxThreadsPerThreadgroup() int { return 1024 }
func (p *planPipeline) ThreadExecutionWidth() int     { return 32 }

type planCommandBuffer struct {
	dev     *PlanDevice
	seq     int
	op      string
	barrier bool
}

// labelNext names the stream operation the next dispatch encodes
// (Stream.encode calls it on command buffers that have it).
func (c *planCommandBuffer) labelNext(op string) { c.op = op }

func (c *planCommandBuffer) Dispatch(p metal.Pipeline, groups, threads metal.Size3, args ...metal.Arg) error {
	pp := p.(*planPipeline)
	d := c.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Dispatches++
	if d.record {
		kept := make([]metal.Arg, len(args))
		for i, a := range args {
			kept[i] = a
			if a.Bytes != nil {
				kept[i].Bytes = append([]byte(nil), a.Bytes...)
			}
		}
		d.log = append(d.log, PlannedDispatch{Op: c.op, Kernel: pp.kernel, Constants: pp.constants, Groups: groups, Threads: threads,
			Args: kept, AfterBarrier: c.barrier})
	}
	c.barrier = false
	return nil
}

func (c *planCommandBuffer) Barrier(buffers ...metal.Buffer) {
	c.dev.mu.Lock()
	c.dev.stats.Barriers++
	c.dev.mu.Unlock()
	c.barrier = true
}

func (c *planCommandBuffer) Commit() error { return nil }

func (c *planCommandBuffer) Wait(ctx context.Context) (metal.Timing, error) {
	c.dev.mu.Lock()
	if c.seq > c.dev.waited {
		c.dev.stats.Waits++
		c.dev.waited = c.seq
	}
	c.dev.mu.Unlock()
	return metal.Timing{}, ctx.Err()
}
