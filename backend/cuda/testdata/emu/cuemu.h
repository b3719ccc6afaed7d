// cuemu.h: what kernels.cu needs of CUDA, for running its kernels on the
// CPU in the tests (emu_internal_test.go) where there is no GPU. kernels.cu
// is compiled as C++ after it, with LAYA_CUDA_EMU defined, which replaces its
// PTX primitives (inline assembly) with the functions below. Every GPU
// thread of a block is a fiber, a stack of its own (cuemu_run.h), and the
// block's fibers take turns on one OS thread, each running until it waits
// at a barrier; blocks run one after another (a cluster's blocks
// together: Cluster). (An OS thread per GPU
// thread spent its time creating threads and waking them at barriers: the
// backend's forward pass of one 54-token row took minutes, where fibers
// take a fifth of a second.) Threads meet only at the barriers, as on the
// GPU, so a kernel that reads what another thread writes without a barrier
// between them reads the value before the write whenever the reader runs
// first: the fibers take their turns in a shuffled order, block by block.
//
// The warp-wide instructions (shuffles, mma.sync, ldmatrix) exchange their
// operands through a per-warp area between two barriers, and compute from
// the PTX ISA's definitions of the fragments (mma m16n8k16 .row.col with
// fp16 operands, ldmatrix .x4 .trans); nothing of it comes from the
// kernels, so a kernel that misreads a fragment computes a wrong product
// here as on the GPU. The warpgroup products (wgmma) read their operands
// from shared memory, so each thread computes its own accumulators from
// there, when the product is waited for (wgmma_f16 below). The tests check the emulator's fragments on a kernel
// verified on a GPU (attention_mma) before they trust it with new ones.
//
// Shared memory, dynamic and static, is filled with 0xff bytes (NaN as
// float and as fp16) before each block, so that a read of shared memory the
// block never wrote shows in its results; a cp.async copy lands only when
// its thread waits for it (cp_async_wait_all, or cp_async_wait_group for
// its group), and a bulk tensor copy (the TMA's) when a thread's wait on
// its mbarrier finds the phase complete, their destinations poisoned
// until then; blocks run in a
// shuffled order (CUEMU_SEED), so that which
// block of a grid comes last varies; and what the GPU leaves undefined or
// faults on is refused with a message: a warp-wide instruction in a warp
// some of whose lanes have returned, a cp.async or ldmatrix address that is
// not 16-byte aligned, a thread returning with copies in flight.
#pragma once

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <type_traits>
#include <vector>

#define LAYA_CUDA_EMU 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
// Function-local __shared__ variables are statics (the block's threads
// share them, and blocks run one at a time): emu_internal_test.go rewrites
// each declaration into one that registers it (cuemu::shared_static) to be
// poisoned before each block, and "extern __shared__" ones into reads of
// cuemu::dyn_smem.

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct cuemu_dim3 {
	unsigned x, y, z;
};
struct alignas(16) float4 {
	float x, y, z, w;
};
struct alignas(8) float2 {
	float x, y;
};
struct alignas(16) uint4 {
	unsigned x, y, z, w;
};
struct alignas(8) uint2 {
	unsigned x, y;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }

// Plain globals: the fibers of a block share their OS thread, and the
// scheduler sets threadIdx before it runs one.
extern cuemu_dim3 threadIdx, blockIdx;
extern cuemu_dim3 blockDim, gridDim;

template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) {
	return a < b ? a : b;
}
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) {
	return a < b ? b : a;
}

inline float __int_as_float(int v) {
	float f;
	memcpy(&f, &v, 4);
	return f;
}
inline float __uint_as_float(unsigned v) {
	float f;
	memcpy(&f, &v, 4);
	return f;
}
inline unsigned __float_as_uint(float f) {
	unsigned v;
	memcpy(&v, &f, 4);
	return v;
}
inline int __float_as_int(float f) {
	int v;
	memcpy(&v, &f, 4);
	return v;
}

namespace cuemu {

// yield lets the block's other threads run (cuemu_run.h); progress counts
// arrivals at barriers and returns, so that the scheduler tells a
// deadlock (a round of turns without any) from threads that wait.
void yield();
extern u64 progress;

// Barrier is std::barrier's arrive_and_wait and arrive_and_drop among a
// block's fibers: a thread that waits yields until the phase moves on.
struct Barrier {
	int expected, arrived = 0;
	unsigned phase = 0;
	explicit Barrier(int n) : expected(n) {}
	void complete() {
		if (arrived == expected) {
			arrived = 0;
			phase++;
		}
	}
	void arrive_and_wait() {
		unsigned ph = phase;
		arrived++;
		progress++;
		complete();
		while (phase == ph) yield();
	}
	// arrive_and_drop arrives for the current phase and leaves the later
	// ones to the others.
	void arrive_and_drop() {
		expected--;
		progress++;
		complete();
	}
};

// Block is what a block's threads share: its barriers and each warp's
// exchange area.
struct Warp {
	Barrier* bar;
	int exited = 0;
	u64 v[32];
	u32 a[32][4], b[32][2];
	const void* p[32];
};
struct Block {
	Barrier* bar;
	Warp* warps;
};
extern Block* block;
extern unsigned char* dyn_smem;

// Cluster is the running block's thread block cluster (sm_90): its blocks
// run together, their fibers taking turns as one set (cuemu_run.h), each
// block with dynamic shared memory of its own (smem[rank], bytes long),
// which the others read through cluster_map's addresses until its threads
// have all returned (then it is poisoned), and all of its threads meet at
// bar (cluster_sync). A launch without clusters runs clusters of one
// block. Kernels launched in clusters of more keep their shared memory
// dynamic: a static __shared__ variable is a global of the emulator, one
// for all the blocks that run together.
struct Cluster {
	unsigned size, rank;
	Barrier* bar;
	unsigned char* const* smem;
	size_t bytes;
};
extern Cluster cluster;

[[noreturn]] inline void fail(const char* what) {
	fprintf(stderr, "cuemu: block (%u,%u,%u) thread %u: %s\n", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, what);
	fflush(stderr);
	// _exit: loaded into a Go test process (fakecuda.cpp), no C++
	// destructors may run under the Go threads still going.
	_exit(3);
}

inline unsigned lane() { return threadIdx.x & 31; }
inline Warp& warp() { return block->warps[threadIdx.x >> 5]; }
inline void warp_sync() { warp().bar->arrive_and_wait(); }

// collective is the first barrier of a warp-wide instruction: every lane
// that has not returned has arrived, and none may have.
inline void collective(Warp& w, const char* what) {
	w.bar->arrive_and_wait();
	if (w.exited != 0) fail(what);
}

// The registered static __shared__ variables.
struct Static {
	void* p;
	size_t n;
	bool operator<(const Static& o) const { return p < o.p; }
};
extern std::mutex statics_mu;
extern std::set<Static> statics;

// shared_static registers a static __shared__ variable, poisoning it the
// first time (the runner poisons it before every later block).
inline void shared_static(void* p, size_t n) {
	std::lock_guard<std::mutex> g(statics_mu);
	if (statics.insert(Static{p, n}).second) memset(p, 0xff, n);
}

// The running thread's cp.async copies in flight (s null: a commit, the
// end of a group).
struct Copy {
	void* s;
	const void* g;
};
extern std::vector<Copy>* copies;

// TensorMap is what fakecuda.cpp's cuTensorMapEncodeTiled writes into a
// CUtensorMap's 128 bytes and tma_load_2d reads: a 2D matrix of elem-byte
// elements (dim[0] along its rows, contiguous; dim[1] rows, stride bytes
// apart) at base, the box a copy takes (box[0] elements of box[1] rows),
// and the swizzle (0 none, 3 the 128-byte one).
constexpr u64 tensorMapMagic = 0x50414d524f534e45ull; // "ENSORMAP"
struct TensorMap {
	u64 magic;
	const unsigned char* base;
	u64 dim[2], stride;
	u32 box[2], elem, swizzle;
};
static_assert(sizeof(TensorMap) <= 128, "a tensor map fits a CUtensorMap");

// An mbarrier (sm_90) the running cluster's threads initialised, by its
// address: its count of arrivals a phase, those arrived, the phase (its
// parity is what mbar_try_wait asks about), the bytes announced
// (mbar_expect_tx) and those of the copies issued against it, and those
// copies, which land when a thread waits for the phase and finds it
// complete: until then their destinations stay poisoned, so that a read
// before the wait reads NaN here as it may read stale data on a GPU.
struct Bulk {
	unsigned char* dst;
	TensorMap tm;
	int c0, c1;
};
struct MBar {
	unsigned count, arrived = 0;
	u64 phase = 0, expect = 0, issued = 0;
	std::vector<Bulk> copies;
};
extern std::map<const unsigned char*, MBar>* mbars;

// The running thread's warpgroup products (wgmma) in flight: the
// accumulators, N, the operands' descriptors and the group (a commit
// closes one).
struct WG {
	float* d;
	int n;
	u64 da, db;
	int group;
};
struct WGState {
	std::vector<WG> pending;
	int committed = 0;
};
extern WGState* wgs;

// f2h rounds f to fp16, nearest even (cvt.rn.f16.f32), f32 to bf16 likewise.
inline u16 f2h(float f) {
	u32 x = __float_as_uint(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u) return (u16)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
	if (ax >= 0x477ff000u) return (u16)(sign | 0x7c00); // 65520 and up round to infinity
	if (ax < 0x38800000u) {                            // below fp16's smallest normal: units of 2^-24
		float q = __uint_as_float(ax) * 16777216.0f;
		return (u16)(sign | (u32)nearbyintf(q));
	}
	u32 mant = ax & 0x7fffff, h = ((((ax >> 23) - 127 + 15)) << 10) | (mant >> 13), rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
	return (u16)(sign | h);
}
inline float h2f(u16 h) {
	u32 e = (h >> 10) & 0x1f, m = h & 0x3ff, sign = (u32)(h & 0x8000) << 16;
	if (e == 0) {
		float v = (float)m * 5.9604644775390625e-8f;
		return sign ? -v : v;
	}
	if (e == 31) return sign ? (m ? -NAN : -INFINITY) : (m ? NAN : INFINITY);
	return __uint_as_float(sign | (e + 112) << 23 | m << 13); // rebiased exponent, the mantissa widened
}
inline u16 f2bf(float f) {
	u32 b = __float_as_uint(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (u16)((b >> 16) | 0x40);
	b += 0x7fff + ((b >> 16) & 1);
	return (u16)(b >> 16);
}

} // namespace cuemu

inline void __syncthreads() { cuemu::block->bar->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { cuemu::warp_sync(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }

template <class T>
inline T __shfl_xor_sync(unsigned, T v, int o) {
	static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
	cuemu::Warp& w = cuemu::warp();
	unsigned l = cuemu::lane();
	memcpy(&w.v[l], &v, sizeof v);
	cuemu::collective(w, "shuffle in a warp with returned lanes");
	T r;
	memcpy(&r, &w.v[l ^ (unsigned)o], sizeof r);
	w.bar->arrive_and_wait();
	return r;
}

// The PTX primitives of kernels.cu.

inline u16 to16(float v, int kind) { return kind == 2 ? cuemu::f2bf(v) : cuemu::f2h(v); }
inline float f16to32(u16 h) { return cuemu::h2f(h); }
// rcp.approx.ftz and ex2.approx.ftz, here correctly rounded: the GPU's
// are within an ulp or two of these, which the tests' bounds allow for.
inline float cuemu_ftz(float x) { return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x; }
inline float rcp_approx(float x) { return cuemu_ftz(1.0f / cuemu_ftz(x)); }
inline float ex2_approx(float x) { return cuemu_ftz(exp2f(x)); }
inline u32 pack2(float x, float y) { return (u32)cuemu::f2h(x) | (u32)cuemu::f2h(y) << 16; }
inline void unpack2(u32 q, float& lo, float& hi) {
	lo = cuemu::h2f((u16)(q & 0xffff));
	hi = cuemu::h2f((u16)(q >> 16));
}

// mma16816: D = A·B + C for A 16×16 (row), B 16×8 (col), fp16, C and D
// float32. Lane l = 4g + t holds A's (g, 2t..2t+1) in a[0], (g+8, 2t..) in
// a[1], (g, 2t+8..) in a[2], (g+8, 2t+8..) in a[3]; B's (2t..2t+1, g) in b0
// and (2t+8.., g) in b1; C's (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)
// (the lower column of a pair in the lower half of a register).
inline void mma16816(float* c, const u32* a, u32 b0, u32 b1) {
	cuemu::Warp& w = cuemu::warp();
	unsigned l = cuemu::lane();
	for (int i = 0; i < 4; i++) w.a[l][i] = a[i];
	w.b[l][0] = b0;
	w.b[l][1] = b1;
	cuemu::collective(w, "mma.sync in a warp with returned lanes");
	// The lane's rows of A, g and g+8 (A[h]: row g+8h), from the lanes
	// 4g..4g+3 holding them, and its columns of B, 2t and 2t+1 (B[j]:
	// column 2t+j), from lanes 4(2t+j)..: the rest of the operands it
	// does not read.
	int g = l >> 2, t = l & 3;
	float A[2][16], B[2][16];
	for (int h = 0; h < 2; h++)
		for (int tl = 0; tl < 4; tl++)
			for (int q = 0; q < 2; q++) unpack2(w.a[4 * g + tl][h + 2 * q], A[h][2 * tl + 8 * q], A[h][2 * tl + 8 * q + 1]);
	for (int j = 0; j < 2; j++)
		for (int tl = 0; tl < 4; tl++)
			for (int i = 0; i < 2; i++) unpack2(w.b[4 * (2 * t + j) + tl][i], B[j][2 * tl + 8 * i], B[j][2 * tl + 8 * i + 1]);
	w.bar->arrive_and_wait();
	for (int i = 0; i < 4; i++) {
		float s = c[i];
		for (int k = 0; k < 16; k++) s = fmaf(A[i >> 1][k], B[i & 1][k], s);
		c[i] = s;
	}
}

// ldsm: ldmatrix .x4, lanes 8j..8j+7 addressing the rows of matrix j. r[j]
// of lane l holds elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of it, or
// with trans (2(l%4), l/4) and (2(l%4)+1, l/4).
inline void ldsm(u32* r, const u16* p, bool trans) {
	cuemu::Warp& w = cuemu::warp();
	unsigned l = cuemu::lane();
	if ((uintptr_t)p % 16) cuemu::fail("ldmatrix row address not 16-byte aligned");
	w.p[l] = p;
	cuemu::collective(w, "ldmatrix in a warp with returned lanes");
	for (int j = 0; j < 4; j++) {
		u16 lo, hi;
		if (trans) {
			lo = ((const u16*)w.p[8 * j + 2 * (l & 3)])[l >> 2];
			hi = ((const u16*)w.p[8 * j + 2 * (l & 3) + 1])[l >> 2];
		} else {
			const u16* row = (const u16*)w.p[8 * j + (l >> 2)];
			lo = row[2 * (l & 3)];
			hi = row[2 * (l & 3) + 1];
		}
		r[j] = (u32)lo | (u32)hi << 16;
	}
	w.bar->arrive_and_wait();
}
inline void ldsm4t(u32* r, const u16* p) { ldsm(r, p, true); }
inline void ldsm4(u32* r, const u16* p) { ldsm(r, p, false); }

// smem_addr, ldsm4a and cp_async16a: a 32-bit shared address is an offset
// into the block's dynamic shared memory (the only kind kernels.cu
// addresses so).
inline u32 smem_addr(const void* p) {
	const unsigned char* b = (const unsigned char*)p;
	if (b < cuemu::dyn_smem) cuemu::fail("a shared address below dynamic shared memory");
	return (u32)(b - cuemu::dyn_smem);
}
inline void ldsm4a(u32* r, u32 a) { ldsm4(r, (const u16*)(cuemu::dyn_smem + a)); }

inline void cp_async16(void* s, const void* g) {
	if ((uintptr_t)s % 16 || (uintptr_t)g % 16) cuemu::fail("cp.async address not 16-byte aligned");
	memset(s, 0xff, 16);
	cuemu::copies->push_back(cuemu::Copy{s, g});
}
inline void cp_async16a(u32 s, const void* g) { cp_async16(cuemu::dyn_smem + s, g); }
inline void cp_async_wait_all() {
	for (const auto& c : *cuemu::copies)
		if (c.s) memcpy(c.s, c.g, 16);
	cuemu::copies->clear();
}
// A commit is a copy of nothing that ends its group; cp_async_wait_group(n)
// lands the copies of every group but the n most recent (at most 7, as
// kernels.cu's switch waits), leaving theirs and those not yet committed
// poisoned.
inline void cp_async_commit() { cuemu::copies->push_back(cuemu::Copy{nullptr, nullptr}); }
inline void cp_async_wait_group(int n) {
	if (n > 7) n = 7;
	auto& v = *cuemu::copies;
	int seen = 0;
	for (size_t i = v.size(); i-- > 0;) {
		if (v[i].s) continue;
		if (seen++ < n) continue;
		for (size_t j = 0; j <= i; j++)
			if (v[j].s) memcpy(v[j].s, v[j].g, 16);
		v.erase(v.begin(), v.begin() + i + 1);
		return;
	}
}
inline float ldcg(const float* p) { return *(const volatile float*)p; }
inline float4 ldcg4(const float* p) {
	if ((uintptr_t)p % 16) cuemu::fail("ld.global.cg.v4 address not 16-byte aligned");
	const volatile float* q = p;
	return float4{q[0], q[1], q[2], q[3]};
}
// The warpgroup products (wgmma m64nNk16, fp16 operands in shared memory
// through descriptors, float32 accumulators). A product is computed when a
// wg_wait lets it finish, from shared memory as it is then, so that a
// kernel that overwrites an operand before waiting for the product reading
// it computes a wrong product here too. The descriptor (PTX ISA, "Matrix
// Descriptor Format"): bits 0-13 the start address / 16, 16-29 the
// leading byte offset / 16, 32-45 the stride byte offset / 16, 62-63 the
// swizzle (1: 128 bytes, the only one modelled). A K-major operand with
// the 128-byte swizzle holds rows of 64 fp16 values (128 bytes) in groups
// of eight rows, each group stride bytes on; the 16-byte piece at byte b
// of row r lies at piece b/16 XOR (r mod 8), that is, address bits 4-6
// XOR bits 7-9. Thread t = 32w + l of the warpgroup holds, for each
// 8-column slice i of the 64×N product, d[4i..4i+3] = rows 16w + l/4 and
// 16w + l/4 + 8, columns 8i + 2(l%4) and 8i + 2(l%4) + 1 (PTX ISA,
// "Register Fragments and Shared Memory Matrix Layouts", wgmma's D).
inline float wg_operand(u64 desc, int r, int k) {
	if ((desc >> 62) != 1) cuemu::fail("wgmma descriptor: only the 128-byte swizzle is modelled");
	u32 start = (u32)(desc & 0x3fff) << 4, stride = (u32)((desc >> 32) & 0x3fff) << 4;
	u32 a = start + (u32)(r / 8) * stride + (u32)(r % 8) * 128 + 2 * (u32)k;
	a ^= ((a >> 7) & 7) << 4;
	if (a + 2 > cuemu::cluster.bytes) cuemu::fail("wgmma operand past the block's dynamic shared memory");
	u16 h;
	memcpy(&h, cuemu::dyn_smem + a, 2);
	return cuemu::h2f(h);
}
inline void wg_compute(const cuemu::WG& p) {
	unsigned t = threadIdx.x & 127, w = t >> 5, l = t & 31;
	for (int i = 0; i < p.n / 8; i++)
		for (int e = 0; e < 4; e++) {
			int row = 16 * w + l / 4 + 8 * (e >> 1), col = 8 * i + 2 * (l % 4) + (e & 1);
			float s = p.d[4 * i + e];
			for (int k = 0; k < 16; k++) s = fmaf(wg_operand(p.da, row, k), wg_operand(p.db, col, k), s);
			p.d[4 * i + e] = s;
		}
}
template <int N>
inline void wgmma_f16(float* d, u64 da, u64 db) {
	if (blockDim.x % 128) cuemu::fail("wgmma in a block that is not whole warpgroups");
	cuemu::wgs->pending.push_back(cuemu::WG{d, N, da, db, cuemu::wgs->committed});
}
inline void wg_fence() {}
inline void wg_commit() { cuemu::wgs->committed++; }
template <int n>
inline void wg_wait() {
	auto& v = cuemu::wgs->pending;
	size_t kept = 0;
	for (size_t i = 0; i < v.size(); i++) {
		if (v[i].group < cuemu::wgs->committed - n)
			wg_compute(v[i]);
		else
			v[kept++] = v[i];
	}
	v.resize(kept);
}
inline void fence_async_smem() {}
inline void pdl_wait() {}
inline void pdl_launch() {}

// The mbarriers and the TMA's 2D bulk copies (kernels.cu's mbar_* and
// tma_load_2d; the model: cuemu::MBar).
namespace cuemu {
inline MBar& mbar(u32 a, const char* what) {
	if (a % 8 || a + 8 > cluster.bytes) fail("an mbarrier address not 8-byte aligned in dynamic shared memory");
	auto it = mbars->find(dyn_smem + a);
	if (it == mbars->end()) fail(what);
	return it->second;
}
inline void mbar_arrive(MBar& m) {
	if (m.arrived == m.count) fail("an mbarrier arrival past its count in one phase");
	m.arrived++;
	progress++;
}
// swizzle_pitch is how far apart a box's rows lie in shared memory under
// t's swizzle: a row of box[0] elements takes the swizzle's whole 128
// bytes even when it is narrower (what an H200's tma_probe read from boxes
// of 32 fp16 columns fits; rows 64 bytes apart do not), and is box[0]
// elements without one.
inline u32 swizzle_pitch(const TensorMap& t) { return t.swizzle == 3 ? 128 : t.box[0] * t.elem; }
// land copies the box of b's tensor map at (c0, c1) into b.dst: rows of
// box[0] elements swizzle_pitch apart, zeros past the matrix, the 128-byte
// swizzle applied to each 16-byte piece's offset (bits 4-6 XOR bits 7-9).
// What a row narrower than its pitch leaves is not written.
inline void land(const Bulk& b) {
	const TensorMap& t = b.tm;
	u32 row = swizzle_pitch(t);
	for (u32 i = 0; i < t.box[1]; i++)
		for (u32 j = 0; j < t.box[0]; j++) {
			long long y = (long long)b.c1 + i, x = (long long)b.c0 + j;
			u32 o = i * row + j * t.elem;
			if (t.swizzle == 3) o ^= ((o >> 7) & 7) << 4;
			if (y >= 0 && x >= 0 && (u64)y < t.dim[1] && (u64)x < t.dim[0])
				memcpy(b.dst + o, t.base + (u64)y * t.stride + (u64)x * t.elem, t.elem);
			else
				memset(b.dst + o, 0, t.elem);
		}
}
} // namespace cuemu
inline void mbar_init(u32 a, u32 count) {
	if (a % 8 || a + 8 > cuemu::cluster.bytes) cuemu::fail("an mbarrier address not 8-byte aligned in dynamic shared memory");
	if (count == 0) cuemu::fail("an mbarrier of no arrivals");
	(*cuemu::mbars)[cuemu::dyn_smem + a] = cuemu::MBar{count};
}
inline void mbar_fence_init() {}
inline void mbar_inval(u32 a) {
	cuemu::MBar& m = cuemu::mbar(a, "mbarrier.inval on an mbarrier not initialised");
	if (!m.copies.empty() || m.arrived) cuemu::fail("mbarrier.inval with a phase under way");
	cuemu::mbars->erase(cuemu::dyn_smem + a);
}
inline void mbar_expect_tx(u32 a, u32 bytes) {
	cuemu::MBar& m = cuemu::mbar(a, "mbarrier.arrive.expect_tx on an mbarrier not initialised");
	m.expect += bytes;
	cuemu::mbar_arrive(m);
}
inline bool mbar_try_wait(u32 a, u32 parity) {
	cuemu::MBar& m = cuemu::mbar(a, "mbarrier.try_wait on an mbarrier not initialised");
	if ((m.phase & 1) != (parity & 1)) return true;
	if (m.arrived == m.count && m.issued > m.expect) cuemu::fail("bulk copies of more bytes than their mbarrier was told to expect");
	if (m.arrived == m.count && m.issued == m.expect) {
		for (const auto& b : m.copies) cuemu::land(b);
		m.copies.clear();
		m.arrived = 0;
		m.expect = m.issued = 0;
		m.phase++;
		cuemu::progress++;
		return true;
	}
	cuemu::yield();
	return false;
}
inline void tma_load_2d(u32 dst, const void* tmap, u32 a, int c0, int c1) {
	cuemu::MBar& m = cuemu::mbar(a, "a bulk copy against an mbarrier not initialised");
	cuemu::TensorMap t;
	memcpy(&t, tmap, sizeof t);
	if (t.magic != cuemu::tensorMapMagic) cuemu::fail("cp.async.bulk.tensor with a tensor map cuTensorMapEncodeTiled did not write");
	// The mbarrier counts the box's bytes; in shared memory each row takes
	// its pitch (the swizzle's span: a narrower row's pieces move anywhere
	// in it).
	u64 bytes = (u64)t.box[0] * t.box[1] * t.elem, span = (u64)cuemu::swizzle_pitch(t) * t.box[1];
	if (dst % (t.swizzle == 3 ? 1024 : 128)) cuemu::fail("cp.async.bulk.tensor to a shared address not aligned for its swizzle");
	if (dst + span > cuemu::cluster.bytes) cuemu::fail("cp.async.bulk.tensor past the block's dynamic shared memory");
	memset(cuemu::dyn_smem + dst, 0xff, span);
	m.copies.push_back(cuemu::Bulk{cuemu::dyn_smem + dst, t, c0, c1});
	m.issued += bytes;
}

// l2_prefetch changes nothing but must name memory the kernel could read:
// the first byte of each of this thread's lines is read, so that a range
// past an allocation fails as a load would.
inline void l2_prefetch(const char* p, long long bytes, long long part, long long parts) {
	if ((uintptr_t)p % 16 || bytes % 16) cuemu::fail("l2_prefetch: address or size not a multiple of 16");
	for (long long o = part * 128; o < bytes; o += parts * 128) (void)*(const volatile char*)(p + o);
}

// The cluster primitives: a cluster shared address (cluster_map's) has bit
// 31 set, the block's rank in bits 24–30 and the offset into its dynamic
// shared memory below.
inline uint2 cluster_id() { return uint2{cuemu::cluster.rank, cuemu::cluster.size}; }
inline void cluster_sync() { cuemu::cluster.bar->arrive_and_wait(); }
inline u32 cluster_map(u32 a, u32 rank) {
	if (rank >= cuemu::cluster.size) cuemu::fail("mapa to a rank outside the cluster");
	if (a >= cuemu::cluster.bytes) cuemu::fail("mapa of an address outside the block's dynamic shared memory");
	return 1u << 31 | rank << 24 | a;
}
inline float4 ld_cluster4(u32 a) {
	if (!(a >> 31)) cuemu::fail("ld.shared::cluster of an address that mapa did not make");
	unsigned rank = (a >> 24) & 0x7f;
	u32 off = a & 0xffffff;
	if (off % 16) cuemu::fail("ld.shared::cluster.v4 address not 16-byte aligned");
	if (off + 16 > cuemu::cluster.bytes) cuemu::fail("ld.shared::cluster past the block's dynamic shared memory");
	float4 v;
	memcpy(&v, cuemu::cluster.smem[rank] + off, 16);
	return v;
}
