//go:build linux

package cuda

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/internal/mslpp"
)

// Layout of struct metal::Launch (msl_cuda.h), the one parameter of every
// entry point.
const (
	offBuf     = 0   // void* buf[31]
	offTGOff   = 248 // uint tgoff[31]
	offGroups  = 372 // uint groups[3]
	offGOff    = 384 // uint goff[3]
	launchSize = 400
	// maxGridYZ is CUDA's limit on gridDim.y and .z; Metal's is 2^32-1, so
	// larger grids run as several launches with an offset (Launch.goff).
	maxGridYZ = 65535
	maxGridX  = 1<<31 - 1
)

type op struct {
	p               *pipeline
	groups, threads metal.Size3
	launch          [launchSize]byte
	params          [1]uintptr // cuLaunchKernel's kernelParams: the address of launch
	shared          int
	barrier         bool
}

type commandBuffer struct {
	dev        *device
	ops        []op
	dispatches int
	pinned     [][]byte
	pinUsed    int
	commitOnce sync.Once
	committed  bool
	done       chan struct{}
	timing     metal.Timing
	err        error
	start, end uintptr
	prof       []uintptr // event pairs around each dispatch (Options.Profile)
	profKernel []string
}

func (d *device) NewCommandBuffer() (metal.CommandBuffer, error) {
	if d.isClosed() {
		return nil, metal.ErrDeviceClosed
	}
	return &commandBuffer{dev: d, done: make(chan struct{})}, nil
}

// inline copies setBytes data into pinned memory and returns its address.
func (cb *commandBuffer) inline(b []byte) (uintptr, error) {
	n := (len(b) + 15) &^ 15
	if len(cb.pinned) == 0 || cb.pinUsed+n > pinnedSize {
		blk, err := cb.dev.pinnedBlock()
		if err != nil {
			return 0, err
		}
		cb.pinned = append(cb.pinned, blk)
		cb.pinUsed = 0
	}
	blk := cb.pinned[len(cb.pinned)-1]
	at := cb.pinUsed
	copy(blk[at:], b)
	cb.pinUsed += n
	return uintptr(unsafe.Pointer(&blk[at])), nil
}

func (cb *commandBuffer) Dispatch(p metal.Pipeline, groups, threads metal.Size3, args ...metal.Arg) error {
	if cb.committed {
		return fmt.Errorf("%w: Dispatch after Commit", metal.ErrInvalidDispatch)
	}
	cp, ok := p.(*pipeline)
	if !ok || cp.dev != cb.dev {
		return fmt.Errorf("%w: pipeline of another device", metal.ErrInvalidDispatch)
	}
	k := cp.kernel
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: kernel %s (%s:%d): %s", metal.ErrInvalidDispatch, k.Name, k.File, k.Line, fmt.Sprintf(format, a...))
	}
	lim := metal.DispatchLimits{MaxThreads: cp.maxThreads, StaticThreadgroupMemory: cp.static, MaxThreadgroupMemory: metal.ThreadgroupMemoryLimit}
	empty, err := metal.CheckDispatch(lim, groups, threads, args)
	if err != nil {
		return fmt.Errorf("kernel %s (%s:%d): %w", k.Name, k.File, k.Line, err)
	}
	if groups.X > maxGridX {
		return bad("%d threadgroups in x; CUDA launches at most %d", groups.X, maxGridX)
	}
	o := op{p: cp, groups: groups, threads: threads}
	le := binary.LittleEndian
	bound := map[[2]int]bool{}
	for _, a := range args {
		var param *mslpp.Param
		for i := range k.Params {
			pp := &k.Params[i]
			if pp.Index == a.Index && ((pp.Kind == mslpp.Threadgroup) == (a.ThreadgroupBytes > 0)) && pp.Kind != mslpp.Builtin {
				param = pp
			}
		}
		if param == nil {
			return bad("no parameter takes argument index %d", a.Index)
		}
		switch {
		case a.Buffer != nil:
			b, ok := a.Buffer.(*buffer)
			if !ok || b.dev != cb.dev {
				return bad("buffer(%d) belongs to another device", a.Index)
			}
			if b.released.Load() {
				return bad("buffer(%d) was released", a.Index)
			}
			le.PutUint64(o.launch[offBuf+8*a.Index:], uint64(b.addr)+uint64(a.Offset))
		case a.Bytes != nil:
			addr, err := cb.inline(a.Bytes) // copied at encode time, as Metal does
			if err != nil {
				return err
			}
			le.PutUint64(o.launch[offBuf+8*a.Index:], uint64(addr))
		default:
			le.PutUint32(o.launch[offTGOff+4*a.Index:], uint32(o.shared))
			o.shared += (a.ThreadgroupBytes + 15) &^ 15
		}
		bound[[2]int{int(param.Kind), a.Index}] = true
	}
	for _, pp := range k.Params {
		if pp.Kind == mslpp.Builtin || bound[[2]int{int(pp.Kind), pp.Index}] || pp.FunctionConstant != "" {
			continue
		}
		if pp.Kind == mslpp.Threadgroup {
			return bad("threadgroup(%d) %s has no ThreadgroupBytes", pp.Index, pp.Name)
		}
		return bad("buffer(%d) %s is not bound", pp.Index, pp.Name)
	}
	if empty {
		return nil
	}
	for i, v := range []int{groups.X, groups.Y, groups.Z} {
		le.PutUint32(o.launch[offGroups+4*i:], uint32(v))
	}
	cb.ops = append(cb.ops, o)
	cb.dispatches++
	return nil
}

// Barrier orders everything before it against everything after it: the
// streams are joined. Named buffers are not tracked separately.
func (cb *commandBuffer) Barrier(buffers ...metal.Buffer) {
	if cb.committed || len(cb.ops) == 0 || cb.ops[len(cb.ops)-1].barrier {
		return
	}
	cb.ops = append(cb.ops, op{barrier: true})
}

func (cb *commandBuffer) Commit() error {
	cb.commitOnce.Do(func() {
		cb.committed = true
		d := cb.dev
		if d.isClosed() {
			cb.err = metal.ErrDeviceClosed
			close(cb.done)
			return
		}
		// The worker runs encodings in the order they are handed over,
		// which is the queue order.
		d.queueMu.Lock()
		d.w.Do(func() { cb.err = cb.encode() })
		d.queueMu.Unlock()
		if cb.err != nil {
			d.w.Do(cb.release) // events belong to the worker thread's context
			close(cb.done)
			return
		}
		go d.waiter.Do(cb.finish)
	})
	return nil
}

func (cb *commandBuffer) Wait(ctx context.Context) (metal.Timing, error) {
	cb.Commit()
	select {
	case <-cb.done:
		return cb.timing, cb.err
	case <-ctx.Done():
		return cb.timing, fmt.Errorf("metal: command buffer stopped waiting: %w (the GPU finishes it)", ctx.Err())
	}
}

// encode issues every dispatch; it runs on the worker thread.
func (cb *commandBuffer) encode() error {
	d := cb.dev
	S := d.streams
	if err := d.drv.call("cuEventCreate", uintptr(unsafe.Pointer(&cb.start)), 0); err != nil {
		return fmt.Errorf("%w: %w", metal.ErrGPUExecution, err)
	}
	if err := d.drv.call("cuEventCreate", uintptr(unsafe.Pointer(&cb.end)), 0); err != nil {
		return fmt.Errorf("%w: %w", metal.ErrGPUExecution, err)
	}
	d.drv.call("cuEventRecord", cb.start, S[0])
	for _, s := range S[1:] {
		d.drv.call("cuStreamWaitEvent", s, cb.start, 0)
	}
	var rng *rand.Rand
	if d.opts.Shuffle != 0 {
		rng = rand.New(rand.NewPCG(d.opts.Shuffle, uint64(cb.dispatches)))
	}
	var seg []int
	var err error
	flush := func() {
		if rng != nil {
			rng.Shuffle(len(seg), func(i, j int) { seg[i], seg[j] = seg[j], seg[i] })
		}
		for i, j := range seg {
			if err == nil {
				err = cb.launch(&cb.ops[j], S[i%len(S)])
			}
		}
		seg = seg[:0]
	}
	join := func() {
		if len(S) == 1 {
			return
		}
		for i := 1; i < len(S); i++ {
			d.drv.call("cuEventRecord", d.joins[i], S[i])
			d.drv.call("cuStreamWaitEvent", S[0], d.joins[i], 0)
		}
		d.drv.call("cuEventRecord", d.joins[0], S[0])
		for i := 1; i < len(S); i++ {
			d.drv.call("cuStreamWaitEvent", S[i], d.joins[0], 0)
		}
	}
	for j := range cb.ops {
		if cb.ops[j].barrier {
			flush()
			join()
			continue
		}
		seg = append(seg, j)
	}
	flush()
	join()
	d.drv.call("cuEventRecord", cb.end, S[0])
	return err
}

// launch issues one dispatch on stream s, in parts when the grid exceeds
// CUDA's y or z limits.
func (cb *commandBuffer) launch(o *op, s uintptr) error {
	d := cb.dev
	g, t := o.groups, o.threads
	var before, after uintptr
	if d.opts.Profile {
		d.drv.call("cuEventCreate", uintptr(unsafe.Pointer(&before)), 0)
		d.drv.call("cuEventCreate", uintptr(unsafe.Pointer(&after)), 0)
		d.drv.call("cuEventRecord", before, s)
	}
	// The launch record and the parameter array live in cb.ops, on the
	// heap: the driver reads them through the addresses given.
	blob := &o.launch
	le := binary.LittleEndian
	for z0 := 0; z0 < g.Z; z0 += maxGridYZ {
		for y0 := 0; y0 < g.Y; y0 += maxGridYZ {
			le.PutUint32(blob[offGOff+4:], uint32(y0))
			le.PutUint32(blob[offGOff+8:], uint32(z0))
			o.params[0] = uintptr(unsafe.Pointer(&blob[0]))
			err := d.drv.call("cuLaunchKernel", o.p.fn, uintptr(g.X), uintptr(min(g.Y-y0, maxGridYZ)), uintptr(min(g.Z-z0, maxGridYZ)),
				uintptr(t.X), uintptr(t.Y), uintptr(t.Z), uintptr(o.shared), s, uintptr(unsafe.Pointer(&o.params[0])), 0)
			if err != nil {
				k := o.p.kernel
				return fmt.Errorf("%w: kernel %s (%s:%d), %d×%d×%d threadgroups of %d×%d×%d (%d registers a thread): %w",
					metal.ErrGPUExecution, k.Name, k.File, k.Line, g.X, g.Y, g.Z, t.X, t.Y, t.Z, o.p.regs, err)
			}
		}
	}
	if d.opts.Profile {
		d.drv.call("cuEventRecord", after, s)
		cb.prof = append(cb.prof, before, after)
		cb.profKernel = append(cb.profKernel, o.p.kernel.Name)
	}
	return nil
}

// finish waits for the command buffer on the waiter thread, then records its
// timing and releases what it held.
func (cb *commandBuffer) finish() {
	d := cb.dev
	defer close(cb.done)
	defer cb.release()
	if err := d.drv.call("cuEventSynchronize", cb.end); err != nil {
		names := map[string]bool{}
		var list []string
		for _, o := range cb.ops {
			if o.p != nil && !names[o.p.kernel.Name] {
				names[o.p.kernel.Name] = true
				list = append(list, o.p.kernel.Name)
			}
		}
		cb.err = fmt.Errorf("%w: a kernel of the command buffer (%s) failed: %w; compute-sanitizer names it", metal.ErrGPUExecution, strings.Join(list, ", "), err)
		return
	}
	now := time.Now()
	var ms float32
	d.drv.call("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), cb.start, cb.end)
	cb.timing = metal.Timing{GPUStart: now.Add(-time.Duration(float64(ms) * 1e6)), GPUEnd: now}
	if len(cb.prof) > 0 {
		d.statMu.Lock()
		for i, name := range cb.profKernel {
			d.drv.call("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), cb.prof[2*i], cb.prof[2*i+1])
			st := d.stats[name]
			if st == nil {
				st = &KernelTime{Kernel: name}
				d.stats[name] = st
			}
			st.Dispatches++
			st.Seconds += float64(ms) / 1e3
		}
		d.statMu.Unlock()
	}
}

// release frees the command buffer's events and pinned blocks; it runs on
// a thread where the context is current: the waiter's, or for a failed
// encoding the worker's.
func (cb *commandBuffer) release() {
	d := cb.dev
	for _, e := range append([]uintptr{cb.start, cb.end}, cb.prof...) {
		if e != 0 {
			d.drv.call("cuEventDestroy_v2", e)
		}
	}
	cb.start, cb.end, cb.prof = 0, 0, nil
	d.releasePinned(cb.pinned)
	cb.pinned = nil
}

// Stats reports a CUDA device's NVRTC work and, with Options.Profile, the
// GPU time of each kernel so far; ok is false for another device.
func Stats(dev metal.Device) (s DeviceStats, ok bool) {
	d, ok := dev.(*device)
	if !ok {
		return DeviceStats{}, false
	}
	d.statMu.Lock()
	defer d.statMu.Unlock()
	s.Compiles, s.CompileTime = d.compiles, d.compileTime
	for _, k := range d.stats {
		s.Kernels = append(s.Kernels, *k)
	}
	sort.Slice(s.Kernels, func(i, j int) bool { return s.Kernels[i].Seconds > s.Kernels[j].Seconds })
	return s, true
}
