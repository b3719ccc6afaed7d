package metal

import (
	"fmt"
	"math"
)

// Dispatch validation shared by every Device. The Apple GPU device and the
// emulator (package metal/emu) both call CheckDispatch before they encode
// anything, so a request is refused by both or by neither, with the same
// message, and the emulator's tests of refused dispatches speak for the GPU.
// What stays device-specific is only what one device can know: whether a
// buffer or pipeline belongs to it, and (emulator) which parameters the
// kernel declares.
//
// The file has no build tag: go test on Linux runs its table tests and
// checks that a valid dispatch allocates nothing (dispatch_test.go).

// DispatchLimits are the limits one dispatch is checked against: the
// pipeline's and the device's, as the device reported them.
type DispatchLimits struct {
	// MaxThreads is the pipeline's maxTotalThreadsPerThreadgroup: at most
	// 1024 on Apple GPUs, less for a register-heavy kernel or one declaring
	// [[max_total_threads_per_threadgroup(n)]].
	MaxThreads int
	// StaticThreadgroupMemory is the pipeline's
	// staticThreadgroupMemoryLength: the threadgroup arrays the kernel body
	// declares itself. They share the device limit with the
	// [[threadgroup(n)]] arguments. Zero when the device cannot tell.
	StaticThreadgroupMemory int
	// MaxThreadgroupMemory is the device's maxThreadgroupMemoryLength.
	MaxThreadgroupMemory int
}

// ThreadgroupMemoryLimit is maxThreadgroupMemoryLength of every Apple-family
// GPU (32 KiB; Apple's Metal feature set tables), which the emulator
// enforces too.
const ThreadgroupMemoryLimit = 32768

// CheckDispatch validates a dispatchThreadgroups request: grid and
// threadgroup extents against the pipeline's thread limit, each argument
// (one kind of binding, index, buffer offset, setBytes length; each index
// bound at most once in each of the buffer and threadgroup tables), and the
// threadgroup memory of the arguments plus the kernel's static arrays
// against the device's limit. empty reports a grid with no threadgroups,
// which is legal and encodes nothing (a zero-row batch); Metal itself would
// reject it. Every error wraps ErrInvalidDispatch (and ErrThreadgroupMemory
// for memory over the limit). A valid request allocates nothing.
func CheckDispatch(lim DispatchLimits, groups, threads Size3, args []Arg) (empty bool, err error) {
	empty, err = checkGrid(groups, threads, lim.MaxThreads)
	if err != nil {
		return false, err
	}
	tg := 0
	// Buffers and setBytes share the buffer argument table, threadgroup
	// memory has a table of its own: a second binding at a taken index
	// would silently replace the first in Metal's encoder (the emulator
	// would have to pick one too), so it is refused.
	var buffers, threadgroup uint32
	for i := range args {
		kind, err := classifyArg(&args[i])
		if err != nil {
			return false, err
		}
		table, name := &buffers, "buffer"
		if kind == argThreadgroup {
			tg += threadgroupLength(args[i].ThreadgroupBytes)
			table, name = &threadgroup, "threadgroup memory"
		}
		bit := uint32(1) << args[i].Index
		if *table&bit != 0 {
			return false, fmt.Errorf("%w: argument index %d bound twice in the %s table", ErrInvalidDispatch, args[i].Index, name)
		}
		*table |= bit
	}
	if static := max(lim.StaticThreadgroupMemory, 0); static+tg > lim.MaxThreadgroupMemory {
		return false, fmt.Errorf("%w: %w: %d bytes of threadgroup arrays in the kernel + %d bytes of [[threadgroup(n)]] arguments = %d; the device allows %d",
			ErrInvalidDispatch, ErrThreadgroupMemory, static, tg, static+tg, lim.MaxThreadgroupMemory)
	}
	return empty, nil
}

// ClampThreads is the threadgroup size to ask for when a kernel would like
// want threads: want, but at most the pipeline's maximum, rounded down to
// whole SIMD groups when the maximum binds (Apple lowers the maximum for
// register-heavy kernels, so the 1024 a kernel was written for is not
// guaranteed). It is at least 1. Only kernels written for any threadgroup
// size may be clamped; the others must fail CheckDispatch instead.
func ClampThreads(p Pipeline, want int) int {
	limit := p.MaxThreadsPerThreadgroup()
	if want <= limit {
		return max(want, 1)
	}
	if w := p.ThreadExecutionWidth(); w > 0 && limit >= w {
		return limit / w * w
	}
	return max(limit, 1)
}

// checkGrid validates the extents of a dispatchThreadgroups request against
// a pipeline's thread limit.
func checkGrid(groups, threads Size3, maxThreads int) (empty bool, err error) {
	if groups.X < 0 || groups.Y < 0 || groups.Z < 0 {
		return false, fmt.Errorf("%w: threadgroup count %d×%d×%d is negative", ErrInvalidDispatch, groups.X, groups.Y, groups.Z)
	}
	// Metal takes NSUInteger extents, but the threadgroup position in grid
	// is a 32-bit uint in MSL ([[threadgroup_position_in_grid]]).
	if groups.X > math.MaxUint32 || groups.Y > math.MaxUint32 || groups.Z > math.MaxUint32 {
		return false, fmt.Errorf("%w: threadgroup count %d×%d×%d exceeds 2^32-1 in one extent", ErrInvalidDispatch, groups.X, groups.Y, groups.Z)
	}
	if threads.X < 1 || threads.Y < 1 || threads.Z < 1 {
		return false, fmt.Errorf("%w: threadgroup size %d×%d×%d: every extent must be at least 1", ErrInvalidDispatch, threads.X, threads.Y, threads.Z)
	}
	// Each extent is bounded first so that the product cannot overflow.
	if threads.X > maxThreads || threads.Y > maxThreads || threads.Z > maxThreads {
		return false, fmt.Errorf("%w: threadgroup size %d×%d×%d exceeds the pipeline's limit of %d threads",
			ErrInvalidDispatch, threads.X, threads.Y, threads.Z, maxThreads)
	}
	if total := int64(threads.X) * int64(threads.Y) * int64(threads.Z); total > int64(maxThreads) {
		return false, fmt.Errorf("%w: threadgroup size %d×%d×%d = %d threads exceeds the pipeline's limit of %d",
			ErrInvalidDispatch, threads.X, threads.Y, threads.Z, total, maxThreads)
	}
	return groups.X == 0 || groups.Y == 0 || groups.Z == 0, nil
}

// maxSetBytes is the largest setBytes:length:atIndex: payload: Apple's
// documentation allows it for data smaller than 4 KB, so 4096 bytes
// exactly is already outside what it promises.
const maxSetBytes = 4095

// maxBindIndex is the number of buffer argument slots a compute encoder has
// ([[buffer(0)]] to [[buffer(30)]]).
const maxBindIndex = 31

// argKind says how one Arg binds.
type argKind int

const (
	argBuffer argKind = iota + 1
	argBytes
	argThreadgroup
)

// classifyArg checks that an Arg names exactly one kind of binding and that
// the binding is in range. A buffer offset must lie inside the buffer (0 is
// always allowed); its alignment to the element the kernel reads is the
// binder's to keep (Metal: "align the offset to the data type consumed by
// the compute function"), as backend/gpu does for mapped weights.
func classifyArg(a *Arg) (argKind, error) {
	var kind argKind
	n := 0
	if a.Buffer != nil {
		kind, n = argBuffer, n+1
	}
	if a.Bytes != nil {
		kind, n = argBytes, n+1
	}
	if a.ThreadgroupBytes != 0 {
		kind, n = argThreadgroup, n+1
	}
	switch {
	case a.Index < 0 || a.Index >= maxBindIndex:
		return 0, fmt.Errorf("%w: argument index %d outside [0, %d)", ErrInvalidDispatch, a.Index, maxBindIndex)
	case n == 0:
		return 0, fmt.Errorf("%w: argument %d binds nothing (set Buffer, Bytes or ThreadgroupBytes)", ErrInvalidDispatch, a.Index)
	case n > 1:
		return 0, fmt.Errorf("%w: argument %d sets more than one of Buffer, Bytes and ThreadgroupBytes", ErrInvalidDispatch, a.Index)
	}
	switch kind {
	case argBuffer:
		if a.Offset < 0 || a.Offset >= a.Buffer.Len() && a.Offset != 0 {
			return 0, fmt.Errorf("%w: argument %d: offset %d outside its %d-byte buffer", ErrInvalidDispatch, a.Index, a.Offset, a.Buffer.Len())
		}
	case argBytes:
		if len(a.Bytes) == 0 || len(a.Bytes) > maxSetBytes {
			return 0, fmt.Errorf("%w: argument %d: %d bytes of inline constants; setBytes takes 1 to %d", ErrInvalidDispatch, a.Index, len(a.Bytes), maxSetBytes)
		}
	case argThreadgroup:
		if a.ThreadgroupBytes < 0 {
			return 0, fmt.Errorf("%w: argument %d: negative threadgroup memory %d", ErrInvalidDispatch, a.Index, a.ThreadgroupBytes)
		}
	}
	return kind, nil
}

// threadgroupLength rounds a threadgroup memory request up to the multiple
// of 16 bytes that setThreadgroupMemoryLength:atIndex: requires.
func threadgroupLength(n int) int { return (n + 15) &^ 15 }

// NoCopyLength decides whether host memory (base, length n, capacity c) can
// back a buffer without a copy, and with which length; both devices wrap
// memory by this one rule. Apple's newBufferWithBytesNoCopy documentation
// asks for a page-aligned pointer and a length that makes a page-aligned
// region; the length is rounded up to whole pages, which is only safe when
// those bytes belong to the same allocation, i.e. lie within the slice's
// capacity (an mmap'd file's last page is always mapped whole).
func NoCopyLength(base uintptr, n, c, page int) (length int, ok bool) {
	if page <= 0 || page&(page-1) != 0 || n <= 0 || base%uintptr(page) != 0 {
		return 0, false
	}
	length = (n + page - 1) &^ (page - 1)
	if length > c {
		return 0, false
	}
	return length, true
}
