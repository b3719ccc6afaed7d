//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	_ Device        = (*systemDevice)(nil)
	_ Buffer        = (*systemBuffer)(nil)
	_ Pipeline      = (*systemPipeline)(nil)
	_ CommandBuffer = (*systemCommandBuffer)(nil)
	_ NoCopyDevice  = (*systemDevice)(nil)
)

// systemDevice is the Apple GPU through Metal.framework (see objc_darwin.go
// for the binding). It is safe for concurrent use, except that Close must
// not race with other calls.
type systemDevice struct {
	ledger *ledger

	device, queue objcID
	name          string
	registryID    uint64 // the GPU's IORegistry ID
	fingerprint   string // what decides the device's results (Fingerprint)
	msl           MSLVersion
	mathMode      MathMode
	encodePools   bool        // SystemOptions.EncodePools
	labels        bool        // SystemOptions.Labels
	fpFunctions   FPFunctions // read back from the compile options
	family        int         // highest MTLGPUFamilyAppleN
	unified       bool
	workingSet    uint64
	pageSize      int
	maxTGMemory   int // maxThreadgroupMemoryLength
	maxBufferLen  int // maxBufferLength
	clock         hostClock

	kernelLibrary map[string]objcID // kernel function name → its library
	kernelFile    map[string]string // kernel function name → .metal file
	files         []string          // compiled .metal files, for messages

	closed atomic.Bool

	mu        sync.Mutex
	pipelines map[string]*systemPipeline // by encodeConstants key
	inflight  map[*systemCommandBuffer]struct{}
}

// OpenSystemDefault opens the system's default Metal device with the
// kernels package's embedded sources and default options.
// LAYA_METAL_ENCODE_POOLS=1 sets SystemOptions.EncodePools; LAYA_METAL_LABELS=1, or
// validation asked for (MTL_SHADER_VALIDATION=1, MTL_DEBUG_LAYER=1), sets Labels.
func OpenSystemDefault() (Device, error) {
	return OpenSystem(SystemOptions{EncodePools: os.Getenv(EncodePoolsEnv) == "1", Labels: labelsFromEnv(os.Getenv)})
}

// OpenSystem opens the system's default Metal device (falling back to the
// first of MTLCopyAllDevices) and compiles opts.Sources.
func OpenSystem(opts SystemOptions) (Device, error) {
	msl, err := opts.resolvedLanguageVersion()
	if err != nil {
		return nil, err
	}
	if err := checkMathMode(opts.MathMode); err != nil {
		return nil, err
	}
	sources, err := opts.sourceMap()
	if err != nil {
		return nil, err
	}
	units, err := prepareUnits(sources)
	if err != nil {
		return nil, err
	}
	if err := loadMetal(); err != nil {
		return nil, err
	}
	d := &systemDevice{
		ledger:        newLedger(releaseObject),
		msl:           msl,
		mathMode:      opts.MathMode,
		encodePools:   opts.EncodePools,
		labels:        opts.Labels,
		pageSize:      os.Getpagesize(),
		kernelLibrary: map[string]objcID{},
		kernelFile:    map[string]string{},
		pipelines:     map[string]*systemPipeline{},
		inflight:      map[*systemCommandBuffer]struct{}{},
	}
	inPool(func() {
		if err = d.open(units); err != nil {
			d.ledger.dropAll()
		}
	})
	if err != nil {
		return nil, err
	}
	d.fingerprint = systemFingerprint(d.name, d.registryID, sources, msl, opts.MathMode)
	return d, nil
}

// Fingerprint implements Fingerprinter: the GPU (name and registry ID),
// the sources and the compile options.
func (d *systemDevice) Fingerprint() string { return d.fingerprint }

func (d *systemDevice) open(units []compileUnit) error {
	// MTLCreateSystemDefaultDevice and MTLCopyAllDevices follow the Create
	// and Copy rules: both results are ours to release.
	d.device = mtlCreateSystemDefaultDevice()
	if d.device == 0 {
		// Seen on Macs where the default device is nil for a process
		// without a window server connection; any listed device will do.
		all := mtlCopyAllDevices()
		if all != 0 {
			if msgUint(all, sel.count) > 0 {
				d.device = msgID(msgIDUint(all, sel.objectAtIndex, 0), sel.retain)
			}
			releaseObject(uintptr(all))
		}
	}
	if d.device == 0 {
		return fmt.Errorf("%w: MTLCreateSystemDefaultDevice and MTLCopyAllDevices found no GPU", ErrNoMetal)
	}
	d.ledger.add(uintptr(d.device), "device")
	d.name = goString(msgID(d.device, sel.name))
	d.registryID = msgUint(d.device, sel.registryID)
	// Before anything is compiled: an Intel Mac's GPU (or an A13 and
	// older) gets a clear refusal instead of a compile error about
	// simdgroup_matrix.
	d.family = appleFamily(func(f int) bool { return msgBoolInt(d.device, sel.supportsFamily, int64(f)) })
	if err := checkAppleFamily(d.name, d.family); err != nil {
		return err
	}
	d.unified = msgBool(d.device, sel.hasUnifiedMemory)
	d.workingSet = msgUint(d.device, sel.recommendedMaxWorkingSetSize)
	d.maxTGMemory = int(msgUint(d.device, sel.maxThreadgroupMemoryLength))
	d.maxBufferLen = int(msgUint(d.device, sel.maxBufferLength))

	if d.queue = msgID(d.device, sel.newCommandQueue); d.queue == 0 {
		return fmt.Errorf("%w: %s: newCommandQueue returned nil", ErrNoMetal, d.name)
	}
	d.ledger.add(uintptr(d.queue), "command queue")

	var tb machTimebase
	machTimebaseInfo(&tb)
	ticks := machAbsoluteTime()
	d.clock = hostClock{wall: time.Now(), host: float64(ticks) * float64(tb.numer) / float64(tb.denom) / 1e9}

	return d.compile(units)
}

// compile builds one library per unit with explicit compile options.
func (d *systemDevice) compile(units []compileUnit) error {
	options := msgID(msgID(cls.MTLCompileOptions, sel.alloc), sel.init)
	if options == 0 {
		return fmt.Errorf("%w: MTLCompileOptions alloc/init returned nil", ErrShaderCompile)
	}
	defer releaseObject(uintptr(options))

	// Set and read back: a cgo-free binary's Mach-O header names SDK 12.0
	// (golang/go#77917) and Metal then defaults to MSL 2.4; an OS too old
	// for the version may also keep its own value.
	msgVoidUint(options, sel.setLanguageVersion, d.msl.mtlLanguageVersion())
	if got := mslVersionOf(msgUint(options, sel.languageVersion)); got != d.msl {
		return fmt.Errorf("%w: %s: asked for MSL %s, compile options hold MSL %s (macOS too old?)", ErrShaderCompile, d.name, d.msl, got)
	}
	// mathMode exists from macOS 15; before that only the fastMathEnabled
	// switch does, which cannot express "relaxed".
	if respondsTo(options, sel.setMathMode) {
		msgVoidUint(options, sel.setMathMode, uint64(d.mathMode))
		if got := MathMode(msgUint(options, sel.mathMode)); got != d.mathMode {
			return fmt.Errorf("%w: %s: asked for %s math, compile options hold %s", ErrShaderCompile, d.name, d.mathMode, got)
		}
	} else {
		if d.mathMode == MathRelaxed {
			return fmt.Errorf("%w: %s: relaxed math needs macOS 15 (MTLCompileOptions.mathMode)", ErrShaderCompile, d.name)
		}
		msgVoidBool(options, sel.setFastMathEnabled, false)
	}
	// mathFloatingPointFunctions (macOS 15) defaults to Fast even under
	// MathModeSafe (MTLLibrary.h), so exp/log/sqrt would be the fast
	// variants on 15 and the precise ones on 14. Ask for what the math
	// mode means and read it back; before macOS 15 the property does not
	// exist and fastMathEnabled = NO already selects precise functions.
	d.fpFunctions = FPFunctionsUnavailable
	if respondsTo(options, sel.setMathFloatingPointFunctions) {
		want := wantFPFunctions(d.mathMode)
		msgVoidUint(options, sel.setMathFloatingPointFunctions, uint64(want))
		d.fpFunctions = FPFunctions(msgUint(options, sel.mathFloatingPointFunctions))
		if d.fpFunctions != want {
			return fmt.Errorf("%w: %s: asked for %s floating-point functions, compile options hold %s", ErrShaderCompile, d.name, want, d.fpFunctions)
		}
	}

	for _, u := range units {
		src, err := newNSString(u.source, "kernel source "+u.name)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrShaderCompile, err)
		}
		var nsErr objcID
		lib := msgIDIDIDErr(d.device, sel.newLibraryWithSourceOptionsError, src, options, &nsErr)
		releaseObject(uintptr(src))
		if lib == 0 {
			// The NSError is autoreleased into the surrounding pool.
			return fmt.Errorf("%w: %s: %s", ErrShaderCompile, u.name, mapCompileLog(nsErrorText(nsErr), u))
		}
		// A library with warnings comes with an NSError too; the library
		// is what counts.
		d.ledger.add(uintptr(lib), "library "+u.name)
		d.files = append(d.files, u.name)
		for _, fn := range nsArrayStrings(msgID(lib, sel.functionNames)) {
			if prev, dup := d.kernelFile[fn]; dup {
				return fmt.Errorf("%w: kernel %s is defined in both %s and %s", ErrShaderCompile, fn, prev, u.name)
			}
			d.kernelLibrary[fn] = lib
			d.kernelFile[fn] = u.name
		}
	}
	return nil
}

// Name is the GPU's name, e.g. "Apple M3 Max".
func (d *systemDevice) Name() string { return d.name }

// LanguageVersion is the MSL version the kernels were compiled as (read
// back from the compile options).
func (d *systemDevice) LanguageVersion() MSLVersion { return d.msl }

// Info reports what the device found and chose at open. Reach it through
// an interface assertion: dev.(interface{ Info() metal.SystemInfo }).
func (d *systemDevice) Info() SystemInfo {
	return SystemInfo{
		Name: d.name, AppleFamily: d.family, LanguageVersion: d.msl, MathMode: d.mathMode, FPFunctions: d.fpFunctions,
		PageSize: d.pageSize, MaxThreadgroupMemory: d.maxTGMemory, MaxBufferLength: d.maxBufferLen,
		UnifiedMemory: d.unified, RecommendedWorkingSet: d.workingSet,
	}
}

// Kernels lists the kernel functions of the compiled libraries, sorted.
func (d *systemDevice) Kernels() []string {
	names := make([]string, 0, len(d.kernelFile))
	for k := range d.kernelFile {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (d *systemDevice) checkOpen() error {
	if d.closed.Load() {
		return ErrDeviceClosed
	}
	return nil
}

// Close waits for committed command buffers, discards uncommitted ones and
// releases every object the device created. Buffers made by
// NewBufferWithBytes without a copy no longer reference host memory after
// Close returns.
func (d *systemDevice) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	d.mu.Lock()
	pending := make([]*systemCommandBuffer, 0, len(d.inflight))
	for cb := range d.inflight {
		pending = append(pending, cb)
	}
	d.mu.Unlock()
	var errs []error
	for _, cb := range pending {
		if _, err := cb.finish(); err != nil && !errors.Is(err, ErrDeviceClosed) {
			errs = append(errs, err)
		}
	}
	inPool(func() { d.ledger.dropAll() })
	if len(errs) > 0 {
		return fmt.Errorf("metal: %s: closing with unfinished work: %w", d.name, errors.Join(errs...))
	}
	return nil
}

func (d *systemDevice) unknownKernel(kernel string) error {
	return fmt.Errorf("%w: kernel %q is not defined in %s", ErrPipeline, kernel, strings.Join(d.files, ", "))
}
