package metal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// The darwin-layer checks of the first run on a Mac:
// what the device reports at open, precise math, the refusal of fast math,
// zero-copy wrapping of a file mapping through Metal, invalid UTF-8, static
// threadgroup memory and allocation-free Dispatch and Barrier.

// TestDeviceInfo logs the device line scripts/maccheck/mac-check.sh puts in its
// report ("metal-device name=... family=apple9 ... fp-functions=precise").
func TestDeviceInfo(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	info := dev.Info()
	t.Log(info.String())
	if info.AppleFamily < requiredAppleGPU {
		t.Errorf("opened a GPU of family Apple%d; open must refuse below Apple%d", info.AppleFamily, requiredAppleGPU)
	}
	// MathSafe must mean precise exp/log/sqrt on every macOS: read back
	// from the compile options on 15+, implied by fastMathEnabled = NO
	// before.
	if info.FPFunctions != FPFunctionsPrecise && info.FPFunctions != FPFunctionsUnavailable {
		t.Errorf("safe math compiled with %s floating-point functions", info.FPFunctions)
	}
	if info.MathMode != MathSafe || info.LanguageVersion != DefaultMSLVersion || info.PageSize != os.Getpagesize() {
		t.Errorf("info %v", info)
	}
}

func TestDeviceMathFastRefused(t *testing.T) {
	_, err := OpenSystem(SystemOptions{Sources: sysTestSources(), MathMode: MathFast})
	if !errors.Is(err, ErrShaderCompile) || !strings.Contains(err.Error(), "INFINITY") {
		t.Fatalf("OpenSystem(MathFast): err = %v, want a refusal naming -INFINITY", err)
	}
}

// A file mapping wrapped by NewBufferNoCopy is the buffer's memory: Metal
// reports the mapping's address as contents, a write through the file is
// seen by the GPU, and nothing was copied.
func TestDeviceNoCopyAliasesFileMapping(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	page := dev.pageSize
	path := filepath.Join(t.TempDir(), "weights.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const n = 64
	if _, err := f.Write(sysF32Bytes(make([]float32, page/4+7))); err != nil { // a partial last page
		t.Fatal(err)
	}
	size := page + 28
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	// A mapping's slice has cap = len; its last page is mapped whole, as
	// weights.OpenSafetensors' slice says through its capacity.
	whole := unsafe.Slice(unsafe.SliceData(m), (size+page-1)/page*page)[:size]
	b, err := dev.NewBufferNoCopy(whole)
	if err != nil {
		t.Fatalf("NewBufferNoCopy on a file mapping: %v", err)
	}
	defer b.Release()
	sb := b.(*systemBuffer)
	if got := sb.Contents(); got != unsafe.Pointer(&m[0]) {
		t.Fatalf("Metal's contents = %p, the mapping is at %p: not aliased", got, &m[0])
	}
	floats := make([]float32, n)
	for i := range floats {
		floats[i] = float32(i)
	}
	if _, err := f.WriteAt(sysF32Bytes(floats), 0); err != nil {
		t.Fatal(err)
	}
	sum, _ := dev.Pipeline("sys_test_row_sum")
	out, _ := dev.NewBuffer(4)
	cb, _ := dev.NewCommandBuffer()
	if err := cb.Dispatch(sum, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, Buffer: b}, Arg{Index: 1, Buffer: out},
		Arg{Index: 2, Bytes: sysU32(n)}, Arg{Index: 0, ThreadgroupBytes: 4 * 32}); err != nil {
		t.Fatal(err)
	}
	if err := cb.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sysBytesF32(out.Bytes())[0]; got != n*(n-1)/2 {
		t.Errorf("GPU sum over the file written after wrapping = %g, want %d", got, n*(n-1)/2)
	}
	// Misaligned memory is refused, not copied.
	if _, err := dev.NewBufferNoCopy(whole[4:]); !errors.Is(err, ErrNoCopy) {
		t.Errorf("NewBufferNoCopy(misaligned): err = %v, want ErrNoCopy", err)
	}
}

// Invalid UTF-8 in a kernel source is an error, not an Objective-C
// exception from a nil NSString.
func TestDeviceInvalidUTF8Source(t *testing.T) {
	bad := append(sysTestSources(), KernelSource{Name: "bad.metal", Text: "// caf\xe9\nkernel void k(device float* x [[buffer(0)]]) { x[0] = 1; }\n"})
	_, err := OpenSystem(SystemOptions{Sources: bad})
	if !errors.Is(err, ErrShaderCompile) || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("err = %v, want ErrShaderCompile naming invalid UTF-8", err)
	}
}

const sysTestStaticTGSource = `#include <metal_stdlib>
using namespace metal;

// 16 KiB of threadgroup memory declared in the body.
kernel void sys_test_static_tg(device float* out [[buffer(0)]],
                               threadgroup float* extra [[threadgroup(0)]],
                               uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float local[4096];
    local[tid] = float(tid);
    extra[tid] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tid] = local[tid] + extra[tid];
}
`

// The kernel's own threadgroup arrays count toward the device limit.
func TestDeviceStaticThreadgroupMemory(t *testing.T) {
	dev := openSysTestDevice(t, []KernelSource{{Name: "static_tg.metal", Text: sysTestStaticTGSource}})
	p, err := dev.Pipeline("sys_test_static_tg")
	if err != nil {
		t.Fatal(err)
	}
	static := p.(*systemPipeline).staticTGMemory
	if static < 16384 {
		t.Fatalf("staticThreadgroupMemoryLength = %d, want ≥ 16384", static)
	}
	out, _ := dev.NewBuffer(4 * 32)
	cb, _ := dev.NewCommandBuffer()
	defer func() { cb.Commit(); cb.Wait(context.Background()) }()
	over := dev.maxTGMemory - static + 16
	err = cb.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, Buffer: out}, Arg{Index: 0, ThreadgroupBytes: over})
	if !errors.Is(err, ErrThreadgroupMemory) {
		t.Errorf("%d static + %d argument bytes over a %d limit: err = %v, want ErrThreadgroupMemory", static, over, dev.maxTGMemory, err)
	}
	if err := cb.Dispatch(p, Size3{1, 1, 1}, Size3{32, 1, 1}, Arg{Index: 0, Buffer: out}, Arg{Index: 0, ThreadgroupBytes: 128}); err != nil {
		t.Errorf("within the limit: %v", err)
	}
}

// Dispatch and Barrier allocate nothing on the Go heap: the MTLSize and
// resource scratch live in the command buffer and purego's argument block
// comes from a pool.
func TestDeviceDispatchAllocations(t *testing.T) {
	dev := openSysTestDevice(t, sysTestSources())
	p, _ := dev.Pipeline("sys_test_add", Constant{Index: 0, Value: float32(1)})
	buf, _ := dev.NewBuffer(4 * 256)
	n := sysU32(256)
	cb, _ := dev.NewCommandBuffer()
	defer func() { cb.Commit(); cb.Wait(context.Background()) }()
	args := []Arg{{Index: 0, Buffer: buf}, {Index: 1, Buffer: buf}, {Index: 2, Buffer: buf}, {Index: 3, Bytes: n}}
	dispatch := testing.AllocsPerRun(200, func() {
		if err := cb.Dispatch(p, Size3{1, 1, 1}, Size3{256, 1, 1}, args...); err != nil {
			t.Fatal(err)
		}
	})
	// A variadic call through the interface would allocate its []Buffer
	// at the call site; the slice is built once, as an encoder keeps its
	// hazard list, so that only Barrier's own allocations count.
	bufs := []Buffer{buf}
	barrier := testing.AllocsPerRun(200, func() { cb.Barrier(bufs...) })
	all := testing.AllocsPerRun(200, func() { cb.Barrier() })
	t.Logf("allocations: Dispatch %v, Barrier(buf) %v, Barrier() %v", dispatch, barrier, all)
	if dispatch != 0 || barrier != 0 || all != 0 {
		t.Errorf("allocations per call: Dispatch %v, Barrier(buf) %v, Barrier() %v; want 0", dispatch, barrier, all)
	}
}
