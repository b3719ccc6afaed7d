// fakecuda.cpp: the CUDA driver, NVRTC and cuBLAS entry points the cuda
// backend loads, on the kernel emulator, so that the backend opens on this
// library (libcuemu.so: Options.Driver, NVRTC and CUBLAS all name it) and
// runs a whole forward pass without a GPU. It is compiled after cuemu.h,
// kernels.cu and the table of its kernels (emu_internal_test.go builds it).
//
// One device (compute capability 9.0, as the H200 the backend is tuned on)
// with one primary context. Device memory is host memory: an allocation's
// address is its device address, and it starts out filled with 0xff bytes
// (NaN as float and fp16), as the emulator's shared memory does, so that a
// read of memory nothing wrote shows in the results. A stream runs each
// operation when it is issued, so every wait returns at once; only while a
// stream is captured are its operations (kernel launches with their
// argument values, copies, memsets, GEMMs) recorded into the graph instead,
// to run, in order, each time the graph is launched.
//
// What the real driver refuses and the backend must never do is refused
// here too, with a CUDA error and a line on stderr: a call without a
// current context, a copy outside an allocation, more dynamic shared
// memory than the kernel was allowed (cuFuncSetAttribute), a GEMM whose
// operands leave their allocations, and, during a capture in global or
// thread-local mode, the calls CUDA forbids there (allocating, freeing,
// synchronous copies, synchronising), which also spoil the capture.
//
// cuBLAS computes each GEMM in double from its operands as stored and
// rounds once. cuBLASLt (fakecublaslt.cpp, included at the end) computes
// in float32, as CUBLAS_COMPUTE_32F does, with its epilogues, batches and
// split K; the backend finds it as the libcublasLt.so beside this library.
//
// Every entry point holds one mutex: the backend calls from its worker
// thread, its streams' waiter threads and requests' own threads, and the
// emulator runs one grid at a time.

#include "cuemu_run.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <thread>
#include <stdarg.h>

#define CUEMU_API extern "C" __attribute__((visibility("default")))

// The UBSan runtime (the alignment check) leaves the signals to the Go
// runtime that loads this library.
CUEMU_API const char* __ubsan_default_options() {
	return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:print_stacktrace=1";
}

namespace fake {

// CUresult values (cuda.h).
enum : int {
	SUCCESS = 0,
	INVALID_VALUE = 1,
	OUT_OF_MEMORY = 2,
	NOT_INITIALIZED = 3,
	INVALID_DEVICE = 101,
	INVALID_IMAGE = 200,
	INVALID_CONTEXT = 201,
	INVALID_HANDLE = 400,
	ILLEGAL_STATE = 401,
	NOT_FOUND = 500,
	NOT_READY = 600,
	NOT_SUPPORTED = 801,
	CAPTURE_UNSUPPORTED = 900,
	CAPTURE_INVALIDATED = 901,
	CAPTURE_UNMATCHED = 903,
	CAPTURED_EVENT = 907,
	CAPTURE_WRONG_THREAD = 908,
};

struct ErrorName {
	int code;
	const char *name, *text;
};
const ErrorName errorNames[] = {
    {SUCCESS, "CUDA_SUCCESS", "no error"},
    {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "operation not permitted on a stream that is not capturing"},
    {CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT", "operation not permitted on an event last recorded in a capturing stream"},
    {CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "a thread-local capture ended on another thread"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
};

// refuse reports why a call fails and returns code: the backend's error
// carries only the code's name.
int refuse(int code, const char* format, ...) {
	va_list ap;
	va_start(ap, format);
	fprintf(stderr, "cuemu: ");
	vfprintf(stderr, format, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	return code;
}

std::mutex mu;
bool initialized;

// trace (CUEMU_TRACE set) writes each kernel's grid and time on stderr as
// it runs: where the emulator's time goes.
const bool trace = getenv("CUEMU_TRACE") != nullptr;

// skipWork (cuemu_skip_work) leaves kernels and GEMMs unrun, everything
// else as it is: the host's share of a request, timed without the
// emulator's compute (BenchmarkEmuHostForward).
std::atomic<bool> skipWork{false};

struct Context {
	int refs;
} primary;
thread_local Context* current;

// The device's shared memory a block may opt in to, and the dynamic
// shared memory a kernel gets without opting in.
constexpr int sharedOptin = 232448, sharedDefault = 48 << 10;
// deviceBytes is the memory cuMemGetInfo reports and cuMemAlloc hands
// out, an H200's unless a test makes the GPU smaller (cuemu_set_free).
constexpr size_t h200Bytes = (size_t)143771 << 20;
size_t deviceBytes = h200Bytes;

std::map<uintptr_t, size_t> allocs; // device allocations by address
size_t allocated;
std::set<void*> hostAllocs;

// inDevice reports whether [p, p+n) lies in one device allocation.
bool inDevice(uintptr_t p, size_t n) {
	auto it = allocs.upper_bound(p);
	if (it == allocs.begin()) return false;
	--it;
	size_t off = p - it->first;
	return off <= it->second && n <= it->second - off;
}

using Op = std::function<void()>;

struct Graph {
	std::vector<Op> ops;
};
std::set<Graph*> graphs;
std::set<Graph*> execs; // instantiated graphs (CUgraphExec)

struct Stream {
	Graph* capture = nullptr; // the graph being captured, while it is
	bool invalid = false;     // a forbidden call spoilt the capture
	int mode = 0;             // CUstreamCaptureMode
	std::thread::id by;       // the thread that began the capture
};
std::set<Stream*> streams;
Stream legacy; // the NULL stream (and CU_STREAM_LEGACY, CU_STREAM_PER_THREAD)

// globalCaptures counts the captures in global mode, thisThread's those
// this thread began in global or thread-local mode: while either is
// non-zero the calls CUDA deems unsafe in a capture fail on this thread.
int globalCaptures;
thread_local int thisThread;

struct Event {
	bool timing;
	bool recorded = false;
	bool captured = false; // last recorded in a capture
	std::chrono::steady_clock::time_point at;
};
std::set<Event*> events;

struct Module {
	int unused;
};
std::set<Module*> modules;

// maxShared is each kernel's dynamic shared memory allowance
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
std::vector<int> maxShared(sizeof cuemu_kernels / sizeof cuemu_kernels[0], sharedDefault);

int kernelIndex(const void* f) {
	for (size_t i = 0; i < sizeof cuemu_kernels / sizeof cuemu_kernels[0]; i++)
		if (f == &cuemu_kernels[i]) return (int)i;
	return -1;
}

Stream* stream(void* h) {
	if (h == nullptr || h == (void*)1 || h == (void*)2) return &legacy;
	return streams.count((Stream*)h) ? (Stream*)h : nullptr;
}

// unsafe refuses a call that CUDA forbids on this thread during a capture,
// spoiling the captures this thread began.
int unsafe(const char* call) {
	if (thisThread == 0 && globalCaptures == 0) return SUCCESS;
	for (Stream* s : streams)
		if (s->capture && s->by == std::this_thread::get_id()) s->invalid = true;
	return refuse(CAPTURE_UNSUPPORTED, "%s during a stream capture", call);
}

// issue runs op on s now, or records it into s's capture.
int issue(Stream* s, Op op) {
	if (s->capture) {
		s->capture->ops.push_back(std::move(op));
		return SUCCESS;
	}
	if (s == &legacy && (thisThread || globalCaptures)) return unsafe("work on the NULL stream");
	op();
	return SUCCESS;
}

// sticky, when non-zero (cuemu_set_sticky), is the error every call on
// the context returns, as CUDA does after a kernel's illegal address.
int sticky;

// need is what every call on the context checks first.
int need() {
	if (sticky) return sticky;
	if (!initialized) return NOT_INITIALIZED;
	if (!current || current->refs == 0) return INVALID_CONTEXT;
	return SUCCESS;
}

#define NEED()                                                                                                                 \
	std::lock_guard<std::mutex> lock(mu);                                                                                      \
	if (int r = need()) return r

// The launch configuration of cuLaunchKernelEx (cuda.h, CUDA 11.8+).
struct LaunchAttr {
	unsigned id;
	char pad[4];
	unsigned char value[64];
};
struct LaunchConfig {
	unsigned grid[3], block[3], shared;
	void* stream;
	LaunchAttr* attrs;
	unsigned nattrs;
};
static_assert(sizeof(LaunchAttr) == 72 && sizeof(LaunchConfig) == 56, "cuda.h's layouts");

int launch(const char* call, void* f, const unsigned grid[3], const unsigned block[3], unsigned shared, void* hs, void** params,
           void** extra, unsigned csize = 1) {
	int ki = kernelIndex(f);
	if (ki < 0) return refuse(INVALID_HANDLE, "%s: not a kernel", call);
	const cuemu_kernel* k = &cuemu_kernels[ki];
	Stream* s = stream(hs);
	if (!s) return refuse(INVALID_HANDLE, "%s %s: no stream %p", call, k->name, hs);
	if (extra) return refuse(NOT_SUPPORTED, "%s %s: arguments through extra", call, k->name);
	if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[1] > 65535 || grid[2] > 65535 || block[0] == 0 || block[0] > 1024)
		return refuse(INVALID_VALUE, "%s %s: grid %ux%ux%u, block %u", call, k->name, grid[0], grid[1], grid[2], block[0]);
	if (block[1] != 1 || block[2] != 1)
		return refuse(NOT_SUPPORTED, "%s %s: the emulator runs blocks of x threads only, not %ux%ux%u", call, k->name, block[0],
		              block[1], block[2]);
	if (csize > 8 || grid[0] % csize)
		return refuse(INVALID_VALUE, "%s %s: clusters of %u blocks (at most 8, dividing the grid's %u)", call, k->name, csize, grid[0]);
	if ((int)shared > maxShared[ki])
		return refuse(INVALID_VALUE, "%s %s: %u bytes of dynamic shared memory, %d allowed", call, k->name, shared, maxShared[ki]);
	std::vector<u64> args(k->nargs);
	for (unsigned i = 0; i < k->nargs; i++) {
		if (!params || !params[i]) return refuse(INVALID_VALUE, "%s %s: argument %u missing", call, k->name, i);
		memcpy(&args[i], params[i], sizeof(u64));
	}
	cuemu_dim3 g{grid[0], grid[1], grid[2]};
	unsigned threads = block[0];
	return issue(s, [k, g, threads, shared, csize, args = std::move(args)] {
		if (skipWork) return;
		auto t0 = std::chrono::steady_clock::now();
		cuemu::run(k->call, args.data(), g, threads, shared, csize);
		if (trace)
			fprintf(stderr, "cuemu: %s <<<(%u,%u,%u), %u, %u>>> %.3f ms\n", k->name, g.x, g.y, g.z, threads, shared,
			        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
	});
}

// The cuBLAS side: cublasStatus_t values and library_types.h's types.
enum : int {
	BLAS_SUCCESS = 0,
	BLAS_NOT_INITIALIZED = 1,
	BLAS_INVALID_VALUE = 7,
	BLAS_EXECUTION_FAILED = 13,
	BLAS_NOT_SUPPORTED = 15,
};
enum : int { R32F = 0, R16F = 2, R16BF = 14 };
constexpr int compute32F = 68; // CUBLAS_COMPUTE_32F
constexpr int pedanticMath = 2; // CUBLAS_PEDANTIC_MATH

struct Blas {
	Stream* stream = &legacy;
	void* workspace = nullptr;
	size_t workspaceBytes = 0;
	int math = 0;
};
std::set<Blas*> handles;

size_t typeSize(int t) { return t == R32F ? 4 : t == R16F || t == R16BF ? 2 : 0; }

float bf2f(u16 h) { return __uint_as_float((u32)h << 16); }

float load(const void* p, int t, size_t i) {
	switch (t) {
	case R32F:
		return ((const float*)p)[i];
	case R16F:
		return cuemu::h2f(((const u16*)p)[i]);
	default:
		return bf2f(((const u16*)p)[i]);
	}
}

void store(void* p, int t, size_t i, float v) {
	switch (t) {
	case R32F:
		((float*)p)[i] = v;
		break;
	case R16F:
		((u16*)p)[i] = cuemu::f2h(v);
		break;
	default:
		((u16*)p)[i] = cuemu::f2bf(v);
	}
}

// Operand is a column-major matrix operand of a GEMM: rows × cols
// elements of type t, ld apart, batch matrices stride elements apart.
struct Operand {
	const void* p;
	int t;
	long long ld, rows, cols, stride;
};

// fits reports whether every matrix of a batch lies in one allocation.
bool fits(const Operand& o, int batch) {
	if (o.rows == 0 || o.cols == 0) return true;
	size_t es = typeSize(o.t);
	for (int b = 0; b < batch; b++) {
		uintptr_t p = (uintptr_t)o.p + (uintptr_t)(b * o.stride) * es;
		if (!inDevice(p, ((o.cols - 1) * o.ld + o.rows) * es)) return false;
	}
	return true;
}

// loadOps reads batch q's op(A) (m×k, ta: A is stored transposed) by rows
// and op(B) (k×n, tb likewise) by columns into opA and opB, k contiguous.
template <class T>
void loadOps(std::vector<T>& opA, std::vector<T>& opB, const Operand& a, int ta, const Operand& b, int tb, int m, int n, int k, int q) {
	opA.resize((size_t)m * k);
	opB.resize((size_t)n * k);
	const char* pa = (const char*)a.p + q * a.stride * (long long)typeSize(a.t);
	const char* pb = (const char*)b.p + q * b.stride * (long long)typeSize(b.t);
	for (int i = 0; i < m; i++)
		for (int l = 0; l < k; l++) opA[(size_t)i * k + l] = load(pa, a.t, ta ? l + (size_t)i * a.ld : i + (size_t)l * a.ld);
	for (int j = 0; j < n; j++)
		for (int l = 0; l < k; l++) opB[(size_t)j * k + l] = load(pb, b.t, tb ? j + (size_t)l * b.ld : l + (size_t)j * b.ld);
}

// gemm is C = alpha·op(A)·op(B) + beta·C, column-major, in batches (cuBLAS
// semantics: with beta 0, C is not read, so NaN there does not spread).
int gemm(const char* call, void* h, int ta, int tb, int m, int n, int k, const void* alphap, const void* A, int at, int lda,
         long long sa, const void* B, int bt, int ldb, long long sb, const void* betap, void* C, int ct, int ldc, long long sc,
         int batch, int compute) {
	std::lock_guard<std::mutex> lock(mu);
	Blas* bl = (Blas*)h;
	if (!handles.count(bl)) return refuse(BLAS_NOT_INITIALIZED, "%s: no handle %p", call, h);
	if (ta < 0 || ta > 1 || tb < 0 || tb > 1 || m < 0 || n < 0 || k < 0 || batch < 0 || lda < std::max(1, ta ? k : m) ||
	    ldb < std::max(1, tb ? n : k) || ldc < std::max(1, m) || !alphap || !betap)
		return refuse(BLAS_INVALID_VALUE, "%s: op %d %d, m %d n %d k %d, ld %d %d %d, batch %d", call, ta, tb, m, n, k, lda, ldb,
		              ldc, batch);
	bool sameIn = at == bt && (at == R32F || at == R16F || at == R16BF);
	bool outOK = ct == at || ct == R32F;
	if (!sameIn || !outOK || compute != compute32F)
		return refuse(BLAS_NOT_SUPPORTED, "%s: types %d %d %d, compute type %d", call, at, bt, ct, compute);
	// The backend's float32 GEMMs are its parity path, in pedantic math
	// (no TF32 on a GPU), its 16-bit ones in the default math; one pooled
	// handle runs the segments of both (a 16-bit backend's wide streams),
	// so its mode must follow each.
	if ((at == R32F) != (bl->math == pedanticMath))
		return refuse(BLAS_NOT_SUPPORTED, "%s: type %d operands in math mode %d", call, at, bl->math);
	Operand a{A, at, lda, ta ? k : m, ta ? m : k, sa}, b{B, bt, ldb, tb ? n : k, tb ? k : n, sb}, c{C, ct, ldc, m, n, sc};
	if (!fits(a, batch) || !fits(b, batch) || !fits(c, batch))
		return refuse(BLAS_EXECUTION_FAILED, "%s: an operand leaves device memory (m %d n %d k %d, ld %d %d %d)", call, m, n, k,
		              lda, ldb, ldc);
	float alpha = *(const float*)alphap, beta = *(const float*)betap;
	return issue(bl->stream, [=] {
		if (skipWork) return;
		std::vector<double> opA, opB;
		for (int q = 0; q < batch; q++) {
			char* pc = (char*)C + q * sc * (long long)typeSize(ct);
			loadOps(opA, opB, a, ta, b, tb, m, n, k, q);
			for (int j = 0; j < n; j++)
				for (int i = 0; i < m; i++) {
					double s = 0;
					for (int l = 0; l < k; l++) s += opA[(size_t)i * k + l] * opB[(size_t)j * k + l];
					size_t ci = i + (size_t)j * ldc;
					double v = alpha * s;
					if (beta != 0) v += beta * (double)load(pc, ct, ci);
					store(pc, ct, ci, (float)v);
				}
		}
	});
}

// The fake NVRTC: a program compiles when it is the kernels.cu this
// library was built from (CUEMU_SOURCE_HASH, its FNV-1a hash), to a
// "cubin" naming it.
struct Program {
	std::string src, log;
	bool compiled = false;
};
std::set<Program*> programs;

u64 fnv1a(const char* s) {
	u64 h = 14695981039346656037ull;
	for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

constexpr char cubinMagic[8] = "CUEMU01";
constexpr size_t cubinBytes = 16;

} // namespace fake

using namespace fake;

// The driver.

CUEMU_API void cuemu_skip_work(int on) { skipWork = on != 0; }

// cuemu_set_free leaves free bytes of device memory beyond what is
// allocated now (the GPU shrinks to that); free 0 with reset set restores
// the H200's memory.
CUEMU_API void cuemu_set_sticky(int code) {
	std::lock_guard<std::mutex> lock(mu);
	sticky = code;
}

CUEMU_API void cuemu_set_free(size_t free, int reset) {
	std::lock_guard<std::mutex> lock(mu);
	deviceBytes = reset ? h200Bytes : allocated + free;
}

CUEMU_API int cuGetErrorName(int code, const char** s) {
	for (const auto& e : errorNames)
		if (e.code == code) {
			*s = e.name;
			return SUCCESS;
		}
	*s = nullptr;
	return INVALID_VALUE;
}

CUEMU_API int cuGetErrorString(int code, const char** s) {
	for (const auto& e : errorNames)
		if (e.code == code) {
			*s = e.text;
			return SUCCESS;
		}
	*s = nullptr;
	return INVALID_VALUE;
}

CUEMU_API int cuInit(unsigned flags) {
	std::lock_guard<std::mutex> lock(mu);
	if (flags != 0) return INVALID_VALUE;
	initialized = true;
	return SUCCESS;
}

CUEMU_API int cuDeviceGetCount(int* n) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized) return NOT_INITIALIZED;
	*n = 1;
	return SUCCESS;
}

CUEMU_API int cuDeviceGet(int* dev, int ordinal) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized) return NOT_INITIALIZED;
	if (ordinal != 0) return INVALID_DEVICE;
	*dev = 0;
	return SUCCESS;
}

CUEMU_API int cuDeviceGetName(char* name, int len, int dev) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized) return NOT_INITIALIZED;
	if (dev != 0) return INVALID_DEVICE;
	if (len <= 0) return INVALID_VALUE;
	snprintf(name, (size_t)len, "cuemu");
	return SUCCESS;
}

CUEMU_API int cuDeviceGetAttribute(int* v, int attr, int dev) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized) return NOT_INITIALIZED;
	if (dev != 0) return INVALID_DEVICE;
	// CUdevice_attribute: an H200's values.
	static const std::map<int, int> attrs = {
	    {1, 1024},         // MAX_THREADS_PER_BLOCK
	    {2, 1024},         // MAX_BLOCK_DIM_X
	    {3, 1024},         // MAX_BLOCK_DIM_Y
	    {4, 64},           // MAX_BLOCK_DIM_Z
	    {5, 2147483647},   // MAX_GRID_DIM_X
	    {6, 65535},        // MAX_GRID_DIM_Y
	    {7, 65535},        // MAX_GRID_DIM_Z
	    {8, sharedDefault}, // MAX_SHARED_MEMORY_PER_BLOCK
	    {10, 32},          // WARP_SIZE
	    {12, 65536},       // MAX_REGISTERS_PER_BLOCK
	    {16, 132},         // MULTIPROCESSOR_COUNT
	    {38, 52428800},    // L2_CACHE_SIZE
	    {39, 2048},        // MAX_THREADS_PER_MULTIPROCESSOR
	    {75, 9},           // COMPUTE_CAPABILITY_MAJOR
	    {76, 0},           // COMPUTE_CAPABILITY_MINOR
	    {81, 233472},      // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
	    {82, 65536},       // MAX_REGISTERS_PER_MULTIPROCESSOR
	    {97, sharedOptin}, // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	    {106, 32},         // MAX_BLOCKS_PER_MULTIPROCESSOR
	};
	auto it = attrs.find(attr);
	if (it == attrs.end()) return refuse(INVALID_VALUE, "cuDeviceGetAttribute: attribute %d unknown here", attr);
	*v = it->second;
	return SUCCESS;
}

CUEMU_API int cuDevicePrimaryCtxRetain(void** ctx, int dev) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized) return NOT_INITIALIZED;
	if (dev != 0) return INVALID_DEVICE;
	primary.refs++;
	*ctx = &primary;
	return SUCCESS;
}

CUEMU_API int cuDevicePrimaryCtxRelease_v2(int dev) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized) return NOT_INITIALIZED;
	if (dev != 0) return INVALID_DEVICE;
	if (primary.refs == 0) return INVALID_CONTEXT;
	primary.refs--;
	return SUCCESS;
}

CUEMU_API int cuCtxSetCurrent(void* ctx) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized) return NOT_INITIALIZED;
	if (ctx != nullptr && ctx != &primary) return INVALID_CONTEXT;
	current = (Context*)ctx;
	return SUCCESS;
}

CUEMU_API int cuCtxGetCurrent(void** ctx) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized) return NOT_INITIALIZED;
	*ctx = current;
	return SUCCESS;
}

CUEMU_API int cuCtxSynchronize() {
	NEED();
	return unsafe("cuCtxSynchronize");
}

CUEMU_API int cuMemGetInfo_v2(size_t* free, size_t* total) {
	NEED();
	*total = deviceBytes;
	*free = *total - std::min(allocated, *total);
	return SUCCESS;
}

CUEMU_API int cuMemAlloc_v2(u64* p, size_t n) {
	NEED();
	if (int r = unsafe("cuMemAlloc")) return r;
	if (n == 0) return INVALID_VALUE;
	if (n > deviceBytes - std::min(allocated, deviceBytes)) return OUT_OF_MEMORY;
	void* q = aligned_alloc(256, (n + 255) & ~(size_t)255);
	if (!q) return OUT_OF_MEMORY;
	memset(q, 0xff, n);
	allocs[(uintptr_t)q] = n;
	allocated += n;
	*p = (u64)(uintptr_t)q;
	return SUCCESS;
}

CUEMU_API int cuMemFree_v2(u64 p) {
	NEED();
	if (int r = unsafe("cuMemFree")) return r;
	auto it = allocs.find((uintptr_t)p);
	if (it == allocs.end()) return refuse(INVALID_VALUE, "cuMemFree: %#llx is not an allocation", p);
	allocated -= it->second;
	free((void*)it->first);
	allocs.erase(it);
	return SUCCESS;
}

CUEMU_API int cuMemHostAlloc(void** p, size_t n, unsigned flags) {
	NEED();
	if (int r = unsafe("cuMemHostAlloc")) return r;
	if (n == 0) return INVALID_VALUE;
	void* q = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (!q) return OUT_OF_MEMORY;
	hostAllocs.insert(q);
	*p = q;
	return SUCCESS;
}

CUEMU_API int cuMemFreeHost(void* p) {
	NEED();
	if (int r = unsafe("cuMemFreeHost")) return r;
	if (!hostAllocs.erase(p)) return refuse(INVALID_VALUE, "cuMemFreeHost: %p is not pinned memory", p);
	free(p);
	return SUCCESS;
}

CUEMU_API int cuMemcpyHtoD_v2(u64 dst, const void* src, size_t n) {
	NEED();
	if (int r = unsafe("cuMemcpyHtoD")) return r;
	if (!inDevice(dst, n)) return refuse(INVALID_VALUE, "cuMemcpyHtoD: %zu bytes to %#llx leave device memory", n, dst);
	memcpy((void*)(uintptr_t)dst, src, n);
	return SUCCESS;
}

CUEMU_API int cuMemcpyHtoDAsync_v2(u64 dst, const void* src, size_t n, void* hs) {
	NEED();
	Stream* s = stream(hs);
	if (!s) return INVALID_HANDLE;
	if (!inDevice(dst, n)) return refuse(INVALID_VALUE, "cuMemcpyHtoDAsync: %zu bytes to %#llx leave device memory", n, dst);
	return issue(s, [=] { memcpy((void*)(uintptr_t)dst, src, n); });
}

CUEMU_API int cuMemcpyDtoHAsync_v2(void* dst, u64 src, size_t n, void* hs) {
	NEED();
	Stream* s = stream(hs);
	if (!s) return INVALID_HANDLE;
	if (!inDevice(src, n)) return refuse(INVALID_VALUE, "cuMemcpyDtoHAsync: %zu bytes from %#llx leave device memory", n, src);
	return issue(s, [=] { memcpy(dst, (const void*)(uintptr_t)src, n); });
}

CUEMU_API int cuMemsetD8Async(u64 dst, unsigned char v, size_t n, void* hs) {
	NEED();
	Stream* s = stream(hs);
	if (!s) return INVALID_HANDLE;
	if (!inDevice(dst, n)) return refuse(INVALID_VALUE, "cuMemsetD8Async: %zu bytes at %#llx leave device memory", n, dst);
	return issue(s, [=] { memset((void*)(uintptr_t)dst, v, n); });
}

CUEMU_API int cuModuleLoadData(void** mod, const void* image) {
	NEED();
	if (int r = unsafe("cuModuleLoadData")) return r;
	u64 hash;
	memcpy(&hash, (const char*)image + 8, 8);
	if (memcmp(image, cubinMagic, 8) != 0 || hash != CUEMU_SOURCE_HASH)
		return refuse(INVALID_IMAGE, "cuModuleLoadData: not a cubin of the kernels.cu this library runs");
	Module* m = new Module{};
	modules.insert(m);
	*mod = m;
	return SUCCESS;
}

CUEMU_API int cuModuleUnload(void* mod) {
	NEED();
	if (int r = unsafe("cuModuleUnload")) return r;
	if (!modules.erase((Module*)mod)) return INVALID_HANDLE;
	delete (Module*)mod;
	return SUCCESS;
}

CUEMU_API int cuModuleGetFunction(void** f, void* mod, const char* name) {
	NEED();
	if (!modules.count((Module*)mod)) return INVALID_HANDLE;
	const cuemu_kernel* k = cuemu::kernel(name);
	if (!k) return refuse(NOT_FOUND, "cuModuleGetFunction: no kernel %s", name);
	*f = (void*)k;
	return SUCCESS;
}

CUEMU_API int cuFuncSetAttribute(void* f, int attr, int v) {
	NEED();
	int ki = kernelIndex(f);
	if (ki < 0) return INVALID_HANDLE;
	if (attr == 8) { // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
		if (v < 0 || v > sharedOptin)
			return refuse(INVALID_VALUE, "cuFuncSetAttribute %s: %d bytes of dynamic shared memory, at most %d", cuemu_kernels[ki].name,
			              v, sharedOptin);
		maxShared[ki] = v;
	}
	return SUCCESS;
}

CUEMU_API int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                             void* hs, void** params, void** extra) {
	NEED();
	unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	return launch("cuLaunchKernel", f, grid, block, shared, hs, params, extra);
}

CUEMU_API int cuLaunchKernelEx(const LaunchConfig* cfg, void* f, void** params, void** extra) {
	NEED();
	if (!cfg || (cfg->nattrs && !cfg->attrs)) return INVALID_VALUE;
	unsigned csize = 1;
	for (unsigned i = 0; i < cfg->nattrs; i++) {
		const LaunchAttr& a = cfg->attrs[i];
		if (a.id == 4) {
			// CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: x, y, z; the emulator
			// runs clusters along x.
			unsigned d[3];
			memcpy(d, a.value, sizeof d);
			if (d[1] != 1 || d[2] != 1 || d[0] == 0)
				return refuse(NOT_SUPPORTED, "cuLaunchKernelEx: clusters of %ux%ux%u blocks, the emulator's are along x", d[0], d[1], d[2]);
			csize = d[0];
		} else if (a.id != 6) {
			// 6, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: the
			// emulator's kernels run one after another anyway.
			return refuse(INVALID_VALUE, "cuLaunchKernelEx: launch attribute %u unknown here", a.id);
		}
	}
	return launch("cuLaunchKernelEx", f, cfg->grid, cfg->block, cfg->shared, cfg->stream, params, extra, csize);
}

// cuTensorMapEncodeTiled writes the emulator's description of a 2D tiled
// tensor map (cuemu::TensorMap) into the map's 128 bytes, after CUDA's
// checks of what the kernels pass (cuda.h's CUtensorMap* enums: fp16 is 6,
// the 128-byte swizzle 3); the emulator models 2D maps of 16-bit elements
// without interleave, element strides of 1 and zeros past the matrix.
CUEMU_API int cuTensorMapEncodeTiled(void* tmap, int dtype, unsigned rank, void* addr, const u64* dims, const u64* strides,
	const unsigned* box, const unsigned* estrides, int interleave, int swizzle, int l2promo, int oobfill) {
	NEED();
	if (!tmap || (uintptr_t)tmap % 64) return refuse(INVALID_VALUE, "cuTensorMapEncodeTiled: the map is not 64-byte aligned");
	if (rank != 2) return refuse(NOT_SUPPORTED, "cuTensorMapEncodeTiled: rank %u, the emulator's maps are 2D", rank);
	if (dtype != 6 && dtype != 8) return refuse(NOT_SUPPORTED, "cuTensorMapEncodeTiled: data type %d, the emulator's are fp16 (6) and bf16 (8)", dtype);
	if (!addr || (uintptr_t)addr % 16) return refuse(INVALID_VALUE, "cuTensorMapEncodeTiled: global address not 16-byte aligned");
	if (strides[0] % 16 || strides[0] < dims[0] * 2) return refuse(INVALID_VALUE, "cuTensorMapEncodeTiled: row stride %llu", (unsigned long long)strides[0]);
	for (int i = 0; i < 2; i++) {
		if (dims[i] == 0 || dims[i] > (1ull << 32)) return refuse(INVALID_VALUE, "cuTensorMapEncodeTiled: dimension %d of %llu", i, (unsigned long long)dims[i]);
		if (box[i] == 0 || box[i] > 256) return refuse(INVALID_VALUE, "cuTensorMapEncodeTiled: box dimension %d of %u", i, box[i]);
		if (estrides[i] != 1) return refuse(NOT_SUPPORTED, "cuTensorMapEncodeTiled: element strides other than 1");
	}
	if ((box[0] * 2) % 16) return refuse(INVALID_VALUE, "cuTensorMapEncodeTiled: a box row of %u bytes, not a multiple of 16", box[0] * 2);
	if (interleave != 0 || oobfill != 0) return refuse(NOT_SUPPORTED, "cuTensorMapEncodeTiled: interleave or NaN fill");
	if (swizzle != 0 && swizzle != 3) return refuse(NOT_SUPPORTED, "cuTensorMapEncodeTiled: swizzle %d, the emulator's are none and 128 bytes", swizzle);
	if (swizzle == 3 && box[0] * 2 > 128) return refuse(INVALID_VALUE, "cuTensorMapEncodeTiled: a box row of %u bytes under the 128-byte swizzle", box[0] * 2);
	if (l2promo < 0 || l2promo > 3) return INVALID_VALUE;
	cuemu::TensorMap t{cuemu::tensorMapMagic, (const unsigned char*)addr, {dims[0], dims[1]}, strides[0], {box[0], box[1]}, 2, (u32)swizzle};
	memset(tmap, 0, 128);
	memcpy(tmap, &t, sizeof t);
	return SUCCESS;
}

CUEMU_API int cuStreamCreate(void** hs, unsigned flags) {
	NEED();
	if (flags > 1) return INVALID_VALUE;
	Stream* s = new Stream{};
	streams.insert(s);
	*hs = s;
	return SUCCESS;
}

CUEMU_API int cuStreamDestroy_v2(void* hs) {
	NEED();
	Stream* s = (Stream*)hs;
	if (!streams.count(s)) return INVALID_HANDLE;
	if (s->capture) return refuse(CAPTURE_UNSUPPORTED, "cuStreamDestroy: the stream is capturing");
	streams.erase(s);
	delete s;
	return SUCCESS;
}

CUEMU_API int cuStreamSynchronize(void* hs) {
	NEED();
	Stream* s = stream(hs);
	if (!s) return INVALID_HANDLE;
	if (s->capture) {
		s->invalid = true;
		return refuse(CAPTURE_UNSUPPORTED, "cuStreamSynchronize on a capturing stream");
	}
	return unsafe("cuStreamSynchronize");
}

CUEMU_API int cuStreamBeginCapture_v2(void* hs, int mode) {
	NEED();
	Stream* s = stream(hs);
	if (!s) return INVALID_HANDLE;
	if (s == &legacy) return refuse(CAPTURE_UNSUPPORTED, "cuStreamBeginCapture on the NULL stream");
	if (s->capture) return refuse(ILLEGAL_STATE, "cuStreamBeginCapture: the stream is capturing already");
	if (mode < 0 || mode > 2) return INVALID_VALUE;
	s->capture = new Graph{};
	s->invalid = false;
	s->mode = mode;
	s->by = std::this_thread::get_id();
	if (mode == 0) globalCaptures++;
	if (mode != 2) thisThread++;
	return SUCCESS;
}

CUEMU_API int cuStreamEndCapture(void* hs, void** graph) {
	NEED();
	Stream* s = stream(hs);
	if (!s) return INVALID_HANDLE;
	*graph = nullptr;
	if (!s->capture) return refuse(CAPTURE_UNMATCHED, "cuStreamEndCapture: the stream is not capturing");
	if (s->mode != 2 && s->by != std::this_thread::get_id())
		return refuse(CAPTURE_WRONG_THREAD, "cuStreamEndCapture on another thread than the one that began it");
	if (s->mode == 0) globalCaptures--;
	if (s->mode != 2) thisThread--;
	Graph* g = s->capture;
	s->capture = nullptr;
	if (s->invalid) {
		delete g;
		return CAPTURE_INVALIDATED;
	}
	graphs.insert(g);
	*graph = g;
	return SUCCESS;
}

CUEMU_API int cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
	NEED();
	if (!graphs.count((Graph*)graph)) return INVALID_HANDLE;
	Graph* e = new Graph{((Graph*)graph)->ops};
	execs.insert(e);
	*exec = e;
	return SUCCESS;
}

CUEMU_API int cuGraphLaunch(void* exec, void* hs) {
	NEED();
	Graph* e = (Graph*)exec;
	if (!execs.count(e)) return INVALID_HANDLE;
	Stream* s = stream(hs);
	if (!s) return INVALID_HANDLE;
	return issue(s, [ops = e->ops] {
		for (const auto& op : ops) op();
	});
}

CUEMU_API int cuGraphExecDestroy(void* exec) {
	NEED();
	if (!execs.erase((Graph*)exec)) return INVALID_HANDLE;
	delete (Graph*)exec;
	return SUCCESS;
}

CUEMU_API int cuGraphDestroy(void* graph) {
	NEED();
	if (!graphs.erase((Graph*)graph)) return INVALID_HANDLE;
	delete (Graph*)graph;
	return SUCCESS;
}

CUEMU_API int cuEventCreate(void** ev, unsigned flags) {
	NEED();
	Event* e = new Event{(flags & 2) == 0}; // CU_EVENT_DISABLE_TIMING
	events.insert(e);
	*ev = e;
	return SUCCESS;
}

CUEMU_API int cuEventRecord(void* ev, void* hs) {
	NEED();
	Event* e = (Event*)ev;
	Stream* s = stream(hs);
	if (!events.count(e) || !s) return INVALID_HANDLE;
	e->captured = s->capture != nullptr;
	return issue(s, [e] {
		// A graph may outlive an event recorded into it.
		if (!events.count(e)) return;
		e->recorded = true;
		e->captured = false;
		e->at = std::chrono::steady_clock::now();
	});
}

CUEMU_API int cuEventQuery(void* ev) {
	NEED();
	Event* e = (Event*)ev;
	if (!events.count(e)) return INVALID_HANDLE;
	if (e->captured) return CAPTURED_EVENT;
	return SUCCESS;
}

CUEMU_API int cuEventSynchronize(void* ev) {
	NEED();
	Event* e = (Event*)ev;
	if (!events.count(e)) return INVALID_HANDLE;
	if (e->captured) return CAPTURED_EVENT;
	return SUCCESS;
}

CUEMU_API int cuEventElapsedTime_v2(float* ms, void* start, void* end) {
	NEED();
	Event *a = (Event*)start, *b = (Event*)end;
	if (!events.count(a) || !events.count(b) || !a->timing || !b->timing || !a->recorded || !b->recorded) return INVALID_HANDLE;
	*ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
	return SUCCESS;
}

CUEMU_API int cuEventElapsedTime(float* ms, void* start, void* end) { return cuEventElapsedTime_v2(ms, start, end); }

CUEMU_API int cuEventDestroy_v2(void* ev) {
	NEED();
	if (!events.erase((Event*)ev)) return INVALID_HANDLE;
	delete (Event*)ev;
	return SUCCESS;
}

// NVRTC (nvrtcResult: 0 success, 3 invalid input, 4 invalid program, 5
// invalid option, 6 compilation).

CUEMU_API int nvrtcVersion(int* major, int* minor) {
	*major = 13;
	*minor = 0;
	return 0;
}

CUEMU_API int nvrtcCreateProgram(Program** prog, const char* src, const char* name, int nheaders, const char* const* headers,
                                 const char* const* names) {
	std::lock_guard<std::mutex> lock(mu);
	if (!prog || !src || nheaders < 0 || (nheaders > 0 && (!headers || !names))) return 3;
	Program* p = new Program{src};
	programs.insert(p);
	*prog = p;
	return 0;
}

CUEMU_API int nvrtcCompileProgram(Program* p, int nopts, const char* const* opts) {
	std::lock_guard<std::mutex> lock(mu);
	if (!programs.count(p)) return 4;
	bool arch = false;
	for (int i = 0; i < nopts; i++)
		if (strncmp(opts[i], "--gpu-architecture=sm_", 22) == 0 || strncmp(opts[i], "-arch=sm_", 9) == 0) arch = true;
	if (!arch) {
		p->log = "cuemu: no --gpu-architecture=sm_XX option (the backend compiles to a cubin)";
		return 5;
	}
	if (fnv1a(p->src.c_str()) != CUEMU_SOURCE_HASH) {
		p->log = "cuemu: this library runs another kernels.cu than the program's; build it again";
		return 6;
	}
	// The tunables (-DNAME=VALUE, the part aside) must be the ones the
	// library's kernels were built with: it runs those, whatever the
	// program asks for.
	std::string want;
	for (int i = 0; i < nopts; i++)
		if (strncmp(opts[i], "-D", 2) == 0 && strncmp(opts[i], "-DLAYA_PART=", 12) != 0) want += (want.empty() ? "" : " ") + std::string(opts[i]);
	if (want != CUEMU_DEFINES) {
		p->log = "cuemu: this library's kernels were built with [" + std::string(CUEMU_DEFINES) + "], the program asks for [" + want +
			"]; build one with those (emuLibTuned)";
		return 6;
	}
	p->compiled = true;
	return 0;
}

CUEMU_API int nvrtcGetProgramLogSize(Program* p, size_t* n) {
	std::lock_guard<std::mutex> lock(mu);
	if (!programs.count(p)) return 4;
	*n = p->log.size() + 1;
	return 0;
}

CUEMU_API int nvrtcGetProgramLog(Program* p, char* log) {
	std::lock_guard<std::mutex> lock(mu);
	if (!programs.count(p)) return 4;
	memcpy(log, p->log.c_str(), p->log.size() + 1);
	return 0;
}

CUEMU_API int nvrtcGetCUBINSize(Program* p, size_t* n) {
	std::lock_guard<std::mutex> lock(mu);
	if (!programs.count(p) || !p->compiled) return 4;
	*n = cubinBytes;
	return 0;
}

CUEMU_API int nvrtcGetCUBIN(Program* p, char* out) {
	std::lock_guard<std::mutex> lock(mu);
	if (!programs.count(p) || !p->compiled) return 4;
	u64 hash = CUEMU_SOURCE_HASH;
	memcpy(out, cubinMagic, 8);
	memcpy(out + 8, &hash, 8);
	return 0;
}

CUEMU_API int nvrtcDestroyProgram(Program** p) {
	std::lock_guard<std::mutex> lock(mu);
	if (!p || !programs.erase(*p)) return 4;
	delete *p;
	*p = nullptr;
	return 0;
}

// cuBLAS. Pointer mode host: alpha and beta are read when the GEMM is
// issued (and kept by a capture).

CUEMU_API int cublasCreate_v2(void** h) {
	std::lock_guard<std::mutex> lock(mu);
	if (!initialized || !current) return BLAS_NOT_INITIALIZED;
	Blas* b = new Blas{};
	handles.insert(b);
	*h = b;
	return BLAS_SUCCESS;
}

CUEMU_API int cublasDestroy_v2(void* h) {
	std::lock_guard<std::mutex> lock(mu);
	if (!handles.erase((Blas*)h)) return BLAS_NOT_INITIALIZED;
	delete (Blas*)h;
	return BLAS_SUCCESS;
}

CUEMU_API int cublasSetStream_v2(void* h, void* hs) {
	std::lock_guard<std::mutex> lock(mu);
	if (!handles.count((Blas*)h)) return BLAS_NOT_INITIALIZED;
	Stream* s = stream(hs);
	if (!s) return BLAS_INVALID_VALUE;
	((Blas*)h)->stream = s;
	return BLAS_SUCCESS;
}

CUEMU_API int cublasSetWorkspace_v2(void* h, void* ws, size_t n) {
	std::lock_guard<std::mutex> lock(mu);
	if (!handles.count((Blas*)h)) return BLAS_NOT_INITIALIZED;
	if (n > 0 && !inDevice((uintptr_t)ws, n)) return refuse(BLAS_INVALID_VALUE, "cublasSetWorkspace: %zu bytes at %p leave device memory", n, ws);
	((Blas*)h)->workspace = ws;
	((Blas*)h)->workspaceBytes = n;
	return BLAS_SUCCESS;
}

CUEMU_API int cublasSetMathMode(void* h, int mode) {
	std::lock_guard<std::mutex> lock(mu);
	if (!handles.count((Blas*)h)) return BLAS_NOT_INITIALIZED;
	((Blas*)h)->math = mode;
	return BLAS_SUCCESS;
}

CUEMU_API int cublasSgemm_v2(void* h, int ta, int tb, int m, int n, int k, const float* alpha, const float* A, int lda, const float* B,
                             int ldb, const float* beta, float* C, int ldc) {
	return gemm("cublasSgemm", h, ta, tb, m, n, k, alpha, A, R32F, lda, 0, B, R32F, ldb, 0, beta, C, R32F, ldc, 0, 1, compute32F);
}

CUEMU_API int cublasGemmEx(void* h, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at, int lda, const void* B,
                           int bt, int ldb, const void* beta, void* C, int ct, int ldc, int compute, int algo) {
	return gemm("cublasGemmEx", h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, compute);
}

CUEMU_API int cublasGemmStridedBatchedEx(void* h, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at, int lda,
                                         long long sa, const void* B, int bt, int ldb, long long sb, const void* beta, void* C, int ct,
                                         int ldc, long long sc, int batch, int compute, int algo) {
	return gemm("cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch,
	            compute);
}

#include "fakecublaslt.cpp"
