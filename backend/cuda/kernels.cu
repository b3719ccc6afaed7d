// The cuda backend's kernels, compiled at run time by NVRTC for the GPU's
// own architecture. Tensors are row-major float32 (fp16/bf16 only as GEMM
// operands, stored as raw 16-bit words so that no NVIDIA header is needed).
// Per-row metadata (positions, batch-row starts and lengths) comes from
// device arrays rather than launch parameters, so that one captured CUDA
// graph serves every request of the same shapes.

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// ---- Parts ----
// LAYA_PART 1 compiles the core, the kernels every Open loads; 2 the
// extras, which only options (linear_mma, linear_cl, the tensor-core
// attention at 1, 2 or 8 warps, its key-split kernels, the whole-row
// ones) or a GPU short of shared memory for the four-warp attention
// ask for; undefined, both (the CPU emulator, the
// compile checks). The extras are about two thirds of the PTX, and so of a
// first Open's compile (backend.go's kernelTable says which part each
// kernel is in; a test holds it to the source).
#ifndef LAYA_PART
#define LAYA_CORE 1
#define LAYA_EXTRAS 1
#else
#define LAYA_CORE (LAYA_PART == 1)
#define LAYA_EXTRAS (LAYA_PART == 2)
#endif

// ---- Tunables ----
// Compile-time choices a build may set with -DNAME=N (Options.Defines; the
// registered backend's LAYA_CUDA=define=NAME=N), so that a GPU run compares
// variants of a kernel built from this one source, without copies of it.
// options.go's KernelTunables lists them with their ranges (a test holds
// the two lists equal); the defaults are the kernels the backend ships.
//
// ATTN_MMA_MINB: the blocks a multiprocessor must be able to hold of each
// tensor-core attention kernel (__launch_bounds__' second argument), which
// caps a thread's registers at about 65536 / (ATTN_MMA_MINB · 32 · warps)
// (rounded down to a multiple of 8); 1 leaves them to the compiler.
#ifndef ATTN_MMA_MINB
#define ATTN_MMA_MINB 1
#endif
// ATTN_ROWS_MINB: ATTN_MMA_MINB for the whole-row kernels (attn_rows).
#ifndef ATTN_ROWS_MINB
#define ATTN_ROWS_MINB 1
#endif
// ATTN_MMA_UNROLL: the iterations of the tensor-core attention's key and
// value loads a thread unrolls (their loads in flight together, and the
// registers holding them).
#ifndef ATTN_MMA_UNROLL
#define ATTN_MMA_UNROLL 4
#endif
// ATTN_MMA_KC16: the keys a chunk of the tensor-core attention loads (not
// the key-split kernels', 64), in sixteens: 8 takes a row of up to 128 keys
// in one round of loads and one pair of barriers, its scores still computed
// 64 keys at a time (stream.go's attnMMAShared reads it too).
#ifndef ATTN_MMA_KC16
#define ATTN_MMA_KC16 4
#endif
// ATTN_MMA_LEAN: 1 gives the tensor-core attention of one fp16 term
// reading fp16 q, k, v (the fp16 pass of ten questions and more) fewer
// instructions, bit for bit the same outputs: the values copied into shared
// memory as they are (cp.async) instead of widened and narrowed again, and
// a key step wholly inside every row's window scaled without the masks.
#ifndef ATTN_MMA_LEAN
#define ATTN_MMA_LEAN 0
#endif
// ATTN_MINB: 0 keeps each tiled (float32) attention kernel's own minimum
// of blocks a multiprocessor (what its shared memory allows); N sets every
// one's to N, or to as many as a multiprocessor's 64 warps hold (4 of the
// sixteen-warp kernels), which the compiler would otherwise ignore.
#ifndef ATTN_MINB
#define ATTN_MINB 0
#endif
// LMMA_MINB: linear_mma's blocks a multiprocessor, as ATTN_MMA_MINB.
#ifndef LMMA_MINB
#define LMMA_MINB 1
#endif
// GEGLU_ERF: with GEGLU_EXP=0, 1 (the default) computes GeGLU's GELU as
// 0.5·v·(1 + erf(v/√2)) where its output is one 16-bit term (fp16, bf16); 0
// as 0.5·v·erfc(−v/√2) there too, as FP16X2's two terms do (geglu1).
#ifndef GEGLU_ERF
#define GEGLU_ERF 1
#endif
// GEGLU_EXP: 1 (the default) computes every GeGLU whose output feeds 16-bit
// operands (both 16-bit precisions, FP16X2's two terms included) with
// gelu_exp, one exp2 of a polynomial; 0 with libdevice's erff or erfcf
// (GEGLU_ERF; geglu1).
#ifndef GEGLU_EXP
#define GEGLU_EXP 1
#endif
// ATTN_SKIP: 1 has attn_reg and the tensor-core attention leave out the
// products of a chunk's keys past the tile's last one (a row of 93 keys
// fills 93 of a 128-key chunk; a sliding window's tile fewer): their
// probabilities are exactly 0, so the outputs are the same bit for bit. 0
// (the default) computes and masks them: the kernels wait on their loads
// and barriers more than on those products, and the branches cost the
// tensor-core kernel's scheduling about what they save (an H100 measured
// no gain; docs/cuda-perf-log.md).
#ifndef ATTN_SKIP
#define ATTN_SKIP 0
#endif
// ATTN_EX2: 1 (the default) gives the tensor-core attention's softmax fewer
// instructions a score: the scale applied inside the exponent (2^(s·scale −
// max), one fmaf, where 0 multiplies each score first and subtracts after)
// and ex2.approx.ftz for exp2f (attn_exp2).
#ifndef ATTN_EX2
#define ATTN_EX2 1
#endif
// LCL_W16: 1 runs linear_cl on sixteen warps a block, four a scheduler,
// each with half the row tiles of eight's (0).
#ifndef LCL_W16
#define LCL_W16 0
#endif
// The launch bounds with a minimum only where one is asked for, so that
// the defaults compile exactly as the bounds without one.
#if ATTN_MMA_MINB > 1
#define ATTN_MMA_BOUNDS(threads) __launch_bounds__(threads, ATTN_MMA_MINB)
#else
#define ATTN_MMA_BOUNDS(threads) __launch_bounds__(threads)
#endif
#if ATTN_ROWS_MINB > 1
#define ATTN_ROWS_BOUNDS(threads) __launch_bounds__(threads, ATTN_ROWS_MINB)
#else
#define ATTN_ROWS_BOUNDS(threads) __launch_bounds__(threads)
#endif
#if LMMA_MINB > 1
#define LMMA_BOUNDS(threads) __launch_bounds__(threads, LMMA_MINB)
#else
#define LMMA_BOUNDS(threads) __launch_bounds__(threads)
#endif
// The unroll counts as class constants: #pragma unroll takes a constant
// expression, where a macro in a pragma is expanded by some compilers only.
struct tunables {
	static const int attn_mma_unroll = ATTN_MMA_UNROLL;
};

// ---- PTX primitives ----
// Every inline PTX instruction of this file is in one of these functions, so
// that the tests' CPU emulator of the kernels (testdata/emu/cuemu.h), which
// compiles this file as C++ with LAYA_CUDA_EMU defined, can stand in for
// them with its own definitions of the same names.
#ifndef LAYA_CUDA_EMU
// to16 rounds v to fp16 (kind 1 or 3) or bf16 (kind 2), nearest even.
__device__ __forceinline__ u16 to16(float v, int kind) {
	u16 h;
	if (kind == 2)
		asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
	else
		asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
	return h;
}

// f16to32 widens an fp16 value.
__device__ __forceinline__ float f16to32(u16 h) {
	float v;
	asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(h));
	return v;
}

// pack2 rounds x and y to fp16 into one register, x in the low half: the
// lower column of an mma fragment.
__device__ __forceinline__ u32 pack2(float x, float y) {
	u32 r;
	asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(y), "f"(x));
	return r;
}

// unpack2 widens the two fp16 values of q, the low half into lo.
__device__ __forceinline__ void unpack2(u32 q, float& lo, float& hi) {
	asm("{.reg .f16 a, b;\n\tmov.b32 {a, b}, %2;\n\tcvt.f32.f16 %0, a;\n\tcvt.f32.f16 %1, b;\n\t}" : "=f"(lo), "=f"(hi) : "r"(q));
}

// mma16816 is c += a·b for one m16n8k16 tile: a 16×16 fp16 (row), b 16×8
// fp16 (col), c 16×8 float32, in the PTX ISA's fragment layouts.
__device__ __forceinline__ void mma16816(float* c, const u32* a, u32 b0, u32 b1) {
	asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
		: "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ldsm4t loads four 8×8 fp16 matrices transposed (ldmatrix .trans): lanes
// 8j..8j+7 give the addresses of matrix j's eight rows, and r[j] gets
// elements (2·(lane%4), lane/4) and (2·(lane%4)+1, lane/4) of it, which is an
// mma B fragment of a matrix stored k-major.
__device__ __forceinline__ void ldsm4t(u32* r, const u16* p) {
	asm volatile("{\n\t.reg .u64 a;\n\tcvta.to.shared.u64 a, %4;\n\tldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [a];\n\t}"
		: "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		: "l"(p)
		: "memory");
}

// smem_addr is p's address in the shared state space, 32 bits: what
// ldsm4a and cp_async16a take. A loop that steps such an address by a
// constant costs an add an access, where a generic pointer costs a 64-bit
// conversion and address computation each (in linear_mma's inner loop,
// most of its instructions: ncu, docs/cuda-perf-log.md).
__device__ __forceinline__ u32 smem_addr(const void* p) {
	u32 a;
	asm("{\n\t.reg .u64 g;\n\tcvta.to.shared.u64 g, %1;\n\tcvt.u32.u64 %0, g;\n\t}" : "=r"(a) : "l"(p));
	return a;
}

// ldsm4a loads four 8×8 fp16 matrices (ldmatrix) from shared address a:
// lanes 8j..8j+7 give the addresses of matrix j's eight rows, and r[j] gets
// elements (lane/4, 2·(lane%4)) and (lane/4, 2·(lane%4)+1) of it: an mma A
// fragment's register of a row-major tile, or a B fragment's of a matrix
// stored n-major (k contiguous), one instruction where four 32-bit loads
// from shared memory were.
__device__ __forceinline__ void ldsm4a(u32* r, u32 a) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
		: "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		: "r"(a)
		: "memory");
}

// cp_async16a copies 16 bytes from global g to shared address s without
// holding the thread (cp.async, sm_80): the copies of a thread complete at
// cp_async_wait_all. Both addresses are 16-byte aligned.
__device__ __forceinline__ void cp_async16a(u32 s, const void* g) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(g) : "memory");
}

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// cp_async_commit closes this thread's copies since the last into a group;
// cp_async_wait_group(n) waits until at most the n most recent groups are
// in flight (n past 7 waits as for 7: longer, never shorter). A kernel that
// copies its operands in chunks, one group each, starts on the first
// chunk while the others land.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_group(int n) {
	switch (n) {
	case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
	case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
	case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
	case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
	case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
	case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
	case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
	default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
	}
}

// ldcg reads a float from L2 (ld.global.cg): data other blocks of the
// same grid wrote, which this multiprocessor's L1 may hold stale.
__device__ __forceinline__ float ldcg(const float* p) {
	float v;
	asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
	return v;
}

// ldcg4 is ldcg for four floats at a 16-byte aligned p.
__device__ __forceinline__ float4 ldcg4(const float* p) {
	float4 v;
	asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
	return v;
}

// Warpgroup GEMMs (wgmma, sm_90a only: the architecture-specific target,
// __CUDA_ARCH_FEAT_SM90_ALL): a warpgroup of four warps multiplies a
// 64×16 tile of A by a 16×N tile of B into 64×N float32 accumulators
// spread over its 128 threads, both operands read from shared memory
// through 64-bit descriptors (wg_desc) without passing through registers,
// the products added to the accumulators (scale-d 1), asynchronously:
// wg_commit closes the products issued since the last into a group,
// wg_wait<n> waits until at most n groups are in flight, and wg_fence
// orders the warpgroup's register accesses before the products that follow
// it. Shared memory written other than by the products' own
// reads (cp.async, plain stores) must be made visible to them by
// fence_async_smem (fence.proxy.async) and a barrier first.
template <int N>
__device__ __forceinline__ void wgmma_f16(float* d, u64 da, u64 db);
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <>
__device__ __forceinline__ void wgmma_f16<32>(float* d, u64 da, u64 db) {
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %18, 0;\n\t"
		"wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n\t}"
		: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
		: "l"(da), "l"(db), "r"(1)
		: "memory");
}
template <>
__device__ __forceinline__ void wgmma_f16<64>(float* d, u64 da, u64 db) {
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"
		"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n\t}"
		: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
		: "l"(da), "l"(db), "r"(1)
		: "memory");
}
template <>
__device__ __forceinline__ void wgmma_f16<96>(float* d, u64 da, u64 db) {
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %50, 0;\n\t"
		"wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47}, %48, %49, p, 1, 1, 0, 0;\n\t}"
		: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
		: "l"(da), "l"(db), "r"(1)
		: "memory");
}
template <>
__device__ __forceinline__ void wgmma_f16<128>(float* d, u64 da, u64 db) {
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
		"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n\t}"
		: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
		: "l"(da), "l"(db), "r"(1)
		: "memory");
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int n>
__device__ __forceinline__ void wg_wait() {
	asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(n) : "memory");
}
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#else
// Elsewhere the products are never launched (linear_wg needs sm_90a); the
// declarations keep the kernel compiling.
template <int N>
__device__ __forceinline__ void wgmma_f16(float*, u64, u64) {}
__device__ __forceinline__ void wg_fence() {}
__device__ __forceinline__ void wg_commit() {}
template <int n>
__device__ __forceinline__ void wg_wait() {}
__device__ __forceinline__ void fence_async_smem() {}
#endif

// rcp_approx and ex2_approx are the multifunction unit's 1/x and 2^x
// (rcp.approx.ftz, ex2.approx.ftz: about one and two ulps, subnormals
// flushed to zero), one instruction each where 1.0f/x and exp2f are a
// correctly rounded sequence with a slow path and a denormal fix-up.
__device__ __forceinline__ float rcp_approx(float x) {
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
	return r;
}

__device__ __forceinline__ float ex2_approx(float x) {
	float r;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
	return r;
}

// pdl_wait and pdl_launch are programmatic dependent launch (sm_90): a
// kernel launched with it (unless Options.NoPDL) may start while the kernel before
// it finishes, and pdl_wait holds it until that kernel's writes are
// visible; pdl_launch lets the kernel after it start early in turn. Every
// kernel calls pdl_wait before it reads anything another kernel wrote
// (KERNEL_ENTRY, or linear_mma after loading its weights), so that a kernel
// that waits sees the writes of every kernel before it. On older GPUs, and
// for a kernel launched without it, they do nothing.
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch() {
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// l2_prefetch asks L2 for bytes at p without waiting: this thread's share
// (part of parts) of its 128-byte lines, a prefetch.global.L2 each. The
// kernels that run just before GEMMs of few rows on cuBLAS ask for those
// GEMMs' weights (PF_PARAMS) with Options.PrefetchRows, so that a GEMM
// waiting on its weight's loads k-step after k-step finds them in L2: off
// by default, since on an H200 it cost one question 2–6 % of its GPU time
// (docs/cuda-perf-log.md). A weight of 10 MB is about four lines a thread
// of a LayerNorm's grid. sm_90's bulk prefetch (cp.async.bulk.prefetch.L2,
// kilobytes an instruction) lost more: on an H100 a whole weight asked for
// so made each GEMM of one question slower than reading it from HBM, even
// from a branch of the graph of its own.
__device__ __forceinline__ void l2_prefetch(const char* p, long long bytes, long long part, long long parts) {
	for (long long o = part * 128; o < bytes; o += parts * 128)
		asm volatile("prefetch.global.L2 [%0];" ::"l"(p + o) : "memory");
}

// Thread block clusters (sm_90): blocks launched together in a cluster
// (launchCluster) read each other's shared memory. cluster_id is the
// block's rank in its cluster (x) and the cluster's blocks (y);
// cluster_sync is a barrier of every thread of the cluster, whose
// shared-memory writes before it the cluster's reads after it see
// (barrier.cluster's default release and acquire: PTX 7.8 has no
// qualifiers for them); cluster_map maps a 32-bit shared address of this
// block to the same offset in block rank's shared memory (mapa), and
// ld_cluster4 loads 16 bytes through such an address. A block must not
// return while another may still read its shared memory: a cluster_sync
// after the last such read. Before sm_90 a block is a cluster of one.
__device__ __forceinline__ uint2 cluster_id() {
	uint2 r = make_uint2(0u, 1u);
#if __CUDA_ARCH__ >= 900
	asm volatile("mov.u32 %0, %%cluster_ctarank;\n\tmov.u32 %1, %%cluster_nctarank;" : "=r"(r.x), "=r"(r.y));
#endif
	return r;
}

__device__ __forceinline__ void cluster_sync() {
#if __CUDA_ARCH__ >= 900
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
#else
	__syncthreads();
#endif
}

__device__ __forceinline__ u32 cluster_map(u32 a, u32 rank) {
#if __CUDA_ARCH__ >= 900
	u32 r;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
	return r;
#else
	return a;
#endif
}

__device__ __forceinline__ float4 ld_cluster4(u32 a) {
	float4 v;
#if __CUDA_ARCH__ >= 900
	asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
#else
	asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
#endif
	return v;
}

// Bulk copies by the tensor memory accelerator (TMA, sm_90) and the
// mbarriers that count them in. A tensor map (cuTensorMapEncodeTiled on
// the host, kept in device memory: tma.go, linearcl.go's wgMaps) describes a 2D
// matrix in global memory and a box of it; tma_load_2d has the TMA copy the
// box whose first element is at (c0 along the contiguous dimension, c1
// along the other) into shared memory at dst, as rows of the box's width,
// with the map's swizzle (the 128-byte one wgmma reads: dst 1024-byte
// aligned), elements past the matrix as zeros, and count the box's bytes
// against mbarrier bar. One thread issues a copy of kilobytes where
// cp.async takes an instruction and an address a thread for every 16
// bytes. An mbarrier's phase completes when its count of arrivals has
// arrived and the bytes one of them announced (mbar_expect_tx, which also
// arrives) have landed; mbar_try_wait reports whether the phase of parity
// parity has completed. mbar_init before any use, made visible to the
// block by mbar_fence_init and a barrier; mbar_inval before its memory is
// used for anything else. Like wgmma, only in the sm_90a
// build (Options.WGRows on a GPU of compute capability 9.0), whose PTX
// version has them; elsewhere they do nothing and must not be launched.
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void mbar_fence_init() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbar_inval(u32 bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
#endif
}
__device__ __forceinline__ bool mbar_try_wait(u32 bar, u32 parity) {
	u32 ok = 1;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
		: "=r"(ok)
		: "r"(bar), "r"(parity)
		: "memory");
#endif
	return ok != 0;
}
__device__ __forceinline__ void tma_load_2d(u32 dst, const void* tmap, u32 bar, int c0, int c1) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
		"l"(tmap), "r"(bar), "r"(c0), "r"(c1)
		: "memory");
#endif
}
#endif

// KERNEL_ENTRY starts every kernel but linear_mma: nothing to do before
// the kernel before it has finished (pdl_wait).
#define KERNEL_ENTRY \
	pdl_wait();      \
	pdl_launch();

// PF_PARAMS and PF_ENTRY: a kernel of one-dimensional grid that may run
// just before GEMMs whose weights it asks L2 for (two ranges, bytes 0:
// none), before it waits for the kernel before it: the weights are never
// written on the GPU.
#define PF_PARAMS , const char *pf0, long long pn0, const char *pf1, long long pn1
#define PF_ENTRY                                                                                    \
	{                                                                                               \
		long long part = (long long)threadIdx.x * gridDim.x + blockIdx.x, parts = (long long)gridDim.x * blockDim.x; \
		if (pn0) l2_prefetch(pf0, pn0, part, parts);                                                \
		if (pn1) l2_prefetch(pf1, pn1, part, parts);                                                \
	}

#define ACT_IDENTITY 0
#define ACT_GELU 1
#define ACT_RELU 2

__device__ __forceinline__ float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

// block_sum and block_max reduce over the whole block (a multiple of 32
// threads) through sh (32 floats); every thread gets the result.
__device__ float block_sum(float v, float* sh) {
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_sum(v);
	__syncthreads();
	if (lane == 0) sh[w] = v;
	__syncthreads();
	v = lane < nw ? sh[lane] : 0.0f;
	v = warp_sum(v);
	return v;
}

__device__ float block_max(float v, float* sh) {
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0) sh[w] = v;
	__syncthreads();
	v = lane < nw ? sh[lane] : -3.402823466e38f;
	v = warp_max(v);
	return v;
}

// gelu is the exact erf form, as PyTorch's default "gelu", written with
// erfc so that the negative tail does not cancel, in double (as the cpu
// backend): float32 erfc of a rounded argument is off by several ulps in
// the tail, and H100/H200-class GPUs have the double rate to spare here.
__device__ __forceinline__ float gelu(float x) {
	double v = (double)x;
	return (float)(0.5 * v * erfc(-v * 0.70710678118654752));
}

__device__ __forceinline__ float activate(float x, int act) {
	if (act == ACT_GELU) return gelu(x);
	if (act == ACT_RELU) return x > 0.0f ? x : 0.0f;
	return x;
}


// store16 writes v as a 16-bit GEMM operand at h[i]; kind 3 (FP16X2)
// also writes the fp16 rounding of what the first term missed at h[i+lo],
// so that two GEMMs on the terms give v to about 21 bits.
//
// Kinds 5 and 6 lay a row's two terms side by side, for one GEMM over twice
// the k (Options.KCatRows): lo is then the row's width w, and element i =
// r·w + c goes to h[r·2w + c] and h[r·2w + w + c]. Kind 5 writes FP16X2's
// two terms there, kind 6 the same fp16 value twice (the weight, which
// multiplies both). A row's 16-bit elements are fewer than 2^32 in any
// tensor the backend makes (a batch's tokens times a width), so the row
// comes from a 32-bit division: a 64-bit one is a long software routine.
#define KIND_KCAT 5
#define KIND_KCAT_WEIGHT 6
__device__ __forceinline__ long long kcat_at(long long i, long long w) {
	return i + (long long)((unsigned)i / (unsigned)w) * w;
}

__device__ __forceinline__ void store16(u16* h, long long i, long long lo, float v, int kind) {
	if (kind >= KIND_KCAT) {
		long long j = kcat_at(i, lo);
		u16 a = to16(v, 1);
		h[j] = a;
		h[j + lo] = kind == KIND_KCAT ? to16(v - f16to32(a), 1) : a;
		return;
	}
	u16 a = to16(v, kind);
	h[i] = a;
	if (kind == 3) h[i + lo] = to16(v - f16to32(a), 1);
}

// store16x4 is store16 of four values at h[i..i+3] (i and lo multiples of
// 4) in one 8-byte store a term: the same words, a quarter of the stores.
__device__ __forceinline__ void store16x4(u16* h, long long i, long long lo, float4 v, int kind) {
	int k16 = kind >= KIND_KCAT ? 1 : kind;
	u16 a[4] = {to16(v.x, k16), to16(v.y, k16), to16(v.z, k16), to16(v.w, k16)};
	long long j = i, jlo = i + lo;
	if (kind >= KIND_KCAT) j = kcat_at(i, lo), jlo = j + lo;
	*(uint2*)(h + j) = make_uint2((unsigned)a[0] | (unsigned)a[1] << 16, (unsigned)a[2] | (unsigned)a[3] << 16);
	if (kind == 3 || kind == KIND_KCAT) {
		float f[4] = {v.x, v.y, v.z, v.w};
		u16 b[4];
#pragma unroll
		for (int e = 0; e < 4; e++) b[e] = to16(f[e] - f16to32(a[e]), 1);
		*(uint2*)(h + jlo) = make_uint2((unsigned)b[0] | (unsigned)b[1] << 16, (unsigned)b[2] | (unsigned)b[3] << 16);
	} else if (kind == KIND_KCAT_WEIGHT) {
		*(uint2*)(h + jlo) = *(uint2*)(h + j);
	}
}

// store16x2 is store16 of two values at h[i], h[i+1] (i and lo even) in one
// 4-byte store a term.
__device__ __forceinline__ void store16x2(u16* h, long long i, long long lo, float x, float y, int kind) {
	int k16 = kind >= KIND_KCAT ? 1 : kind;
	u16 a = to16(x, k16), b = to16(y, k16);
	long long j = i, jlo = i + lo;
	if (kind >= KIND_KCAT) j = kcat_at(i, lo), jlo = j + lo;
	*(unsigned*)(h + j) = (unsigned)a | (unsigned)b << 16;
	if (kind == 3 || kind == KIND_KCAT)
		*(unsigned*)(h + jlo) = (unsigned)to16(x - f16to32(a), 1) | (unsigned)to16(y - f16to32(b), 1) << 16;
	else if (kind == KIND_KCAT_WEIGHT)
		*(unsigned*)(h + jlo) = (unsigned)a | (unsigned)b << 16;
}

// ld4 reads four floats of a GEMM output; when the output holds two
// terms (FP16X2 runs one GEMM over both 16-bit terms of its input, stacked
// as twice the rows), the second term lies two elements on and is added.
__device__ __forceinline__ float4 ld4(const float* p, long long two) {
	float4 v = *(const float4*)p;
	if (two) {
		float4 w = *(const float4*)(p + two);
		v.x += w.x;
		v.y += w.y;
		v.z += w.z;
		v.w += w.w;
	}
	return v;
}

#if LAYA_CORE
extern "C" __global__ void gather_rows(float* dst, const float* table, const int* index, int cols) {
	KERNEL_ENTRY
	const float* src = table + (long long)index[blockIdx.x] * cols;
	float* out = dst + (long long)blockIdx.x * cols;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = src[c];
}
#endif

// layer_norm: one block a row; two passes over the row (mean, then the
// biased variance around it), as the reference computes them.
// Producers of GEMM inputs (layer_norm, geglu, attention) also write a
// 16-bit copy h of their output when h is set (kind: see to16), so that the
// GEMM that reads it needs no conversion of its own; dst null: only the
// copy is stored (nothing reads the float32 output). dst is never read
// back, so a layer_norm in place (dst == x) may skip it too.
// res set: x = x + res (+ its second term, rtwo elements on; see ld4)
// first, written back to x: the residual Add before the norm, folded in.
// A gather before the norm folds in too (stream.LayerNorm): with xidx, row
// r is read from row xidx[r] of x, a table (the token embeddings, which
// the norm then writes to dst: never with res, whose write-back would go
// to the table); with ridx, res is a table and row r adds its row ridx[r]
// (one term: the question type's embedding the decision head adds).
#if LAYA_CORE
extern "C" __global__ void layer_norm(float* dst, float* x, const float* w, const float* b, int cols, float eps, u16* h,
	int kind, long long lo, const float* res, long long rtwo, const int* xidx, const int* ridx PF_PARAMS) {
	PF_ENTRY
	KERNEL_ENTRY
	__shared__ float sh[32];
	float* row = x + (long long)(xidx ? xidx[blockIdx.x] : blockIdx.x) * cols;
	float* out = dst + (long long)blockIdx.x * cols;
	float s = 0.0f;
	if (res) {
		const float* p = res + (long long)(ridx ? ridx[blockIdx.x] : blockIdx.x) * cols;
		for (int c = threadIdx.x; c < cols; c += blockDim.x) {
			float v = row[c] + (rtwo ? p[c] + p[c + rtwo] : p[c]);
			row[c] = v;
			s += v;
		}
	} else {
		for (int c = threadIdx.x; c < cols; c += blockDim.x) s += row[c];
	}
	float mean = block_sum(s, sh) / cols;
	float v = 0.0f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) {
		float d = row[c] - mean;
		v += d * d;
	}
	float var = block_sum(v, sh) / cols;
	float inv = 1.0f / sqrtf(var + eps);
	for (int c = threadIdx.x; c < cols; c += blockDim.x) {
		float y = (row[c] - mean) * inv * w[c];
		if (b) y += b[c];
		if (dst) out[c] = y;
		if (h) store16(h, (long long)blockIdx.x * cols + c, lo, y, kind);
	}
}
#endif

// ln_apply is a LayerNorm's output for four values v of a row of that mean
// and 1/sqrt(variance + eps), weights g and bias b: layer_norm4's, and
// linear_mma's where a LayerNorm runs in it.
__device__ __forceinline__ float4 ln_apply(float4 v, float mean, float inv, float4 g, float4 b) {
	return make_float4((v.x - mean) * inv * g.x + b.x, (v.y - mean) * inv * g.y + b.y, (v.z - mean) * inv * g.z + b.z,
		(v.w - mean) * inv * g.w + b.w);
}

// layer_norm4 is layer_norm for rows of at most 1024 columns, a multiple
// of 4, with one float4 of the row in each thread's registers (blockDim =
// cols/4 rounded up to whole warps): one read of the row instead of three,
// and a block a row, since rows are few (about a hundred a question) and
// spreading them over multiprocessors hides more memory latency than
// packing several rows in a block.
#if LAYA_CORE
extern "C" __global__ void layer_norm4(float* dst, float* x, const float* w, const float* b, int cols, float eps, u16* h, int kind,
	long long lo, const float* res, long long rtwo, const int* xidx, const int* ridx PF_PARAMS) {
	PF_ENTRY
	KERNEL_ENTRY
	__shared__ float sh[32];
	long long r = blockIdx.x;
	int c = 4 * threadIdx.x;
	bool in = c < cols;
	float* row = x + (xidx ? (long long)xidx[r] : r) * cols;
	float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f), g = v, bb = v;
	if (in) {
		v = *(const float4*)(row + c);
		g = *(const float4*)(w + c);
		if (b) bb = *(const float4*)(b + c);
		if (res) {
			float4 a = ld4(res + (ridx ? (long long)ridx[r] : r) * cols + c, rtwo);
			v.x += a.x;
			v.y += a.y;
			v.z += a.z;
			v.w += a.w;
			*(float4*)(row + c) = v;
		}
	}
	float mean = block_sum(in ? (v.x + v.y) + (v.z + v.w) : 0.0f, sh) / cols;
	float a0 = v.x - mean, a1 = v.y - mean, a2 = v.z - mean, a3 = v.w - mean;
	float inv = 1.0f / sqrtf(block_sum(in ? (a0 * a0 + a1 * a1) + (a2 * a2 + a3 * a3) : 0.0f, sh) / cols + eps);
	if (!in) return;
	float4 y = ln_apply(v, mean, inv, g, bb);
	if (dst) *(float4*)(dst + r * cols + c) = y;
	if (h) store16x4(h, r * cols + c, lo, y, kind);
}
#endif

#if LAYA_CORE
extern "C" __global__ void bias_act(float* y, const float* bias, long long n, int cols, int act) {
	KERNEL_ENTRY
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float v = y[i];
		if (bias) v += bias[i % cols];
		y[i] = activate(v, act);
	}
}
#endif

// add: dst = a + b, where a or b may hold two terms (a2, b2: the second's
// offset in elements, 0 for one; see ld4) and b may be null.
#if LAYA_CORE
extern "C" __global__ void add(float* dst, const float* a, long long a2, const float* b, long long b2, long long n) {
	KERNEL_ENTRY
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float x = a2 ? a[i] + a[i + a2] : a[i];
		if (b) x += b2 ? b[i] + b[i + b2] : b[i];
		dst[i] = x;
	}
}
#endif

#if LAYA_CORE
extern "C" __global__ void act_map(float* dst, const float* x, long long n, int act) {
	KERNEL_ENTRY
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		dst[i] = activate(x[i], act);
}
#endif

// gelu_exp is GELU(v) = v·Φ(v) from Φ's tail E(s) = Φ(−s) = erfc(s/√2)/2,
// s = |v|, in one exp2 and one reciprocal of the multifunction unit and
// no branch: Numerical Recipes' erfc (Press et al., 2nd ed., §6.2, erfcc:
// erfc(z) = t·exp(−z² + P(t)), t = 1/(1 + z/2), P of degree 9 from a
// Chebyshev fit, relative error under 1.2e-7 for every z ≥ 0; 1.05e-7 on
// [0, 7] in exact arithmetic, checked with mpmath), with z = s/√2, the
// factor 1/2 and log2(e) folded into the coefficients, so that
// E = t·2^(P'(t) − s²·log2(e)/2). Φ = 1 − E for v ≥ 0 and E below it:
// E's error is relative in the negative tail (where 0.5·v·(1 + erf) cancels),
// a few float32 ulps down to v ≈ −4 and growing with v² below it, as the
// exponent's rounding to float32 does (5e-6 at −10), and under a float32 ulp
// of 1 for v ≥ 0 (TestEmuGeluExp's bounds). libdevice's erff and erfcf take
// two polynomial branches (a warp with inputs on both sides runs both), and
// ncu counted about 65 instructions an element in GeGLU at fifty questions.
__device__ __forceinline__ float gelu_exp(float v) {
	const float L2E = 1.4426950408889634f;
	float s = fabsf(v), t = rcp_approx(fmaf(s, 0.35355339059327376f, 1.0f)); // 1/(1 + z/2)
	float p = 0.17087277f * L2E;
	p = fmaf(p, t, -0.82215223f * L2E);
	p = fmaf(p, t, 1.48851587f * L2E);
	p = fmaf(p, t, -1.13520398f * L2E);
	p = fmaf(p, t, 0.27886807f * L2E);
	p = fmaf(p, t, -0.18628806f * L2E);
	p = fmaf(p, t, 0.09678418f * L2E);
	p = fmaf(p, t, 0.37409196f * L2E);
	p = fmaf(p, t, 1.00002368f * L2E);
	p = fmaf(p, t, -1.26551223f * L2E - 1.0f); // − 1: the factor 1/2
	float e = t * ex2_approx(fmaf(-s, s * (0.5f * L2E), p));
	return v * (v >= 0.0f ? 1.0f - e : e);
}

// geglu's GELU is gelu (double) in fp32 runs and, when its output feeds
// 16-bit GEMM operands anyway (fast != 0), gelu_exp (GEGLU_EXP, the
// default: GeGLU was bound by its instructions in the fp16 runs of ten and
// fifty questions, and gelu_exp took 1.6–2.3 % off English GPU time there
// on an H100, docs/cuda-perf-log.md). With GEGLU_EXP=0, the float32 erfc
// form, or with GEGLU_ERF (its default) for one 16-bit term (kind 1 fp16, 2
// bf16; not FP16X2's two, which keep float32's precision) the erf form:
// erff costs less than erfcf, and its error where 1 + erf cancels (v below
// about −3, |GELU| under 0.004) is a few float32 ulps of 1 times v, under
// the 16-bit rounding of the GEMM sums it joins. geglu, geglu4 and
// linear_mma's fused GeGLU share it, so that they agree bit for bit.
__device__ __forceinline__ float geglu1(float v, float u, int fast, int kind) {
	float g;
	if (!fast)
		g = gelu(v);
	else if (GEGLU_EXP)
		g = gelu_exp(v);
	else if (GEGLU_ERF && (kind == 1 || kind == 2))
		g = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
	else
		g = 0.5f * v * erfcf(-v * 0.70710678118654752f);
	return g * u;
}

// two: x holds two terms (see ld4). hin: x holds fp16 values instead
// (u16, one term), as a GEMM writes them for geglu alone in FP16 (stream.go,
// Discard): half the bytes to read.
#if LAYA_CORE
extern "C" __global__ void geglu(float* dst, const void* x, long long two, long long rows, int inner, u16* h, int kind, long long lo,
	int fast, int hin PF_PARAMS) {
	PF_ENTRY
	KERNEL_ENTRY
	long long n = rows * inner;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		long long r = i / inner;
		int c = (int)(i - r * inner);
		float v, u;
		if (hin) {
			const u16* in = (const u16*)x + r * 2 * inner;
			v = f16to32(in[c]);
			u = f16to32(in[inner + c]);
		} else {
			const float* in = (const float*)x + r * 2 * inner;
			v = two ? in[c] + in[c + two] : in[c];
			u = two ? in[inner + c] + in[inner + c + two] : in[inner + c];
		}
		float y = geglu1(v, u, fast, kind);
		if (dst) dst[i] = y;
		if (h) store16(h, i, lo, y, kind);
	}
}
#endif

// ld4h reads four fp16 values (8 bytes) as floats.
__device__ __forceinline__ float4 ld4h(const u16* p) {
	uint2 w = *(const uint2*)p;
	return make_float4(f16to32((u16)(w.x & 0xffffu)), f16to32((u16)(w.x >> 16)), f16to32((u16)(w.y & 0xffffu)), f16to32((u16)(w.y >> 16)));
}

// geglu4 is geglu for inner, two and lo multiples of 4 and fewer than 2³¹
// float4s: a thread takes a float4 of the values and of the gates (16-byte
// loads, as the GEMM wrote them; 8-byte ones of fp16 with hin) and finds
// their row with one 32-bit division, where geglu pays a 64-bit one for
// every element. Each element is geglu1, as in geglu.
#if LAYA_CORE
extern "C" __global__ void geglu4(float* dst, const void* x, long long two, int rows, int inner, u16* h, int kind, long long lo,
	int fast, int hin PF_PARAMS) {
	PF_ENTRY
	KERNEL_ENTRY
	unsigned q = (unsigned)inner / 4, n4 = (unsigned)rows * q;
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
		unsigned r = i / q, c = 4 * (i - r * q);
		float4 v, u;
		if (hin) {
			const u16* in = (const u16*)x + (long long)r * 2 * inner + c;
			v = ld4h(in);
			u = ld4h(in + inner);
		} else {
			const float* in = (const float*)x + (long long)r * 2 * inner + c;
			v = ld4(in, two);
			u = ld4(in + inner, two);
		}
		float y[4] = {geglu1(v.x, u.x, fast, kind), geglu1(v.y, u.y, fast, kind), geglu1(v.z, u.z, fast, kind), geglu1(v.w, u.w, fast, kind)};
		long long o = 4LL * i;
		if (dst) *(float4*)(dst + o) = make_float4(y[0], y[1], y[2], y[3]);
		if (h) store16x4(h, o, lo, make_float4(y[0], y[1], y[2], y[3]), kind);
	}
}
#endif

#if LAYA_CORE
extern "C" __global__ void softmax_rows(float* dst, const float* x, int cols) {
	KERNEL_ENTRY
	__shared__ float sh[32];
	const float* row = x + (long long)blockIdx.x * cols;
	float* out = dst + (long long)blockIdx.x * cols;
	float m = -3.402823466e38f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
	m = block_max(m, sh);
	float s = 0.0f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
	s = block_sum(s, sh);
	float inv = 1.0f / s;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) * inv;
}
#endif

// rope rotates q and k of row blockIdx.x in place; table holds, for each
// position, cos of the Dh/2 angles then their sin (computed on the host as
// the cpu backend does); pos[r] is the row's position.
#if LAYA_CORE
extern "C" __global__ void rope(float* qkv, const float* table, const int* pos, int heads, int headDim) {
	KERNEL_ENTRY
	int half = headDim / 2, width = heads * headDim;
	float* row = qkv + (long long)blockIdx.x * 3 * width;
	const float* cs = table + (long long)pos[blockIdx.x] * headDim;
	for (int t = threadIdx.x; t < 2 * heads * half; t += blockDim.x) {
		int part = t / (heads * half), rest = t - part * heads * half;
		int h = rest / half, j = rest - h * half;
		float* x = row + part * width + h * headDim;
		float c = cs[j], s = cs[half + j];
		float x0 = x[j], x1 = x[j + half];
		x[j] = x0 * c - x1 * s;
		x[j + half] = x1 * c + x0 * s;
	}
}
#endif

// attention: one block per (query row, head). meta holds three ints per
// row: the first row of its batch row, the batch row's real length and the
// row's position in it. Scores live in dynamic shared memory (window
// floats), then the query, then a reduction area of blockDim floats.
#if LAYA_CORE
extern "C" __global__ void attention(float* dst, const float* qkv, const int* meta, int heads, int headDim, float scale,
	int sliding, int radius, int window, u16* hout, int kind, long long hlo) {
	KERNEL_ENTRY
	extern __shared__ float smem[];
	__shared__ float sh[32];
	float* sc = smem;
	float* q = smem + window;
	float* red = q + headDim;
	int r = blockIdx.x, h = blockIdx.y, width = heads * headDim;
	int start = meta[3 * r], n = meta[3 * r + 1], i = meta[3 * r + 2];
	float* out = dst + (long long)r * width + h * headDim;
	long long ho = (long long)r * width + h * headDim;
	if (i >= n) {
		for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
			if (dst) out[d] = 0.0f;
			if (hout) store16(hout, ho + d, hlo, 0.0f, kind);
		}
		return;
	}
	const float* base = qkv + (long long)start * 3 * width + h * headDim;
	for (int d = threadIdx.x; d < headDim; d += blockDim.x) q[d] = qkv[(long long)r * 3 * width + h * headDim + d];
	int lo = 0, hi = n;
	if (sliding) {
		lo = max(0, i - radius);
		hi = min(n, i + radius + 1);
	}
	int cnt = hi - lo;
	__syncthreads();
	// One warp per key: lanes split the head dimension.
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	for (int j = warp; j < cnt; j += nw) {
		const float* k = base + (long long)(lo + j) * 3 * width + width;
		float dot = 0.0f;
		for (int d = lane; d < headDim; d += 32) dot += q[d] * k[d];
		dot = warp_sum(dot);
		if (lane == 0) sc[j] = dot * scale;
	}
	__syncthreads();
	float m = -3.402823466e38f;
	for (int j = threadIdx.x; j < cnt; j += blockDim.x) m = fmaxf(m, sc[j]);
	m = block_max(m, sh);
	float s = 0.0f;
	for (int j = threadIdx.x; j < cnt; j += blockDim.x) {
		float e = expf(sc[j] - m);
		sc[j] = e;
		s += e;
	}
	s = block_sum(s, sh);
	__syncthreads();
	float inv = 1.0f / s;
	const float* v = base + 2 * width;
	if (headDim <= (int)blockDim.x) {
		int parts = blockDim.x / headDim, d = threadIdx.x % headDim, part = threadIdx.x / headDim;
		if (part < parts) {
			float acc = 0.0f;
			for (int j = part; j < cnt; j += parts) acc += sc[j] * v[(long long)(lo + j) * 3 * width + d];
			red[part * headDim + d] = acc;
		}
		__syncthreads();
		if (threadIdx.x < headDim) {
			float acc = 0.0f;
			for (int p = 0; p < parts; p++) acc += red[p * headDim + threadIdx.x];
			if (dst) out[threadIdx.x] = acc * inv;
			if (hout) store16(hout, ho + threadIdx.x, hlo, acc * inv, kind);
		}
	} else {
		for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
			float acc = 0.0f;
			for (int j = 0; j < cnt; j++) acc += sc[j] * v[(long long)(lo + j) * 3 * width + d];
			if (dst) out[d] = acc * inv;
			if (hout) store16(hout, ho + d, hlo, acc * inv, kind);
		}
	}
}
#endif

// act_feats writes the act head's four features of a question whose k
// option logits are z[0..k): the top probability, its lead over the
// second, the entropy over log(max(2, k)), and max(2, k)/255, in double, as
// the reference states them (act_features).
__device__ void act_feats(float* out, const float* z, int k) {
	double m = -1.0e300;
	for (int i = 0; i < k; i++) m = fmax(m, (double)z[i]);
	double s = 0.0;
	for (int i = 0; i < k; i++) s += exp((double)z[i] - m);
	double top1 = 0.0, top2 = 0.0, ent = 0.0;
	for (int i = 0; i < k; i++) {
		double p = exp((double)z[i] - m) / s;
		ent -= p * log(fmax(p, 1e-9));
		if (p > top1) {
			top2 = top1;
			top1 = p;
		} else if (p > top2) {
			top2 = p;
		}
	}
	double kk = (double)max(2, k);
	out[0] = (float)top1;
	out[1] = (float)(top1 - top2);
	out[2] = (float)(ent / log(kk));
	out[3] = (float)(kk / 255.0);
}

// act_features: one block per batch row b; meta holds, per row, the offset
// of its first logit and its count.
#if LAYA_CORE
extern "C" __global__ void act_features(float* dst, const float* cls, const float* logits, const int* meta, int d) {
	KERNEL_ENTRY
	int b = blockIdx.x;
	float* out = dst + (long long)b * (d + 4);
	for (int c = threadIdx.x; c < d; c += blockDim.x) out[c] = cls[(long long)b * d + c];
	if (threadIdx.x == 0) act_feats(out + d, logits + meta[2 * b], meta[2 * b + 1]);
}
#endif

// to_16 rounds float32 GEMM operands to 16 bits (kind and lo: see
// store16; kind 3's second term goes n elements after the first).
#if LAYA_CORE
extern "C" __global__ void to_16(u16* dst, const float* x, long long n, long long lo, int kind) {
	KERNEL_ENTRY
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		store16(dst, i, lo, x[i], kind);
}
#endif

// pack_out copies the tensors a request reads into one area, so that one
// device-to-host copy brings them all back. table holds, per tensor, its
// address, its element count and its offset (elements) in out.
#if LAYA_CORE
extern "C" __global__ void pack_out(float* out, const u64* table) {
	KERNEL_ENTRY
	const float* src = (const float*)table[3 * blockIdx.x];
	long long n = (long long)table[3 * blockIdx.x + 1];
	float* o = out + table[3 * blockIdx.x + 2];
	for (long long i = threadIdx.x; i < n; i += blockDim.x) o[i] = src[i];
}
#endif

// ld4x reads four values at element i of x: float32 (ld4, two terms when
// two is set), or with HIN fp16 values (ld4h), as a GEMM writes qkv for the
// attention alone in FP16 (stream.go, Discard).
template <bool HIN>
__device__ __forceinline__ float4 ld4x(const void* x, long long i, long long two) {
	if (HIN) return ld4h((const u16*)x + i);
	return ld4((const float*)x + i, two);
}

// rope4 rotates elements j..j+3 (a) and j+DH/2..j+DH/2+3 (b) of a head's
// q or k by RoPE for position pos: rope holds each position's DH/2
// cosines, then its DH/2 sines.
template <int DH>
__device__ __forceinline__ void rope4(float4 a, float4 b, const float* rope, int pos, int j, float4& lo, float4& hi) {
	const float* cs = rope + (long long)pos * DH;
	float4 c = *(const float4*)(cs + j), s = *(const float4*)(cs + DH / 2 + j);
	lo = make_float4(a.x * c.x - b.x * s.x, a.y * c.y - b.y * s.y, a.z * c.z - b.z * s.z, a.w * c.w - b.w * s.w);
	hi = make_float4(b.x * c.x + a.x * s.x, b.y * c.y + a.y * s.y, b.z * c.z + a.z * s.z, b.w * c.w + a.w * s.w);
}

// ld4rope2x is ld4rope2 at element row of x (HIN: see ld4x).
template <int DH, bool HIN>
__device__ __forceinline__ void ld4rope2x(const void* x, long long row, long long two, int j, const float* rope, int pos,
	float4& lo, float4& hi) {
	const int HALF = DH / 2;
	float4 a = ld4x<HIN>(x, row + j, two), b = ld4x<HIN>(x, row + j + HALF, two);
	if (!rope) {
		lo = a;
		hi = b;
		return;
	}
	rope4<DH>(a, b, rope, pos, j, lo, hi);
}

// ld4rope2 reads elements j..j+3 and j+DH/2..j+DH/2+3 of one head's q or k
// (row points at the head's first element; j < DH/2) rotated by RoPE for
// position pos, as rope does: the two halves a rotation pairs, each read
// once. rope null: not rotated.
template <int DH>
__device__ __forceinline__ void ld4rope2(const float* row, long long two, int j, const float* rope, int pos, float4& lo,
	float4& hi) {
	ld4rope2x<DH, false>(row, 0, two, j, rope, pos, lo, hi);
}

// ld_kv reads elements d..d+3 and d+DH/2..d+DH/2+3 of head h of the key
// (rotated by RoPE for position g, as ld4rope2) and the value of position g
// of a batch row whose first tensor row is start; zeros at or past khi (a
// chunk's keys past its row's or window's end). two: see ld4.
template <int DH>
__device__ __forceinline__ void ld_kv(const float* qkv, long long two, int start, int g, int khi, int width, int h, int d,
	const float* rope, float4& k0, float4& k1, float4& v0, float4& v1) {
	k0 = k1 = v0 = v1 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	if (g >= khi) return;
	const float* row = qkv + (long long)(start + g) * 3 * width + h * DH;
	ld4rope2<DH>(row + width, two, d, rope, g, k0, k1);
	v0 = ld4(row + 2 * width + d, two);
	v1 = ld4(row + 2 * width + d + DH / 2, two);
}

// attn_tiled: flash-style attention for head dims of 32, 64 or 128. One
// block of QW warps (8, or 16 at one query a warp) per (tile of up to
// QW·QPW queries of one batch row, head); each warp keeps an online softmax
// for QPW queries. Keys and queries are read a rotation pair at a time
// (ld4rope2). The tile's keys
// and values stream through shared memory KC at a time, coalesced; lanes
// own keys for the scores and DH/32 adjacent head dimensions for the
// output. Shared memory bandwidth bounds this kernel, so a warp's queries
// share each key and value it reads (QPW > 1 when there are enough tiles to
// fill the GPU), and the scores' partial sums are independent chains.
// tiles holds five ints per tile: its first row, the batch row's first row
// and real length, the tile's first position and its query count (0: an
// empty tile, nothing to do). Queries at or past the real length are
// padding: their output is zero. rope set: q and k are rotated as they are
// loaded (the rope kernel folded in; a key's position is its index in its
// batch row). two: see ld4. hout, dst null: see layer_norm. Dynamic shared
// memory: attnShared in stream.go.
template <int DH, int QPW, int QW>
__device__ void attn_tiled(float* dst, const float* qkv, long long two, const int* tiles, int heads, float scale, int sliding,
	int radius, const float* rope, u16* hout, int kind, long long hlo) {
	// One query a warp is the small-batch case, where latency bounds the
	// kernel: chunks twice as long halve its rounds of loads.
	const int KC = (QPW == 1 ? 2 : 1) * (DH <= 64 ? 64 : 32), NK = KC / 32, VD = DH / 32, KS = DH + 4, D4 = DH / 4, QT = QW * QPW;
	const int PS = QPW >= 4 ? 1 : 4 / QPW; // partial sums per score
	extern __shared__ float4 smem4[];
	// K rows are padded to DH+4 floats: a quarter-warp's float4 reads of
	// eight consecutive keys then fall in distinct banks.
	float* K = (float*)smem4;
	float* V = K + KC * KS;
	float* Q = V + KC * DH;
	float* P = Q + QT * DH;
	const int* t = tiles + 5 * blockIdx.x;
	int r0 = t[0], start = t[1], n = t[2], pos0 = t[3], nq = t[4];
	if (nq == 0) return; // past the real tiles of a packed batch (tileGrid)
	int h = blockIdx.y, width = heads * DH, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int H4 = D4 / 2; // float4s of half a head
	for (int i = threadIdx.x; i < nq * H4; i += blockDim.x) {
		int qi = i / H4, j = (i - qi * H4) * 4;
		float4 lo, hi;
		ld4rope2<DH>(qkv + (long long)(r0 + qi) * 3 * width + h * DH, two, j, rope, pos0 + qi, lo, hi);
		*(float4*)&Q[qi * DH + j] = lo;
		*(float4*)&Q[qi * DH + j + DH / 2] = hi;
	}
	int klo = 0, khi = n;
	if (sliding) {
		klo = max(0, pos0 - radius);
		khi = min(n, pos0 + nq - 1 + radius + 1);
	}
	// Query a of this warp is tile row warp + QW·a.
	bool active[QPW];
	int lo[QPW], hi[QPW];
	float m[QPW], l[QPW], acc[QPW][VD];
#pragma unroll
	for (int a = 0; a < QPW; a++) {
		int qi = warp + QW * a, pos = pos0 + qi;
		active[a] = qi < nq && pos < n;
		lo[a] = sliding ? max(0, pos - radius) : 0;
		hi[a] = sliding ? min(n, pos + radius + 1) : n;
		m[a] = -3.402823466e38f;
		l[a] = 0.0f;
#pragma unroll
		for (int c = 0; c < VD; c++) acc[a][c] = 0.0f;
	}
	bool any = active[0];
	for (int kb = klo; kb < khi; kb += KC) {
		__syncthreads();
		// All of a chunk's loads are issued before any is used: their
		// latency, not their bandwidth, bounds this loop.
#pragma unroll
		for (int i0 = 0; i0 < KC * H4; i0 += QW * 32) {
			int i = i0 + threadIdx.x;
			int key = i / H4, d = (i - key * H4) * 4;
			float4 klo4, khi4, vlo, vhi;
			ld_kv<DH>(qkv, two, start, kb + key, khi, width, h, d, rope, klo4, khi4, vlo, vhi);
			*(float4*)&K[key * KS + d] = klo4;
			*(float4*)&K[key * KS + d + DH / 2] = khi4;
			*(float4*)&V[key * DH + d] = vlo;
			*(float4*)&V[key * DH + d + DH / 2] = vhi;
		}
		__syncthreads();
		if (!any) continue;
		float sc[QPW][NK][PS];
#pragma unroll
		for (int a = 0; a < QPW; a++)
#pragma unroll
			for (int kk = 0; kk < NK; kk++)
#pragma unroll
				for (int e = 0; e < PS; e++) sc[a][kk][e] = 0.0f;
#pragma unroll 4
		for (int d = 0; d < D4; d++) {
			float4 kv[NK];
#pragma unroll
			for (int kk = 0; kk < NK; kk++) kv[kk] = ((const float4*)&K[(lane + 32 * kk) * KS])[d];
#pragma unroll
			for (int a = 0; a < QPW; a++) {
				float4 qv = ((const float4*)&Q[(warp + QW * a) * DH])[d];
#pragma unroll
				for (int kk = 0; kk < NK; kk++) {
					if (PS == 4) {
						sc[a][kk][0] += qv.x * kv[kk].x;
						sc[a][kk][1 % PS] += qv.y * kv[kk].y;
						sc[a][kk][2 % PS] += qv.z * kv[kk].z;
						sc[a][kk][3 % PS] += qv.w * kv[kk].w;
					} else if (PS == 2) {
						sc[a][kk][0] += qv.x * kv[kk].x + qv.y * kv[kk].y;
						sc[a][kk][1 % PS] += qv.z * kv[kk].z + qv.w * kv[kk].w;
					} else {
						sc[a][kk][0] += (qv.x * kv[kk].x + qv.y * kv[kk].y) + (qv.z * kv[kk].z + qv.w * kv[kk].w);
					}
				}
			}
		}
#pragma unroll
		for (int a = 0; a < QPW; a++) {
			if (!active[a]) continue;
			float s[NK], cmax = -3.402823466e38f;
#pragma unroll
			for (int kk = 0; kk < NK; kk++) {
				int g = kb + lane + 32 * kk;
				float dot = sc[a][kk][0];
#pragma unroll
				for (int e = 1; e < PS; e++) dot += sc[a][kk][e];
				s[kk] = g >= lo[a] && g < hi[a] ? dot * scale : -3.402823466e38f;
				cmax = fmaxf(cmax, s[kk]);
			}
			cmax = warp_max(cmax);
			float mn = fmaxf(m[a], cmax);
			float corr = expf(m[a] - mn), ps = 0.0f;
			float* p = &P[(warp + QW * a) * KC];
#pragma unroll
			for (int kk = 0; kk < NK; kk++) {
				int g = kb + lane + 32 * kk;
				float e = g >= lo[a] && g < hi[a] ? expf(s[kk] - mn) : 0.0f;
				p[lane + 32 * kk] = e;
				ps += e;
			}
			l[a] = l[a] * corr + warp_sum(ps);
			m[a] = mn;
#pragma unroll
			for (int c = 0; c < VD; c++) acc[a][c] *= corr;
		}
		__syncwarp();
#pragma unroll 2
		for (int j = 0; j < KC; j += 4) {
			float vv[4][VD];
#pragma unroll
			for (int jj = 0; jj < 4; jj++) {
				const float* vp = &V[(j + jj) * DH + VD * lane];
				if constexpr (VD == 4) {
					float4 x = *(const float4*)vp;
					vv[jj][0] = x.x;
					vv[jj][VD > 1 ? 1 : 0] = x.y;
					vv[jj][VD > 2 ? 2 : 0] = x.z;
					vv[jj][VD > 3 ? 3 : 0] = x.w;
				} else if constexpr (VD == 2) {
					float2 x = *(const float2*)vp;
					vv[jj][0] = x.x;
					vv[jj][VD > 1 ? 1 : 0] = x.y;
				} else {
					vv[jj][0] = vp[0];
				}
			}
#pragma unroll
			for (int a = 0; a < QPW; a++) {
				if (!active[a]) continue;
				float4 pa = *(const float4*)&P[(warp + QW * a) * KC + j];
#pragma unroll
				for (int c = 0; c < VD; c++) acc[a][c] += (pa.x * vv[0][c] + pa.y * vv[1][c]) + (pa.z * vv[2][c] + pa.w * vv[3][c]);
			}
		}
		__syncwarp();
	}
#pragma unroll
	for (int a = 0; a < QPW; a++) {
		int qi = warp + QW * a;
		if (qi >= nq) continue;
		long long o = (long long)(r0 + qi) * width + h * DH + VD * lane;
#pragma unroll
		for (int c = 0; c < VD; c++) {
			float y = active[a] ? acc[a][c] / l[a] : 0.0f;
			if (dst) dst[o + c] = y;
			if (hout) store16(hout, o + c, hlo, y, kind);
		}
	}
}

// MINB: the blocks a multiprocessor fits by shared memory (attnShared), so
// that registers do not cut that occupancy; ATTN_MINB overrides it.
#define ATTN_TILED_MINB(QW, MINB) (ATTN_MINB > 0 ? (ATTN_MINB < 64 / (QW) ? ATTN_MINB : 64 / (QW)) : (MINB))
#define ATTENTION(DH, QPW, QW, MINB, NAME)                                                                             \
	extern "C" __global__ void __launch_bounds__(QW * 32, ATTN_TILED_MINB(QW, MINB)) NAME(float* dst, const float* qkv, long long two,       \
		const int* tiles,                                                                                            \
		int heads, float scale, int sliding, int radius, const float* rope, u16* hout, int kind, long long hlo) {          \
		KERNEL_ENTRY                                                                                                       \
		attn_tiled<DH, QPW, QW>(dst, qkv, two, tiles, heads, scale, sliding, radius, rope, hout, kind, hlo);               \
	}
// A head dim's kernels: 8 warps of 1, 2 and 4 queries, 16 warps of 1.
#define ATTENTIONS(DH)                          \
	ATTENTION(DH, 1, 8, 3, attention##DH##_1)   \
	ATTENTION(DH, 2, 8, 4, attention##DH##_2)   \
	ATTENTION(DH, 4, 8, 4, attention##DH##_4)   \
	ATTENTION(DH, 1, 16, 2, attention##DH##_1w16)
#if LAYA_CORE
ATTENTIONS(32)
ATTENTIONS(64)
ATTENTIONS(128)
#endif

// attn_reg: the float32 attention for one query tile a (batch row, head)
// block when there are too few tiles to fill the GPU (one question). The
// tiled kernels give each warp a query and each query reads every key and
// value of the chunk from shared memory, which bounds them (about 1 MB of
// shared-memory reads a block at 16 queries and 128 keys); here the block's
// warps share the tile's 16 queries instead and each thread keeps a tile of
// products in registers, so that a key or value read from shared memory
// serves several queries: the scores as 4 queries × 4 keys a thread over
// KC/32 warps (the rest wait: a 128-bit shared-memory load costs the same
// four wavefronts whatever it multicasts, so fewer, larger thread tiles
// read less), the output as 4 queries × 4 dims a thread over a key group a
// warp, the groups' sums added at the end. Products are fused multiply-adds
// into a few independent sums. The queries and the first chunk's keys and
// values are loaded in one round of loads. Between the two products the
// scores go through shared memory, where a warp a query takes its row's
// online-softmax step. Same arguments, tiles (16 queries each), masks,
// padding and outputs as attn_tiled; dynamic shared memory: attnRegShared
// in stream.go.
template <int DH>
__device__ void attn_reg(float* dst, const float* qkv, long long two, const int* tiles, int heads, float scale, int sliding,
	int radius, const float* rope, u16* hout, int kind, long long hlo) {
	const int QT = 16, NT = 512, KC = DH <= 64 ? 128 : 64, KS = DH + 4, PS = KC + 4, H4 = DH / 8, D4 = DH / 4;
	// Output: NS slices of 32 dims, G key groups of KG keys; warp w the
	// slice w % NS of group w / NS.
	const int NS = DH / 32, G = 16 / NS, KG = KC / G;
	const float NEG = -3.402823466e38f;
	static_assert(KC % 32 == 0 && KG % 4 == 0, "tile shapes");
	// The groups' sums, rows padded by 8 floats (a quarter-warp's stores of
	// four rows fall in distinct banks), where the chunk's keys, values,
	// queries and scores were.
	const int RS = DH + 8;
	static_assert(G * QT * RS <= KC * (KS + DH) + QT * (KS + PS), "the groups' sums fit");
	extern __shared__ float4 smem4[];
	float* K = (float*)smem4;    // [KC][KS]
	float* V = K + KC * KS;      // [KC][DH]
	float* Q = V + KC * DH;      // [QT][KS]
	float* P = Q + QT * KS;      // [QT][PS]
	float* C = P + QT * PS;      // [QT] each query's rescale of this chunk
	float* L = C + QT;           // [QT] each query's softmax sum
	const int* t = tiles + 5 * blockIdx.x;
	int r0 = t[0], start = t[1], n = t[2], pos0 = t[3], nq = t[4];
	if (nq == 0) return; // past the real tiles of a packed batch (tileGrid)
	int h = blockIdx.y, width = heads * DH, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	int klo = 0, khi = n;
	if (sliding) {
		klo = max(0, pos0 - radius);
		khi = min(n, pos0 + nq - 1 + radius + 1);
	}
	// The queries' rotated halves, loaded with the first chunk.
	float4 qa = make_float4(0.0f, 0.0f, 0.0f, 0.0f), qb = qa;
	int qi0 = tid / H4, qj = (tid - qi0 * H4) * 4;
	if (tid < QT * H4 && qi0 < nq)
		ld4rope2<DH>(qkv + (long long)(r0 + qi0) * 3 * width + h * DH, two, qj, rope, pos0 + qi0, qa, qb);
	// This thread's softmax row (warp = query) and output queries.
	float m = NEG, l = 0.0f;
	int wq = warp;
	const int qi = lane & 3, di = lane >> 2; // output
	const int slice = warp % NS, grp = warp / NS, d0 = slice * 32 + di * 4;
	float acc[4][4];
#pragma unroll
	for (int a = 0; a < 4; a++)
#pragma unroll
		for (int c = 0; c < 4; c++) acc[a][c] = 0.0f;
	for (int kb = klo; kb < khi; kb += KC) {
		if (kb != klo) __syncthreads(); // the last chunk's products are done
		// The chunk's keys a product reads: up to the end of the 32-key
		// score warp holding the last key (key groups of KG divide 32), the
		// keys past the last one zeros (ld_kv); ATTN_SKIP leaves out the rest,
		// whose probabilities are 0 and whose scores are masked.
		const int kend = ATTN_SKIP ? min(KC, (khi - kb + 31) & ~31) : KC;
		const int NL = KC * H4 / NT > 0 ? KC * H4 / NT : 1;
		float4 k0[NL], k1[NL], v0[NL], v1[NL];
#pragma unroll
		for (int e = 0; e < NL; e++) {
			int i = tid + NT * e, key = i / H4, d = (i - key * H4) * 4;
			if (i < kend * H4) ld_kv<DH>(qkv, two, start, kb + key, khi, width, h, d, rope, k0[e], k1[e], v0[e], v1[e]);
		}
		if (kb == klo && tid < QT * H4) {
			*(float4*)&Q[qi0 * KS + qj] = qa;
			*(float4*)&Q[qi0 * KS + qj + DH / 2] = qb;
		}
#pragma unroll
		for (int e = 0; e < NL; e++) {
			int i = tid + NT * e, key = i / H4, d = (i - key * H4) * 4;
			if (i < kend * H4) {
				*(float4*)&K[key * KS + d] = k0[e];
				*(float4*)&K[key * KS + d + DH / 2] = k1[e];
				*(float4*)&V[key * DH + d] = v0[e];
				*(float4*)&V[key * DH + d + DH / 2] = v1[e];
			}
		}
		__syncthreads();
		// Scores: warp w < KC/32 takes keys 32w..32w+31, a thread queries
		// qg + 4a and keys 32w + kg + 8e: sixteen independent sums.
		if (warp < KC / 32) {
			const int qg = lane & 3, kg = lane >> 2;
			float s[4][4];
#pragma unroll
			for (int a = 0; a < 4; a++)
#pragma unroll
				for (int e = 0; e < 4; e++) s[a][e] = 0.0f;
			// A warp wholly past the last key leaves its scores to the mask.
			const int d4 = 32 * warp < kend ? D4 : 0;
#pragma unroll 2
			for (int d = 0; d < d4; d++) {
				float4 q[4], k[4];
#pragma unroll
				for (int a = 0; a < 4; a++) q[a] = ((const float4*)&Q[(qg + 4 * a) * KS])[d];
#pragma unroll
				for (int e = 0; e < 4; e++) k[e] = ((const float4*)&K[(32 * warp + kg + 8 * e) * KS])[d];
#pragma unroll
				for (int a = 0; a < 4; a++)
#pragma unroll
					for (int e = 0; e < 4; e++) {
						s[a][e] = fmaf(q[a].x, k[e].x, s[a][e]);
						s[a][e] = fmaf(q[a].y, k[e].y, s[a][e]);
						s[a][e] = fmaf(q[a].z, k[e].z, s[a][e]);
						s[a][e] = fmaf(q[a].w, k[e].w, s[a][e]);
					}
			}
#pragma unroll
			for (int a = 0; a < 4; a++) {
				int q = qg + 4 * a, pos = pos0 + q;
				bool act = q < nq && pos < n;
				int lo = sliding ? max(0, pos - radius) : 0, hi = sliding ? min(n, pos + radius + 1) : n;
#pragma unroll
				for (int e = 0; e < 4; e++) {
					int key = 32 * warp + kg + 8 * e, g = kb + key;
					P[q * PS + key] = act && g >= lo && g < hi ? s[a][e] * scale : NEG;
				}
			}
		}
		__syncthreads();
		// The online softmax step of query warp over this chunk.
		{
			float sv[KC / 32], cmax = NEG;
#pragma unroll
			for (int j = 0; j < KC / 32; j++) {
				sv[j] = P[wq * PS + lane + 32 * j];
				cmax = fmaxf(cmax, sv[j]);
			}
			cmax = warp_max(cmax);
			float mn = fmaxf(m, cmax), ps = 0.0f;
#pragma unroll
			for (int j = 0; j < KC / 32; j++) {
				float e = sv[j] == NEG ? 0.0f : expf(sv[j] - mn);
				P[wq * PS + lane + 32 * j] = e;
				ps += e;
			}
			float corr = expf(m - mn);
			l = l * corr + warp_sum(ps);
			m = mn;
			if (lane == 0) C[wq] = corr;
		}
		__syncthreads();
		// Probabilities times values: queries qi + 4a, dims d0..d0+3, keys
		// of group grp.
		{
#pragma unroll
			for (int a = 0; a < 4; a++) {
				float c = C[qi + 4 * a];
#pragma unroll
				for (int e = 0; e < 4; e++) acc[a][e] *= c;
			}
			// A group wholly past the last key adds only zeros: left out.
			const int jend = grp * KG < kend ? grp * KG + KG : grp * KG;
#pragma unroll 2
			for (int j = grp * KG; j < jend; j += 4) {
				float4 p[4], v[4];
#pragma unroll
				for (int a = 0; a < 4; a++) p[a] = *(const float4*)&P[(qi + 4 * a) * PS + j];
#pragma unroll
				for (int e = 0; e < 4; e++) v[e] = *(const float4*)&V[(j + e) * DH + d0];
#pragma unroll
				for (int a = 0; a < 4; a++) {
					float pa[4] = {p[a].x, p[a].y, p[a].z, p[a].w};
#pragma unroll
					for (int e = 0; e < 4; e++) {
						acc[a][0] = fmaf(pa[e], v[e].x, acc[a][0]);
						acc[a][1] = fmaf(pa[e], v[e].y, acc[a][1]);
						acc[a][2] = fmaf(pa[e], v[e].z, acc[a][2]);
						acc[a][3] = fmaf(pa[e], v[e].w, acc[a][3]);
					}
				}
			}
		}
	}
	// The groups' sums meet.
	__syncthreads();
	float* R = K; // [G][QT][RS]
#pragma unroll
	for (int a = 0; a < 4; a++)
		*(float4*)&R[(grp * QT + qi + 4 * a) * RS + d0] = make_float4(acc[a][0], acc[a][1], acc[a][2], acc[a][3]);
	if (lane == 0) L[wq] = l; // read for real queries only
	__syncthreads();
	for (int i = tid; i < QT * D4; i += NT) {
		int q = i / D4, d = (i - q * D4) * 4;
		if (q >= nq) continue;
		float4 y = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
		float lq = L[q];
		// A padding query's output is zero; a real one's is divided even
		// when its sum is not finite, so that an overflow upstream shows
		// as NaN (the model then runs the row again wider).
		if (pos0 + q < n) {
#pragma unroll
			for (int g = 0; g < G; g++) {
				float4 r = *(const float4*)&R[(g * QT + q) * RS + d];
				y.x += r.x;
				y.y += r.y;
				y.z += r.z;
				y.w += r.w;
			}
			y = make_float4(y.x / lq, y.y / lq, y.z / lq, y.w / lq);
		}
		long long o = (long long)(r0 + q) * width + h * DH + d;
		if (dst) *(float4*)&dst[o] = y;
		if (hout) store16x4(hout, o, hlo, y, kind);
	}
}

#define ATTENTION_REG(DH)                                                                                                    \
	extern "C" __global__ void __launch_bounds__(512, 1) attention##DH##_r16(float* dst, const float* qkv, long long two,       \
		const int* tiles, int heads, float scale, int sliding, int radius, const float* rope, u16* hout, int kind, long long hlo) { \
		KERNEL_ENTRY                                                                                                         \
		attn_reg<DH>(dst, qkv, two, tiles, heads, scale, sliding, radius, rope, hout, kind, hlo);                             \
	}
#if LAYA_CORE
ATTENTION_REG(32)
ATTENTION_REG(64)
ATTENTION_REG(128)
#endif

// ---- Attention on tensor cores (FP16 and FP16X2) ----

#define NEG_INF __int_as_float(0xff800000) // exp2f of it is 0

// split2 is pack2 into two terms, as store16 splits an FP16X2 operand: hi
// the rounding, lo the rounding of what hi missed.
__device__ __forceinline__ void split2(float x, float y, u32& hi, u32& lo) {
	hi = pack2(x, y);
	float bx, by;
	unpack2(hi, bx, by);
	lo = pack2(x - bx, y - by);
}

// st4h writes four floats as fp16 at p[0..3] (and, TERMS 2, what that
// missed at p[lo..lo+3]).
template <int TERMS>
__device__ __forceinline__ void st4h(u16* p, int lo, float4 v) {
	u32 h0, h1, l0, l1;
	if (TERMS == 2) {
		split2(v.x, v.y, h0, l0);
		split2(v.z, v.w, h1, l1);
		*(uint2*)(p + lo) = make_uint2(l0, l1);
	} else {
		h0 = pack2(v.x, v.y);
		h1 = pack2(v.z, v.w);
	}
	*(uint2*)p = make_uint2(h0, h1);
}

// attn_exp2 is the tensor-core attention's 2^x: exp2f, or with ATTN_EX2
// the multifunction unit's alone (ex2.approx.ftz: the same approximation
// without exp2f's handling of subnormal results, probabilities under 2^-126
// of the row's largest).
__device__ __forceinline__ float attn_exp2(float x) { return ATTN_EX2 ? ex2_approx(x) : exp2f(x); }

// attn_mma_step is one step of NT 8-key score tiles of the tensor-core
// attention's online softmax (attn_mma, attn_rows) for a thread's two rows,
// g and g + 8 of its warp's sixteen: kp0 is the thread's first key of the
// step in shared memory (row g of the first tile, its 2·tq-th element; a
// tile is 8 rows on), vp0 its lane's row of the first 16-key step of the
// values (ldsm4t's; the next is 16 rows on), KT the halves between two
// terms, key0 the position of kp0's key (its tile's keys are key0 + 8nt +
// e). Scores are masked to the rows' windows [loA, hiA) and [loB, hiB)
// unless full (every key inside both); tiles from live on are left out,
// their probabilities 0. The scores' C fragments are the probabilities' A
// fragments, as FlashAttention-2 keeps them.
template <int DH, int TERMS, int NT>
__device__ __forceinline__ void attn_mma_step(const u16* kp0, const u16* vp0, int KT, const u32 (&qa)[TERMS][DH / 16][4], int key0,
	bool full, int live, int loA, int hiA, int loB, int hiB, float sl2, float& mA, float& mB, float& lA, float& lB,
	float (&o)[DH / 8][4]) {
	const int KS = DH + 8, KD = DH / 16, ND = DH / 8, KK = NT / 2;
	float s[NT][4];
#pragma unroll
	for (int nt = 0; nt < NT; nt++) {
		s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
		if (nt >= live) continue;
		const u16* kp = kp0 + 8 * nt * KS;
#pragma unroll
		for (int kd = 0; kd < KD; kd++) {
			u32 b0 = *(const u32*)(kp + 16 * kd), b1 = *(const u32*)(kp + 16 * kd + 8);
			mma16816(s[nt], qa[0][kd], b0, b1);
			if (TERMS == 2) {
				mma16816(s[nt], qa[0][kd], *(const u32*)(kp + KT + 16 * kd), *(const u32*)(kp + KT + 16 * kd + 8));
				mma16816(s[nt], qa[TERMS - 1][kd], b0, b1);
			}
		}
	}
	float xa = -1e30f, xb = -1e30f;
#pragma unroll
	for (int nt = 0; nt < NT; nt++)
#pragma unroll
		for (int e = 0; e < 2; e++) {
			if (ATTN_EX2) { // scaled in the exponent's fmaf below
				if (!full) {
					int key = key0 + 8 * nt + e;
					s[nt][e] = key >= loA && key < hiA ? s[nt][e] : NEG_INF;
					s[nt][2 + e] = key >= loB && key < hiB ? s[nt][2 + e] : NEG_INF;
				}
			} else if (full) {
				s[nt][e] *= sl2;
				s[nt][2 + e] *= sl2;
			} else {
				int key = key0 + 8 * nt + e;
				s[nt][e] = key >= loA && key < hiA ? s[nt][e] * sl2 : NEG_INF;
				s[nt][2 + e] = key >= loB && key < hiB ? s[nt][2 + e] * sl2 : NEG_INF;
			}
			xa = fmaxf(xa, s[nt][e]);
			xb = fmaxf(xb, s[nt][2 + e]);
		}
	// A row's keys of the chunk lie with the four lanes of a quad.
	xa = fmaxf(xa, __shfl_xor_sync(0xffffffffu, xa, 1));
	xa = fmaxf(xa, __shfl_xor_sync(0xffffffffu, xa, 2));
	xb = fmaxf(xb, __shfl_xor_sync(0xffffffffu, xb, 1));
	xb = fmaxf(xb, __shfl_xor_sync(0xffffffffu, xb, 2));
	if (ATTN_EX2) { // sl2 > 0: the maximum of the scaled scores
		xa *= sl2;
		xb *= sl2;
	}
	float nA = fmaxf(mA, xa), nB = fmaxf(mB, xb), cA = attn_exp2(mA - nA), cB = attn_exp2(mB - nB), sA = 0.0f, sB = 0.0f;
	mA = nA;
	mB = nB;
#pragma unroll
	for (int nt = 0; nt < NT; nt++)
#pragma unroll
		for (int e = 0; e < 2; e++) {
			if (ATTN_EX2) {
				s[nt][e] = nt < live ? ex2_approx(fmaf(s[nt][e], sl2, -nA)) : 0.0f;
				s[nt][2 + e] = nt < live ? ex2_approx(fmaf(s[nt][2 + e], sl2, -nB)) : 0.0f;
			} else {
				s[nt][e] = nt < live ? exp2f(s[nt][e] - nA) : 0.0f;
				s[nt][2 + e] = nt < live ? exp2f(s[nt][2 + e] - nB) : 0.0f;
			}
			sA += s[nt][e];
			sB += s[nt][2 + e];
		}
	lA = lA * cA + sA; // per lane; the quad's partial sums meet at the end
	lB = lB * cB + sB;
#pragma unroll
	for (int nd = 0; nd < ND; nd++) {
		o[nd][0] *= cA;
		o[nd][1] *= cA;
		o[nd][2] *= cB;
		o[nd][3] *= cB;
	}
#pragma unroll
	for (int kk = 0; kk < KK; kk++) {
		if (2 * kk >= live) continue; // its probabilities are all 0
		u32 p[TERMS][4];
		if (TERMS == 2) {
			split2(s[2 * kk][0], s[2 * kk][1], p[0][0], p[TERMS - 1][0]);
			split2(s[2 * kk][2], s[2 * kk][3], p[0][1], p[TERMS - 1][1]);
			split2(s[2 * kk + 1][0], s[2 * kk + 1][1], p[0][2], p[TERMS - 1][2]);
			split2(s[2 * kk + 1][2], s[2 * kk + 1][3], p[0][3], p[TERMS - 1][3]);
		} else {
			p[0][0] = pack2(s[2 * kk][0], s[2 * kk][1]);
			p[0][1] = pack2(s[2 * kk][2], s[2 * kk][3]);
			p[0][2] = pack2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
			p[0][3] = pack2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
		}
		// Lane l points at key 16kk + 8·(l/8 % 2) + l%8, dims from
		// 8·(nd + l/16): b[0], b[1] are head dims 8nd.., b[2], b[3] the
		// next eight.
		const u16* vp = vp0 + 16 * kk * KS;
#pragma unroll
		for (int nd = 0; nd < ND; nd += 2) {
			u32 b[4], c[4];
			ldsm4t(b, vp + 8 * nd);
			mma16816(o[nd], p[0], b[0], b[1]);
			mma16816(o[nd + 1], p[0], b[2], b[3]);
			if (TERMS == 2) {
				ldsm4t(c, vp + KT + 8 * nd);
				mma16816(o[nd], p[0], c[0], c[1]);
				mma16816(o[nd + 1], p[0], c[2], c[3]);
				mma16816(o[nd], p[TERMS - 1], b[0], b[1]);
				mma16816(o[nd + 1], p[TERMS - 1], b[2], b[3]);
			}
		}
	}
}

// attn_mma_q loads a thread's A fragments of its warp's 16 queries (row g
// of q, its 2·tq-th element; TERMS terms QT halves apart) for every 16 of
// the head dim.
template <int DH, int TERMS>
__device__ __forceinline__ void attn_mma_q(u32 (&qa)[TERMS][DH / 16][4], const u16* q0, int QT) {
	const int KS = DH + 8;
#pragma unroll
	for (int e = 0; e < TERMS; e++)
#pragma unroll
		for (int kd = 0; kd < DH / 16; kd++) {
			const u16* q = q0 + e * QT + 16 * kd;
			qa[e][kd][0] = *(const u32*)q;
			qa[e][kd][1] = *(const u32*)(q + 8 * KS);
			qa[e][kd][2] = *(const u32*)(q + 8);
			qa[e][kd][3] = *(const u32*)(q + 8 * KS + 8);
		}
}

// attn_mma_sum adds a row's softmax sums over the quad whose lanes hold its
// keys.
__device__ __forceinline__ void attn_mma_sum(float& lA, float& lB) {
	lA += __shfl_xor_sync(0xffffffffu, lA, 1);
	lA += __shfl_xor_sync(0xffffffffu, lA, 2);
	lB += __shfl_xor_sync(0xffffffffu, lB, 1);
	lB += __shfl_xor_sync(0xffffffffu, lB, 2);
}

// attn_mma_out writes a thread's outputs of its two rows, qr and qr + 8 of
// the tile (position pos0 + qr; none at or past nq), normalised by their
// sums: ob0 is the tile's first row's element of this thread (its head's,
// 2·tq on), a row width on from the next.
template <int DH>
__device__ __forceinline__ void attn_mma_out(const float (&o)[DH / 8][4], float lA, float lB, int qr, int nq, int pos0, int n,
	long long ob0, int width, float* dst, u16* hout, long long hlo, int kind) {
#pragma unroll
	for (int half = 0; half < 2; half++) {
		int qi = qr + 8 * half;
		if (qi >= nq) continue;
		// Queries at or past the real length are padding: zero.
		float inv = pos0 + qi < n ? 1.0f / (half ? lB : lA) : 0.0f;
		long long ob = ob0 + (long long)qi * width;
#pragma unroll
		for (int nd = 0; nd < DH / 8; nd++) {
			float y0 = o[nd][2 * half] * inv, y1 = o[nd][2 * half + 1] * inv;
			if (dst) *(float2*)(dst + ob + 8 * nd) = make_float2(y0, y1);
			if (hout) store16x2(hout, ob + 8 * nd, hlo, y0, y1, kind);
		}
	}
}

// attn_mma: flash attention on tensor cores (mma.sync m16n8k16: fp16
// operands, float32 accumulation) for the 16-bit precisions. One block of W
// warps per (tile of up to 16·W queries of one batch row, head); warp w owns
// tile rows 16w..16w+15 and keeps an online softmax for each (a thread for
// two rows: g and g+8 of its warp's sixteen). A tile's keys and values
// stream through shared memory KC at a time as fp16, keys rotated by RoPE as
// they are loaded, both row-major: the scores' B fragments are 32-bit loads
// of keys, the values' come transposed by ldmatrix. Rows are padded by 8
// halves, which puts the eight rows a fragment load touches in distinct
// banks. The scores' C
// fragments are the probabilities' A fragments (as FlashAttention-2 keeps
// them), so the probabilities never leave registers.
// TERMS 1 (FP16) rounds q, k, v and the probabilities to fp16 once, as that
// precision rounds a GEMM's operands; TERMS 2 (FP16X2) splits each into two
// fp16 terms and multiplies hi·hi + hi·lo + lo·hi (three mma; lo·lo, about
// 2^-22 of the product, is left out), which keeps about float32's accuracy.
// tiles, masks, padding queries, rope, two, hout: as attn_tiled. Dynamic
// shared memory: attnMmaShared in stream.go.
//
// SPLIT: the block's W warps share one tile of 16 queries and split each
// chunk's keys instead, warp w the 16 from 16w (flash-decoding's split
// within a block), so that a question's few tiles load their keys and
// values with W warps; at the end the warps' softmax states meet in shared
// memory (the chunks' space) and every thread finishes some outputs.
template <int DH, int W, int TERMS, bool HIN, bool SPLIT>
__device__ void attn_mma(float* dst, const void* qkv, long long two, const int* tiles, int heads, float scale, int sliding,
	int radius, const float* rope, u16* hout, int kind, long long hlo) {
	static_assert(!SPLIT || W == 4, "the key-split kernel's four warps take 16 keys each of a 64-key chunk");
	const int KC = SPLIT ? 64 : 16 * ATTN_MMA_KC16, QT = SPLIT ? 16 : 16 * W, KS = DH + 8, H4 = DH / 8, KD = DH / 16, ND = DH / 8;
	// The 8-key score tiles of a chunk a warp computes, and the 16-key
	// steps of its probabilities times values.
	const int SC = KC < 64 ? KC : 64, NT = SPLIT ? 2 : SC / 8, KK = SPLIT ? 1 : SC / 16;
	const int KT = KC * KS, QTS = QT * KS; // a term's halves
	// LEANV: the values as fp16, copied straight into shared memory (a
	// widened fp16 value narrows back to itself).
	constexpr bool LEANV = ATTN_MMA_LEAN && HIN && TERMS == 1;
	extern __shared__ float4 smem4[];
	u16* Ks = (u16*)smem4;      // [TERMS][KC][KS]
	u16* Vs = Ks + TERMS * KT;  // [TERMS][KC][KS]
	u16* Qs = Vs + TERMS * KT;  // [TERMS][QT][KS]
	const int* t = tiles + 5 * blockIdx.x;
	int r0 = t[0], start = t[1], n = t[2], pos0 = t[3], nq = t[4];
	if (nq == 0) return; // past the real tiles of a packed batch (tileGrid)
	int h = blockIdx.y, width = heads * DH, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
	const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	for (int i = threadIdx.x; i < QT * H4; i += 32 * W) {
		int qi = i / H4, j = (i - qi * H4) * 4;
		float4 lo = zero, hi = zero;
		if (qi < nq) ld4rope2x<DH, HIN>(qkv, (long long)(r0 + qi) * 3 * width + h * DH, two, j, rope, pos0 + qi, lo, hi);
		st4h<TERMS>(Qs + qi * KS + j, QTS, lo);
		st4h<TERMS>(Qs + qi * KS + j + DH / 2, QTS, hi);
	}
	// The queries' fragments are read once the first chunk's keys and
	// values are in too: one round of loads from memory and one barrier
	// before the first products, not two.
	int qr = SPLIT ? g : 16 * warp + g; // this thread's rows: qr and qr + 8
	int nt0 = SPLIT ? 2 * warp : 0;     // its first score tile of a chunk
	u32 qa[TERMS][KD][4];
	int pa = pos0 + qr, pb = pa + 8;
	int loA = sliding ? max(0, pa - radius) : 0, hiA = sliding ? min(n, pa + radius + 1) : n;
	int loB = sliding ? max(0, pb - radius) : 0, hiB = sliding ? min(n, pb + radius + 1) : n;
	int klo = 0, khi = n;
	if (sliding) {
		klo = max(0, pos0 - radius);
		khi = min(n, pos0 + nq - 1 + radius + 1);
	}
	bool busy = SPLIT || 16 * warp < nq;
	const float sl2 = scale * 1.4426950408889634f; // exp2 of scores in log2 units
	float mA = -1e30f, mB = -1e30f, lA = 0.0f, lB = 0.0f, o[ND][4];
#pragma unroll
	for (int nd = 0; nd < ND; nd++) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
	for (int kb = klo; kb < khi; kb += KC) {
		// The chunk's keys a product reads: to the end of the 16-key step
		// holding the last key, those past it zeros; ATTN_SKIP leaves out
		// the rest, whose probabilities are 0 and whose scores are masked.
		const int kend = ATTN_SKIP ? min(KC, (khi - kb + 15) & ~15) : KC;
		__syncthreads();
#pragma unroll (tunables::attn_mma_unroll)
		for (int i = threadIdx.x; i < kend * H4; i += 32 * W) {
			int key = i / H4, d = (i - key * H4) * 4, gk = kb + key;
			float4 k0 = zero, k1 = zero, v0 = zero, v1 = zero;
			if (gk < khi) {
				long long row = (long long)(start + gk) * 3 * width + h * DH;
				ld4rope2x<DH, HIN>(qkv, row + width, two, d, rope, gk, k0, k1);
				if (!LEANV) {
					v0 = ld4x<HIN>(qkv, row + 2 * width + d, two);
					v1 = ld4x<HIN>(qkv, row + 2 * width + d + DH / 2, two);
				}
			}
			st4h<TERMS>(Ks + key * KS + d, KT, k0);
			st4h<TERMS>(Ks + key * KS + d + DH / 2, KT, k1);
			if (!LEANV) {
				st4h<TERMS>(Vs + key * KS + d, KT, v0);
				st4h<TERMS>(Vs + key * KS + d + DH / 2, KT, v1);
			}
		}
		if (LEANV) {
			// A key's DH values are DH/8 16-byte chunks, in place.
			const uint4 none = {0u, 0u, 0u, 0u};
			for (int i = threadIdx.x; i < kend * (DH / 8); i += 32 * W) {
				int key = i / (DH / 8), c = 8 * (i - key * (DH / 8)), gk = kb + key;
				u16* v = Vs + key * KS + c;
				if (gk < khi)
					cp_async16a(smem_addr(v), (const u16*)qkv + (long long)(start + gk) * 3 * width + 2 * width + h * DH + c);
				else
					*(uint4*)v = none;
			}
			cp_async_wait_all();
		}
		__syncthreads();
		if (!busy) continue;
		if (kb == klo) attn_mma_q<DH, TERMS>(qa, Qs + qr * KS + 2 * tq, QTS);
		// The chunk's keys SC at a time: a chunk longer than 64 keys loads
		// them in one round, its scores stay a 64-key step's registers.
		for (int sb = 0; sb < KC && kb + sb < khi; sb += SC) {
			// full: every key of the step lies in the window of every row of
			// the warp's (the rows from rb, sixteen, their windows moving
			// with them), so the masks would pass every score.
			const int rb = SPLIT ? pos0 : pos0 + 16 * warp, kf = kb + sb;
			const bool full = ATTN_MMA_LEAN && kf >= (sliding ? max(0, rb + 15 - radius) : 0) &&
				kf + SC <= (sliding ? min(n, rb + radius + 1) : n);
			// live: the step's 8-key score tiles holding a key (the rest are
			// masked whatever their products, and their probabilities 0).
			const int live = ATTN_SKIP ? (kend - sb + 7) / 8 - nt0 : NT;
			attn_mma_step<DH, TERMS, NT>(Ks + (sb + 8 * nt0 + g) * KS + 2 * tq,
				Vs + (sb + 16 * (SPLIT ? warp : 0) + (lane & 15)) * KS + 8 * (lane >> 4), KT, qa, kf + 8 * nt0 + 2 * tq, full, live,
				loA, hiA, loB, hiB, sl2, mA, mB, lA, lB, o);
		}
	}
	attn_mma_sum(lA, lB);
	if (SPLIT) {
		// Each warp's maximum, sum and unnormalised outputs of the 16
		// rows, then the rows' outputs from all of them.
		__syncthreads(); // no warp reads the chunk any more
		float* cm = (float*)smem4;
		float* cl = cm + 16 * W;
		float* co = cl + 16 * W; // [W][16][DH]
		if (tq == 0) {
			cm[16 * warp + g] = mA;
			cm[16 * warp + g + 8] = mB;
			cl[16 * warp + g] = lA;
			cl[16 * warp + g + 8] = lB;
		}
#pragma unroll
		for (int nd = 0; nd < ND; nd++) {
			float* ra = co + (16 * warp + g) * DH + 8 * nd + 2 * tq;
			ra[0] = o[nd][0];
			ra[1] = o[nd][1];
			ra[8 * DH] = o[nd][2];
			ra[8 * DH + 1] = o[nd][3];
		}
		__syncthreads();
		for (int i = threadIdx.x; i < 16 * DH / 2; i += 32 * W) {
			int qi = i / (DH / 2), c = 2 * (i - qi * (DH / 2));
			if (qi >= nq) continue;
			float m = -1e30f;
#pragma unroll
			for (int w = 0; w < W; w++) m = fmaxf(m, cm[16 * w + qi]);
			float l = 0.0f, y0 = 0.0f, y1 = 0.0f;
#pragma unroll
			for (int w = 0; w < W; w++) {
				float f = attn_exp2(cm[16 * w + qi] - m);
				l += f * cl[16 * w + qi];
				y0 += f * co[(16 * w + qi) * DH + c];
				y1 += f * co[(16 * w + qi) * DH + c + 1];
			}
			// Queries at or past the real length are padding: zero.
			float inv = pos0 + qi < n ? 1.0f / l : 0.0f;
			y0 *= inv;
			y1 *= inv;
			long long ob = (long long)(r0 + qi) * width + h * DH + c;
			if (dst) *(float2*)(dst + ob) = make_float2(y0, y1);
			if (hout) store16x2(hout, ob, hlo, y0, y1, kind);
		}
		return;
	}
	if (!busy) return;
	attn_mma_out<DH>(o, lA, lB, qr, nq, pos0, n, (long long)r0 * width + h * DH + 2 * tq, width, dst, hout, hlo, kind);
}

#define ATTENTION_MMA(DH, W, TERMS, HIN, SPLIT, NAME)                                                                  \
	extern "C" __global__ void ATTN_MMA_BOUNDS(W * 32) NAME(float* dst, const void* qkv, long long two, const int* tiles, \
		int heads, float scale, int sliding, int radius, const float* rope, u16* hout, int kind, long long hlo) {        \
		KERNEL_ENTRY                                                                                                     \
		attn_mma<DH, W, TERMS, HIN, SPLIT>(dst, qkv, two, tiles, heads, scale, sliding, radius, rope, hout, kind, hlo);  \
	}
// A head dim's tensor-core kernels: 1, 2, 4 and 8 warps a block, one or
// two terms, and one term reading fp16 qkv (suffix 1h); and four warps
// splitting the keys of a 16-query tile (4s).
#define ATTENTIONS_MMA_W(DH, W)                                                                                        \
	ATTENTION_MMA(DH, W, 1, false, false, attention_mma##DH##_##W##_1)                                                 \
	ATTENTION_MMA(DH, W, 2, false, false, attention_mma##DH##_##W##_2)                                                 \
	ATTENTION_MMA(DH, W, 1, true, false, attention_mma##DH##_##W##_1h)
// The four-warp kernels are the core's (the default); the others, and the
// key-split ones, only options or a GPU short of shared memory ask for.
#define ATTENTIONS_MMA_EXTRA(DH)                                                                                       \
	ATTENTIONS_MMA_W(DH, 1) ATTENTIONS_MMA_W(DH, 2) ATTENTIONS_MMA_W(DH, 8)                                           \
	ATTENTION_MMA(DH, 4, 1, false, true, attention_mma##DH##_4s_1)                                                     \
	ATTENTION_MMA(DH, 4, 2, false, true, attention_mma##DH##_4s_2)                                                     \
	ATTENTION_MMA(DH, 4, 1, true, true, attention_mma##DH##_4s_1h)
#if LAYA_CORE
ATTENTIONS_MMA_W(32, 4)
ATTENTIONS_MMA_W(64, 4)
ATTENTIONS_MMA_W(128, 4)
#endif
#if LAYA_EXTRAS
ATTENTIONS_MMA_EXTRA(32)
ATTENTIONS_MMA_EXTRA(64)
ATTENTIONS_MMA_EXTRA(128)
#endif

// ATTN_ROWS_KEYS: the longest batch row attn_rows takes (stream.go's
// rowsKeys).
#define ATTN_ROWS_KEYS 128

// attn_rows: attn_mma for batch rows of at most ATTN_ROWS_KEYS tokens, one
// block of W warps per (batch row, head) instead of per (tile of 16·W
// queries, head). The row's queries, keys and values come into shared
// memory once, in one round of loads (cp.async for fp16 q, k, v in one
// term, then RoPE on the queries and keys in place), where attn_mma loads
// every tile's keys again, a chunk a round with a barrier between; then
// the warps take the row's 16-query groups in turn (warp w the groups w,
// w + W, ...), each over the 64-key steps of its group's windows with no
// barrier between. attn_mma's arithmetic, step for step (attn_mma_step):
// where both start their steps at the same key (no sliding window, or a
// radius of 64 or more) the outputs are the same bit for bit. tiles: as
// attn_mma's for tiles of ATTN_ROWS_KEYS queries, a tile a batch row (the
// stream takes this kernel only where every row fits). Dynamic shared
// memory: attnRowsShared in stream.go.
template <int DH, int W, int TERMS, bool HIN>
__device__ void attn_rows(float* dst, const void* qkv, long long two, const int* tiles, int heads, float scale, int sliding,
	int radius, const float* rope, u16* hout, int kind, long long hlo) {
	const int KR = ATTN_ROWS_KEYS, KS = DH + 8, H4 = DH / 8, KD = DH / 16, ND = DH / 8, NT = 8, T = KR * KS;
	extern __shared__ float4 smem4[];
	u16* Ks = (u16*)smem4;     // [TERMS][KR][KS]
	u16* Vs = Ks + TERMS * T;  // [TERMS][KR][KS]
	u16* Qs = Vs + TERMS * T;  // [TERMS][KR][KS]
	const int* t = tiles + 5 * blockIdx.x;
	int r0 = t[0], start = t[1], n = t[2], pos0 = t[3], nq = t[4];
	if (nq == 0) return; // past the real tiles of a packed batch (tileGrid)
	int h = blockIdx.y, width = heads * DH, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
	int klo = 0, khi = n;
	if (sliding) {
		klo = max(0, pos0 - radius);
		khi = min(n, pos0 + nq - 1 + radius + 1);
	}
	// Keys and queries past the row's are zeros up to the steps' ends: a
	// masked score's key and a probability of 0's value must be finite.
	const int span = khi - klo, kpad = (span + 63) & ~63, qpad = (nq + 15) & ~15;
	const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	if (HIN && TERMS == 1) {
		// 16-byte copies, DH/8 a row: queries, then keys, then values.
		const uint4 none = {0u, 0u, 0u, 0u};
		for (int i = threadIdx.x; i < (qpad + 2 * kpad) * (DH / 8); i += 32 * W) {
			int r = i / (DH / 8), c = 8 * (i - r * (DH / 8)), part = r < qpad ? 0 : r < qpad + kpad ? 1 : 2;
			int k = part == 0 ? r : part == 1 ? r - qpad : r - qpad - kpad;
			u16* d = (part == 0 ? Qs : part == 1 ? Ks : Vs) + k * KS + c;
			if (k < (part == 0 ? nq : span)) {
				long long row = part == 0 ? r0 + k : start + klo + k;
				cp_async16a(smem_addr(d), (const u16*)qkv + row * 3 * width + part * width + h * DH + c);
			} else {
				*(uint4*)d = none;
			}
		}
		cp_async_wait_all();
		if (rope) {
			// Rotated in place, rounded to fp16 once, as ld4rope2x's values
			// are on their way in.
			__syncthreads();
			for (int i = threadIdx.x; i < (nq + span) * H4; i += 32 * W) {
				int r = i / H4, j = (i - r * H4) * 4;
				u16* p = r < nq ? Qs + r * KS : Ks + (r - nq) * KS;
				float4 lo, hi;
				rope4<DH>(ld4h(p + j), ld4h(p + j + DH / 2), rope, r < nq ? pos0 + r : klo + r - nq, j, lo, hi);
				st4h<1>(p + j, 0, lo);
				st4h<1>(p + j + DH / 2, 0, hi);
			}
		}
	} else {
		for (int i = threadIdx.x; i < (qpad + kpad) * H4; i += 32 * W) {
			int r = i / H4, j = (i - r * H4) * 4;
			float4 a0 = zero, a1 = zero, v0 = zero, v1 = zero;
			if (r < qpad) {
				if (r < nq) ld4rope2x<DH, HIN>(qkv, (long long)(r0 + r) * 3 * width + h * DH, two, j, rope, pos0 + r, a0, a1);
				st4h<TERMS>(Qs + r * KS + j, T, a0);
				st4h<TERMS>(Qs + r * KS + j + DH / 2, T, a1);
				continue;
			}
			int k = r - qpad;
			if (k < span) {
				long long row = (long long)(start + klo + k) * 3 * width + h * DH;
				ld4rope2x<DH, HIN>(qkv, row + width, two, j, rope, klo + k, a0, a1);
				v0 = ld4x<HIN>(qkv, row + 2 * width + j, two);
				v1 = ld4x<HIN>(qkv, row + 2 * width + j + DH / 2, two);
			}
			st4h<TERMS>(Ks + k * KS + j, T, a0);
			st4h<TERMS>(Ks + k * KS + j + DH / 2, T, a1);
			st4h<TERMS>(Vs + k * KS + j, T, v0);
			st4h<TERMS>(Vs + k * KS + j + DH / 2, T, v1);
		}
	}
	__syncthreads();
	const float sl2 = scale * 1.4426950408889634f; // exp2 of scores in log2 units
	for (int grp = warp; 16 * grp < nq; grp += W) {
		int qr = 16 * grp + g, pa = pos0 + qr, pb = pa + 8, rb = pos0 + 16 * grp;
		int loA = sliding ? max(0, pa - radius) : 0, hiA = sliding ? min(n, pa + radius + 1) : n;
		int loB = sliding ? max(0, pb - radius) : 0, hiB = sliding ? min(n, pb + radius + 1) : n;
		u32 qa[TERMS][KD][4];
		attn_mma_q<DH, TERMS>(qa, Qs + qr * KS + 2 * tq, T);
		// The steps holding a key of the group's windows: a step wholly
		// outside them changes no state (its probabilities are 0 and its
		// rescale 1), so leaving it out keeps attn_mma's results.
		int s0 = klo, s1 = khi;
		if (sliding) {
			s0 = klo + ((max(klo, rb - radius) - klo) & ~63);
			s1 = min(khi, rb + 15 + radius + 1);
		}
		float mA = -1e30f, mB = -1e30f, lA = 0.0f, lB = 0.0f, o[ND][4];
#pragma unroll
		for (int nd = 0; nd < ND; nd++) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
		for (int kf = s0; kf < s1; kf += 64) {
			int sb = kf - klo;
			attn_mma_step<DH, TERMS, NT>(Ks + (sb + g) * KS + 2 * tq, Vs + (sb + (lane & 15)) * KS + 8 * (lane >> 4), T, qa,
				kf + 2 * tq, false, NT, loA, hiA, loB, hiB, sl2, mA, mB, lA, lB, o);
		}
		attn_mma_sum(lA, lB);
		attn_mma_out<DH>(o, lA, lB, qr, nq, pos0, n, (long long)r0 * width + h * DH + 2 * tq, width, dst, hout, hlo, kind);
	}
}

#define ATTENTION_ROWS(DH, W, TERMS, HIN, NAME)                                                                        \
	extern "C" __global__ void ATTN_ROWS_BOUNDS(W * 32) NAME(float* dst, const void* qkv, long long two, const int* tiles, \
		int heads, float scale, int sliding, int radius, const float* rope, u16* hout, int kind, long long hlo) {         \
		KERNEL_ENTRY                                                                                                      \
		attn_rows<DH, W, TERMS, HIN>(dst, qkv, two, tiles, heads, scale, sliding, radius, rope, hout, kind, hlo);        \
	}
// A head dim's whole-row kernels at W warps: one and two terms, and one
// term reading fp16 qkv (suffix 1h), as attn_mma's.
#define ATTENTIONS_ROWS_W(DH, W)                                                                                       \
	ATTENTION_ROWS(DH, W, 1, false, attention_rows##DH##_##W##_1)                                                      \
	ATTENTION_ROWS(DH, W, 2, false, attention_rows##DH##_##W##_2)                                                      \
	ATTENTION_ROWS(DH, W, 1, true, attention_rows##DH##_##W##_1h)
// Opt-in (attnrows): the extras, so that an Open without it does not
// compile them.
#if LAYA_EXTRAS
ATTENTIONS_ROWS_W(32, 4)
ATTENTIONS_ROWS_W(64, 4)
ATTENTIONS_ROWS_W(128, 4)
ATTENTIONS_ROWS_W(32, 6)
ATTENTIONS_ROWS_W(64, 6)
ATTENTIONS_ROWS_W(128, 6)
ATTENTIONS_ROWS_W(32, 8)
ATTENTIONS_ROWS_W(64, 8)
ATTENTIONS_ROWS_W(128, 8)
#endif

// ---- Linears on few rows ----

// linear_small's shape: x of at most LIN_ROWS rows (stream.go's smallRows),
// LIN_R columns of the output (weight rows) a block, LIN_WARPS warps a block
// splitting k (stream.go's smallCols and smallWarps).
#define LIN_ROWS 16
#define LIN_R 4
#define LIN_WARPS 4

// from16 widens one 16-bit weight of kind KIND (to16's: 1 fp16, 2 bf16);
// both are exact in float32.
template <int KIND>
__device__ __forceinline__ float from16(u16 h) {
	if constexpr (KIND == 2) {
		return __uint_as_float((u32)h << 16);
	} else {
		return f16to32(h);
	}
}

// from16x2 widens the two 16-bit weights of q, the lower half first.
template <int KIND>
__device__ __forceinline__ void from16x2(u32 q, float& lo, float& hi) {
	if constexpr (KIND == 2) {
		lo = __uint_as_float(q << 16);
		hi = __uint_as_float(q & 0xffff0000u);
	} else {
		unpack2(q, lo, hi);
	}
}

// ldf reads V floats at p: one element, or V/4 16-byte loads.
template <int V>
__device__ __forceinline__ void ldf(const float* p, float* v) {
	if constexpr (V == 1) {
		v[0] = p[0];
	} else {
#pragma unroll
		for (int i = 0; i < V; i += 4) {
			float4 q = *(const float4*)(p + i);
			v[i] = q.x;
			v[i + 1] = q.y;
			v[i + 2] = q.z;
			v[i + 3] = q.w;
		}
	}
}

// ldw reads V weights at element i of w as floats: KIND 0 float32 (V 4 or
// 1), 1 fp16 or 2 bf16 (V 8, one 16-byte load, 4, one 8-byte load, or 1).
template <int KIND, int V>
__device__ __forceinline__ void ldw(const void* w, long long i, float* v) {
	static_assert(V == 1 || (KIND == 0 ? V == 4 : V == 8 || V == 4), "ldw: 16- or 8-byte loads or single elements");
	if constexpr (KIND == 0) {
		ldf<V>((const float*)w + i, v);
	} else if constexpr (V == 1) {
		v[0] = from16<KIND>(((const u16*)w)[i]);
	} else if constexpr (V == 4) {
		uint2 q = *(const uint2*)((const u16*)w + i);
		from16x2<KIND>(q.x, v[0], v[1]);
		from16x2<KIND>(q.y, v[2], v[3]);
	} else {
		uint4 q = *(const uint4*)((const u16*)w + i);
		from16x2<KIND>(q.x, v[0], v[1]);
		from16x2<KIND>(q.y, v[2], v[3]);
		from16x2<KIND>(q.z, v[4], v[5]);
		from16x2<KIND>(q.w, v[6], v[7]);
	}
}

// warp_sums sums each of a lane's N values a[] (N a power of two) over the
// warp, leaving the sums spread over the lanes: at offset O the lanes
// whose bit O is set keep the upper half of what is left and the others
// the lower half, each adding its partner's copy of the half it keeps (N/2
// shuffles where N warp_sum calls take 5N). A lane ends with N/32 sums,
// those of indices N/32·lane onward, or, N < 32, with sum lane/(32/N),
// which 32/N lanes then hold.
template <int N, int O>
__device__ __forceinline__ void warp_sums(float* a, int lane) {
	if constexpr (O > 0) {
		if constexpr (N > 1) {
			bool upper = (lane & O) != 0;
#pragma unroll
			for (int i = 0; i < N / 2; i++) {
				// Each value read once: a select of two reads of a[] becomes
				// a read at a selected index, which puts a[] in local memory.
				float lo = a[i], hi = a[i + N / 2];
				a[i] = (upper ? hi : lo) + __shfl_xor_sync(0xffffffffu, upper ? lo : hi, O);
			}
			warp_sums<N / 2, O / 2>(a, lane);
		} else {
			a[0] += __shfl_xor_sync(0xffffffffu, a[0], O);
			warp_sums<1, O / 2>(a, lane);
		}
	}
}

// lin_rows_acc is the products of linear_small's shape: a block's LIN_R
// weight rows (of kind KIND, row j at element wr[j] of w) times up to M ≤
// LIN_ROWS rows of x over their first kx elements, V at a time, the
// block's warps splitting those elements and each lane keeping a[r·LIN_R +
// j] for every row r and weight row j. xr reads V of x's row r at element
// c (xr(r, c, xv); lin_x).
template <int KIND, int V, int M, typename XR>
__device__ __forceinline__ void lin_rows_acc(float (&a)[M * LIN_R], const void* __restrict__ w, const long long (&wr)[LIN_R], int m,
	int kx, XR xr) {
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
	for (int i = 0; i < M * LIN_R; i++) a[i] = 0.0f;
	for (int c = V * (32 * warp + lane); c < kx; c += V * 32 * LIN_WARPS) {
		float wv[LIN_R][V];
#pragma unroll
		for (int j = 0; j < LIN_R; j++) ldw<KIND, V>(w, wr[j] + c, wv[j]);
#pragma unroll
		for (int r = 0; r < M; r++) {
			if (r < m) {
				float xv[V];
				xr(r, c, xv);
#pragma unroll
				for (int j = 0; j < LIN_R; j++)
#pragma unroll
					for (int e = 0; e < V; e++) a[r * LIN_R + j] = fmaf(xv[e], wv[j][e], a[r * LIN_R + j]);
			}
		}
	}
}

// lin_rows_sum adds lin_rows_acc's sums over the lanes and warps of the
// block: thread t then takes row t / LIN_R, weight row t % LIN_R, whose sum
// it returns (the warps' in order). part is LIN_WARPS·M·LIN_R floats of
// shared memory; a barrier inside, so every thread calls it.
template <int M>
__device__ __forceinline__ float lin_rows_sum(float (&a)[M * LIN_R], float* part) {
	const int N = M * LIN_R, PER = N >= 32 ? N / 32 : 1, SPAN = N >= 32 ? 1 : 32 / N;
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t = threadIdx.x;
	warp_sums<N, 16>(a, lane);
	if (lane % SPAN == 0)
#pragma unroll
		for (int i = 0; i < PER; i++) part[warp * N + lane / SPAN * PER + i] = a[i];
	__syncthreads();
	float v = 0.0f;
	if (t < N)
#pragma unroll
		for (int q = 0; q < LIN_WARPS; q++) v += part[q * N + t];
	return v;
}

// lin_wrows is the first element of the block's LIN_R weight rows of k
// elements each, of n: past n the last row again, whose sums are never
// written.
__device__ __forceinline__ void lin_wrows(long long (&wr)[LIN_R], int n, int k) {
#pragma unroll
	for (int j = 0; j < LIN_R; j++) wr[j] = (long long)min((int)blockIdx.x * LIN_R + j, n - 1) * k;
}

// lin_x reads V values of row r of a row-major x of k columns.
template <int V>
struct lin_x {
	const float* x;
	int k;
	__device__ __forceinline__ void operator()(int r, int c, float* xv) const { ldf<V>(x + (long long)r * k + c, xv); }
};

// lin_small is linear_small for at most M rows, weights of kind KIND read
// V at a time (V 1: rows not 16-byte aligned, k not a multiple of 4 or 8).
// part is LIN_WARPS·M·LIN_R floats of shared memory.
template <int KIND, int V, int M>
__device__ void lin_small(float* d, const float* __restrict__ x, const void* __restrict__ w, const float* b, int m, int k, int n,
	int act, int accum, float* part) {
	long long wr[LIN_R];
	lin_wrows(wr, n, k);
	float a[M * LIN_R];
	lin_rows_acc<KIND, V, M>(a, w, wr, m, k, lin_x<V>{x, k});
	float v = lin_rows_sum<M>(a, part);
	int t = threadIdx.x, r = t / LIN_R, col = blockIdx.x * LIN_R + t % LIN_R;
	if (r >= m || col >= n) return;
	long long o = (long long)r * n + col;
	// The bias before the residual: d + (x·wᵀ + b), the Linear's output
	// then the Add the fold replaced, rounded as the two were.
	if (b) v += b[col];
	if (accum) v += d[o];
	d[o] = activate(v, act);
}

template <int M>
__device__ __forceinline__ void lin_small_rows(float* d, const float* x, const void* w, int wkind, const float* b, int m, int k, int n,
	int act, int accum, float* part) {
	if (wkind == 1) {
		if (k % 8 == 0)
			lin_small<1, 8, M>(d, x, w, b, m, k, n, act, accum, part);
		else
			lin_small<1, 1, M>(d, x, w, b, m, k, n, act, accum, part);
	} else if (wkind == 2) {
		if (k % 8 == 0)
			lin_small<2, 8, M>(d, x, w, b, m, k, n, act, accum, part);
		else
			lin_small<2, 1, M>(d, x, w, b, m, k, n, act, accum, part);
	} else {
		if (k % 4 == 0)
			lin_small<0, 4, M>(d, x, w, b, m, k, n, act, accum, part);
		else
			lin_small<0, 1, M>(d, x, w, b, m, k, n, act, accum, part);
	}
}

// linear_small: d = act(x·wᵀ + b), plus d's own value when accum (a
// residual Add folded in, the GEMM's beta = 1; Discard folds one only
// without an activation), for x [m ≤ LIN_ROWS, k] and w [n, k], in
// one launch where the GEMM path takes three or four (x's 16-bit copy, the
// GEMM, often a split-K reduction, bias_act), each longer than the work at
// these sizes. Block blockIdx.x computes columns LIN_R·blockIdx.x onward of
// every row: its warps split k, each weight element is read once, by one
// lane, in 16-byte loads, and each x element a lane reads from L1 serves
// LIN_R weight rows. x is read as float32 as it is: no 16-bit copy to
// write first, and more exact than the GEMM's rounded operand (FP16X2's
// two terms included). w is the weight as the precision keeps it resident
// (wkind 0 float32, 1 fp16, 2 bf16). Float32 accumulation: chains of
// k/(32·LIN_WARPS) products a lane, then a tree over lanes and warps.
#if LAYA_CORE
extern "C" __global__ void __launch_bounds__(32 * LIN_WARPS) linear_small(float* d, const float* x, const void* w, int wkind,
	const float* b, int m, int k, int n, int act, int accum) {
	KERNEL_ENTRY
	__shared__ float part[LIN_WARPS * LIN_ROWS * LIN_R];
	if (m <= 4)
		lin_small_rows<4>(d, x, w, wkind, b, m, k, n, act, accum, part);
	else
		lin_small_rows<LIN_ROWS>(d, x, w, wkind, b, m, k, n, act, accum, part);
}
#endif

// ---- GEMMs of few rows on tensor cores ----

// linear_mma's shape (linearmma.go's lmmaTiles): a block of WARPS warps (4
// or 8) computes 16·WARPS output columns (weight rows) of up to 16·LMMA_MT
// rows of x over one split of k; each warp takes 16 of the columns for all
// the rows.
#define LMMA_MT 8

// lmma_act is activate out of line. lin_mma's epilogue is unrolled over a
// thread's 64 outputs, and gelu's double-precision erfc inlined in every
// copy once made a GEMM of this kind tens of thousands of instructions long,
// stalled on fetching them (docs/cuda-perf-log.md); in Laya's GEMMs the
// activation is the rare case.
__device__ __attribute__((noinline)) float lmma_act(float x, int act) { return activate(x, act); }

// lcl_act is an epilogue's activation: out of line (lmma_act), or, RELU,
// ReLU inline and nothing else. A call anywhere in a kernel with warpgroup
// products makes ptxas wait for each product before issuing the next
// (C7509, "serialized due to the presence of Extern calls"), so linear_wg
// takes no GELU (linearcl.go's wgLinear) and its epilogue no call.
template <bool RELU>
__device__ __forceinline__ float lcl_act(float v, int act) {
	if constexpr (RELU)
		return act == ACT_RELU ? (v > 0.0f ? v : 0.0f) : v;
	else
		return lmma_act(v, act);
}

// lmma_finish is linear_mma's epilogue for output element o (column col):
// bias, d's own value first when accum (a residual Add folded in), the
// activation (lcl_act's), then d as float32 or, half, as fp16. It returns
// the value (before any rounding to fp16).
template <bool RELU = false>
__device__ __forceinline__ float lmma_finish(void* d, long long o, int col, float v, const float* bias, int act, int accum, int half) {
	if (accum) v += ((const float*)d)[o];
	if (bias) v += bias[col];
	if (act) v = lcl_act<RELU>(v, act);
	if (half)
		((u16*)d)[o] = to16(v, 1);
	else
		((float*)d)[o] = v;
	return v;
}

// LMMA_SUMS is how many of a tile's split sums lmma_sum2 loads before it
// adds the first: the loads of a batch are in flight together, where one
// add after each load would wait out a trip to L2 a split (the last block
// of a tile adds them all, and did little else).
#define LMMA_SUMS 8

// lmma_sum2 adds the splits' sums at p and at q (splits of each, mn floats
// apart) into v and u, each in split order from 0: the same float32 sums
// however the loads are batched. Both outputs' loads are in flight
// together, where the last block of a tile, the only one adding its
// splits, otherwise waits out one batch of trips to L2 after another; a
// single output passes q = p. T float4 adds four consecutive outputs (p
// and q 16-byte aligned, mn a multiple of 4).
__device__ __forceinline__ void lmma_load(float& v, const float* p) { v = ldcg(p); }
__device__ __forceinline__ void lmma_load(float4& v, const float* p) { v = ldcg4(p); }
__device__ __forceinline__ void lmma_add(float& v, float a) { v += a; }
__device__ __forceinline__ void lmma_add(float4& v, float4 a) {
	v.x += a.x;
	v.y += a.y;
	v.z += a.z;
	v.w += a.w;
}
template <typename T>
__device__ __forceinline__ void lmma_sum2(const float* p, const float* q, long long mn, int splits, T& v, T& u) {
	v = T{};
	u = T{};
	for (int s0 = 0; s0 < splits; s0 += LMMA_SUMS) {
		T a[LMMA_SUMS], b[LMMA_SUMS];
#pragma unroll
		for (int j = 0; j < LMMA_SUMS; j++)
			if (s0 + j < splits) {
				lmma_load(a[j], p + (s0 + j) * mn);
				lmma_load(b[j], q + (s0 + j) * mn);
			}
#pragma unroll
		for (int j = 0; j < LMMA_SUMS; j++)
			if (s0 + j < splits) {
				lmma_add(v, a[j]);
				lmma_add(u, b[j]);
			}
	}
}

// lmma_chunk_shift is log2 of c8 16-byte chunks (a row of a k-slice)
// rounded up to a power of two, c8p: linear_mma's copies take a row's
// chunks c8p at a time, so that a thread finds its row and
// chunk by shifts (a division by c8 in every copy was tens of
// instructions each, in a kernel whose time went to issuing instructions:
// ncu, docs/cuda-perf-log.md).
__device__ __forceinline__ int lmma_chunk_shift(int c8) {
	int csh = 0;
	while ((1 << csh) < c8) csh++;
	return csh;
}

// lmma_copy_w starts the copies of the weight's rows row(0) .. row(BN − 1)
// (−1: past the weight, zeros) from k0 on into Ws ([BN][KS], at shared
// address sW): this thread's chunk cc (of c8) of rows rr, rr + rstep, ...
template <class Row>
__device__ __forceinline__ void lmma_copy_w(const u16* w, int k, int k0, int BN, int KS, u16* Ws, u32 sW, int cc, int c8, int rr,
	int rstep, Row row) {
	const uint4 zero = {0u, 0u, 0u, 0u};
	if (cc >= c8) return;
	for (int r = rr; r < BN; r += rstep) {
		int wr = row(r);
		if (wr >= 0)
			cp_async16a(sW + 2 * (r * KS + 8 * cc), w + (long long)wr * k + k0 + 8 * cc);
		else
			*(uint4*)(Ws + r * KS + 8 * cc) = zero;
	}
}

// lmma_copy_x starts the copies of rows m0.. of x's TERMS terms (xlo
// elements apart; rows of them, zeros up to rp) from k0 on, c8 chunks of 8
// elements, into As ([TERMS][rp][KS], at shared address sA): this
// thread's chunk cc of rows rr, rr + rstep, ... (linear_mma).
template <int TERMS>
__device__ __forceinline__ void lmma_copy_x(const u16* x, long long xlo, int m0, int k, int k0, int rows, int rp, int KS, u16* As,
	u32 sA, int cc, int c8, int rr, int rstep) {
	const uint4 zero = {0u, 0u, 0u, 0u};
	if (cc < c8)
#pragma unroll
		for (int e = 0; e < TERMS; e++) {
			const u16* g = x + e * xlo + (long long)(m0 + rr) * k + k0 + 8 * cc;
			u32 sa = sA + 2 * ((e * rp + rr) * KS + 8 * cc);
			for (int r = rr; r < rp; r += rstep, g += (long long)rstep * k, sa += 2 * rstep * KS) {
				if (r < rows)
					cp_async16a(sa, g);
				else
					*(uint4*)(As + (e * rp + r) * KS + 8 * cc) = zero;
			}
		}
}

// lmma_products is a warp's products over kn of k: acc[mt][nt] the rows
// of x's tile mt (every term) times the weight rows 16·warp + 8·nt ..
// (the weight at shared address sW, [BN][KS]; x at sA, [TERMS][rp][KS]).
// Fragments by ldmatrix: A's four 8×8 matrices are rows 0–7 and 8–15 of
// the tile at k 0–7, then both at k 8–15 (lane l addresses row l%16 at k
// 8·(l/16)); B's are the weight rows of the warp's first 8 columns at k
// 0–7 and 8–15, then its next 8 (w is stored as the "col" operand, k
// contiguous: lane l addresses row 8·(l/16) + l%8 at k 8·(l/8%2)). A
// term's row tiles after one another (the same sums in the same order as
// each tile's terms together: a tile's accumulators take term 0 then term
// 1 at each step of k), so that consecutive products add into different
// accumulators.
template <int TERMS>
__device__ __forceinline__ void lmma_products(float (&acc)[LMMA_MT][2][4], u32 sW, u32 sA, int KS, int rp, int kn, int warp, int lane) {
	const int mts = rp / 16;
#pragma unroll
	for (int mt = 0; mt < LMMA_MT; mt++)
#pragma unroll
		for (int nt = 0; nt < 2; nt++) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
	const u32 bq = sW + 2 * ((16 * warp + 8 * (lane >> 4) + (lane & 7)) * KS + 8 * ((lane >> 3) & 1));
	const u32 aq = sA + 2 * ((lane & 15) * KS + 8 * (lane >> 4));
	const u32 tileBytes = 2 * 16 * KS, termBytes = 2 * rp * KS;
	for (int kk = 0; kk < kn; kk += 16) {
		u32 b[4];
		ldsm4a(b, bq + 2 * kk);
#pragma unroll
		for (int e = 0; e < TERMS; e++)
#pragma unroll
			for (int mt = 0; mt < LMMA_MT; mt++)
				if (mt < mts) {
					u32 a[4];
					ldsm4a(a, aq + e * termBytes + mt * tileBytes + 2 * kk);
					mma16816(acc[mt][0], a, b[0], b[1]);
					mma16816(acc[mt][1], a, b[2], b[3]);
				}
	}
}

// lmma_stage writes a warp's products (lmma_products) to Cs, rows of CS
// floats: tile mt's rows, the warp's 16 columns.
__device__ __forceinline__ void lmma_stage(float* Cs, int CS, const float (&acc)[LMMA_MT][2][4], int mts, int warp, int lane) {
	int g = lane >> 2, tq = lane & 3;
#pragma unroll
	for (int mt = 0; mt < LMMA_MT; mt++)
		if (mt < mts)
#pragma unroll
			for (int nt = 0; nt < 2; nt++)
#pragma unroll
				for (int h = 0; h < 2; h++)
					*(float2*)&Cs[(16 * mt + g + 8 * h) * CS + 16 * warp + 8 * nt + 2 * tq] =
						make_float2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
}

// lin_mma: d = act(x·wᵀ + b) (+ d first when accum) for x [m, k] as TERMS
// fp16 terms (the second xlo elements after the first: FP16X2's split
// operand, both multiplied and summed here, where cuBLAS leaves two
// products for the reader to add) and w [n, k] fp16, k a multiple of 16;
// fp16 operands on tensor cores (mma.sync m16n8k16), float32 accumulation.
// It is for a GEMM of few rows (a question or two: about a hundred), which
// streams its weight once and whose cuBLAS kernels start late and cover
// the GPU with few blocks: here the weight is split over blocks by output
// columns and by k (gridDim.y splits of kc), and a block copies its slice of
// the weight into shared memory before it waits for the kernel before it
// (pdl_wait), so that with programmatic dependent launch the weight streams
// in while that kernel finishes. x follows, then the products. A split's
// sums go to part ([split][m][n] floats) and the last block of a tile to
// arrive (counted in sem, one counter a tile, zero between launches: that
// block resets it) adds the splits in their order, so that the result does
// not depend on which block came last, and applies the epilogue. Shared
// memory: (16·WARPS + TERMS·rows rounded up to 16)·(kc + 8) halves
// (linearmma.go's lmmaShared); rows are padded by 8 halves, which puts the
// eight rows a fragment load touches in distinct banks.
//
// inner > 0 fuses the GeGLU that alone reads the product in place of the
// epilogue: n = 2·inner, the first half of a row the GELU's inputs, the
// second what multiplies them, as geglu reads them. A block's first
// 8·WARPS columns are weight rows j0.. of the first half and the others the
// same rows of the second, so that its last block has both halves of its
// outputs; it writes geglu1 of them to gd (unless null) and their 16-bit
// copy to gh (store16's kind and lo, unless null), as geglu would, and d is
// not written. The sums go through part even unsplit.
//
// A LayerNorm between two of these GEMMs runs in them instead of a kernel
// of its own (stream.go, Discard): rows need all their columns for their
// mean and variance, which no block of either GEMM has. stat non-null: the
// GEMM that writes the LayerNorm's input (the residual stream, a residual
// Add folded in) also writes, for each of its column tiles and rows, the
// mean and the sum of squared deviations of the tile's outputs
// (stat[tile·m + row]; the sums go through part even unsplit, so that the
// last block has whole rows of its tile). lnx non-null: the GEMM that reads
// the LayerNorm's output instead reads its input lnx [m, k] as float32,
// combines the lntiles tiles' statistics of each row (of lnw columns, the
// last of what remains: Chan et al.'s pairwise update, in tile order, so
// that the result does not depend on the schedule) into its mean and
// 1/sqrt(variance + eps), and normalises its k-slice of the rows, times lng
// plus lnb (unless null), into its TERMS fp16 terms as layer_norm4 and
// store16 would have written them (to the last bits of the mean and
// variance, which they sum in another order).
template <int TERMS, int WARPS>
__device__ void lin_mma(void* d, const u16* x, long long xlo, const u16* w, const float* bias, int m, int k, int n, int act,
	int accum, int half, int kc, float* part, int* sem, int inner, float* gd, u16* gh, int gkind, long long glo, float2* stat,
	const float* lnx, const float2* lnstat, int lntiles, int lnw, const float* lng, const float* lnb, float eps) {
	static_assert(WARPS % 4 == 0, "the epilogue pairs a lane's columns: BN a multiple of 64");
	__shared__ int last;
	__shared__ float lnMean[16 * LMMA_MT];
	__shared__ float lnInv[16 * LMMA_MT];
	extern __shared__ float4 smem4[];
	const int KS = kc + 8, NT = 32 * WARPS, BN = 16 * WARPS, HB = BN / 2;
	int n0 = blockIdx.x * BN, j0 = blockIdx.x * HB, split = blockIdx.y, m0 = blockIdx.z * 16 * LMMA_MT;
	int k0 = split * kc, kn = min(kc, k - k0), c8 = kn / 8;
	int rows = min(16 * LMMA_MT, m - m0), rp = (rows + 15) & ~15;
	int tid = threadIdx.x;
	const int csh = lmma_chunk_shift(c8), cm = (1 << csh) - 1;
	// The weight row of the block's column c, or -1 past the weight.
	auto wrow = [&](int c) -> int {
		if (!inner) return n0 + c < n ? n0 + c : -1;
		int j = j0 + (c < HB ? c : c - HB);
		return j >= inner ? -1 : c < HB ? j : inner + j;
	};
	u16* Ws = (u16*)smem4; // [BN][KS]
	u16* As = Ws + BN * KS; // [TERMS][rp][KS]
	const uint4 zero = {0u, 0u, 0u, 0u};
	// A thread copies chunk cc of rows rr, rr + rstep, ...: the block's
	// NT threads cover rstep rows a step (NT ≥ c8p: kc ≤ 256).
	const int cc = tid & cm, rr = tid >> csh, rstep = NT >> csh;
	const u32 sW = smem_addr(Ws), sA = smem_addr(As);
	lmma_copy_w(w, k, k0, BN, KS, Ws, sW, cc, c8, rr, rstep, wrow);
	pdl_wait();
	pdl_launch();
	if (lnx) {
		for (int r = tid; r < rows; r += NT) {
			float mean = 0.0f, m2 = 0.0f;
			int cnt = 0;
			for (int t = 0; t < lntiles; t++) {
				int nb = min(lnw, k - t * lnw);
				float2 st = lnstat[(long long)t * m + m0 + r];
				float delta = st.x - mean;
				int nn = cnt + nb;
				mean += delta * ((float)nb / (float)nn);
				m2 += st.y + delta * delta * ((float)cnt * (float)nb / (float)nn);
				cnt = nn;
			}
			lnMean[r] = mean;
			lnInv[r] = 1.0f / sqrtf(m2 / (float)k + eps);
		}
		__syncthreads();
		for (int i = tid; i < rp << csh; i += NT) {
			int r = i >> csh, c = i & cm;
			if (c >= c8) continue;
			u16* s = As + r * KS + 8 * c;
			if (r >= rows) {
				for (int e = 0; e < TERMS; e++) *(uint4*)(s + e * rp * KS) = zero;
				continue;
			}
			int col = k0 + 8 * c;
			const float* xp = lnx + (long long)(m0 + r) * k + col;
			float mean = lnMean[r], inv = lnInv[r];
#pragma unroll
			for (int h4 = 0; h4 < 2; h4++) {
				float4 v = *(const float4*)(xp + 4 * h4), g = *(const float4*)(lng + col + 4 * h4), bb = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
				if (lnb) bb = *(const float4*)(lnb + col + 4 * h4);
				// layer_norm4's formula (its mean and variance summed in
				// another order: the last bits may differ).
				st4h<TERMS>(s + 4 * h4, rp * KS, ln_apply(v, mean, inv, g, bb));
			}
		}
	} else {
		lmma_copy_x<TERMS>(x, xlo, m0, k, k0, rows, rp, KS, As, sA, cc, c8, rr, rstep);
	}
	cp_async_wait_all();
	__syncthreads();
	int lane = tid & 31, warp = tid >> 5, mts = rp / 16;
	float acc[LMMA_MT][2][4];
	lmma_products<TERMS>(acc, sW, sA, KS, rp, kn, warp, lane);
	int splits = gridDim.y;
	float* p = splits > 1 || inner || stat ? part + (long long)split * m * n : nullptr;
	// The products go out through shared memory (the operands' space,
	// done with: rows of BN + 8 floats, lmmaShared), so that what follows
	// is a short loop of coalesced stores. Written from the fragments
	// straight to global memory, unrolled over a thread's outputs, the
	// epilogue was most of the kernel's thousands of instructions, each
	// fetched once a warp, and half of each stored sector was wasted.
	const int CS = BN + 8;
	float* Cs = (float*)smem4;
	__syncthreads();
	lmma_stage(Cs, CS, acc, mts, warp, lane);
	__syncthreads();
	if (!p) {
		for (int i = tid; i < rows * BN; i += NT) {
			int r = i / BN, c = i - r * BN, col = n0 + c;
			if (col < n) lmma_finish(d, (long long)(m0 + r) * n + col, col, Cs[r * CS + c], bias, act, accum, half);
		}
		return;
	}
	if (n % 4 == 0 && inner % 4 == 0) {
		// Four columns of a block never straddle a half of a GeGLU's
		// weight rows (HB is a multiple of 4) nor the end of either.
		const int Q = BN / 4;
		for (int i = tid; i < rows * Q; i += NT) {
			int r = i / Q, c = 4 * (i - r * Q), col = wrow(c);
			if (col >= 0) *(float4*)&p[(long long)(m0 + r) * n + col] = *(const float4*)&Cs[r * CS + c];
		}
	} else {
		for (int i = tid; i < rows * BN; i += NT) {
			int r = i / BN, c = i - r * BN, col = wrow(c);
			if (col >= 0) p[(long long)(m0 + r) * n + col] = Cs[r * CS + c];
		}
	}
	// The last block of the tile to finish adds the splits.
	int tile = blockIdx.z * gridDim.x + blockIdx.x;
	__threadfence();
	__syncthreads();
	if (tid == 0) last = atomicAdd(sem + tile, 1) == splits - 1;
	__syncthreads();
	if (!last) return;
	__threadfence();
	long long mn = (long long)m * n;
	// Four outputs a thread where rows of part start 16 bytes apart (n,
	// inner a multiple of 4; a tile's columns start at multiples of 8).
	if (inner && inner % 4 == 0) {
		const int Q = HB / 4;
		for (int i = tid; i < rows * Q; i += NT) {
			int r = i / Q, j = j0 + 4 * (i - r * Q);
			if (j >= inner) continue;
			long long o = (long long)(m0 + r) * n + j;
			float4 v, u;
			lmma_sum2(part + o, part + o + inner, mn, splits, v, u);
			float4 y = make_float4(geglu1(v.x, u.x, 1, gkind), geglu1(v.y, u.y, 1, gkind), geglu1(v.z, u.z, 1, gkind), geglu1(v.w, u.w, 1, gkind));
			long long go = (long long)(m0 + r) * inner + j;
			if (gd) *(float4*)(gd + go) = y;
			if (gh) store16x4(gh, go, glo, y, gkind);
		}
	} else if (inner) {
		for (int i = tid; i < rows * HB; i += NT) {
			int r = i / HB, j = j0 + (i - r * HB);
			if (j >= inner) continue;
			long long o = (long long)(m0 + r) * n + j;
			float v, u;
			lmma_sum2(part + o, part + o + inner, mn, splits, v, u);
			float y = geglu1(v, u, 1, gkind);
			long long go = (long long)(m0 + r) * inner + j;
			if (gd) gd[go] = y;
			if (gh) store16(gh, go, glo, y, gkind);
		}
	} else if (stat) {
		// A warp a row, its lanes over the tile's columns: the row's
		// outputs stay in registers for the second pass.
		int cols = min(BN, n - n0);
		for (int r = warp; r < rows; r += WARPS) {
			float y[BN / 32], sum = 0.0f;
			// Two of a lane's columns at a time (BN / 32 is even); past
			// the tile's columns the second loads the first's again.
#pragma unroll
			for (int q = 0; q < BN / 32; q += 2) {
				int c = lane + 32 * q;
				y[q] = y[q + 1] = 0.0f;
				if (c >= cols) continue;
				long long o = (long long)(m0 + r) * n + n0 + c;
				bool two = c + 32 < cols;
				float v, u;
				lmma_sum2(part + o, part + (two ? o + 32 : o), mn, splits, v, u);
				y[q] = lmma_finish(d, o, n0 + c, v, bias, act, accum, half);
				sum += y[q];
				if (two) {
					y[q + 1] = lmma_finish(d, o + 32, n0 + c + 32, u, bias, act, accum, half);
					sum += y[q + 1];
				}
			}
			float mean = warp_sum(sum) / (float)cols, m2 = 0.0f;
#pragma unroll
			for (int q = 0; q < BN / 32; q++) {
				float dv = y[q] - mean;
				if (lane + 32 * q < cols) m2 += dv * dv;
			}
			m2 = warp_sum(m2);
			if (lane == 0) stat[(long long)blockIdx.x * m + m0 + r] = make_float2(mean, m2);
		}
	} else if (n % 4 == 0) {
		// Two float4s a thread at a time, the second NT places on (or,
		// past the tile, the first again).
		const int Q = BN / 4;
		for (int i = tid; i < rows * Q; i += 2 * NT) {
			int r = i / Q, col = n0 + 4 * (i - r * Q), i2 = i + NT, r2 = i2 / Q, col2 = n0 + 4 * (i2 - r2 * Q);
			bool one = col < n, two = i2 < rows * Q && col2 < n;
			if (!one && !two) continue;
			long long o = (long long)(m0 + r) * n + col, o2 = (long long)(m0 + r2) * n + col2;
			float4 v, u;
			lmma_sum2(part + (one ? o : o2), part + (two ? o2 : o), mn, splits, v, u);
			if (one) {
				lmma_finish(d, o, col, v.x, bias, act, accum, half);
				lmma_finish(d, o + 1, col + 1, v.y, bias, act, accum, half);
				lmma_finish(d, o + 2, col + 2, v.z, bias, act, accum, half);
				lmma_finish(d, o + 3, col + 3, v.w, bias, act, accum, half);
			}
			if (two) {
				lmma_finish(d, o2, col2, u.x, bias, act, accum, half);
				lmma_finish(d, o2 + 1, col2 + 1, u.y, bias, act, accum, half);
				lmma_finish(d, o2 + 2, col2 + 2, u.z, bias, act, accum, half);
				lmma_finish(d, o2 + 3, col2 + 3, u.w, bias, act, accum, half);
			}
		}
	} else {
		for (int i = tid; i < rows * BN; i += NT) {
			int r = i / BN, col = n0 + (i - r * BN);
			if (col >= n) continue;
			long long o = (long long)(m0 + r) * n + col;
			float v, u;
			lmma_sum2(part + o, part + o, mn, splits, v, u);
			lmma_finish(d, o, col, v, bias, act, accum, half);
		}
	}
	if (tid == 0) sem[tile] = 0;
}

// linear_mma_TERMS_WARPS: lin_mma for one fp16 term (FP16) or two
// (FP16X2), 4 or 8 warps a block. Grid: (⌈n/(16·WARPS)⌉, splits,
// ⌈m/(16·LMMA_MT)⌉).
#define LINEAR_MMA(TERMS, WARPS)                                                                                          \
	extern "C" __global__ void LMMA_BOUNDS(32 * WARPS) linear_mma_##TERMS##_##WARPS(void* d, const u16* x, long long xlo, \
		const u16* w, const float* bias, int m, int k, int n, int act, int accum, int half, int kc, float* part, int* sem,       \
		int inner, float* gd, u16* gh, int gkind, long long glo, float2* stat, const float* lnx, const float2* lnstat,         \
		int lntiles, int lnw, const float* lng, const float* lnb, float eps) {                                                 \
		lin_mma<TERMS, WARPS>(d, x, xlo, w, bias, m, k, n, act, accum, half, kc, part, sem, inner, gd, gh, gkind, glo, stat,  \
			lnx, lnstat, lntiles, lnw, lng, lnb, eps);                                                                    \
	}
#if LAYA_EXTRAS
LINEAR_MMA(1, 4)
LINEAR_MMA(2, 4)
LINEAR_MMA(1, 8)
LINEAR_MMA(2, 8)
#endif

// ---- Thread block clusters ----

// cluster_probe checks the cluster primitives (TestClusterProbe on a GPU,
// TestEmuCluster on the emulator, which models them): each thread writes
// (rank, thread, block, clusters' blocks) to its block's shared memory,
// and after cluster_sync reads what the next thread of the next block in
// the cluster wrote, into out[block·threads + thread]. Dynamic shared
// memory: 16 bytes a thread. With linear_cl among the extras: what needs
// clusters loads it.
#if LAYA_EXTRAS
extern "C" __global__ void cluster_probe(float4* out) {
	KERNEL_ENTRY
	extern __shared__ float4 smem4[];
	uint2 id = cluster_id();
	u32 rank = id.x, size = id.y, t = threadIdx.x;
	smem4[t] = make_float4((float)rank, (float)t, (float)blockIdx.x, (float)size);
	cluster_sync();
	u32 peer = cluster_map(smem_addr(smem4 + (t + 1) % blockDim.x), (rank + 1) % size);
	out[blockIdx.x * blockDim.x + t] = ld_cluster4(peer);
	cluster_sync(); // no block returns while the one before it still reads
}
#endif

// lwg_piece is the offset, in a K-major tile of rows of 64 fp16 values (128
// bytes) with the 128-byte swizzle, of 16-byte piece p (0–7) of row r:
// piece p XOR r mod 8, eight-row groups 1024 bytes apart, what wgmma reads
// through wg_desc (the tile 1024-byte aligned).
__device__ __forceinline__ u32 lwg_piece(int r, int p) { return (u32)r * 128 + (u32)((p ^ (r & 7)) << 4); }

// tma_probe checks the bulk tensor copies and mbarriers (TestTMAProbe on a
// GPU in the sm_90a build, TestEmuTMAProbe on the emulator, which models
// them): block (x, y) has the TMA copy two boxes of the 16-bit matrix tmap
// describes, b0 × b1 with the 128-byte swizzle, at columns (2x + i)·b0 and
// rows y·b1 + dy (dy < 0: the first row of blocks starts above the
// matrix), one after the other through one slot and one mbarrier (its
// phases 0 and 1), and writes each box as it reads it through the swizzle
// (lwg_piece's layout: a row takes the swizzle's 128 bytes, however few of
// them it fills) into out, a matrix of cols columns: box i of block (x, y)
// at rows y·b1 onward, columns (2x + i)·b0 onward; zeros where the box lies
// past the matrix. Dynamic shared memory: 1024 bytes of alignment, the
// box's b1 rows of 128 bytes, the mbarrier.
#if LAYA_EXTRAS
extern "C" __global__ void tma_probe(u16* out, const void* tmap, int b0, int b1, int cols, int dy) {
	KERNEL_ENTRY
	extern __shared__ float4 smem4[];
	const u32 s0 = smem_addr(smem4), base = (s0 + 1023) & ~1023u, bytes = (u32)(b0 * b1 * 2), bar = base + 128 * (u32)b1;
	const char* gs = (const char*)smem4 + (base - s0);
	if (threadIdx.x == 0) {
		mbar_init(bar, 1);
		mbar_fence_init();
	}
	__syncthreads();
	for (int i = 0; i < 2; i++) {
		const int c0 = (2 * blockIdx.x + i) * b0, c1 = blockIdx.y * b1 + dy;
		if (threadIdx.x == 0) {
			mbar_expect_tx(bar, bytes);
			tma_load_2d(base, tmap, bar, c0, c1);
		}
		while (!mbar_try_wait(bar, i & 1)) {
		}
		for (int e = threadIdx.x; e < b0 * b1; e += blockDim.x) {
			const int r = e / b0, c = e - r * b0;
			const u32 o = lwg_piece(r, c >> 3) + (u32)(c & 7) * 2;
			out[(long long)(blockIdx.y * b1 + r) * cols + c0 + c] = *(const u16*)(gs + o);
		}
		__syncthreads(); // the slot is read before the next copy takes it
	}
}
#endif

// ---- A GEMM of few rows over a cluster ----

// LCL_SPLITS is the most blocks of a cluster linear_cl adds the products
// of (linearcl.go's maxClusterSplits: a portable cluster's).
#define LCL_SPLITS 8

// LCL_WARPS is a linear_cl block's warps (LCL_W16; linearcl.go's
// clWarps): bn/32 column groups of 32 columns times LCL_RG row groups times
// 128/bn k-groups.
#define LCL_WARPS (LCL_W16 ? 16 : 8)
// LCL_RG is linear_cl's row groups: its warps over four.
#define LCL_RG (LCL_WARPS / 4)
// LCL_MT is a linear_cl warp's row tiles.
#define LCL_MT (LMMA_MT / LCL_RG)

// LCL_XC is the k of one of linear_cl's chunks of x (linearcl.go's
// clChunk): x comes in chunks, one copy group each, and the products start
// on the first while the rest land.
#define LCL_XC 64

// lcl_finish4 is lmma_finish for the four outputs o.. (columns col..) of a
// row: one 16- or 8-byte store where the row holds all four and n keeps
// them aligned, else one at a time.
template <bool RELU>
__device__ __forceinline__ void lcl_finish4(void* d, long long o, int col, int n, float4 v, const float* bias, int act, int accum,
	int half) {
	if ((n & 3) || col + 3 >= n) {
		float y[4] = {v.x, v.y, v.z, v.w};
		for (int e = 0; e < 4 && col + e < n; e++) lmma_finish<RELU>(d, o + e, col + e, y[e], bias, act, accum, half);
		return;
	}
	if (accum) lmma_add(v, *(const float4*)((const float*)d + o));
	if (bias) {
		v.x += bias[col];
		v.y += bias[col + 1];
		v.z += bias[col + 2];
		v.w += bias[col + 3];
	}
	if (act) {
		v.x = lcl_act<RELU>(v.x, act);
		v.y = lcl_act<RELU>(v.y, act);
		v.z = lcl_act<RELU>(v.z, act);
		v.w = lcl_act<RELU>(v.w, act);
	}
	if (half)
		*(uint2*)((u16*)d + o) = make_uint2(pack2(v.x, v.y), pack2(v.z, v.w));
	else
		*(float4*)((float*)d + o) = v;
}

// lcl_add_finish is the end of a GEMM over a cluster (linear_cl,
// linear_wg), after the cluster's barrier: block rank adds, for the tile's
// rows rank, rank + S, ..., the S blocks' float32 products in rank order
// (each block's in its shared memory at Cs, a row of bn columns every CS
// floats) and writes d as lmma_finish<RELU> does, four columns a thread,
// NT threads a block.
template <bool RELU>
__device__ __forceinline__ void lcl_add_finish(float* Cs, int CS, int bn, int NT, int S, int rank, int rows, int m0, int n0, void* d,
	int n, const float* bias, int act, int accum, int half) {
	const int tid = threadIdx.x, qsh = lmma_chunk_shift(bn / 4), Q = 1 << qsh;
	// This block's rows of the tile, the S blocks' loads in flight before
	// the first add; each block's products at its mapped address of Cs
	// plus the offset (a block's window of the cluster's shared memory is
	// contiguous), mapped once.
	u32 peer[LCL_SPLITS];
#pragma unroll
	for (int s = 0; s < LCL_SPLITS; s++)
		if (s < S) peer[s] = cluster_map(smem_addr(Cs), s);
	// Two quads a thread a pass, both sets of loads in flight before the
	// first add (ncu: a quarter of the kernel's samples in this loop, each
	// pass waiting out one round of the cluster's loads).
	const int mine = rows > rank ? (rows - rank + S - 1) / S : 0, quads = mine * Q;
	for (int i0 = tid; i0 < quads; i0 += 2 * NT) {
		float4 p[2][LCL_SPLITS];
#pragma unroll
		for (int u = 0; u < 2; u++) {
			const int i = i0 + u * NT, r = rank + S * (i >> qsh), c = 4 * (i & (Q - 1));
			if (i >= quads || n0 + c >= n) continue;
			const u32 off = 4 * (r * CS + c);
#pragma unroll
			for (int s = 0; s < LCL_SPLITS; s++)
				if (s < S) p[u][s] = ld_cluster4(peer[s] + off);
		}
#pragma unroll
		for (int u = 0; u < 2; u++) {
			const int i = i0 + u * NT, r = rank + S * (i >> qsh), c = 4 * (i & (Q - 1));
			if (i >= quads || n0 + c >= n) continue;
			float4 v = p[u][0];
#pragma unroll
			for (int s = 1; s < LCL_SPLITS; s++)
				if (s < S) lmma_add(v, p[u][s]);
			lcl_finish4<RELU>(d, (long long)(m0 + r) * n + n0 + c, n0 + c, n, v, bias, act, accum, half);
		}
	}
	cluster_sync(); // no block returns while another still reads its products
}

// linear_cl: d = act(x·wᵀ + b) (+ d first when accum) for x [m, k] one fp16
// term and w [n, k] fp16, k a multiple of 16, float32 accumulation on
// tensor cores (mma.sync m16n8k16), for GEMMs of few rows (a question: about
// a hundred), which read their weight once and whose cuBLAS kernels wait
// out one wave of loads after the kernel before them ends.
//
// The grid (in as few waves as linearcl.go's plan finds best, often one):
// a cluster of S blocks (along x: blockIdx.x = tile·S + rank) takes one
// tile of bn output columns (weight rows) and up to 16·LMMA_MT rows of x
// (blockIdx.z), each block one slice of k, kc long (the last shorter). A block copies its slice of the weight into shared memory
// before it waits for the kernel before it (pdl_wait), so that with
// programmatic dependent launch the weight streams in while that kernel
// finishes; then its slice of x, in chunks of LCL_XC, one copy group each,
// the products starting on the first chunk while the others land. Its
// LCL_WARPS warps split into bn/32 column groups of 32 columns, LCL_WARPS/4
// row groups (at eight warps every other 16 rows: 64 accumulators a
// thread, where all the rows took 255 registers and spilled) and 128/bn
// k-groups, a group taking every (128/bn)-th 16 of k of each chunk; the
// groups' float32 products meet in shared memory in group order. After
// the cluster's barrier block rank adds, for the tile's rows rank, rank +
// S, ..., the S blocks' products in rank order (the same float32 sums
// whatever ran first) and writes d as lmma_finish does, four columns a
// thread. Shared memory (linearcl.go's lclShared): the operands, (bn + rows
// rounded up to 16)·(kc + 8) halves, rows padded by 8 halves so that the
// eight rows a fragment load touches are in distinct banks; or, where more,
// the k-groups' products, rows of bn + 8 floats.
__device__ void lin_cl(void* d, const u16* x, const u16* w, const float* bias, int m, int k, int n, int act, int accum, int half,
	int kc, int bn) {
	extern __shared__ float4 smem4[];
	const int NT = 32 * LCL_WARPS, CG = bn / 32, KG = 4 / CG, KS = kc + 8, CS = bn + 8;
	const uint2 id = cluster_id();
	const int S = (int)id.y, rank = (int)id.x;
	const int n0 = (blockIdx.x / S) * bn, m0 = blockIdx.z * 16 * LMMA_MT;
	const int k0 = rank * kc, kn = max(0, min(kc, k - k0)), chunks = (kn + LCL_XC - 1) / LCL_XC;
	const int rows = min(16 * LMMA_MT, m - m0), rp = (rows + 15) & ~15;
	const int tid = threadIdx.x;
	u16* Ws = (u16*)smem4; // [bn][KS]
	u16* As = Ws + bn * KS; // [rp][KS]
	const u32 sW = smem_addr(Ws), sA = smem_addr(As);
	const uint4 zero = {0u, 0u, 0u, 0u};
	// A thread copies 16-byte pieces pc, pc + 8, ... of rows pr, pr + RS, ...
	// (a row's slice is c8 pieces, chunk c's its pieces 8c .. 8c + 7),
	// walking both by pointer steps: the index arithmetic of each copy was
	// most of the kernel's first quarter (ncu: 35 instructions a copy).
	const int pc = tid & 7, pr = tid >> 3, RS = NT / 8, c8 = kn / 8;
	{
		const u16* g = w + (long long)(n0 + pr) * k + k0 + 8 * pc;
		u32 sa = sW + 2 * (pr * KS + 8 * pc);
		for (int r = pr; r < bn; r += RS, g += (long long)RS * k, sa += 2 * RS * KS) {
			if (n0 + r < n) {
				const u16* gq = g;
				u32 sq = sa;
				for (int q = pc; q < c8; q += 8, gq += 64, sq += 128) cp_async16a(sq, gq);
			} else
				for (int q = pc; q < c8; q += 8) *(uint4*)(Ws + r * KS + 8 * q) = zero;
		}
	}
	cp_async_commit();
	pdl_wait();
	pdl_launch();
	for (int c = 0; c < chunks; c++) {
		const int q = 8 * c + pc;
		if (q < c8) {
			const u16* g = x + (long long)(m0 + pr) * k + k0 + 8 * q;
			u32 sa = sA + 2 * (pr * KS + 8 * q);
			for (int r = pr; r < rp; r += RS, g += (long long)RS * k, sa += 2 * RS * KS) {
				if (r < rows)
					cp_async16a(sa, g);
				else
					*(uint4*)(As + r * KS + 8 * q) = zero;
			}
		}
		cp_async_commit();
	}
	const int lane = tid & 31, warp = tid >> 5, cg = warp % CG, rg = warp / CG % LCL_RG, kg = warp / CG / LCL_RG, mts = rp / 16;
	// acc[j] is the row tile LCL_RG·j + rg: the row groups take every
	// LCL_RG-th.
	float acc[LCL_MT][4][4];
#pragma unroll
	for (int mt = 0; mt < LCL_MT; mt++)
#pragma unroll
		for (int nt = 0; nt < 4; nt++) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
	// Fragments by ldmatrix, as lmma_products loads them: B's first four
	// matrices the group's columns 0–15, its second four 16–31. A step's
	// fragments all load before its products, and the next step's before
	// this one's products (two sets, in turn): each ldmatrix into one
	// register set before the products that read it left every product
	// waiting out a load (ncu: 7.2 cycles an instruction, two warps a
	// scheduler).
	const u32 bq = sW + 2 * ((32 * cg + 8 * (lane >> 4) + (lane & 7)) * KS + 8 * ((lane >> 3) & 1));
	const u32 aq = sA + 2 * ((lane & 15) * KS + 8 * (lane >> 4));
	const u32 tileBytes = 2 * 16 * KS;
	// Each row tile's fragment address, computed once (recomputed at every
	// step, predicated, it was a third of the loop's instructions).
	u32 at[LCL_MT];
#pragma unroll
	for (int j = 0; j < LCL_MT; j++) at[j] = aq + (LCL_RG * j + rg) * tileBytes;
	auto frags = [&](u32(&b)[8], u32(&a)[LCL_MT][4], int kk) {
		ldsm4a(b, bq + 2 * kk);
		ldsm4a(b + 4, bq + tileBytes + 2 * kk);
#pragma unroll
		for (int j = 0; j < LCL_MT; j++)
			if (LCL_RG * j + rg < mts) ldsm4a(a[j], at[j] + 2 * kk);
	};
	auto products = [&](const u32(&b)[8], const u32(&a)[LCL_MT][4]) {
#pragma unroll
		for (int j = 0; j < LCL_MT; j++)
			if (LCL_RG * j + rg < mts) {
				mma16816(acc[j][0], a[j], b[0], b[1]);
				mma16816(acc[j][1], a[j], b[2], b[3]);
				mma16816(acc[j][2], a[j], b[4], b[5]);
				mma16816(acc[j][3], a[j], b[6], b[7]);
			}
	};
	for (int c = 0; c < chunks; c++) {
		cp_async_wait_group(chunks - 1 - c);
		__syncthreads();
		const int ke = min((c + 1) * LCL_XC, kn), step = 16 * KG;
		int kk = c * LCL_XC + 16 * kg;
		if (kk >= ke) continue;
		u32 b0[8], b1[8], a0[LCL_MT][4], a1[LCL_MT][4];
		frags(b0, a0, kk);
		for (;;) {
			if (kk + step >= ke) {
				products(b0, a0);
				break;
			}
			frags(b1, a1, kk + step);
			products(b0, a0);
			kk += 2 * step;
			if (kk >= ke) {
				products(b1, a1);
				break;
			}
			frags(b0, a0, kk);
			products(b1, a1);
		}
	}
	// The products into shared memory (the operands' space, done with: a
	// region of rp rows of CS floats a k-group), the groups' added into
	// the first in group order, for the cluster to add.
	float* Cs = (float*)smem4;
	__syncthreads();
	{
		float* Cg = Cs + kg * rp * CS;
		const int g = lane >> 2, tq = lane & 3;
#pragma unroll
		for (int j = 0; j < LCL_MT; j++)
			if (LCL_RG * j + rg < mts)
#pragma unroll
				for (int nt = 0; nt < 4; nt++)
#pragma unroll
					for (int h = 0; h < 2; h++)
						*(float2*)&Cg[(16 * (LCL_RG * j + rg) + g + 8 * h) * CS + 32 * cg + 8 * nt + 2 * tq] =
							make_float2(acc[j][nt][2 * h], acc[j][nt][2 * h + 1]);
	}
	// Quads of four columns: bn/4 a row, a power of two.
	const int qsh = lmma_chunk_shift(bn / 4), Q = 1 << qsh;
	if (KG > 1) {
		__syncthreads();
		for (int i = tid; i < rp * Q; i += NT) {
			float* c = Cs + (i >> qsh) * CS + 4 * (i & (Q - 1));
			float4 v = *(float4*)c;
			for (int g = 1; g < KG; g++) lmma_add(v, *(const float4*)(c + g * rp * CS));
			*(float4*)c = v;
		}
	}
	cluster_sync();
	lcl_add_finish<false>(Cs, CS, bn, NT, S, rank, rows, m0, n0, d, n, bias, act, accum, half);
}

// linear_cl: lin_cl, 32·LCL_WARPS threads a block. Grid: (⌈n/bn⌉·S, 1,
// ⌈m/(16·LMMA_MT)⌉), launched in clusters of S ≤ LCL_SPLITS along x; bn
// 32, 64 or 128.
#if LAYA_EXTRAS
extern "C" __global__ void __launch_bounds__(32 * LCL_WARPS, 1) linear_cl(void* d, const u16* x, const u16* w, const float* bias,
	int m, int k, int n, int act, int accum, int half, int kc, int bn) {
	lin_cl(d, x, w, bias, m, k, n, act, accum, half, kc, bn);
}
#endif

// ---- A GEMM of few rows on warpgroup products ----

// LWG_BN is linear_wg's tile of output columns (weight rows): wgmma's 64
// rows, one warpgroup a block. LWG_ROWS is the most rows of x a block takes
// (blockIdx.z tiles them), LWG_CS the row of its float32 products in
// shared memory: 68 floats, so that a warp's stores of its fragments (two
// rows of each of four column pairs, eight rows apart) fall in 32 distinct
// banks, and a row stays 16-byte aligned for the cluster's float4 adds.
#define LWG_BN 64
#define LWG_ROWS 128
#define LWG_CS 68

// wg_desc is the wgmma descriptor of such a tile at shared address a: the
// 128-byte swizzle, eight-row groups 1024 bytes apart (the stride byte
// offset; the leading byte offset, unused by this layout, is set to 16).
// A step of 16 along k is a start address 32 bytes on.
__device__ __forceinline__ u64 wg_desc(u32 a) {
	return (u64)((a & 0x3ffff) >> 4) | (u64)(16 >> 4) << 16 | (u64)(1024 >> 4) << 32 | (u64)1 << 62;
}

// lin_wg: d = act(x·wᵀ + b) (+ d first when accum; act none or ReLU: see
// lcl_act) for x [m, k] of one fp16 term or two (FP16X2) and w [n, k]
// fp16, k a multiple of 8, float32 accumulation on warpgroup products
// (wgmma, sm_90a), for GEMMs of few rows, like linear_cl; as built, slower
// than cuBLASLt, with its threads' copies or the TMA's
// (docs/cuda-perf-log.md). The product is taken transposed,
// dᵀ = w·xᵀ: the weight's 64 rows of a tile are wgmma's 64 rows (its M,
// fixed) and x's rows, NP of them (m rounded up to 32), its N, so that one
// product instruction covers a question's hundred rows.
//
// The grid and clusters are linear_cl's (linearcl.go's planLinearWg): a
// cluster of S blocks takes a tile of 64 output columns and up to LWG_ROWS
// rows, each block a slice of k, kc long (a multiple of 64). A block
// copies its whole slice of the weight into shared memory before it waits
// for the kernel before it (pdl_wait), then x in chunks of 64 of k, one
// copy group each, through a ring of R slots (R = the chunks: all of x's
// slice; else at least 3, a chunk copied two chunks after the one whose
// slot it takes, once every warp has waited for that chunk's products);
// the products of a chunk start as soon as it lands, four wgmma of 16 of
// k, and run while the next chunks land. Both operands are stored as
// wgmma reads them (lwg_piece). The products then go to shared memory
// (LWG_CS floats a row) for the cluster's adding and the coalesced writes
// of lcl_add_finish. Shared memory (linearcl.go's lwgShared): 1024 bytes
// of alignment, then the weight's slice (8 KiB a chunk) and the ring (NP
// rows of 128 bytes a slot, a term).
template <int NP>
__device__ void lin_wg(void* d, const u16* x, long long xlo, const u16* w, const float* bias, int m, int k, int n, int act, int accum,
	int half, int kc, int R, const char* maps) {
	extern __shared__ float4 smem4[];
	const int NT = 128;
	const uint2 id = cluster_id();
	const int S = (int)id.y, rank = (int)id.x;
	const int n0 = (blockIdx.x / S) * LWG_BN, m0 = blockIdx.z * LWG_ROWS;
	const int k0 = rank * kc, kn = max(0, min(kc, k - k0)), chunks = (kn + 63) / 64;
	const int rows = min(LWG_ROWS, m - m0);
	const int tid = threadIdx.x;
	const u32 s0 = smem_addr(smem4), base = (s0 + 1023) & ~1023u;
	char* const gs = (char*)smem4 + (base - s0);
	// FP16X2: x's second term xlo elements on (0: one term), each chunk's
	// two terms in one slot, both multiplied into the same accumulators.
	const int terms = xlo ? 2 : 1;
	const u32 sW = base, sX = base + (u32)chunks * 8192, slotBytes = (u32)terms * (NP * 128);
	const uint4 zero = {0u, 0u, 0u, 0u};
	// With maps (linearcl.go's wgMaps: tensor maps of the weight and of
	// each term of x, 128 bytes each), the TMA copies both, one thread
	// issuing a box of 64 of k a chunk (the weight's 64 rows, x's NP, rows
	// past the matrix as zeros, the 128-byte swizzle as the copies below
	// write it), counted against an mbarrier a chunk of the weight (so that
	// the products start on its first chunk while the rest land, where the
	// kernel before ends first) and one a ring slot after them; the threads'
	// copies below are not made.
	const u32 bars = sX + (u32)R * slotBytes, xbars = bars + 8 * (u32)chunks;
	const bool tma = maps != nullptr;
	if (tma) {
		if (tid == 0) {
			for (int i = 0; i < chunks + R; i++) mbar_init(bars + 8 * i, 1);
			mbar_fence_init();
		}
		__syncthreads();
		if (tid == 0)
			for (int c = 0; c < chunks; c++) {
				mbar_expect_tx(bars + 8 * c, 8192);
				tma_load_2d(sW + (u32)c * 8192, maps, bars + 8 * c, k0 + 64 * c, n0);
			}
	} else {
		// The weight: thread t takes rows t/16, t/16 + 8, ... and of each the
		// pieces q = t%16, t%16 + 16, ... (chunk q/8, piece q%8), sixteen
		// threads on 256 consecutive bytes of a row; past n or past k, zeros.
		// Rows 8 apart and pieces 16 apart keep a thread's swizzle (q%8 XOR
		// r%8) the same, so that its addresses step by constants (an index
		// divided by the row's pieces took most of the loop).
		const int q0 = tid & 15, r0 = tid >> 4, P = 8 * chunks;
		const u32 o0 = lwg_piece(r0, q0 & 7) + (u32)(q0 >> 3) * 8192;
		for (int r = r0; r < LWG_BN; r += 8) {
			const u16* g = w + (long long)(n0 + r) * k + k0 + 8 * q0;
			u32 off = o0 + (u32)(r - r0) * 128;
			for (int q = q0; q < P; q += 16, g += 128, off += 2 * 8192) {
				if (n0 + r < n && 8 * q < kn)
					cp_async16a(sW + off, g);
				else
					*(uint4*)(gs + off) = zero;
			}
		}
		cp_async_commit();
	}
	pdl_wait();
	pdl_launch();
	// Chunk c of x into slot c % R, one group: thread t copies piece t%8
	// of rows t/8, t/8 + 16, ... (a fixed swizzle again) of each term.
	const int xp = tid & 7, xr = tid >> 3;
	auto copyX = [&](int c) {
		if (tma) {
			if (tid == 0) {
				const u32 bar = xbars + 8 * (c % R);
				mbar_expect_tx(bar, slotBytes);
				for (int t = 0; t < terms; t++)
					tma_load_2d(sX + (u32)(c % R) * slotBytes + (u32)t * (NP * 128), maps + 128 * (1 + t), bar, k0 + 64 * c, m0);
			}
			return;
		}
		const int kq = 64 * c + 8 * xp;
		for (int t = 0; t < terms; t++) {
			u32 off = (u32)(c % R) * slotBytes + (u32)t * (NP * 128) + lwg_piece(xr, xp);
			const u16* g = x + t * xlo + (long long)(m0 + xr) * k + k0 + kq;
			for (int r = xr; r < NP; r += NT / 8, off += 16 * 128, g += (long long)16 * k) {
				if (r < rows && kq < kn)
					cp_async16a(sX + off, g);
				else
					*(uint4*)(gs + (sX - sW) + off) = zero;
			}
		}
		cp_async_commit();
	};
	for (int c = 0; c < min(R, chunks); c++) copyX(c);
	float acc[NP / 2];
#pragma unroll
	for (int i = 0; i < NP / 2; i++) acc[i] = 0.0f;
	for (int c = 0; c < chunks; c++) {
		if (tma) {
			// The weight's chunk c, then x's: its slot's (c / R)-th copy,
			// that phase's parity.
			while (!mbar_try_wait(bars + 8 * c, 0)) {
			}
			while (!mbar_try_wait(xbars + 8 * (c % R), (u32)(c / R) & 1)) {
			}
		} else {
			// The groups committed after chunk c's: with all of x's slice
			// in slots, the later chunks'; through the ring, the rest of
			// the first R and one an iteration before this (empty in the
			// first two), or, for a chunk copied in iteration c − R + 2,
			// that iteration's successors.
			cp_async_wait_group(R >= chunks ? chunks - 1 - c : c < R ? R - 1 : R - 3);
			fence_async_smem();
		}
		__syncthreads();
		if (R < chunks) {
			// Every warp has waited for chunk c − 2's products (wg_wait<1>
			// after chunk c − 1's): its slot takes chunk c − 2 + R.
			if (c >= 2 && c - 2 + R < chunks)
				copyX(c - 2 + R);
			else if (!tma)
				cp_async_commit();
		}
		wg_fence();
		const u32 a = sW + (u32)c * 8192, b = sX + (u32)(c % R) * slotBytes;
#pragma unroll
		for (int kk = 0; kk < 4; kk++) wgmma_f16<NP>(acc, wg_desc(a + 32 * kk), wg_desc(b + 32 * kk));
		if (terms == 2)
#pragma unroll
			for (int kk = 0; kk < 4; kk++) wgmma_f16<NP>(acc, wg_desc(a + 32 * kk), wg_desc(b + NP * 128 + 32 * kk));
		wg_commit();
		wg_wait<1>();
	}
	wg_wait<0>();
	// The mbarriers' memory goes to the products too: invalidated first.
	if (tma && tid == 0)
		for (int i = 0; i < chunks + R; i++) mbar_inval(bars + 8 * i);
	// The products into shared memory (the operands', done with), as
	// [row of x][column] for the cluster and the writes: thread 32w + l
	// holds columns 16w + l/4 (+8) of rows 8i + 2(l%4) (+1).
	__syncthreads();
	float* Cs = (float*)gs;
	{
		const int wq = tid >> 5, l = tid & 31, col = 16 * wq + (l >> 2), r0 = 2 * (l & 3);
#pragma unroll
		for (int i = 0; i < NP / 8; i++) {
			const int r = 8 * i + r0;
			Cs[r * LWG_CS + col] = acc[4 * i];
			Cs[(r + 1) * LWG_CS + col] = acc[4 * i + 1];
			Cs[r * LWG_CS + col + 8] = acc[4 * i + 2];
			Cs[(r + 1) * LWG_CS + col + 8] = acc[4 * i + 3];
		}
	}
	cluster_sync();
	lcl_add_finish<true>(Cs, LWG_CS, LWG_BN, NT, S, rank, rows, m0, n0, d, n, bias, act, accum, half);
}

// linear_wg: lin_wg for np = x's rows a block rounded up to 32 (32, 64, 96
// or 128), one warpgroup; x's second term (FP16X2) xlo elements after its
// first, or xlo 0 for one term. Grid: (⌈n/64⌉·S, 1, ⌈m/128⌉), in clusters
// of S ≤ LCL_SPLITS along x; R the ring's slots (see lin_wg).
#if LAYA_EXTRAS
extern "C" __global__ void __launch_bounds__(128, 1) linear_wg(void* d, const u16* x, long long xlo, const u16* w, const float* bias,
	int m, int k, int n, int act, int accum, int half, int kc, int R, int np, const char* maps) {
	switch (np) {
	case 32: lin_wg<32>(d, x, xlo, w, bias, m, k, n, act, accum, half, kc, R, maps); break;
	case 64: lin_wg<64>(d, x, xlo, w, bias, m, k, n, act, accum, half, kc, R, maps); break;
	case 96: lin_wg<96>(d, x, xlo, w, bias, m, k, n, act, accum, half, kc, R, maps); break;
	default: lin_wg<128>(d, x, xlo, w, bias, m, k, n, act, accum, half, kc, R, maps); break;
	}
}
#endif
