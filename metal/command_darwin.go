//go:build darwin

package metal

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

type commandState int

const (
	stateEncoding commandState = iota
	stateCommitted
	stateFinished
)

// systemCommandBuffer is one MTLCommandBuffer with one concurrent compute
// encoder. Not safe for concurrent use: one goroutine encodes it.
type systemCommandBuffer struct {
	dev     *systemDevice
	cb, enc objcID
	state   commandState
	bound   objcID // pipeline state currently set on the encoder
	err     error  // first error of a call that cannot return one (Barrier)

	// Scratch reused by every Dispatch and Barrier so that they allocate
	// nothing: the grid and threadgroup MTLSize passed by pointer, and the
	// resource list of memoryBarrierWithResources:count:.
	sizes     [2]mtlSize
	resources []objcID
	groups    int // debug groups pushed and not yet popped

	finishOnce sync.Once
	done       chan struct{} // closed when finish has run
	timing     Timing
	result     error
}

// NewCommandBuffer starts a command buffer and its concurrent compute
// encoder. In a concurrent encoder Metal orders nothing between dispatches:
// a dispatch that reads what an earlier one wrote needs a Barrier.
func (d *systemDevice) NewCommandBuffer() (CommandBuffer, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	c := &systemCommandBuffer{dev: d, done: make(chan struct{})}
	var err error
	inPool(func() {
		// Both come autoreleased; retain them past the pool. The default
		// commandBuffer (not ...WithUnretainedReferences) retains every
		// buffer it uses, so a Buffer released early stays valid on the GPU.
		cb := msgID(d.queue, sel.commandBuffer)
		if cb == 0 {
			err = fmt.Errorf("metal: %s: commandBuffer returned nil", d.name)
			return
		}
		c.cb = msgID(cb, sel.retain)
		d.ledger.add(uintptr(c.cb), "command buffer")
		enc := msgIDUint(c.cb, sel.computeCommandEncoderWithDispatchType, mtlDispatchTypeConcurrent)
		if enc == 0 {
			err = fmt.Errorf("metal: %s: computeCommandEncoderWithDispatchType returned nil", d.name)
			d.ledger.drop(uintptr(c.cb))
			return
		}
		c.enc = msgID(enc, sel.retain)
		d.ledger.add(uintptr(c.enc), "compute encoder")
		if d.labels {
			c.setLabel(c.cb, "laya")
			c.setLabel(c.enc, "laya compute")
		}
	})
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.inflight[c] = struct{}{}
	d.mu.Unlock()
	return c, nil
}

func (c *systemCommandBuffer) checkEncoding(op string) error {
	if c.dev.closed.Load() {
		return ErrDeviceClosed
	}
	if c.state != stateEncoding {
		return fmt.Errorf("%w: %s after Commit", ErrInvalidDispatch, op)
	}
	return nil
}

// Dispatch encodes dispatchThreadgroups:threadsPerThreadgroup: after
// binding p and args. Every argument is checked before anything is
// encoded. The messages go through purego.SyscallN (no reflection; its
// argument block comes from a sync.Pool), the cheapest path purego offers;
// Dispatch itself allocates nothing (see sizes).
func (c *systemCommandBuffer) Dispatch(p Pipeline, groups, threads Size3, args ...Arg) error {
	if err := c.checkEncoding("Dispatch"); err != nil {
		return err
	}
	pipe, ok := p.(*systemPipeline)
	if !ok || pipe.dev != c.dev {
		return fmt.Errorf("%w: pipeline %T does not belong to device %s", ErrInvalidDispatch, p, c.dev.name)
	}
	lim := DispatchLimits{MaxThreads: pipe.maxThreads, StaticThreadgroupMemory: pipe.staticTGMemory, MaxThreadgroupMemory: c.dev.maxTGMemory}
	empty, err := CheckDispatch(lim, groups, threads, args)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", pipe.kernel, err)
	}
	for i := range args {
		if a := &args[i]; a.Buffer != nil {
			if b, ok := a.Buffer.(*systemBuffer); !ok || b.dev != c.dev || b.released.Load() {
				return fmt.Errorf("%w: kernel %s: argument %d: buffer %T is released or not from device %s",
					ErrInvalidDispatch, pipe.kernel, a.Index, a.Buffer, c.dev.name)
			}
		}
	}
	if empty {
		return nil
	}
	if c.dev.encodePools {
		defer c.dev.encodePool()()
	}

	enc := uintptr(c.enc)
	if c.bound != pipe.id {
		purego.SyscallN(msgSendAddr, enc, uintptr(sel.setComputePipelineState), uintptr(pipe.id))
		c.bound = pipe.id
	}
	for i := range args {
		a := &args[i]
		idx := uintptr(a.Index)
		switch {
		case a.Buffer != nil:
			b := a.Buffer.(*systemBuffer)
			purego.SyscallN(msgSendAddr, enc, uintptr(sel.setBufferOffsetAtIndex), uintptr(b.id), uintptr(a.Offset), idx)
		case a.Bytes != nil:
			// setBytes copies the bytes into the command stream at once.
			purego.SyscallN(msgSendAddr, enc, uintptr(sel.setBytesLengthAtIndex),
				uintptr(unsafe.Pointer(unsafe.SliceData(a.Bytes))), uintptr(len(a.Bytes)), idx)
		default:
			purego.SyscallN(msgSendAddr, enc, uintptr(sel.setThreadgroupMemoryLengthAtIndex),
				uintptr(threadgroupLength(a.ThreadgroupBytes)), idx)
		}
	}
	// The two MTLSize live in the command buffer, not on this frame: a
	// pointer converted for SyscallN (go:uintptrescapes) moves its target
	// to the heap, which was two allocations per Dispatch.
	c.sizes[0], c.sizes[1] = toMTLSize(groups), toMTLSize(threads)
	if runtime.GOARCH == "arm64" {
		// AAPCS64 passes a composite over 16 bytes (MTLSize is 24) as a
		// pointer to a caller-made copy, so two pointers are the exact
		// arm64 calling sequence. Metal reads the copies during the call
		// only, so reusing them for the next Dispatch is safe.
		purego.SyscallN(msgSendAddr, enc, uintptr(sel.dispatchThreadgroups),
			uintptr(unsafe.Pointer(&c.sizes[0])), uintptr(unsafe.Pointer(&c.sizes[1])))
	} else {
		// amd64 passes them in memory on the stack, which only purego's
		// typed struct support can lay out (an Intel Mac is refused at
		// open: no Apple7 family; this path exists for cross-compiling).
		msgVoidSizeSize(c.enc, sel.dispatchThreadgroups, c.sizes[0], c.sizes[1])
	}
	return nil
}

// Barrier makes dispatches after it see the writes of dispatches before it,
// for the named buffers (memoryBarrierWithResources:count:) or for all
// buffers (memoryBarrierWithScope:). A misuse is reported by Commit.
func (c *systemCommandBuffer) Barrier(buffers ...Buffer) {
	if err := c.checkEncoding("Barrier"); err != nil {
		c.err = cmp(c.err, err)
		return
	}
	if c.dev.encodePools {
		defer c.dev.encodePool()()
	}
	if len(buffers) == 0 {
		purego.SyscallN(msgSendAddr, uintptr(c.enc), uintptr(sel.memoryBarrierWithScope), mtlBarrierScopeBuffers)
		return
	}
	// The resource list is scratch kept in the command buffer: one
	// allocation the first time, none per Barrier after that.
	resources := c.resources[:0]
	for i, buf := range buffers {
		b, ok := buf.(*systemBuffer)
		if !ok || b.dev != c.dev || b.released.Load() {
			c.err = cmp(c.err, fmt.Errorf("%w: Barrier: buffer %d (%T) is released or not from device %s", ErrInvalidDispatch, i, buf, c.dev.name))
			return
		}
		resources = append(resources, b.id)
	}
	c.resources = resources
	purego.SyscallN(msgSendAddr, uintptr(c.enc), uintptr(sel.memoryBarrierWithResources),
		uintptr(unsafe.Pointer(unsafe.SliceData(resources))), uintptr(len(resources)))
}

// Labels implements DebugLabeler: labels are recorded when the device was
// opened with SystemOptions.Labels.
func (c *systemCommandBuffer) Labels() bool { return c.dev.labels }

// PushDebugGroup implements DebugLabeler (pushDebugGroup: on the compute
// encoder); without Labels it does nothing.
func (c *systemCommandBuffer) PushDebugGroup(label string) {
	if !c.dev.labels || c.checkEncoding("PushDebugGroup") != nil {
		return
	}
	inPool(func() { c.sendString(c.enc, sel.pushDebugGroup, label) })
	c.groups++
}

// PopDebugGroup implements DebugLabeler.
func (c *systemCommandBuffer) PopDebugGroup() {
	if !c.dev.labels || c.groups == 0 || c.checkEncoding("PopDebugGroup") != nil {
		return
	}
	msgVoid(c.enc, sel.popDebugGroup)
	c.groups--
}

// setLabel sets obj's label (call inside a pool).
func (c *systemCommandBuffer) setLabel(obj objcID, label string) {
	c.sendString(obj, sel.setLabel, label)
}

// sendString sends obj a message taking one NSString made from s (call
// inside a pool); Metal copies the string, so it is released at once. A
// label that is not valid UTF-8 is dropped: labels are for tools only.
func (c *systemCommandBuffer) sendString(obj objcID, cmd objcSEL, s string) {
	str, err := newNSString(s, "label")
	if err != nil {
		return
	}
	purego.SyscallN(msgSendAddr, uintptr(obj), uintptr(cmd), uintptr(str))
	releaseObject(uintptr(str))
}

// encodePool pushes an autorelease pool on this OS thread for one Dispatch
// or Barrier (SystemOptions.EncodePools) and returns its pop.
func (d *systemDevice) encodePool() (pop func()) {
	runtime.LockOSThread()
	pool := autoreleasePoolPush()
	return func() {
		autoreleasePoolPop(pool)
		runtime.UnlockOSThread()
	}
}

// cmp keeps the first error.
func cmp(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// Commit ends encoding and submits the command buffer. After an earlier
// Barrier error nothing is submitted and that error is returned (also by
// Wait).
func (c *systemCommandBuffer) Commit() error {
	if err := c.checkEncoding("Commit"); err != nil {
		return err
	}
	inPool(func() {
		msgVoid(c.enc, sel.endEncoding)
		if c.err == nil {
			msgVoid(c.cb, sel.commit)
		}
	})
	if c.err != nil {
		c.state = stateFinished
		c.finishOnce.Do(func() { c.settle(Timing{}, c.err) })
		return c.err
	}
	c.state = stateCommitted
	return nil
}

// Wait blocks until the GPU finished the command buffer or ctx ends. A
// context that can end moves the blocking waitUntilCompleted to a helper
// goroutine; if ctx ends first the work still completes, and Close or a
// later Wait collects it.
func (c *systemCommandBuffer) Wait(ctx context.Context) (Timing, error) {
	if c.state == stateEncoding {
		return Timing{}, fmt.Errorf("%w: Wait before Commit", ErrInvalidDispatch)
	}
	select {
	case <-c.done:
		return c.timing, c.result
	default:
	}
	if ctx.Done() == nil {
		return c.finish()
	}
	go c.finish() // returns at once if finish already ran
	select {
	case <-c.done:
		return c.timing, c.result
	case <-ctx.Done():
		return Timing{}, fmt.Errorf("metal: %s: waiting for command buffer: %w", c.dev.name, ctx.Err())
	}
}

// finish waits for a committed command buffer (or discards an uncommitted
// one), records its outcome and releases it; it runs once, and every
// caller gets the same outcome.
func (c *systemCommandBuffer) finish() (Timing, error) {
	c.finishOnce.Do(func() {
		if c.state == stateEncoding {
			// Only Close gets here: discard unsubmitted work. An encoder
			// must be ended before it is released.
			inPool(func() { msgVoid(c.enc, sel.endEncoding) })
			c.state = stateFinished
			c.settle(Timing{}, fmt.Errorf("%w: command buffer was never committed", ErrDeviceClosed))
			return
		}
		var t Timing
		var err error
		inPool(func() {
			msgVoid(c.cb, sel.waitUntilCompleted)
			if status := msgUint(c.cb, sel.status); status != mtlCommandBufferStatusDone {
				nsErr := msgID(c.cb, sel.errorSel)
				code := int64(0)
				if nsErr != 0 {
					code = int64(msgUint(nsErr, sel.code))
				}
				err = fmt.Errorf("%w: %s: status %d, MTLCommandBufferError %d: %s",
					ErrGPUExecution, c.dev.name, status, code, nsErrorText(nsErr))
				return
			}
			t = Timing{
				GPUStart: c.dev.clock.at(msgFloat64(c.cb, sel.gpuStartTime)),
				GPUEnd:   c.dev.clock.at(msgFloat64(c.cb, sel.gpuEndTime)),
			}
		})
		// c.state stays stateCommitted: only the encoding goroutine writes
		// it, and done tells everyone else that the work is over.
		c.settle(t, err)
	})
	<-c.done
	return c.timing, c.result
}

// settle records the outcome, releases encoder and command buffer and
// wakes waiters.
func (c *systemCommandBuffer) settle(t Timing, err error) {
	c.timing, c.result = t, err
	inPool(func() {
		c.dev.ledger.drop(uintptr(c.enc))
		c.dev.ledger.drop(uintptr(c.cb))
	})
	c.dev.mu.Lock()
	delete(c.dev.inflight, c)
	c.dev.mu.Unlock()
	close(c.done)
}
