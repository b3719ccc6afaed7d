//go:build darwin

package metal

import (
	"fmt"
	"runtime"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// This file is the Objective-C runtime layer: framework loading, selectors
// and classes looked up once, typed objc_msgSend trampolines, autorelease
// pools, and NSString/NSError conversion.
//
// Why typed trampolines: objc.Send[T] runs purego.RegisterFunc (type
// analysis plus reflect.MakeFunc) on every call and ID.Send goes through a
// variadic ...any path. Here each C signature is registered once; the
// dispatch hot path goes further and calls objc_msgSend through
// purego.SyscallN, which involves no reflection at all (command_darwin.go).

// Frameworks and libraries, by their fixed system paths.
const (
	metalFrameworkPath        = "/System/Library/Frameworks/Metal.framework/Metal"
	foundationFrameworkPath   = "/System/Library/Frameworks/Foundation.framework/Foundation"
	coreGraphicsFrameworkPath = "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics"
	libobjcPath               = "/usr/lib/libobjc.A.dylib"
	libSystemPath             = "/usr/lib/libSystem.B.dylib"
)

// Foundation and Metal enumeration values used below.
const (
	nsUTF8StringEncoding         = 4 // NSString.h
	mtlResourceStorageModeShared = 0 // MTLResourceOptions: shared, default cache, tracked hazards
	mtlDispatchTypeConcurrent    = 1 // MTLDispatchType
	mtlBarrierScopeBuffers       = 1 // MTLBarrierScope
	mtlCommandBufferStatusDone   = 4 // MTLCommandBufferStatusCompleted; 5 is Error
)

// machTimebase is mach_timebase_info_data_t.
type machTimebase struct{ numer, denom uint32 }

var (
	loadOnce sync.Once
	loadErr  error

	msgSendAddr uintptr // objc_msgSend, for purego.SyscallN in the hot path

	mtlCreateSystemDefaultDevice func() objcID
	mtlCopyAllDevices            func() objcID
	autoreleasePoolPush          func() uintptr
	autoreleasePoolPop           func(pool uintptr)
	machAbsoluteTime             func() uint64
	machTimebaseInfo             func(info *machTimebase) int32

	cls classes
	sel selectors
)

type classes struct {
	NSString, MTLCompileOptions, MTLFunctionConstantValues objcID
}

type selectors struct {
	alloc, init, retain, release                                        objcSEL
	count, objectAtIndex, respondsToSelector                            objcSEL
	initWithBytesLengthEncoding, utf8String, localizedDescription, code objcSEL

	name, newCommandQueue, maxThreadgroupMemoryLength, maxBufferLength  objcSEL
	setLanguageVersion, languageVersion, setMathMode, mathMode          objcSEL
	setFastMathEnabled, newLibraryWithSourceOptionsError, functionNames objcSEL
	setConstantValueTypeAtIndex, newFunctionWithNameConstantValuesError objcSEL
	newComputePipelineStateWithFunctionError                            objcSEL
	maxTotalThreadsPerThreadgroup, threadExecutionWidth                 objcSEL
	staticThreadgroupMemoryLength                                       objcSEL
	setMathFloatingPointFunctions, mathFloatingPointFunctions           objcSEL
	supportsFamily, hasUnifiedMemory, recommendedMaxWorkingSetSize      objcSEL

	newBufferWithLengthOptions, newBufferWithBytesLengthOptions, newBufferWithBytesNoCopy objcSEL
	contents                                                                              objcSEL

	commandBuffer, computeCommandEncoderWithDispatchType, setComputePipelineState    objcSEL
	setBufferOffsetAtIndex, setBytesLengthAtIndex, setThreadgroupMemoryLengthAtIndex objcSEL
	dispatchThreadgroups, memoryBarrierWithScope, memoryBarrierWithResources         objcSEL
	endEncoding, commit, waitUntilCompleted, status, errorSel                        objcSEL
	gpuStartTime, gpuEndTime                                                         objcSEL
	setLabel, pushDebugGroup, popDebugGroup, registryID                              objcSEL
}

// loadMetal opens the frameworks and binds everything once per process.
func loadMetal() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

func load() (err error) {
	// purego.RegisterLibFunc panics on a missing symbol; a macOS without
	// one of these is a "no Metal here" answer, not a crash.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: binding the Objective-C runtime: %v", ErrNoMetal, r)
		}
	}()
	// Foundation first and explicitly (NSString, NSError, NSArray and the
	// autorelease machinery they use): Metal links it today, but the
	// classes looked up below must not depend on that (Ebitengine loads it
	// the same way, internal/cocoa/api_cocoa_darwin.go).
	if _, err := purego.Dlopen(foundationFrameworkPath, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return fmt.Errorf("%w: loading %s: %v", ErrNoMetal, foundationFrameworkPath, err)
	}
	metalLib, err := purego.Dlopen(metalFrameworkPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("%w: loading %s: %v", ErrNoMetal, metalFrameworkPath, err)
	}
	// MTLCreateSystemDefaultDevice returns nil in a command-line process
	// unless CoreGraphics is linked in (Apple's MTLCreateSystemDefaultDevice
	// documentation); a cgo-free binary links nothing, so load it here.
	if _, err := purego.Dlopen(coreGraphicsFrameworkPath, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return fmt.Errorf("%w: loading %s: %v", ErrNoMetal, coreGraphicsFrameworkPath, err)
	}
	objcLib, err := purego.Dlopen(libobjcPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("%w: loading %s: %v", ErrNoMetal, libobjcPath, err)
	}
	systemLib, err := purego.Dlopen(libSystemPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("%w: loading %s: %v", ErrNoMetal, libSystemPath, err)
	}
	purego.RegisterLibFunc(&mtlCreateSystemDefaultDevice, metalLib, "MTLCreateSystemDefaultDevice")
	purego.RegisterLibFunc(&mtlCopyAllDevices, metalLib, "MTLCopyAllDevices")
	purego.RegisterLibFunc(&autoreleasePoolPush, objcLib, "objc_autoreleasePoolPush")
	purego.RegisterLibFunc(&autoreleasePoolPop, objcLib, "objc_autoreleasePoolPop")
	purego.RegisterLibFunc(&machAbsoluteTime, systemLib, "mach_absolute_time")
	purego.RegisterLibFunc(&machTimebaseInfo, systemLib, "mach_timebase_info")

	msgSendAddr, err = purego.Dlsym(objcLib, "objc_msgSend")
	if err != nil {
		return fmt.Errorf("%w: objc_msgSend: %v", ErrNoMetal, err)
	}
	registerMsgSend(msgSendAddr)

	for _, c := range []struct {
		dst  *objcID
		name string
	}{
		{&cls.NSString, "NSString"},
		{&cls.MTLCompileOptions, "MTLCompileOptions"},
		{&cls.MTLFunctionConstantValues, "MTLFunctionConstantValues"},
	} {
		if *c.dst = objcID(objc.GetClass(c.name)); *c.dst == 0 {
			return fmt.Errorf("%w: Objective-C class %s not found", ErrNoMetal, c.name)
		}
	}
	registerSelectors()
	return nil
}

func registerSelectors() {
	r := func(name string) objcSEL { return objcSEL(objc.RegisterName(name)) }
	sel = selectors{
		alloc: r("alloc"), init: r("init"), retain: r("retain"), release: r("release"),
		count: r("count"), objectAtIndex: r("objectAtIndex:"), respondsToSelector: r("respondsToSelector:"),
		initWithBytesLengthEncoding: r("initWithBytes:length:encoding:"), utf8String: r("UTF8String"),
		localizedDescription: r("localizedDescription"), code: r("code"),

		name: r("name"), newCommandQueue: r("newCommandQueue"),
		maxThreadgroupMemoryLength: r("maxThreadgroupMemoryLength"), maxBufferLength: r("maxBufferLength"),
		setLanguageVersion: r("setLanguageVersion:"), languageVersion: r("languageVersion"),
		setMathMode: r("setMathMode:"), mathMode: r("mathMode"), setFastMathEnabled: r("setFastMathEnabled:"),
		newLibraryWithSourceOptionsError: r("newLibraryWithSource:options:error:"), functionNames: r("functionNames"),
		setConstantValueTypeAtIndex:              r("setConstantValue:type:atIndex:"),
		newFunctionWithNameConstantValuesError:   r("newFunctionWithName:constantValues:error:"),
		newComputePipelineStateWithFunctionError: r("newComputePipelineStateWithFunction:error:"),
		maxTotalThreadsPerThreadgroup:            r("maxTotalThreadsPerThreadgroup"),
		threadExecutionWidth:                     r("threadExecutionWidth"),
		staticThreadgroupMemoryLength:            r("staticThreadgroupMemoryLength"),
		setMathFloatingPointFunctions:            r("setMathFloatingPointFunctions:"),
		mathFloatingPointFunctions:               r("mathFloatingPointFunctions"),
		supportsFamily:                           r("supportsFamily:"),
		hasUnifiedMemory:                         r("hasUnifiedMemory"),
		recommendedMaxWorkingSetSize:             r("recommendedMaxWorkingSetSize"),

		newBufferWithLengthOptions:      r("newBufferWithLength:options:"),
		newBufferWithBytesLengthOptions: r("newBufferWithBytes:length:options:"),
		newBufferWithBytesNoCopy:        r("newBufferWithBytesNoCopy:length:options:deallocator:"),
		contents:                        r("contents"),

		commandBuffer:                         r("commandBuffer"),
		computeCommandEncoderWithDispatchType: r("computeCommandEncoderWithDispatchType:"),
		setComputePipelineState:               r("setComputePipelineState:"),
		setBufferOffsetAtIndex:                r("setBuffer:offset:atIndex:"),
		setBytesLengthAtIndex:                 r("setBytes:length:atIndex:"),
		setThreadgroupMemoryLengthAtIndex:     r("setThreadgroupMemoryLength:atIndex:"),
		dispatchThreadgroups:                  r("dispatchThreadgroups:threadsPerThreadgroup:"),
		memoryBarrierWithScope:                r("memoryBarrierWithScope:"),
		memoryBarrierWithResources:            r("memoryBarrierWithResources:count:"),
		endEncoding:                           r("endEncoding"), commit: r("commit"),
		waitUntilCompleted: r("waitUntilCompleted"), status: r("status"), errorSel: r("error"),
		gpuStartTime: r("GPUStartTime"), gpuEndTime: r("GPUEndTime"),
		setLabel: r("setLabel:"), pushDebugGroup: r("pushDebugGroup:"), popDebugGroup: r("popDebugGroup"),
		registryID: r("registryID"),
	}
}

// inPool runs fn inside an autorelease pool on a locked OS thread.
//
// Every Objective-C path that can create autoreleased objects runs in one:
// open and compile, pipeline creation, buffer creation and no-copy wrapping
// (and their contents), Release, command buffer creation, commit, wait,
// settle and Close. OBJC_DEBUG_MISSING_POOLS=YES (scripts/maccheck/mac-check.sh's
// validation pass) reports any path that autoreleases without one.
//
// Why pools per call path rather than one Metal goroutine: the pool stack is
// per thread, so push and pop must run on the same OS thread, which
// LockOSThread guarantees for the duration of fn. Funnelling every call
// through one goroutine would cost a channel round trip per Dispatch; with
// pools, only the paths that create autoreleased objects (command buffer
// and encoder creation, NSError results, compile, commit/wait) pay for
// one, and objects that must outlive the pool are retained into the ledger.
// Dispatch and Barrier create no autoreleased objects and run bare, unless
// SystemOptions.EncodePools asks for pools there too.
func inPool(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool := autoreleasePoolPush()
	defer autoreleasePoolPop(pool)
	fn()
}

// newNSString returns a +1 NSString holding s; the caller releases it.
// initWithBytes:length:encoding: returns nil for bytes that are not valid
// UTF-8 (and has then released the allocated object); passing that nil on
// would raise an Objective-C exception inside Metal, which no Go code can
// recover from, so it is an error here. what names the string in it.
func newNSString(s, what string) (objcID, error) {
	if !utf8.ValidString(s) {
		// Checked in Go too: the answer must not depend on Foundation's
		// leniency, and the error can say where the bad byte is.
		return 0, fmt.Errorf("metal: %s is not valid UTF-8 (byte %d)", what, invalidUTF8At(s))
	}
	str := msgID(cls.NSString, sel.alloc)
	if str == 0 {
		return 0, fmt.Errorf("metal: NSString alloc returned nil for %s", what)
	}
	str = msgIDPtrUintUint(str, sel.initWithBytesLengthEncoding,
		unsafe.Pointer(unsafe.StringData(s)), uint64(len(s)), nsUTF8StringEncoding)
	if str == 0 {
		return 0, fmt.Errorf("metal: NSString initWithBytes:length:encoding: returned nil for %s", what)
	}
	return str, nil
}

// goString copies an NSString into Go; nil gives "".
func goString(str objcID) string {
	if str == 0 {
		return ""
	}
	return msgString(str, sel.utf8String)
}

// nsErrorText describes an NSError (its localizedDescription, which for a
// compile failure carries the whole compiler log).
func nsErrorText(nsErr objcID) string {
	if nsErr == 0 {
		return "no NSError given"
	}
	return goString(msgID(nsErr, sel.localizedDescription))
}

// nsArrayStrings copies an NSArray of NSString.
func nsArrayStrings(arr objcID) []string {
	if arr == 0 {
		return nil
	}
	n := msgUint(arr, sel.count)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, goString(msgIDUint(arr, sel.objectAtIndex, i)))
	}
	return out
}

func releaseObject(handle uintptr) { msgVoid(objcID(handle), sel.release) }

func respondsTo(obj objcID, s objcSEL) bool { return msgBoolSEL(obj, sel.respondsToSelector, s) }

// registerMsgSend binds every trampoline of msgsend.go to objc_msgSend at
// addr. purego panics on a signature it cannot pass
// (TestMsgSendSignaturesRegister registers them one by one on Linux too).
func registerMsgSend(addr uintptr) {
	for _, fptr := range msgSendTrampolines() {
		purego.RegisterFunc(fptr, addr)
	}
}
