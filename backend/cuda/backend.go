//go:build linux

package cuda

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/cudadrv"
	"github.com/laya-metal/laya/weights"
)

//go:embed kernels.cu
var kernelSource string

var driverFuncs = []string{
	"cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
	"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent", "cuCtxGetCurrent", "cuCtxSynchronize",
	"cuMemGetInfo_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyHtoDAsync_v2",
	"cuMemcpyDtoHAsync_v2", "cuMemsetD8Async", "cuMemHostAlloc", "cuMemFreeHost",
	"cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction", "cuFuncSetAttribute", "cuLaunchKernel",
	"cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize", "cuStreamBeginCapture_v2", "cuStreamEndCapture",
	"cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy",
	"cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventQuery", "cuEventDestroy_v2",
}

// kernels are the entry points of kernels.cu.
type kernels struct {
	gather, layerNorm, layerNorm4, biasAct, add, actMap, geglu, geglu4, softmax, rope, attention, actFeatures, to16, packOut, linearSmall uintptr
	// clusterProbe is cluster_probe, the cluster primitives' check
	// (TestClusterProbe).
	clusterProbe uintptr
	// tmaProbe is tma_probe, the bulk tensor copies' check (TestTMAProbe).
	tmaProbe uintptr
	// attentionTiled holds the tiled attention kernels by head dim: 8 warps
	// of 1, 2 and 4 queries each, then 16 warps of 1, then attn_reg's 16
	// warps sharing 16 queries (regKernel).
	attentionTiled map[int]*[5]uintptr
	// attentionMMA holds the tensor-core attention kernels by head dim:
	// [1, 2, 4 or 8 warps a block][terms − 1, or 2: one term reading fp16 qkv].
	attentionMMA map[int]*[4][3]uintptr
	// attentionSplit holds the tensor-core attention kernels whose four
	// warps split a 16-query tile's keys, by head dim: [terms − 1, or 2].
	attentionSplit map[int]*[3]uintptr
	// attentionRows holds the whole-row tensor-core attention kernels
	// (attn_rows) by head dim: [4, 6 or 8 warps][terms − 1, or 2].
	attentionRows map[int]*[3][3]uintptr
	// linearMMA holds linear_mma by [terms − 1][4 or 8 warps].
	linearMMA [2][2]uintptr
	// linearCl is linear_cl: a GEMM of few rows whose splits of k are
	// summed in a cluster (Options.ClusterRows).
	linearCl uintptr
	// linearWG is linear_wg: linear_cl's plan on warpgroup products
	// (Options.WGRows).
	linearWG uintptr
}

// attentionSharedLimit is the dynamic shared memory the attention kernel is
// allowed (Hopper and Ampere give a block up to 227 and 163 KiB).
const attentionSharedLimit = 96 << 10

// Backend is the cuda backend: weights resident in device memory, the
// model's operations as CUDA kernels and cuBLAS GEMMs, and each request
// shape replayed from a CUDA graph captured the second time it is seen.
type Backend struct {
	opts Options
	// lost is the first error after which the context is unusable
	// (cudadrv.ContextLost), wrapping backend.ErrDeviceLost: every stream
	// from then on fails with it at once (Health).
	lost atomic.Pointer[error]
	drv  *cudadrv.Driver
	rtc  *cudadrv.NVRTC
	blas *cublas
	w    *cudadrv.Worker
	ctx  uintptr
	dev  int32
	gpu  string
	arch string
	cc   [2]int
	sms  int // streaming multiprocessors
	// pdl: the kernels of requests launch with programmatic dependent
	// launch (unless Options.NoPDL), on a GPU of compute capability 9.0 or
	// newer, whose kernels wait for the kernel before them with
	// griddepcontrol.wait: an older GPU's would not, and must not be
	// launched so.
	pdl bool
	// clusters: the GPU launches thread block clusters (compute capability
	// 9.0, cuLaunchKernelEx), which linear_cl needs (Options.ClusterRows).
	clusters bool
	// clWaves: how many linear_cl blocks run at once, by cluster size.
	clWaves clWaves
	// wgmma: the kernels are compiled for sm_90a, the architecture-specific
	// target whose warpgroup products linear_wg needs (Options.WGRows on a
	// GPU of compute capability 9.0 exactly); wgWaves is clWaves for
	// linear_wg's blocks.
	wgmma   bool
	wgWaves clWaves
	// sharedOptin is the dynamic shared memory a block may opt in to (227
	// KiB on Hopper, 163 on the A100, 99 on other Ampere and Ada GPUs).
	sharedOptin int
	l2          int64     // L2 bytes (Options.TuneCold)
	modules     []uintptr // the loaded parts of kernels.cu
	k           kernels
	seed        maphash.Seed
	alpha       *float32 // 1 and 0 for the GEMMs, read through host pointers
	beta        *float32

	// lt runs the FP16, BF16 and FP16X2 GEMMs; nil where they run on cuBLAS
	// (Options.GEMMBLAS, FP32, or no cuBLASLt: ltMissing).
	lt        *ltGEMMs
	ltMissing bool
	// cubinCached: Open loaded the kernels from Options.KernelCache
	// instead of compiling them.
	cubinCached bool

	// mu guards the fields below it; it is never held while waiting for
	// the worker, whose functions take it.
	mu        sync.Mutex
	closed    bool
	allocs    []uintptr  // weights and tables, freed at Close; the worker's
	loadMu    sync.Mutex // serialises making rope tables and 16-bit weights
	ropes     map[ropeKey]ropeTable
	tmaps     map[wgKey]uintptr // linear_wg's tensor maps on the GPU (wgMaps), freed at Close; under mu
	free      []*cstream        // CUDA streams not in use
	streams   []*cstream
	cache     map[shapeKey][]*entry // entries not in use, by request shape
	idle      []*entry              // the same, least recently returned first
	entries   int                   // entries alive
	stats     Stats
	graphsOff bool
	opTimes   map[string]*backend.OpTime // while profiling

	bufs      sync.Pool // *recordBufs
	profiling atomic.Bool
	// pdlUncaptured: a capture failed with programmatic dependent launches
	// and succeeded without (Stats.PDLRefused); later captures go without.
	pdlUncaptured atomic.Bool
	deviceNs      atomic.Int64
}

type ropeKey struct {
	theta   float64
	headDim int
}

type ropeTable struct {
	addr      uintptr
	positions int
}

// Open loads the CUDA driver, NVRTC and cuBLAS, takes the primary context
// of GPU opts.Device and compiles the kernels for it.
func Open(opts Options) (backend.Backend, error) {
	b, err := open(opts)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func open(opts Options) (*Backend, error) {
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("cuda: options: %w", err)
	}
	if opts.MaxGraphs <= 0 {
		opts.MaxGraphs = 128
	}
	if opts.SubmitOps == 0 {
		opts.SubmitOps = DefaultSubmitOps
	}
	if opts.Bucket == 0 {
		opts.Bucket = DefaultBucket
	}
	// cuLaunchKernelEx (CUDA 11.8 and later) only for programmatic
	// dependent launch.
	drv, err := cudadrv.LoadDriver(opts.Driver, driverFuncs, "cuLaunchKernelEx", "cuFuncGetAttribute", "cuOccupancyMaxActiveClusters",
		"cuTensorMapEncodeTiled")
	if err != nil {
		return nil, err
	}
	one, zero := float32(1), float32(0)
	b := &Backend{opts: opts, drv: drv, w: cudadrv.NewWorker(), seed: maphash.MakeSeed(), alpha: &one, beta: &zero,
		ropes: map[ropeKey]ropeTable{}, cache: map[shapeKey][]*entry{}, graphsOff: opts.NoGraphs}
	b.w.Do(func() { err = b.init() })
	if err != nil {
		return nil, err
	}
	if b.rtc, err = cudadrv.LoadNVRTC(opts.NVRTC); err != nil {
		b.release()
		return nil, err
	}
	if b.blas, err = loadCUBLAS(opts.CUBLAS); err != nil {
		b.release()
		return nil, err
	}
	if opts.Precision != FP32 && !opts.GEMMBLAS {
		// Without cuBLASLt the GEMMs run on cuBLAS, as gemm=blas runs them
		// (Device says so).
		lib, err := loadCUBLASLt(b.blas.path, opts.CUBLAS != "")
		if err == nil {
			// On the worker's thread, where the context is current, as
			// every stream's handle is made.
			b.w.Do(func() { err = lib.probe() })
		}
		if err == nil {
			b.lt = &ltGEMMs{lib: lib, plans: map[ltKey]*ltPlan{}}
			if !opts.NoTune {
				b.lt.keep = openTuneCache(tuneCacheDir(opts.TuneCache, opts.KernelCache), b.tuneCacheParts()...)
			}
		} else {
			b.ltMissing = true
		}
	}
	if err = b.loadKernels(); err != nil {
		b.release()
		return nil, err
	}
	return b, nil
}

// init runs on the worker thread: the device, its capability and the
// primary context.
func (b *Backend) init() error {
	dev, err := b.drv.Primary(b.opts.Device, func(dev cudadrv.Device) error {
		cc, least := dev.CC, MinComputeCapability
		if cc[0] < least[0] || cc[0] == least[0] && cc[1] < least[1] {
			return fmt.Errorf("%w: %s has compute capability %d.%d; the kernels need %d.%d or newer", ErrUnsupportedGPU,
				dev.Name, cc[0], cc[1], least[0], least[1])
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.dev, b.ctx, b.gpu, b.cc = dev.Handle, dev.Ctx, dev.Name, dev.CC
	b.sms = max(b.drv.Attribute(dev, 16), 1) // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	b.l2 = int64(b.drv.Attribute(dev, 38))   // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
	b.sharedOptin = b.drv.Attribute(dev, 97) // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	b.arch = fmt.Sprintf("sm_%d%d", dev.CC[0], dev.CC[1])
	b.pdl = !b.opts.NoPDL && dev.CC[0] >= 9 && b.drv.Has("cuLaunchKernelEx")
	b.clusters = dev.CC[0] >= 9 && b.drv.Has("cuLaunchKernelEx")
	if b.opts.WGRows > 0 && b.clusters && dev.CC == [2]int{9, 0} {
		b.wgmma, b.arch = true, "sm_90a"
	}
	return nil
}

// loadKernels loads kernels.cu's cubins, compiled by NVRTC or kept from an
// earlier Open (Options.KernelCache): the core's, and the extras' where
// this Open needs them (needExtras).
func (b *Backend) loadKernels() error {
	parts := []int{partCore}
	if b.needExtras() {
		parts = append(parts, partExtras)
	}
	// The parts compile side by side (NVRTC takes concurrent programs;
	// their modules load one after the other on the worker thread).
	cached := make([]bool, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cached[i], errs[i] = b.loadPart(part)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.cubinCached = !slices.Contains(cached, false)
	var err error
	b.w.Do(func() { err = b.setKernelAttributes() })
	return err
}

// The parts of kernels.cu (its LAYA_PART), each compiled as a program of
// its own: a first Open compiles the core only, unless options or the GPU
// ask for the extras (about two thirds of the PTX).
const (
	partCore   = 1
	partExtras = 2
)

// needExtras reports whether this Open uses kernels of the extras:
// linear_mma (Options.MMARows), linear_cl (Options.ClusterRows), linear_wg
// (Options.WGRows), the tensor-core attention at other than four warps
// (Options.MMAWarps, or, in the precisions that use it, a GPU without the
// shared memory of the four-warp kernels, whose head dims then take fewer),
// its key-split kernels (Options.AttentionSplit) or the whole-row ones
// (Options.RowWarps).
func (b *Backend) needExtras() bool {
	o := b.opts
	if o.MMARows > 0 || o.ClusterRows > 0 || o.WGRows > 0 || o.MMAWarps != 0 && o.MMAWarps != defaultMMAWarps || o.AttentionSplit || o.RowWarps > 0 {
		return true
	}
	if b.sharedOptin <= 0 || o.Precision != FP16 && o.Precision != FP16X2 {
		return false
	}
	// FP16X2's reduced streams take its two terms too (attentionTerms).
	t := cmp.Or(o.AttentionTerms, terms(o.Precision))
	for _, dh := range attnHeadDims {
		if attnMMAShared(dh, defaultMMAWarps, t, b.mmaKC()) > b.sharedOptin {
			return true
		}
	}
	return false
}

// attnHeadDims are the head dims kernels.cu's attention kernels are
// compiled for.
var attnHeadDims = []int{32, 64, 128}

// loadPart loads part's cubin (compiling it where it is not kept) and its
// kernels; cached reports that it was kept.
func (b *Backend) loadPart(part int) (cached bool, err error) {
	flags := append([]string{"-std=c++17", "-lineinfo", fmt.Sprintf("-DLAYA_PART=%d", part)}, defineFlags(b.opts.Defines)...)
	parts := []string{kernelSource, b.arch, fmt.Sprint(b.rtc.Major, ".", b.rtc.Minor)}
	if b.opts.NVRTC != "" {
		// An NVRTC named by path keys its own cubins: the kernel emulator's
		// reports a GPU's version and architecture, and its stand-in cubins
		// must never be taken for a GPU's.
		parts = append(parts, "nvrtc="+b.opts.NVRTC)
	}
	key := cubinKey(append(parts, flags...)...)
	dir := kernelCacheDir(b.opts.KernelCache)
	what := "the kernels"
	if part == partExtras {
		what = "the optional kernels"
	}
	compile := func() ([]byte, error) {
		start := time.Now()
		if log := b.opts.Log; log != nil {
			kept := "not kept: no cache directory"
			if dir != "" {
				kept = "kept in " + dir
			}
			log(fmt.Sprintf("cuda: compiling %s for %s with NVRTC %d.%d (once a build and GPU: up to a minute; %s)",
				what, b.arch, b.rtc.Major, b.rtc.Minor, kept))
		}
		cubin, err := compileKernels(func(extra ...string) ([]byte, error) {
			return b.rtc.Compile("kernels.cu", kernelSource, b.arch, append(slices.Clip(flags), extra...))
		}, int(b.rtc.Major), int(b.rtc.Minor))
		if log := b.opts.Log; log != nil && err == nil {
			log(fmt.Sprintf("cuda: %s compiled in %.1f s", what, time.Since(start).Seconds()))
		}
		return cubin, err
	}
	load := func(cubin []byte) (err error) {
		b.w.Do(func() { err = b.loadModule(part, cubin) })
		return err
	}
	return loadCubin(dir, key, compile, load)
}

// compileKernels compiles kernels.cu with compile (which adds its
// arguments to the flags) for NVRTC major.minor. The first compile on a
// machine took about a minute on the H200 host (NVRTC 13, sm_90: dozens of
// kernels, most of them templates unrolled over a head dim or a tile), so
// from NVRTC 12.1 on it runs the optimizer on every core
// (--split-compile=0: the same passes, per kernel, in parallel); should
// that be refused (an option this NVRTC does not take, a failure of its
// own), it compiles again without. A source with errors fails at once:
// compiling it twice would only double the wait for the same log.
func compileKernels(compile func(extra ...string) ([]byte, error), major, minor int) ([]byte, error) {
	if major > 12 || major == 12 && minor >= 1 {
		cubin, err := compile("--split-compile=0")
		if err == nil {
			return cubin, nil
		}
		if errors.Is(err, cudadrv.ErrProgram) {
			// The source's own errors: a plain compile finds them again.
			return nil, err
		}
	}
	// NVRTC's errors are cudadrv.ErrCompile's, "cuda: " already.
	return compile()
}

// loadModule runs on the worker thread: part's module and its kernels. A
// module refused half way (a cached cubin cut short) is unloaded, and
// loadCubin compiles it again.
func (b *Backend) loadModule(part int, cubin []byte) error {
	// b.drv.Call is called directly, never through a func value: only a
	// direct call keeps go:uintptrescapes, which moves m to the heap; on
	// the stack it could move with a stack growth inside the call, and the
	// driver would write the module's handle where m no longer is.
	var m uintptr
	if err := b.drv.Call("cuModuleLoadData", uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&cubin[0]))); err != nil {
		return fmt.Errorf("cuda: loading the kernels: %w", err)
	}
	for name, k := range b.kernelTable() {
		if k.part != part {
			continue
		}
		sym := cudadrv.CString(name)
		if err := b.drv.Call("cuModuleGetFunction", uintptr(unsafe.Pointer(k.fn)), m, uintptr(unsafe.Pointer(&sym[0]))); err != nil {
			b.drv.Call("cuModuleUnload", m)
			return fmt.Errorf("cuda: kernel %s: %w", name, err)
		}
	}
	b.modules = append(b.modules, m)
	return nil
}

// kernelSlot is where a kernel of kernels.cu goes in Backend.k, and the
// part of kernels.cu (LAYA_PART) that compiles it.
type kernelSlot struct {
	fn   *uintptr
	part int
}

// kernelTable is every kernel of kernels.cu by name; a kernel of a part
// not loaded stays 0. The extras are linear_mma, linear_cl, and the
// tensor-core attention at other than four warps, its key-split kernels
// and the whole-row ones.
func (b *Backend) kernelTable() map[string]kernelSlot {
	if b.k.attentionTiled == nil {
		b.k.attentionTiled = map[int]*[5]uintptr{}
		b.k.attentionMMA = map[int]*[4][3]uintptr{}
		b.k.attentionSplit = map[int]*[3]uintptr{}
		b.k.attentionRows = map[int]*[3][3]uintptr{}
		for _, dh := range attnHeadDims {
			b.k.attentionRows[dh] = new([3][3]uintptr)
			b.k.attentionTiled[dh] = new([5]uintptr)
			b.k.attentionMMA[dh] = new([4][3]uintptr)
			b.k.attentionSplit[dh] = new([3]uintptr)
		}
	}
	fns := map[string]kernelSlot{}
	for name, p := range map[string]*uintptr{
		"gather_rows": &b.k.gather, "layer_norm": &b.k.layerNorm, "layer_norm4": &b.k.layerNorm4, "bias_act": &b.k.biasAct,
		"add": &b.k.add, "act_map": &b.k.actMap, "geglu": &b.k.geglu, "geglu4": &b.k.geglu4, "softmax_rows": &b.k.softmax, "rope": &b.k.rope,
		"attention": &b.k.attention, "act_features": &b.k.actFeatures, "to_16": &b.k.to16, "pack_out": &b.k.packOut,
		"linear_small": &b.k.linearSmall,
	} {
		fns[name] = kernelSlot{p, partCore}
	}
	fns["cluster_probe"] = kernelSlot{&b.k.clusterProbe, partExtras}
	fns["tma_probe"] = kernelSlot{&b.k.tmaProbe, partExtras}
	fns["linear_cl"] = kernelSlot{&b.k.linearCl, partExtras}
	fns["linear_wg"] = kernelSlot{&b.k.linearWG, partExtras}
	for t := range b.k.linearMMA {
		for w, warps := range []int{4, 8} {
			fns[fmt.Sprintf("linear_mma_%d_%d", t+1, warps)] = kernelSlot{&b.k.linearMMA[t][w], partExtras}
		}
	}
	for _, dh := range attnHeadDims {
		for i := range 3 {
			fns[fmt.Sprintf("attention%d_%d", dh, 1<<i)] = kernelSlot{&b.k.attentionTiled[dh][i], partCore}
		}
		fns[fmt.Sprintf("attention%d_1w16", dh)] = kernelSlot{&b.k.attentionTiled[dh][3], partCore}
		fns[fmt.Sprintf("attention%d_r16", dh)] = kernelSlot{&b.k.attentionTiled[dh][regKernel], partCore}
		for i, w := range mmaWarps {
			part := partExtras
			if w == defaultMMAWarps {
				part = partCore
			}
			for terms := 1; terms <= 2; terms++ {
				fns[fmt.Sprintf("attention_mma%d_%d_%d", dh, w, terms)] = kernelSlot{&b.k.attentionMMA[dh][i][terms-1], part}
			}
			fns[fmt.Sprintf("attention_mma%d_%d_1h", dh, w)] = kernelSlot{&b.k.attentionMMA[dh][i][2], part}
		}
		for t, suffix := range []string{"1", "2", "1h"} {
			fns[fmt.Sprintf("attention_mma%d_4s_%s", dh, suffix)] = kernelSlot{&b.k.attentionSplit[dh][t], partExtras}
			for i, w := range rowsWarps {
				fns[fmt.Sprintf("attention_rows%d_%d_%s", dh, w, suffix)] = kernelSlot{&b.k.attentionRows[dh][i][t], partExtras}
			}
		}
	}
	return fns
}

// setKernelAttributes runs on the worker thread once the parts are loaded:
// the dynamic shared memory each kernel may ask for, and 0 for a
// tensor-core attention kernel this GPU has too little of it for.
func (b *Backend) setKernelAttributes() error {
	// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: long attention rows
	// keep their scores in shared memory, and the tiled kernels their
	// chunks of keys and values.
	if err := b.drv.Call("cuFuncSetAttribute", b.k.attention, 8, attentionSharedLimit); err != nil {
		return fmt.Errorf("cuda: attention kernel: %w", err)
	}
	for dh, fs := range b.k.attentionTiled {
		for i, f := range fs {
			if err := b.drv.Call("cuFuncSetAttribute", f, 8, uintptr(tiledShared(dh, i))); err != nil {
				return fmt.Errorf("cuda: attention kernel for head dim %d: %w", dh, err)
			}
		}
	}
	for _, fs := range b.k.linearMMA {
		for _, f := range fs {
			if f == 0 {
				continue // the extras are not loaded
			}
			if err := b.drv.Call("cuFuncSetAttribute", f, 8, uintptr(b.lmmaShared())); err != nil {
				return fmt.Errorf("cuda: linear_mma kernel: %w", err)
			}
		}
	}
	if b.k.linearCl != 0 {
		if err := b.drv.Call("cuFuncSetAttribute", b.k.linearCl, 8, uintptr(b.clShared())); err != nil {
			return fmt.Errorf("cuda: linear_cl kernel: %w", err)
		}
		b.clWaves = clusterWaves(b.drv, b.k.linearCl, b.clShared(), b.clWarps())
	}
	if b.k.linearWG != 0 {
		if err := b.drv.Call("cuFuncSetAttribute", b.k.linearWG, 8, uintptr(b.clShared())); err != nil {
			return fmt.Errorf("cuda: linear_wg kernel: %w", err)
		}
		b.wgWaves = clusterWaves(b.drv, b.k.linearWG, b.clShared(), 4)
	}
	// A tensor-core attention kernel whose shared memory this GPU does not
	// have (head dim 128 at four or eight warps on a 99 KiB one) is 0:
	// Attention picks another. Its entries are [terms − 1, or 2: one term
	// reading fp16 qkv].
	fit := func(fs *[3]uintptr, dh int, shared func(terms int) int) error {
		for t, f := range fs {
			terms := t + 1
			if t == 2 {
				terms = 1
			}
			shm := shared(terms)
			if f == 0 || b.sharedOptin > 0 && shm > b.sharedOptin {
				fs[t] = 0 // not loaded (the extras), or too big
				continue
			}
			if err := b.drv.Call("cuFuncSetAttribute", f, 8, uintptr(shm)); err != nil {
				return fmt.Errorf("cuda: tensor-core attention kernel for head dim %d: %w", dh, err)
			}
		}
		return nil
	}
	for dh, fs := range b.k.attentionMMA {
		for i := range fs {
			if err := fit(&fs[i], dh, func(terms int) int { return attnMMAShared(dh, mmaWarps[i], terms, b.mmaKC()) }); err != nil {
				return err
			}
		}
	}
	for dh, fs := range b.k.attentionRows {
		for i := range fs {
			if err := fit(&fs[i], dh, func(terms int) int { return attnRowsShared(dh, terms) }); err != nil {
				return err
			}
		}
	}
	for dh, fs := range b.k.attentionSplit {
		if err := fit(fs, dh, func(terms int) int { return attnSplitShared(dh, terms) }); err != nil {
			return err
		}
	}
	return nil
}

// KernelResources reports every kernel the backend loaded, by name: what
// Options.Defines' tunables change, measured where it is decided (the
// GPU's own compile) rather than guessed from the source.
func (b *Backend) KernelResources() ([]KernelResource, error) {
	if !b.drv.Has("cuFuncGetAttribute") {
		return nil, fmt.Errorf("cuda: the driver has no cuFuncGetAttribute")
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("cuda: %w: the backend is closed", backend.ErrForeignTensor)
	}
	regsPerSM := b.drv.Attribute(cudadrv.Device{Handle: b.dev}, 82)    // CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR
	threadsPerSM := b.drv.Attribute(cudadrv.Device{Handle: b.dev}, 39) // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
	var out []KernelResource
	var err error
	b.w.Do(func() {
		table := b.kernelTable()
		for _, name := range slices.Sorted(maps.Keys(table)) {
			f := *table[name].fn
			if f == 0 {
				continue // a part not loaded
			}
			r := KernelResource{Name: name}
			// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0, SHARED_SIZE_BYTES 1,
			// LOCAL_SIZE_BYTES 3, NUM_REGS 4.
			for _, a := range []struct {
				attr uintptr
				v    *int
			}{{0, &r.MaxThreads}, {1, &r.SharedBytes}, {3, &r.LocalBytes}, {4, &r.Registers}} {
				var v int32
				if err = b.drv.Call("cuFuncGetAttribute", uintptr(unsafe.Pointer(&v)), a.attr, f); err != nil {
					err = fmt.Errorf("cuda: kernel %s: %w", name, err)
					return
				}
				*a.v = int(v)
			}
			r.WarpsPerSM = warpsByRegisters(r.Registers, regsPerSM, threadsPerSM)
			out = append(out, r)
		}
	})
	return out, err
}

// warpsByRegisters is how many warps of regs registers a thread fit
// regsPerSM registers, at most threadsPerSM/32: a multiprocessor's
// registers are four partitions, one to each scheduler, and a warp takes
// its registers 256 at a time from one of them (cuda_occupancy.h's
// register limit).
func warpsByRegisters(regs, regsPerSM, threadsPerSM int) int {
	most := threadsPerSM / 32
	if regs <= 0 {
		return most
	}
	perWarp := (regs*32 + 255) / 256 * 256
	return min(most, regsPerSM/4/perWarp*4)
}

// Name is "cuda".
func (b *Backend) Name() string { return Name }

// Device describes the GPU, the precision and what runs its GEMMs, for
// reports.
func (b *Backend) Device() string {
	mode := "graphs"
	if b.graphsOff {
		mode = "no graphs"
	}
	gemm := ""
	switch {
	case b.opts.Precision == FP32:
	case b.lt != nil && b.opts.NoTune:
		gemm = ", cuBLASLt GEMMs untuned"
	case b.lt != nil:
		gemm = ", cuBLASLt GEMMs"
	case b.ltMissing:
		gemm = ", cuBLAS GEMMs (no cuBLASLt)"
	default:
		gemm = ", cuBLAS GEMMs"
	}
	prec := b.opts.Precision.String()
	if b.opts.refining() {
		prec += fmt.Sprintf(" (fp16 from %d tokens, logit gaps under %g refined)", b.opts.refineTokens(), b.opts.Refine)
	}
	return fmt.Sprintf("%s (%s, %s, %s%s)", b.gpu, b.arch, prec, mode, gemm)
}

// Precision is the precision the backend was opened with.
func (b *Backend) Precision() Precision { return b.opts.Precision }

// Stats reports the graph cache's counters so far.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.Entries = b.entries
	s.KernelsCached = b.cubinCached
	return s
}

// Counters is Stats by name (backend.Counter): "captures", "replays",
// "eager", "entries" (a gauge), "evicted", "submitted", "gemm_tuned", "gemm_tune_kept", "gemm_fallback",
// "gemm_splitk", "streams", "reduced_streams", "wide_streams".
func (b *Backend) Counters() map[string]int {
	s := b.Stats()
	return map[string]int{"captures": s.Captures, "replays": s.Replays, "eager": s.Eager, "entries": s.Entries, "evicted": s.Evicted, "submitted": s.Submitted,
		"gemm_tuned": s.GEMMTuned, "gemm_tune_kept": s.GEMMTuneKept, "gemm_fallback": s.GEMMFallback, "gemm_splitk": s.GEMMSplitK, "streams": s.Streams,
		"reduced_streams": s.ReducedStreams, "wide_streams": s.WideStreams}
}

// alloc takes n bytes of device memory, on a thread with the context
// current (the worker's, or a flushing request's). Where the GPU refuses
// it, idle request shapes are freed for it (evictFor) and it asks again:
// cached shapes are a speed-up, and up to Options.MaxGraphs of them (a
// long request's activations alone can take gigabytes) would otherwise
// fail a request, or a weight's 16-bit copy, that fits without them.
func (b *Backend) alloc(n int64, what string) (uintptr, error) {
	p, err := b.allocOnce(n)
	for isOutOfMemory(err) && b.evictFor(n) {
		p, err = b.allocOnce(n)
	}
	if err != nil {
		return 0, b.allocError(n, what, err)
	}
	return p, nil
}

// allocSpare is alloc for memory the backend can do without (the GEMM
// tuning's scratch): it frees no cached shape for it.
func (b *Backend) allocSpare(n int64, what string) (uintptr, error) {
	p, err := b.allocOnce(n)
	if err != nil {
		return 0, b.allocError(n, what, err)
	}
	return p, nil
}

func (b *Backend) allocOnce(n int64) (uintptr, error) {
	var p uintptr
	err := b.drv.Call("cuMemAlloc_v2", uintptr(unsafe.Pointer(&p)), uintptr(max(n, 256)))
	return p, err
}

func isOutOfMemory(err error) bool {
	var ce *cudadrv.Error
	return errors.As(err, &ce) && ce.Code == cudadrv.ErrorOutOfMemory
}

func (b *Backend) allocError(n int64, what string, err error) error {
	if isOutOfMemory(err) {
		free, total := b.memInfo()
		return fmt.Errorf("%w: %s: %d bytes asked, %d of %d free on %s", ErrOutOfMemory, what, n, free, total, b.gpu)
	}
	return fmt.Errorf("cuda: %s: %w", what, err)
}

func (b *Backend) memInfo() (free, total int64) {
	var f, t uint64
	b.drv.Call("cuMemGetInfo_v2", uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t)))
	return int64(f), int64(t)
}

// evictFor frees idle request shapes (their graphs and memory), least
// recently returned first, until what they held and the free memory
// together cover n bytes; on a thread with the context current. It
// reports whether it freed any: none when none is idle, or when all of
// them with the free memory would still not hold n (a request that cannot
// fit does not empty the cache). An idle entry's last run has finished: a
// stream gives its entries back when it closes, after waiting for them.
func (b *Backend) evictFor(n int64) bool {
	free, _ := b.memInfo()
	b.mu.Lock()
	var idle int64
	for _, e := range b.idle {
		idle += e.bytes()
	}
	var drop []*entry
	if free+idle >= n {
		for got := free; len(b.idle) > 0 && (got < n || len(drop) == 0); {
			e := b.idle[0]
			b.idle = b.idle[1:]
			b.uncacheLocked(e)
			drop = append(drop, e)
			got += e.bytes()
		}
	}
	b.entries -= len(drop)
	b.stats.Evicted += len(drop)
	b.mu.Unlock()
	for _, e := range drop {
		e.destroy(b)
	}
	return len(drop) > 0
}

// pinned takes n bytes of page-locked host memory; on the worker thread.
func (b *Backend) pinned(n int64, what string) ([]byte, error) {
	var p uintptr
	if err := b.drv.Call("cuMemHostAlloc", uintptr(unsafe.Pointer(&p)), uintptr(max(n, 256)), 0); err != nil {
		return nil, fmt.Errorf("%w: %s: %d bytes of pinned host memory: %w", ErrOutOfMemory, what, n, err)
	}
	return unsafe.Slice((*byte)(cudadrv.PtrAt(p, 0)), max(n, 256)), nil
}

// tensor is a device float32 matrix: a weight (stream nil) or a stream's
// tensor, whose address is known once its segment is flushed.
type tensor struct {
	owner      *Backend
	rows, cols int
	addr       uintptr
	half       atomic.Uintptr // weights: the 16-bit copy the GEMMs read (FP16, BF16), made once (halfOf)
	kcatHalf   atomic.Uintptr // weights: the fp16 copy twice a row that KCatRows' GEMMs read, made once (kcatOf)
	kcatNoRoom atomic.Bool    // weights: the device had no room for kcatHalf

	s       *stream
	seg     int   // stream tensors: the segment that created them
	id      int   // index among the segment's tensors
	off     int64 // offset in the segment's arena, or staging when staged
	staged  bool  // FromHost data, living in the segment's staging area
	written bool  // an operation writes it before any reads it
	h16     int64 // offset in the arena of a 16-bit copy its producer writes, or -1
	kcat    bool  // that copy holds FP16X2's two terms side by side a row (Options.KCatRows)
	// lastWriter is the segment's operation that last wrote the tensor,
	// when that operation can also write a 16-bit copy (FP16, BF16).
	lastWriter *op
	// f32Read: its float32 contents were read since its last write by
	// something other than a GEMM reading its 16-bit copy (see Discard).
	f32Read bool
	zero    bool // read before written: zeroed when its segment runs
	snap    []byte
	rope    *pendingRope // a Rope not recorded yet (see stream.Rope)
	// dead: discarded since its last write (backend.Discarder), so a
	// segment started early (stream.Submit) leaves it behind and the next
	// segment makes it anew.
	dead bool
	// In FP16X2 a GEMM writes the products of its input's two 16-bit terms
	// separately (stacked), the second at twoOff in the arena (0: no room
	// for it yet; it is always placed after t), and the operations reading
	// its output add them (see stream.Linear).
	stacked bool
	twoOff  int64
	// In FP16 a GEMM whose output only a GeGLU or a tensor-core attention
	// reads, and which is then discarded, writes that output as fp16 (half
	// the bytes written and read; FP16 rounds those kernels' outputs to
	// fp16 anyway): halfLin is the Linear that last wrote t and may do so,
	// halfReader the GeGLU or attention that read t since, its only reader;
	// f16: t holds fp16.
	halfLin    *linearOp
	halfReader *op
	f16        bool
	// The same for a GeGLU fused into the linear_mma GEMM whose output it
	// alone reads, in FP16 and FP16X2 (Discard): gluLin the Linear,
	// gluReader the GeGLU; fused: the GEMM writes the GeGLU's outputs and
	// not t.
	gluLin    *linearOp
	gluReader *op
	fused     bool
	// And for a LayerNorm in the linear_mma GEMMs around it (Discard):
	// statLin, the linear_mma GEMM that last added into t (a residual
	// folded in), may also write t's row statistics; lnReader, the
	// linear_mma GEMM that alone read t, the output of a LayerNorm that
	// may run in it; lnFused: it does, and t is never written.
	statLin  *linearOp
	statSeg  int // the segment of statLin
	lnReader *linearOp
	lnFused  bool
}

// halfUnread reports whether t's GEMM may still write it as fp16 for one
// reader: it may (halfLin), and nothing has read t since.
func (t *tensor) halfUnread() bool { return t.halfLin != nil && t.halfReader == nil && !t.f32Read }

// two is the element offset from t's data to its second term when t holds
// two (stacked), else 0.
func (t *tensor) two() int64 {
	if !t.stacked {
		return 0
	}
	return (t.twoOff - t.off) / 4
}

func (t *tensor) Rows() int { return t.rows }
func (t *tensor) Cols() int { return t.cols }

func (t *tensor) bytes() int64 { return int64(t.rows) * int64(t.cols) * 4 }

// Upload copies a weight into device memory as float32, converted on the
// host from the checkpoint's dtype.
func (b *Backend) Upload(name string, dtype backend.DType, rows, cols int, raw []byte) (backend.Tensor, error) {
	if err := backend.CheckUpload(name, dtype, rows, cols, len(raw)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	host := make([]float32, rows*cols)
	if err := weights.DecodeFloat32(host, raw, dtype); err != nil {
		return nil, fmt.Errorf("cuda: upload %s: %w", name, err)
	}
	t := &tensor{owner: b, rows: rows, cols: cols}
	var err error
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("cuda: upload %s: %w: the backend is closed", name, backend.ErrForeignTensor)
	}
	if err := b.Health(); err != nil {
		return nil, err
	}
	b.loadMu.Lock()
	defer b.loadMu.Unlock()
	b.w.Do(func() {
		if t.addr, err = b.alloc(t.bytes(), "upload "+name); err != nil {
			return
		}
		b.allocs = append(b.allocs, t.addr)
		err = b.drv.Call("cuMemcpyHtoD_v2", t.addr, uintptr(unsafe.Pointer(&host[0])), uintptr(t.bytes()))
		if err == nil && b.opts.Precision != FP32 && rows > 1 {
			err = b.makeHalf(t)
		}
	})
	if cudadrv.ContextLost(err) {
		return nil, b.deviceLost(fmt.Errorf("upload %s: %w", name, err))
	}
	if err != nil {
		return nil, fmt.Errorf("cuda: upload %s: %w", name, err)
	}
	return t, nil
}

// makeHalf makes a weight's 16-bit copy on the device; on the worker
// thread. Vectors (rows = 1, biases and norms) stay float32 only; the GEMM
// of a one-row weight converts it when first used.
func (b *Backend) makeHalf(t *tensor) error {
	p, err := b.makeCopy(t, 1, weightKind(b.opts.Precision), uint64(t.rows)*uint64(t.cols), false)
	if err == nil {
		t.half.Store(p)
	}
	return err
}

// makeCopy writes t's weight copy of the given store16 kind, times elements
// of 16 bits for each of t's (lo: see store16), into memory of its own;
// spare: memory the backend can do without (allocSpare, no cached shape
// freed for it).
func (b *Backend) makeCopy(t *tensor, times int64, kind, lo uint64, spare bool) (uintptr, error) {
	n := int64(t.rows) * int64(t.cols)
	alloc := b.alloc
	if spare {
		alloc = b.allocSpare
	}
	p, err := alloc(times*n*2, "16-bit weight copy")
	if err != nil {
		return 0, err
	}
	b.allocs = append(b.allocs, p)
	var l launcher
	if err := l.launch(b.drv, b.k.to16, [3]int{b.grid(n), 1, 1}, 256, 0, 0, u64(p), u64(t.addr), uint64(n), lo, kind); err != nil {
		return 0, err
	}
	return p, b.drv.Call("cuCtxSynchronize")
}

// kcatOf returns w's fp16 copy twice a row, [w_r | w_r] for each row r,
// the weight of KCatRows' GEMMs (twice the memory of halfOf's), making it
// on first use. The copy only saves time: where the device has no room
// for it, no cached request shape is freed for it, and the error
// (ErrOutOfMemory) is kept, so that the GEMMs of w take the stacked batch
// without asking again.
func (b *Backend) kcatOf(w *tensor) (uintptr, error) {
	if w.kcatNoRoom.Load() {
		return 0, fmt.Errorf("%w: no room for %dx%d weight's copy twice a row", ErrOutOfMemory, w.rows, w.cols)
	}
	p, err := b.copyOnce(&w.kcatHalf, func() (uintptr, error) { return b.makeCopy(w, 2, kindKCatWeight, uint64(w.cols), true) })
	if errors.Is(err, ErrOutOfMemory) && !w.kcatNoRoom.Swap(true) {
		b.count(func(st *Stats) { st.KCatNoRoom++ })
	}
	return p, err
}

// halfOf returns w's 16-bit copy, making it on first use. Every GEMM a
// request records asks: the lock is taken only while there is none.
func (b *Backend) halfOf(w *tensor) (uintptr, error) {
	return b.copyOnce(&w.half, func() (uintptr, error) {
		err := b.makeHalf(w)
		return w.half.Load(), err
	})
}

// copyOnce returns the weight copy in slot, making it on the worker thread
// on first use (mk) and keeping it there.
func (b *Backend) copyOnce(slot *atomic.Uintptr, mk func() (uintptr, error)) (uintptr, error) {
	if h := slot.Load(); h != 0 {
		return h, nil
	}
	b.loadMu.Lock()
	defer b.loadMu.Unlock()
	if h := slot.Load(); h != 0 {
		return h, nil
	}
	var err error
	b.w.Do(func() {
		var p uintptr
		if p, err = mk(); err == nil {
			slot.Store(p)
		}
	})
	return slot.Load(), err
}

// ropeTable returns the device copy of backend.RopeTable for theta and
// headDim covering positions [0, n). Tables are
// kept until Close: captured graphs hold their addresses.
func (b *Backend) ropeTable(theta float64, headDim, n int) (uintptr, error) {
	b.loadMu.Lock()
	defer b.loadMu.Unlock()
	key := ropeKey{theta, headDim}
	if t, ok := b.ropes[key]; ok && t.positions >= n {
		return t.addr, nil
	}
	n = max(n, 8192)
	table := backend.RopeTable(theta, headDim, n)
	var addr uintptr
	var err error
	b.w.Do(func() {
		if addr, err = b.alloc(int64(len(table))*4, "rope table"); err != nil {
			return
		}
		b.allocs = append(b.allocs, addr)
		err = b.drv.Call("cuMemcpyHtoD_v2", addr, uintptr(unsafe.Pointer(&table[0])), uintptr(len(table)*4))
	})
	if err != nil {
		return 0, err
	}
	b.ropes[key] = ropeTable{addr, n}
	return addr, nil
}

// NewStream starts an empty stream in the backend's precision.
func (b *Backend) NewStream() backend.Stream { return b.newStream(b.opts.Precision) }

// ReducedStream is backend.Refiner: in FP16X2 with Options.Refine set, a
// batch of at least Options.RefineTokens tokens gets a stream whose GEMMs
// and tensor-core attention read their activations in one fp16 term (FP16:
// the same fp16 weights, half the GEMM work), with Refine as the margin
// under which the model runs a row again on NewStream. Smaller batches,
// where FP16X2's second term costs little, and other precisions get nil.
func (b *Backend) ReducedStream(tokens int) (backend.Stream, float32) {
	o := b.opts
	if !o.refining() || tokens < o.refineTokens() {
		return nil, 0
	}
	return b.newStream(FP16), o.Refine
}

// BatchLimits is backend.BatchSizer: Options.BatchRows and BatchTokens.
func (b *Backend) BatchLimits() (rows, tokens int) {
	return cmp.Or(b.opts.BatchRows, DefaultBatchRows), cmp.Or(b.opts.BatchTokens, DefaultBatchTokens)
}

// WideStream is backend.Widener: in FP16X2, FP16 and BF16, a stream in
// FP32 on the same resident float32 weights the 16-bit copies were made
// from (cuBLAS's pedantic float32 GEMMs, as an FP32 backend runs them), for
// the rows whose outputs came out non-finite: an activation past fp16's
// 65504 is infinite in an FP16 or FP16X2 GEMM operand (BF16 has float32's
// range; its rows run wide only where something else went non-finite).
// nil in FP32.
func (b *Backend) WideStream() backend.Stream {
	if b.opts.Precision == FP32 {
		return nil
	}
	return b.newStream(FP32)
}

func (b *Backend) newStream(prec Precision) *stream {
	s := &stream{be: b, prec: prec, submitAt: b.opts.SubmitOps}
	if v, ok := b.bufs.Get().(*recordBufs); ok {
		s.bufs, s.words, s.stage = v, v.words, v.stage
		s.opSlab, s.linSlab, s.ops = v.opSlab, v.linSlab, v.ops
	} else {
		s.bufs = &recordBufs{}
	}
	b.mu.Lock()
	if b.closed {
		s.closed = true
		s.err = fmt.Errorf("cuda: %w: the backend is closed", backend.ErrForeignTensor)
	}
	b.mu.Unlock()
	if err := b.Health(); err != nil && s.err == nil {
		s.err = err
	}
	return s
}

// Health is backend.Healther: nil while the GPU's context works; once a
// call failed in a way CUDA does not recover from within the process (a
// kernel's illegal address, say), that error, wrapping
// backend.ErrDeviceLost, which every later stream fails with at once.
func (b *Backend) Health() error {
	if p := b.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// deviceLost records err, a failure cudadrv.ContextLost reports, as the
// backend's (the first one stays) and returns it wrapped for the caller.
func (b *Backend) deviceLost(err error) error {
	lost := fmt.Errorf("cuda: %s: %w: %w", b.gpu, backend.ErrDeviceLost, err)
	if b.lost.CompareAndSwap(nil, &lost) && b.opts.Log != nil {
		b.opts.Log(lost.Error())
	}
	return lost
}

// Close waits for the GPU and releases every weight, graph and buffer.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	return b.release()
}

func (b *Backend) release() error {
	var err error
	b.w.Do(func() {
		if b.ctx == 0 {
			return
		}
		err = b.drv.Call("cuCtxSynchronize")
		// Under mu: an allocation still running on another thread
		// (evictFor) must not find these entries to free again.
		b.mu.Lock()
		cache, tmaps := b.cache, b.tmaps
		b.cache, b.idle, b.tmaps = nil, nil, nil
		b.mu.Unlock()
		for _, list := range cache {
			for _, e := range list {
				e.destroy(b)
			}
		}
		for _, cs := range b.streams {
			cs.destroy(b)
		}
		if b.lt != nil {
			b.lt.release(b)
		}
		for _, p := range b.allocs {
			b.drv.Call("cuMemFree_v2", p)
		}
		b.allocs = nil
		for _, p := range tmaps {
			b.drv.Call("cuMemFree_v2", p)
		}
		for _, m := range b.modules {
			b.drv.Call("cuModuleUnload", m)
		}
		b.modules = nil
		b.drv.Call("cuDevicePrimaryCtxRelease_v2", uintptr(b.dev))
		b.ctx = 0
	})
	if err != nil {
		return fmt.Errorf("cuda: close: %w", err)
	}
	return nil
}

// launcher issues kernel launches; its parameter area is reused (the
// driver copies parameters when a kernel is launched or captured). pdl
// launches with programmatic dependent launch (Backend.pdl).
type launcher struct {
	vals  [28]uint64
	ptrs  [28]uintptr
	pdl   bool
	cfg   launchConfig
	attrs [2]launchAttr
}

func u64(p uintptr) uint64 { return uint64(p) }
func i32(v int) uint64     { return uint64(uint32(int32(v))) }
func f32(v float32) uint64 { return uint64(math.Float32bits(v)) }

// grid is the blocks of 256 threads for a grid-stride kernel over n
// elements: one per 256 up to eight per multiprocessor.
func (b *Backend) grid(n int64) int { return int(min(max((n+255)/256, 1), int64(max(b.sms, 1))*8)) }
func align(n, a int64) int64        { return (n + a - 1) &^ (a - 1) }
func boolArg(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// setArgs puts a launch's arguments in l.vals, their addresses in l.ptrs.
func (l *launcher) setArgs(args []uint64) {
	for i, a := range args {
		l.vals[i] = a
		l.ptrs[i] = uintptr(unsafe.Pointer(&l.vals[i]))
	}
}

func (l *launcher) launch(drv *cudadrv.Driver, fn uintptr, grid [3]int, block, shared int, stream uintptr, args ...uint64) error {
	l.setArgs(args)
	if l.pdl {
		return l.launchAttrs(drv, fn, grid, block, shared, stream, 1)
	}
	return drv.Call("cuLaunchKernel", fn, uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]), uintptr(block), 1, 1,
		uintptr(shared), stream, uintptr(unsafe.Pointer(&l.ptrs[0])), 0)
}
