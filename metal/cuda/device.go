//go:build linux

package cuda

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/laya-metal/laya/internal/cudadrv"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/internal/mslpp"
)

var _ metal.NoCopyDevice = (*device)(nil)

type unit struct {
	src  metal.KernelSource
	tr   *mslpp.Unit
	mods map[string]*module // by NVRTC defines
}

type module struct {
	handle  uintptr
	compile time.Duration
}

type kernelRef struct {
	unit  *unit
	index int // n of mslk_<n>
	k     *mslpp.Kernel
}

type device struct {
	opts    Options
	drv     *driver
	rtc     *nvrtc
	w       *cudadrv.Worker
	waiter  *cudadrv.Worker
	ctx     uintptr
	dev     int32
	name    string
	arch    string
	streams []uintptr
	joins   []uintptr // one event per stream, reused for every join

	mu      sync.Mutex
	closed  bool
	units   []*unit
	kernels map[string][]kernelRef
	pipes   map[string]*pipeline

	memMu     sync.Mutex
	memBudget int64 // managed memory the device may still allocate
	pinned    [][]byte

	statMu sync.Mutex
	stats  map[string]*KernelTime
	// CompileTime is the total NVRTC time.
	compileTime time.Duration
	compiles    int

	// queueMu keeps command buffers encoded in the order they are committed.
	queueMu sync.Mutex
}

// Open loads the CUDA driver and NVRTC, takes the primary context of the
// device opts.Device and translates the kernel sources; kernels compile
// when their pipeline is first asked for.
func Open(opts Options) (metal.Device, error) {
	if opts.Streams <= 0 {
		opts.Streams = 4
	}
	if opts.Profile {
		opts.Streams = 1
	}
	if opts.MemoryMargin <= 0 {
		opts.MemoryMargin = 2 << 30
	}
	drv, err := loadDriver(opts.Driver)
	if err != nil {
		return nil, err
	}
	d := &device{opts: opts, drv: drv, w: cudadrv.NewWorker(), waiter: cudadrv.NewWorker(), kernels: map[string][]kernelRef{},
		pipes: map[string]*pipeline{}, stats: map[string]*KernelTime{}}
	d.w.Do(func() { err = d.init() })
	if err != nil {
		return nil, err
	}
	d.waiter.Do(func() { err = drv.call("cuCtxSetCurrent", d.ctx) })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCUDA, err)
	}
	if d.rtc, err = loadNVRTC(opts.NVRTC); err != nil {
		return nil, err
	}
	srcs := opts.Sources
	if srcs == nil {
		if srcs, err = metal.KernelSources(); err != nil {
			return nil, fmt.Errorf("cuda: reading package kernels: %w", err)
		}
	}
	byName := map[string]metal.KernelSource{}
	for _, s := range srcs {
		byName[s.Name] = s
	}
	inc := func(from, name string) (mslpp.Source, error) {
		if s, ok := byName[name]; ok {
			return mslpp.Source{Name: s.Name, Text: s.Text}, nil
		}
		return mslpp.Source{}, fmt.Errorf("%q is not among the sources: %w", name, fs.ErrNotExist)
	}
	for _, s := range srcs {
		tr, err := mslpp.TranslateFor(mslpp.Source{Name: s.Name, Text: s.Text}, inc, mslpp.CUDA)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", metal.ErrShaderCompile, err)
		}
		u := &unit{src: s, tr: tr, mods: map[string]*module{}}
		d.units = append(d.units, u)
		for i := range tr.Kernels {
			d.kernels[tr.Kernels[i].Name] = append(d.kernels[tr.Kernels[i].Name], kernelRef{unit: u, index: i, k: &tr.Kernels[i]})
		}
	}
	return d, nil
}

// init runs on the worker thread.
func (d *device) init() error {
	dev, err := d.drv.Primary(d.opts.Device, func(dev cudadrv.Device) error {
		if d.drv.Attribute(dev, 83) == 0 { // CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY
			return fmt.Errorf("%w: %s has no managed memory", ErrNoCUDA, dev.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.dev, d.ctx, d.name = dev.Handle, dev.Ctx, dev.Name
	d.arch = fmt.Sprintf("sm_%d%d", dev.CC[0], dev.CC[1])
	var free, total uint64
	if err := d.drv.call("cuMemGetInfo_v2", uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total))); err != nil {
		return fmt.Errorf("%w: %w", ErrNoCUDA, err)
	}
	d.memBudget = int64(free) - d.opts.MemoryMargin
	for i := 0; i < d.opts.Streams; i++ {
		var s, e uintptr
		if err := d.drv.call("cuStreamCreate", uintptr(unsafe.Pointer(&s)), 1); err != nil {
			return err
		}
		if err := d.drv.call("cuEventCreate", uintptr(unsafe.Pointer(&e)), 2); err != nil {
			return err
		}
		d.streams, d.joins = append(d.streams, s), append(d.joins, e)
	}
	return nil
}

func (d *device) Name() string {
	return fmt.Sprintf("metal-cuda (%s, %s, %d streams)", d.name, d.arch, d.opts.Streams)
}

func (d *device) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// Close waits for the work in flight and releases streams, modules and the
// context. Buffers still alive are freed with the context.
func (d *device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	var err error
	d.w.Do(func() {
		err = d.drv.call("cuCtxSynchronize")
		for _, u := range d.units {
			for _, m := range u.mods {
				d.drv.call("cuModuleUnload", m.handle)
			}
		}
		for i := range d.streams {
			d.drv.call("cuStreamDestroy_v2", d.streams[i])
			d.drv.call("cuEventDestroy_v2", d.joins[i])
		}
		for _, p := range d.pinned {
			d.drv.call("cuMemFreeHost", uintptr(unsafe.Pointer(&p[0])))
		}
		d.pinned = nil
		d.drv.call("cuDevicePrimaryCtxRelease_v2", uintptr(d.dev))
	})
	if err != nil {
		return fmt.Errorf("%w: %w", metal.ErrGPUExecution, err)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Buffers.

type buffer struct {
	dev      *device
	mem      []byte
	addr     uintptr // device address (managed: the same as the host's)
	managed  bool
	size     int64
	released atomic.Bool
}

func (b *buffer) Bytes() []byte { return b.mem }
func (b *buffer) Len() int      { return len(b.mem) }

// Release frees the memory. cuMemFree waits for the work that may still use
// it, as Metal keeps a buffer alive while a command buffer references it.
func (b *buffer) Release() {
	if b.released.Swap(true) || b.dev.isClosed() {
		return
	}
	b.dev.w.Do(func() {
		if b.managed {
			b.dev.drv.call("cuMemFree_v2", b.addr)
		} else {
			b.dev.drv.call("cuMemHostUnregister", b.addr)
		}
	})
	if b.managed {
		b.dev.memMu.Lock()
		b.dev.memBudget += b.size
		b.dev.memMu.Unlock()
	}
	b.mem = nil
}

func (d *device) NewBuffer(size int) (metal.Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: buffer size %d (must be > 0)", metal.ErrInvalidDispatch, size)
	}
	if d.isClosed() {
		return nil, metal.ErrDeviceClosed
	}
	n := int64(size+4095) &^ 4095
	d.memMu.Lock()
	if n > d.memBudget {
		budget := d.memBudget
		d.memMu.Unlock()
		return nil, fmt.Errorf("%w: %d bytes of managed memory asked, %d left of the GPU's free memory at open", ErrOutOfMemory, n, budget)
	}
	d.memBudget -= n
	d.memMu.Unlock()
	var addr, free, total uint64
	var err error
	d.w.Do(func() {
		// The budget above counts this device's buffers against the free
		// memory at Open; the current free memory also counts other
		// devices and processes. Managed memory beyond it can hang the GPU.
		if err = d.drv.call("cuMemGetInfo_v2", uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total))); err != nil {
			return
		}
		if n > int64(free)-d.opts.MemoryMargin {
			err = fmt.Errorf("%d bytes asked, the GPU has %d free (%d kept as a margin)", n, free, d.opts.MemoryMargin)
			return
		}
		if err = d.drv.call("cuMemAllocManaged", uintptr(unsafe.Pointer(&addr)), uintptr(n), 1); err != nil {
			return
		}
		// Zeroed as NewBuffer promises, on the device: the pages start
		// there, where the kernels use them.
		err = d.drv.call("cuMemsetD8_v2", uintptr(addr), 0, uintptr(n))
	})
	if err != nil {
		d.memMu.Lock()
		d.memBudget += n
		d.memMu.Unlock()
		if addr != 0 {
			d.w.Do(func() { d.drv.call("cuMemFree_v2", uintptr(addr)) })
		}
		return nil, fmt.Errorf("%w: %d bytes: %w", ErrOutOfMemory, size, err)
	}
	mem := unsafe.Slice((*byte)(ptrAt(uintptr(addr), 0)), size)
	return &buffer{dev: d, mem: mem, addr: uintptr(addr), managed: true, size: n}, nil
}

// NewBufferNoCopy registers data with the driver (read-only: kernels must
// not write it) so that kernels read it in place, or fails with
// metal.ErrNoCopy.
func (d *device) NewBufferNoCopy(data []byte) (metal.Buffer, error) {
	if d.isClosed() {
		return nil, metal.ErrDeviceClosed
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty memory", metal.ErrNoCopy)
	}
	if !d.opts.MapHost {
		return nil, fmt.Errorf("%w: the CUDA device copies host memory into device memory (Options.MapHost is off)", metal.ErrNoCopy)
	}
	page := os.Getpagesize()
	base := uintptr(unsafe.Pointer(&data[0]))
	length, ok := metal.NoCopyLength(base, len(data), cap(data), page)
	if !ok {
		return nil, fmt.Errorf("%w: %d bytes are not page-aligned (page %d) with whole pages inside their allocation", metal.ErrNoCopy, len(data), page)
	}
	var err error
	var dptr uint64
	d.w.Do(func() {
		// DEVICEMAP | READ_ONLY: an mmap'd file is read-only memory.
		if err = d.drv.call("cuMemHostRegister_v2", base, uintptr(length), 2|8); err != nil {
			return
		}
		if err = d.drv.call("cuMemHostGetDevicePointer_v2", uintptr(unsafe.Pointer(&dptr)), base, 0); err != nil {
			d.drv.call("cuMemHostUnregister", base)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", metal.ErrNoCopy, err)
	}
	if uintptr(dptr) != base {
		d.w.Do(func() { d.drv.call("cuMemHostUnregister", base) })
		return nil, fmt.Errorf("%w: the device address of registered memory differs from the host's", metal.ErrNoCopy)
	}
	return &buffer{dev: d, mem: data[:len(data):len(data)], addr: base}, nil
}

// NewBufferWithBytes copies data into a new buffer. Only NewBufferNoCopy
// wraps: registered memory is read over the bus, which a caller asks for
// explicitly.
func (d *device) NewBufferWithBytes(data []byte) (metal.Buffer, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty buffer", metal.ErrInvalidDispatch)
	}
	b, err := d.NewBuffer(len(data))
	if err != nil {
		return nil, err
	}
	copy(b.Bytes(), data)
	return b, nil
}

// pinnedBlock returns page-locked host memory that kernels can read (for
// setBytes data); blocks are recycled when their command buffer finishes.
func (d *device) pinnedBlock() ([]byte, error) {
	d.memMu.Lock()
	if n := len(d.pinned); n > 0 {
		b := d.pinned[n-1]
		d.pinned = d.pinned[:n-1]
		d.memMu.Unlock()
		return b, nil
	}
	d.memMu.Unlock()
	var p uintptr
	var err error
	d.w.Do(func() { err = d.drv.call("cuMemHostAlloc", uintptr(unsafe.Pointer(&p)), pinnedSize, 1|2) })
	if err != nil {
		return nil, fmt.Errorf("%w: pinned memory for inline constants: %w", ErrOutOfMemory, err)
	}
	return unsafe.Slice((*byte)(ptrAt(p, 0)), pinnedSize), nil
}

const pinnedSize = 256 << 10

func (d *device) releasePinned(bs [][]byte) {
	d.memMu.Lock()
	d.pinned = append(d.pinned, bs...)
	d.memMu.Unlock()
}

// ---------------------------------------------------------------------------
// Pipelines.

type pipeline struct {
	dev        *device
	kernel     *mslpp.Kernel
	fn         uintptr
	maxThreads int
	static     int
	regs       int
}

func (p *pipeline) Kernel() string                { return p.kernel.Name }
func (p *pipeline) MaxThreadsPerThreadgroup() int { return p.maxThreads }
func (p *pipeline) ThreadExecutionWidth() int     { return 32 }

// StaticThreadgroupMemory is the bytes of threadgroup arrays the kernel
// declares (CUDA's static shared memory of the compiled kernel).
func (p *pipeline) StaticThreadgroupMemory() int { return p.static }

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
	refs, ok := d.kernels[kernel]
	if !ok {
		return nil, fmt.Errorf("%w: unknown kernel %q", metal.ErrPipeline, kernel)
	}
	ref := refs[0]
	u := ref.unit
	defines := []string{"-DMSL_FAST_MATH=1"}
	if d.opts.Precise {
		defines[0] = "-DMSL_FAST_MATH=0"
	}
	var set []string
	for _, c := range constants {
		var decl *mslpp.FunctionConstant
		for i := range u.tr.Constants {
			if u.tr.Constants[i].Index == c.Index {
				decl = &u.tr.Constants[i]
			}
		}
		if decl == nil {
			return nil, fmt.Errorf("%w: kernel %s: its source declares no [[function_constant(%d)]]", metal.ErrPipeline, kernel, c.Index)
		}
		lit, err := constantLiteral(decl.Type, c.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: kernel %s: function constant %s (%d): %v", metal.ErrPipeline, kernel, decl.Name, c.Index, err)
		}
		set = append(set, fmt.Sprintf("-DMSLFC_VALUE_%d=%s", decl.Slot, lit), fmt.Sprintf("-DMSLFC_DEFINED_%d=true", decl.Slot))
	}
	sort.Strings(set)
	defines = append(defines, set...)
	modKey := strings.Join(defines, " ")
	mod, ok := u.mods[modKey]
	if !ok {
		opts := append([]string{"-default-device", "-std=c++17", "-lineinfo", "-w"}, defines...)
		start := time.Now()
		cubin, err := d.rtc.compile(u.src.Name, u.tr.CPP, d.arch, opts)
		if err != nil {
			return nil, err
		}
		el := time.Since(start)
		var h uintptr
		d.w.Do(func() {
			err = d.drv.call("cuModuleLoadData", uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&cubin[0])))
		})
		runtime.KeepAlive(cubin)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", metal.ErrPipeline, u.src.Name, err)
		}
		mod = &module{handle: h, compile: el}
		u.mods[modKey] = mod
		d.statMu.Lock()
		d.compileTime += el
		d.compiles++
		d.statMu.Unlock()
	}
	// A kernel defined in several #if branches: the compiled one has an
	// entry point.
	p := &pipeline{dev: d}
	var err error
	for _, r := range refs {
		if r.unit != u {
			continue
		}
		sym := cString(fmt.Sprintf("mslk_%d", r.index))
		var fn uintptr
		d.w.Do(func() {
			err = d.drv.call("cuModuleGetFunction", uintptr(unsafe.Pointer(&fn)), mod.handle, uintptr(unsafe.Pointer(&sym[0])))
		})
		runtime.KeepAlive(sym)
		if err == nil {
			p.fn, p.kernel = fn, r.k
			break
		}
	}
	if p.fn == 0 {
		k := ref.k
		return nil, fmt.Errorf("%w: kernel %s (%s:%d) is not compiled: its #if conditions do not hold (%v)", metal.ErrPipeline, kernel, k.File, k.Line, err)
	}
	var maxT, static, regs int32
	d.w.Do(func() {
		d.drv.call("cuFuncGetAttribute", uintptr(unsafe.Pointer(&maxT)), 0, p.fn)
		d.drv.call("cuFuncGetAttribute", uintptr(unsafe.Pointer(&static)), 1, p.fn)
		d.drv.call("cuFuncGetAttribute", uintptr(unsafe.Pointer(&regs)), 4, p.fn)
	})
	p.maxThreads, p.static, p.regs = min(int(maxT), 1024), int(static), int(regs)
	if k := p.kernel.MaxThreads; k > 0 && k < p.maxThreads {
		p.maxThreads = k
	}
	if p.static > metal.ThreadgroupMemoryLimit {
		k := p.kernel
		return nil, fmt.Errorf("%w: %w: kernel %s (%s:%d) declares %d bytes of threadgroup arrays", metal.ErrPipeline,
			metal.ErrThreadgroupMemory, kernel, k.File, k.Line, p.static)
	}
	d.pipes[key] = p
	return p, nil
}

// constantLiteral writes a function-constant value as a C++ literal of the
// constant's declared MSL type, checked as the emulator checks it.
func constantLiteral(typ string, v any) (string, error) {
	bits, err := mslpp.ConstantBits(typ, v)
	if err != nil {
		return "", err
	}
	switch typ {
	case "bool":
		return strconv.FormatBool(bits != 0), nil
	case "float":
		f := math.Float32frombits(uint32(bits))
		switch {
		case math.IsNaN(float64(f)):
			return "::__int_as_float(0x7fc00000)", nil
		case math.IsInf(float64(f), 1):
			return "::__int_as_float(0x7f800000)", nil
		case math.IsInf(float64(f), -1):
			return "::__int_as_float(0xff800000)", nil
		}
		return "(" + strconv.FormatFloat(float64(f), 'x', -1, 32) + "f)", nil
	case "half":
		return fmt.Sprintf("::metal::half_bits(0x%04x)", uint16(bits)), nil
	case "bfloat":
		return "", errors.New("bfloat function constants are not translated for CUDA")
	}
	switch typ {
	case "char", "int8_t", "short", "int16_t", "int", "int32_t", "long", "int64_t":
		size := map[string]int{"char": 8, "int8_t": 8, "short": 16, "int16_t": 16, "int": 32, "int32_t": 32, "long": 64, "int64_t": 64}[typ]
		sv := int64(bits<<(64-size)) >> (64 - size)
		if sv == math.MinInt64 {
			return "(-9223372036854775807LL-1)", nil
		}
		return fmt.Sprintf("(%dLL)", sv), nil
	}
	return fmt.Sprintf("%dULL", bits), nil
}
