//go:build linux || darwin

package emu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/laya-metal/laya/metal"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/laya-metal/laya/metal/internal/mslpp"
)

// How kernels run. Normal mode loads the compiled shared object into this
// process with purego.Dlopen (no cgo: the product builds with
// CGO_ENABLED=0) and calls mslemu_run; buffers are page-aligned mmap'd memory
// the kernels read directly, so NewBufferWithBytes can wrap an mmap'd file
// without a copy. The runtime runs GPU threads on its own OS threads with all
// signals blocked, never on Go's threads. ASan mode instead runs each command
// buffer in a separate runner executable: AddressSanitizer cannot be loaded
// into a Go process that was not built with it. Buffers are then shared
// memory files handed to the runner as inherited descriptors.

// Layout of struct mslemu_dispatch (metal/emu/internal/rt/mslemu_abi.h).
const (
	offKernel            = 0
	offBufs              = 128
	offTGBytes           = 384
	offFCValue           = 640
	offFCDefined         = 1152
	offGroups            = 1216
	offThreads           = 1228
	offSchedule          = 1240
	offWorkers           = 1244
	offSeed              = 1248
	offCancel            = 1256
	offStatus            = 1260
	offErr               = 1264
	dispatchSize         = 3312
	maxThreadgroupMemory = metal.ThreadgroupMemoryLimit
)

// runMu serialises runs: function-constant values live in globals of the
// shared object, which is loaded once per process.
var runMu sync.Mutex

var _ metal.NoCopyDevice = (*device)(nil)

type device struct {
	opts     Options
	lib      *library
	handle   uintptr
	runFn    uintptr
	tgFn     uintptr
	lineFn   uintptr // mslemu_kernel_line
	mu       sync.Mutex
	pipes    map[string]*pipeline
	closed   bool
	pageSize int
	// last is the done channel of the command buffer committed last: like
	// a Metal command queue, the device runs command buffers one after
	// another in commit order, so a stream may split its work over several
	// (chunked commits) and each sees the results of the ones before.
	queueMu sync.Mutex
	last    chan struct{}
}

// Open compiles the kernel sources with clang (or takes them from
// the cache) and returns a Device that runs them on the CPU.
func Open(opts Options) (metal.Device, error) {
	lib, err := buildLibrary(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	d := &device{opts: opts, lib: lib, pipes: map[string]*pipeline{}, pageSize: os.Getpagesize()}
	if !opts.ASan {
		h, err := purego.Dlopen(lib.path, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			return nil, fmt.Errorf("metal: loading emulated kernels %s: %w", lib.path, err)
		}
		if d.runFn, err = purego.Dlsym(h, "mslemu_run"); err != nil {
			return nil, fmt.Errorf("metal: %s: %w", lib.path, err)
		}
		if d.tgFn, err = purego.Dlsym(h, "mslemu_tg_static"); err != nil {
			return nil, fmt.Errorf("metal: %s: %w", lib.path, err)
		}
		if d.lineFn, err = purego.Dlsym(h, "mslemu_kernel_line"); err != nil {
			return nil, fmt.Errorf("metal: %s: %w", lib.path, err)
		}
		d.handle = h
	}
	return d, nil
}

func (d *device) Name() string {
	mode := ""
	if d.opts.ASan {
		mode = ", asan"
	}
	return fmt.Sprintf("msl-emu (%s%s)", d.opts.Schedule, mode)
}

// Fingerprint implements metal.Fingerprinter: the compiled library's path
// is a hash of the sources, the compiler and the flags; the name adds the
// schedule and ASan mode.
func (d *device) Fingerprint() string { return d.lib.path + "|" + d.Name() }

// Close releases the pipelines. The shared object stays loaded: other
// devices of this process may use it, and unloading code that created
// thread-locals is not safe.
func (d *device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.pipes = nil
	return nil
}

// ---------------------------------------------------------------------------
// Buffers.

type buffer struct {
	dev      *device
	mem      []byte // the caller's view, exactly the requested length
	mapping  []byte // what to munmap; nil when the buffer wraps caller memory
	file     *os.File
	released atomic.Bool
}

func (b *buffer) Bytes() []byte { return b.mem }
func (b *buffer) Len() int      { return len(b.mem) }
func (b *buffer) Release() {
	if b.released.Swap(true) {
		return
	}
	if b.mapping != nil {
		syscall.Munmap(b.mapping)
	}
	if b.file != nil {
		b.file.Close()
	}
	b.mem, b.mapping = nil, nil
}

func (d *device) NewBuffer(size int) (metal.Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: buffer size %d (must be > 0)", metal.ErrInvalidDispatch, size)
	}
	if d.isClosed() {
		return nil, metal.ErrDeviceClosed
	}
	n := (size + d.pageSize - 1) / d.pageSize * d.pageSize
	if d.opts.ASan {
		f, err := os.CreateTemp("", "msl-emu-buf-*")
		if err != nil {
			return nil, fmt.Errorf("metal: emulator buffer: %w", err)
		}
		os.Remove(f.Name()) // the runner inherits the descriptor, not the name
		if err := f.Truncate(int64(n)); err != nil {
			f.Close()
			return nil, fmt.Errorf("metal: emulator buffer: %w", err)
		}
		m, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("metal: emulator buffer: %w", err)
		}
		return &buffer{dev: d, mem: m[:size], mapping: m, file: f}, nil
	}
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("metal: emulator buffer of %d bytes: %w", size, err)
	}
	return &buffer{dev: d, mem: m[:size], mapping: m}, nil
}

// NewBufferNoCopy wraps data in place by the system device's rule
// (metal.NoCopyLength: page-aligned base, page-rounded length within
// cap(data)) or fails with metal.ErrNoCopy. ASan mode never wraps: its
// buffers are shared memory files the runner process maps.
func (d *device) NewBufferNoCopy(data []byte) (metal.Buffer, error) {
	if d.isClosed() {
		return nil, metal.ErrDeviceClosed
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty memory", metal.ErrNoCopy)
	}
	if d.opts.ASan {
		return nil, fmt.Errorf("%w: the ASan runner maps its buffers from shared memory files", metal.ErrNoCopy)
	}
	if _, ok := metal.NoCopyLength(uintptr(unsafe.Pointer(&data[0])), len(data), cap(data), d.pageSize); !ok {
		return nil, fmt.Errorf("%w: %d bytes are not page-aligned (page %d) with whole pages inside their allocation", metal.ErrNoCopy, len(data), d.pageSize)
	}
	return &buffer{dev: d, mem: data[:len(data):len(data)]}, nil
}

// NewBufferWithBytes wraps data when NewBufferNoCopy can, else copies.
func (d *device) NewBufferWithBytes(data []byte) (metal.Buffer, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty buffer", metal.ErrInvalidDispatch)
	}
	if b, err := d.NewBufferNoCopy(data); err == nil {
		return b, nil
	}
	b, err := d.NewBuffer(len(data))
	if err != nil {
		return nil, err
	}
	copy(b.Bytes(), data)
	return b, nil
}

func (d *device) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// ---------------------------------------------------------------------------
// Pipelines.

type pipeline struct {
	dev      *device
	kernel   *mslpp.Kernel
	fcValue  [64]uint64
	fcSet    [64]uint8
	tgStatic int64 // -1 when unknown (ASan mode: checked by the runner)
}

func (p *pipeline) Kernel() string { return p.kernel.Name }
func (p *pipeline) MaxThreadsPerThreadgroup() int {
	if n := p.kernel.MaxThreads; n > 0 && n < 1024 {
		return n
	}
	return 1024
}
func (p *pipeline) ThreadExecutionWidth() int { return 32 }

// StaticThreadgroupMemory is the bytes of threadgroup arrays the kernel
// body declares, as compiled (-1 when unknown: ASan mode).
func (p *pipeline) StaticThreadgroupMemory() int { return int(p.tgStatic) }

func (d *device) Pipeline(kernel string, constants ...metal.Constant) (metal.Pipeline, error) {
	key := metal.PipelineKey(kernel, constants)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, metal.ErrDeviceClosed
	}
	if p, ok := d.pipes[key]; ok {
		return p, nil
	}
	k, ok := d.lib.kernels[kernel]
	if !ok {
		return nil, fmt.Errorf("%w: unknown kernel %q", metal.ErrPipeline, kernel)
	}
	p := &pipeline{dev: d, kernel: k, tgStatic: -1}
	decls := d.lib.constants[d.lib.unitOf[kernel]]
	for _, c := range constants {
		var decl *mslpp.FunctionConstant
		for i := range decls {
			if decls[i].Index == c.Index {
				decl = &decls[i]
			}
		}
		if decl == nil {
			return nil, fmt.Errorf("%w: kernel %s: its source declares no [[function_constant(%d)]]", metal.ErrPipeline, kernel, c.Index)
		}
		bits, err := mslpp.ConstantBits(decl.Type, c.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: kernel %s: function constant %s (%d): %v", metal.ErrPipeline, kernel, decl.Name, c.Index, err)
		}
		p.fcValue[decl.Slot], p.fcSet[decl.Slot] = bits, 1
	}
	if d.tgFn != 0 {
		name, err := d.cString(kernel)
		if err != nil {
			return nil, err
		}
		r, _, _ := purego.SyscallN(d.tgFn, uintptr(unsafe.Pointer(&name[0])))
		if vs := d.lib.variants[kernel]; len(vs) > 1 {
			// Definitions in several #if branches: bind the compiled one.
			ln, _, _ := purego.SyscallN(d.lineFn, uintptr(unsafe.Pointer(&name[0])))
			for _, v := range vs {
				if int64(ln) == int64(v.Line) {
					k, p.kernel = v, v
				}
			}
		}
		syscall.Munmap(name)
		p.tgStatic = int64(r)
		if p.tgStatic < 0 {
			// The preprocessor saw the kernel inside an #if block that
			// clang did not compile.
			return nil, fmt.Errorf("%w: kernel %s (%s:%d) is not compiled: its #if conditions do not hold", metal.ErrPipeline, kernel, k.File, k.Line)
		}
		if p.tgStatic > maxThreadgroupMemory {
			return nil, fmt.Errorf("%w: %w: kernel %s (%s:%d) declares %d bytes of threadgroup arrays", metal.ErrPipeline,
				ErrThreadgroupMemory, kernel, k.File, k.Line, p.tgStatic)
		}
	}
	d.pipes[key] = p
	return p, nil
}

// cString copies s into fresh mmap'd memory: no Go pointer goes to C.
func (d *device) cString(s string) ([]byte, error) {
	m, err := syscall.Mmap(-1, 0, d.pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	copy(m[:d.pageSize-1], s)
	return m, nil
}

// ---------------------------------------------------------------------------
// Command buffers.

type dispatch struct {
	p               *pipeline
	groups, threads metal.Size3
	args            []metal.Arg
}

type commandBuffer struct {
	dev       *device
	ops       []dispatch
	commitOne sync.Once
	committed bool
	done      chan struct{}
	cancel    atomic.Bool
	cancelPtr atomic.Pointer[uint32]
	kill      context.CancelFunc
	timing    metal.Timing
	err       error
}

func (d *device) NewCommandBuffer() (metal.CommandBuffer, error) {
	if d.isClosed() {
		return nil, metal.ErrDeviceClosed
	}
	return &commandBuffer{dev: d, done: make(chan struct{})}, nil
}

func (cb *commandBuffer) Dispatch(p metal.Pipeline, groups, threads metal.Size3, args ...metal.Arg) error {
	if cb.committed {
		return fmt.Errorf("%w: Dispatch after Commit", metal.ErrInvalidDispatch)
	}
	ep, ok := p.(*pipeline)
	if !ok || ep.dev != cb.dev {
		return fmt.Errorf("%w: pipeline of another device", metal.ErrInvalidDispatch)
	}
	k := ep.kernel
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: kernel %s (%s:%d): %s", metal.ErrInvalidDispatch, k.Name, k.File, k.Line, fmt.Sprintf(format, a...))
	}
	lim := metal.DispatchLimits{MaxThreads: ep.MaxThreadsPerThreadgroup(), StaticThreadgroupMemory: int(ep.tgStatic),
		MaxThreadgroupMemory: maxThreadgroupMemory}
	if _, err := metal.CheckDispatch(lim, groups, threads, args); err != nil {
		return fmt.Errorf("kernel %s (%s:%d): %w", k.Name, k.File, k.Line, err)
	}
	rec := dispatch{p: ep, groups: groups, threads: threads}
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
			return bad("no parameter takes argument index %d (%s)", a.Index, argKind(a))
		}
		// metal.CheckDispatch checked kinds, offsets and sizes; what is
		// left is what only this device knows.
		switch {
		case a.Buffer != nil:
			eb, ok := a.Buffer.(*buffer)
			if !ok || eb.dev != cb.dev {
				return bad("buffer(%d) belongs to another device", a.Index)
			}
			if eb.released.Load() {
				return bad("buffer(%d) was released", a.Index)
			}
			// A declared access must be what the parameter allows: a
			// backend places its barriers by it, and a write declared as
			// a read would lose one on a GPU while the emulator, running
			// dispatches in order, still gave the right answer.
			if a.Access != metal.AccessNone && a.Access.Writes() != writableParam(param.Type) {
				return bad("buffer(%d) %s is %q, bound as %v", a.Index, param.Name, param.Type, a.Access)
			}
		case a.Bytes != nil:
			a.Bytes = append([]byte(nil), a.Bytes...) // copied at encode time, as Metal does
		}
		bound[[2]int{int(param.Kind), a.Index}] = true
		rec.args = append(rec.args, a)
	}
	for _, pp := range k.Params {
		if pp.Kind == mslpp.Builtin || bound[[2]int{int(pp.Kind), pp.Index}] {
			continue
		}
		if pp.FunctionConstant != "" {
			continue // optional: Metal only requires it when the constant is true
		}
		if pp.Kind == mslpp.Threadgroup {
			return bad("threadgroup(%d) %s has no ThreadgroupBytes", pp.Index, pp.Name)
		}
		return bad("buffer(%d) %s is not bound", pp.Index, pp.Name)
	}
	cb.ops = append(cb.ops, rec)
	return nil
}

// writableParam reports whether a buffer parameter's type lets the kernel
// write it: a device pointer not to const ("device float*"), against
// "device const float*" and the constant address space.
func writableParam(typ string) bool {
	f := strings.FieldsFunc(typ, func(r rune) bool { return r == ' ' || r == '*' || r == '&' })
	return len(f) > 0 && f[0] == "device" && !slices.Contains(f, "const")
}

func argKind(a metal.Arg) string {
	switch {
	case a.ThreadgroupBytes > 0:
		return "threadgroup memory"
	case a.Bytes != nil:
		return "bytes"
	}
	return "buffer"
}

// Barrier is a no-op: the emulator runs dispatches one after another, which
// is a legal (fully ordered) schedule of a concurrent encoder.
func (cb *commandBuffer) Barrier(buffers ...metal.Buffer) {}

func (cb *commandBuffer) Commit() error {
	cb.commitOne.Do(func() {
		cb.committed = true
		ctx, kill := context.WithCancel(context.Background())
		cb.kill = kill
		cb.dev.queueMu.Lock()
		prev := cb.dev.last
		cb.dev.last = cb.done
		cb.dev.queueMu.Unlock()
		go func() {
			defer close(cb.done)
			defer kill()
			if prev != nil {
				select {
				case <-prev:
				case <-ctx.Done():
					cb.err = ctx.Err()
					return
				}
			}
			start := time.Now()
			if cb.dev.opts.ASan {
				cb.err = cb.runASan(ctx)
			} else {
				cb.err = cb.runInProcess()
			}
			cb.timing = metal.Timing{GPUStart: start, GPUEnd: time.Now()}
		}()
	})
	return nil
}

func (cb *commandBuffer) Wait(ctx context.Context) (metal.Timing, error) {
	cb.Commit()
	select {
	case <-cb.done:
	case <-ctx.Done():
		cb.cancel.Store(true)
		if p := cb.cancelPtr.Load(); p != nil {
			atomic.StoreUint32(p, 1)
		}
		cb.kill()
		<-cb.done
		if cb.err != nil && !errors.Is(cb.err, ctx.Err()) {
			return cb.timing, fmt.Errorf("metal: command buffer stopped: %w (%w)", ctx.Err(), cb.err)
		}
		return cb.timing, fmt.Errorf("metal: command buffer stopped: %w", ctx.Err())
	}
	return cb.timing, cb.err
}

// encode fills one mslemu_dispatch record; addr gives each argument's
// address as the runtime will see it.
func (cb *commandBuffer) encode(rec []byte, op dispatch, addr func(metal.Arg) (uint64, error)) error {
	clear(rec[:dispatchSize])
	copy(rec[offKernel:offKernel+127], op.p.kernel.Name)
	le := binary.LittleEndian
	for _, a := range op.args {
		if a.ThreadgroupBytes > 0 {
			le.PutUint64(rec[offTGBytes+8*a.Index:], uint64((a.ThreadgroupBytes+15)&^15))
			continue
		}
		v, err := addr(a)
		if err != nil {
			return err
		}
		le.PutUint64(rec[offBufs+8*a.Index:], v)
	}
	for i := 0; i < 64; i++ {
		le.PutUint64(rec[offFCValue+8*i:], op.p.fcValue[i])
		rec[offFCDefined+i] = op.p.fcSet[i]
	}
	for i, v := range []int{op.groups.X, op.groups.Y, op.groups.Z} {
		le.PutUint32(rec[offGroups+4*i:], uint32(v))
	}
	for i, v := range []int{op.threads.X, op.threads.Y, op.threads.Z} {
		le.PutUint32(rec[offThreads+4*i:], uint32(v))
	}
	s := cb.dev.opts.Schedule
	le.PutUint32(rec[offSchedule:], uint32(s.Order))
	le.PutUint32(rec[offWorkers:], uint32(max(cb.dev.opts.Workers, 0)))
	le.PutUint64(rec[offSeed:], s.Seed)
	return nil
}

func (cb *commandBuffer) runInProcess() error {
	if len(cb.ops) == 0 {
		return nil
	}
	need := dispatchSize
	for _, op := range cb.ops {
		n := 0
		for _, a := range op.args {
			n += (len(a.Bytes) + 15) &^ 15
		}
		need = max(need, dispatchSize+16+n)
	}
	size := (need + cb.dev.pageSize - 1) / cb.dev.pageSize * cb.dev.pageSize
	scratch, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("metal: emulator scratch: %w", err)
	}
	defer syscall.Munmap(scratch)
	cancelPtr := (*uint32)(unsafe.Pointer(&scratch[offCancel]))
	cb.cancelPtr.Store(cancelPtr)
	defer cb.cancelPtr.Store(nil)

	runMu.Lock()
	defer runMu.Unlock()
	for _, op := range cb.ops {
		next := (dispatchSize + 15) &^ 15
		err := cb.encode(scratch, op, func(a metal.Arg) (uint64, error) {
			if a.Bytes != nil {
				at := next
				copy(scratch[at:], a.Bytes)
				next += (len(a.Bytes) + 15) &^ 15
				return uint64(uintptr(unsafe.Pointer(&scratch[at]))), nil
			}
			eb := a.Buffer.(*buffer)
			if eb.released.Load() {
				return 0, fmt.Errorf("%w: buffer(%d) released before the command buffer ran", metal.ErrDeviceClosed, a.Index)
			}
			return uint64(uintptr(unsafe.Pointer(&eb.mem[a.Offset]))), nil
		})
		if err != nil {
			return err
		}
		if cb.cancel.Load() {
			atomic.StoreUint32(cancelPtr, 1)
		}
		purego.SyscallN(cb.dev.runFn, uintptr(unsafe.Pointer(&scratch[0])))
		if err := cb.status(op, scratch, ""); err != nil {
			return err
		}
	}
	return nil
}

// status turns a finished record into an error.
func (cb *commandBuffer) status(op dispatch, rec []byte, report string) error {
	st := binary.LittleEndian.Uint32(rec[offStatus:])
	if st == 0 {
		return nil
	}
	msg := string(rec[offErr : offErr+bytes.IndexByte(rec[offErr:dispatchSize], 0)])
	if st == dispatchStatusCanceled {
		return fmt.Errorf("metal: %s: %w", msg, context.Canceled)
	}
	return newKernelError(op.p.kernel.Name, msg, report, st)
}

// The runtime's dispatch statuses (MSLEMU_STATUS_* in mslemu_abi.h): errors
// are classified by them, not by the diagnostic's words.
const (
	dispatchStatusDiagnostic        = 1
	dispatchStatusCanceled          = 2
	dispatchStatusThreadgroupMemory = 3
)

// newKernelError is the error of a diagnostic with the runtime's status st.
func newKernelError(kernel, msg, report string, st uint32) *KernelError {
	e := &KernelError{Kernel: kernel, Message: msg, Report: report}
	if st == dispatchStatusThreadgroupMemory {
		e.cause = ErrThreadgroupMemory
	}
	return e
}

// ---------------------------------------------------------------------------
// ASan mode: one runner process per command buffer.

func (cb *commandBuffer) runASan(ctx context.Context) error {
	if len(cb.ops) == 0 {
		return nil
	}
	var files []*os.File
	var sizes []uint64
	index := map[*buffer]int{}
	var blob []byte
	recs := make([]byte, dispatchSize*len(cb.ops))
	for i, op := range cb.ops {
		err := cb.encode(recs[i*dispatchSize:], op, func(a metal.Arg) (uint64, error) {
			if a.Bytes != nil {
				off := len(blob)
				blob = append(blob, a.Bytes...)
				return 1<<63 | uint64(len(a.Bytes))<<32 | uint64(off), nil
			}
			eb := a.Buffer.(*buffer)
			if eb.released.Load() {
				return 0, fmt.Errorf("%w: buffer(%d) released before the command buffer ran", metal.ErrDeviceClosed, a.Index)
			}
			j, ok := index[eb]
			if !ok {
				j = len(files)
				index[eb] = j
				files = append(files, eb.file)
				sizes = append(sizes, uint64(eb.Len()))
			}
			return 1<<62 | uint64(j)<<40 | uint64(a.Offset), nil
		})
		if err != nil {
			return err
		}
	}
	job, err := os.CreateTemp("", "msl-emu-job-*")
	if err != nil {
		return fmt.Errorf("metal: asan job: %w", err)
	}
	defer os.Remove(job.Name())
	var hdr bytes.Buffer
	hdr.WriteString("MSLEMUJ1")
	binary.Write(&hdr, binary.LittleEndian, uint32(len(files)))
	binary.Write(&hdr, binary.LittleEndian, uint32(len(cb.ops)))
	binary.Write(&hdr, binary.LittleEndian, sizes)
	hdr.Write(recs)
	binary.Write(&hdr, binary.LittleEndian, uint64(len(blob)))
	hdr.Write(blob)
	_, err = job.Write(hdr.Bytes())
	if cerr := job.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("metal: asan job: %w", err)
	}

	cmd := exec.CommandContext(ctx, cb.dev.lib.path, job.Name())
	cmd.ExtraFiles = files
	cmd.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=0:exitcode=86:abort_on_error=0:symbolize=1")
	if cb.dev.lib.symbolize != "" {
		cmd.Env = append(cmd.Env, "ASAN_SYMBOLIZER_PATH="+cb.dev.lib.symbolize)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	if runErr == nil {
		return nil
	}
	if ctx.Err() != nil || cb.cancel.Load() {
		return fmt.Errorf("metal: asan runner stopped: %w", context.Canceled)
	}
	return asanError(stderr.String(), runErr)
}

// asanError reads the runner's stderr: an emulator diagnostic, or an
// AddressSanitizer report of which the first frame in a .metal file names
// the line.
func asanError(stderr string, runErr error) error {
	kernel := ""
	var diag, summary, frame string
	var st uint32 = dispatchStatusDiagnostic
	for _, l := range strings.Split(stderr, "\n") {
		switch {
		case strings.HasPrefix(l, "MSLEMU-RUNNING: "):
			kernel = strings.TrimPrefix(l, "MSLEMU-RUNNING: ")
		case strings.HasPrefix(l, "MSLEMU-ERROR: "):
			// "MSLEMU-ERROR: <status> <diagnostic>" (mslemu_runner.cpp).
			code, text, _ := strings.Cut(strings.TrimPrefix(l, "MSLEMU-ERROR: "), " ")
			if n, err := strconv.ParseUint(code, 10, 32); err == nil {
				st, diag = uint32(n), text
			} else {
				diag = strings.TrimPrefix(l, "MSLEMU-ERROR: ")
			}
		case summary == "" && strings.Contains(l, "ERROR: AddressSanitizer:"):
			summary = strings.TrimSpace(l[strings.Index(l, "AddressSanitizer:")+len("AddressSanitizer:"):])
			if i := strings.Index(summary, " on address"); i >= 0 {
				summary = summary[:i]
			}
		case summary != "" && frame == "" && strings.Contains(l, ".metal:"):
			f := strings.Fields(l)
			frame = f[len(f)-1]
		case summary != "" && strings.HasPrefix(strings.TrimSpace(l), "READ of size"), summary != "" && strings.HasPrefix(strings.TrimSpace(l), "WRITE of size"):
			summary += " (" + strings.TrimSpace(strings.SplitN(strings.TrimSpace(l), " at ", 2)[0]) + ")"
		}
	}
	switch {
	case diag != "":
		return newKernelError(kernel, diag, "", st)
	case summary != "":
		where := frame
		if where == "" {
			where = "an unknown line (no .metal frame in the report)"
		}
		return newKernelError(kernel, fmt.Sprintf("kernel %s: %s at %s", kernel, summary, where), stderr, dispatchStatusDiagnostic)
	}
	return newKernelError(kernel, fmt.Sprintf("kernel %s: asan runner failed: %v: %s", kernel, runErr, strings.TrimSpace(stderr)), stderr, dispatchStatusDiagnostic)
}
