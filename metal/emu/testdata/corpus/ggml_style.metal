// Kernels written the way llama.cpp's ggml-metal.metal writes them: kernel
// argument structs passed as "constant kargs & args", raw "device const
// char *" buffers cast to block structs, quantized blocks dequantized into
// float4x4 through a function template passed as a template argument,
// C-style casts to matrix and vector template parameters, function
// constants indexed "FC_X + 0", threadgroup memory passed as
// "threadgroup char * shmem [[threadgroup(0)]]", FOR_UNROLL and SWAP
// macros, an enum template parameter, and decltype typedef instantiations.
#include <metal_stdlib>

using namespace metal;

#define N_SIMDWIDTH 32
#define MAX(x, y) ((x) > (y) ? (x) : (y))
#define MIN(x, y) ((x) < (y) ? (x) : (y))
#define SWAP(x, y) { auto tmp = (x); (x) = (y); (y) = tmp; }
#define FOR_UNROLL(x) _Pragma("clang loop unroll(full)") for (x)

#define QK8_0 32
typedef half ggml_half;
typedef struct {
    ggml_half d;       // delta
    int8_t  qs[QK8_0]; // quants
} block_q8_0;
static_assert(sizeof(block_q8_0) == sizeof(ggml_half) + QK8_0, "wrong q8_0 block size/padding");

typedef struct {
    int32_t  ne00t;  // row length in float4x4 units
    uint64_t nb01;   // bytes per source row
    uint64_t nb10;   // bytes per index
    uint64_t nb1;    // bytes per destination row
} kargs_get_rows;

typedef struct {
    int32_t  ne00;
    int32_t  ne01;
    uint64_t nb01;
    int32_t  ne10;
} kargs_mul_mv;

typedef enum {
    SORT_ORDER_ASC,
    SORT_ORDER_DESC,
} sort_order;

#define FC_GET_ROWS 600
constant float FC_get_rows_scale [[function_constant(FC_GET_ROWS + 0)]];

static inline float dot(float x, float y) {
    return x*y;
}

template <typename type4x4>
void dequantize_f16(device const half4x4 * src, short il, thread type4x4 & reg) {
    reg = (type4x4)(*src);
}

template <typename type4x4>
void dequantize_q8_0(device const block_q8_0 *xb, short il, thread type4x4 & reg) {
    device const int8_t * qs = ((device const int8_t *)xb->qs);
    const float d = xb->d;

    float4x4 reg_f;

    for (int i = 0; i < 16; i++) {
        reg_f[i/4][i%4] = (qs[i + 16*il] * d);
    }

    reg = (type4x4) reg_f;
}

template<typename block_q, short nl, void (*dequantize_func)(device const block_q *, short, thread float4x4 &)>
kernel void kernel_get_rows_q(
        constant kargs_get_rows & args,
        device const void * src0,
        device const void * src1,
        device       void * dst,
        uint3               tgpig[[threadgroup_position_in_grid]],
        ushort              tiitg[[thread_index_in_threadgroup]],
        ushort3             ntg  [[threads_per_threadgroup]]) {
    const int32_t i10 = tgpig.x;
    const int32_t r = ((const device int32_t *) ((const device char *) src1 + i10*args.nb10))[0];

    auto psrc = (device const block_q *) ((const device char *) src0 + r*args.nb01);
    auto pdst = (device      float4x4 *) ((      device char *) dst  + i10*args.nb1);

    for (int ind = tiitg; ind < args.ne00t; ind += ntg.x) {
        float4x4 temp;
        dequantize_func(psrc + ind/nl, ind%nl, temp);
        pdst[ind] = temp * FC_get_rows_scale;
    }
}

typedef decltype(kernel_get_rows_q<block_q8_0, 2, dequantize_q8_0>) get_rows_q_t;

template [[host_name("kernel_get_rows_q8_0")]] kernel get_rows_q_t kernel_get_rows_q<block_q8_0, 2, dequantize_q8_0>;
template [[host_name("kernel_get_rows_f16")]]  kernel get_rows_q_t kernel_get_rows_q<half4x4,    1, dequantize_f16>;

// One row of src0 (T04 vectors) times the vector src1 per NR0 rows; the
// partial sums of the simdgroups meet in threadgroup memory.
template<typename T04, typename T14, short NR0>
void mul_mv_t_t_4_impl(
        constant kargs_mul_mv & args,
        device const char * src0,
        device const char * src1,
        device       char * dst,
        threadgroup  char * shmem,
        uint3  tgpig,
        ushort tiisg,
        ushort sgitg,
        ushort nsg) {
    const int r0 = tgpig.x*NR0;

    threadgroup float * shmem_f32 = (threadgroup float *) shmem;

    device const T14 * y4 = (device const T14 *) src1;
    device const T04 * ax4[NR0];
    FOR_UNROLL (short row = 0; row < NR0; ++row) {
        ax4[row] = (device const T04 *) (src0 + (r0 + row)*args.nb01);
    }

    float sumf[NR0] = { 0.f };

    for (int i = sgitg*N_SIMDWIDTH + tiisg; i < args.ne00/4; i += nsg*N_SIMDWIDTH) {
        FOR_UNROLL (short row = 0; row < NR0; ++row) {
            sumf[row] += dot((float4) ax4[row][i], (float4) y4[i]);
        }
    }

    FOR_UNROLL (short row = 0; row < NR0; ++row) {
        const float tot = simd_sum(sumf[row]);
        if (tiisg == 0) {
            shmem_f32[sgitg*NR0 + row] = tot;
        }
    }

    threadgroup_barrier(mem_flags::mem_threadgroup);

    if (sgitg == 0 && tiisg < NR0) {
        float tot = 0.f;
        for (short s = 0; s < nsg; ++s) {
            tot += shmem_f32[s*NR0 + tiisg];
        }
        device float * dst_f32 = (device float *) dst;
        dst_f32[r0 + tiisg] = tot + dot(0.f, tot);
    }
}

template<typename T04, typename T14, short NR0>
kernel void kernel_mul_mv_t_t_4(
        constant kargs_mul_mv & args,
        device const char * src0,
        device const char * src1,
        device       char * dst,
        threadgroup  char * shmem [[threadgroup(0)]],
        uint3  tgpig[[threadgroup_position_in_grid]],
        ushort tiisg[[thread_index_in_simdgroup]],
        ushort sgitg[[simdgroup_index_in_threadgroup]],
        ushort nsg[[simdgroups_per_threadgroup]]) {
    mul_mv_t_t_4_impl<T04, T14, NR0>(args, src0, src1, dst, shmem, tgpig, tiisg, sgitg, nsg);
}

typedef decltype(kernel_mul_mv_t_t_4<half4, float4, 2>) mul_mv_t_t_4_t;

template [[host_name("kernel_mul_mv_f16_f32_4")]] kernel mul_mv_t_t_4_t kernel_mul_mv_t_t_4<half4,  float4, 2>;
template [[host_name("kernel_mul_mv_f32_f32_4")]] kernel mul_mv_t_t_4_t kernel_mul_mv_t_t_4<float4, float4, 2>;

// An 8x8 output tile: A (half, row-major 8 x K) and B (float, K x 8) go
// through threadgroup memory into simdgroup matrices; the result goes back
// through threadgroup memory.
kernel void kernel_mul_mm_8x8(
        device const half  * A,
        device const float * B,
        device       float * C,
        constant     int   & K,
        threadgroup  char  * shmem [[threadgroup(0)]],
        ushort tiitg[[thread_index_in_threadgroup]]) {
    threadgroup half  * sa = (threadgroup half  *)(shmem);
    threadgroup float * sb = (threadgroup float *)(shmem + 8*K*sizeof(half));

    for (int i = tiitg; i < 8*K; i += 32) {
        sa[i] = A[i];
        sb[i] = B[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    simdgroup_half8x8  ma;
    simdgroup_float8x8 mb;
    simdgroup_float8x8 mc = make_filled_simdgroup_matrix<float, 8>(0.f);

    for (int k = 0; k < K; k += 8) {
        simdgroup_load(ma, sa + k, K, 0, false);
        simdgroup_load(mb, sb + 8*k, 8, 0, false);
        simdgroup_multiply_accumulate(mc, ma, mb, mc);
    }

    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup float * sc = (threadgroup float *) shmem;
    simdgroup_store(mc, sc, 8, 0, false);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int i = tiitg; i < 64; i += 32) {
        C[i] = sc[i];
    }
}

// Bitonic argsort of one row in threadgroup memory (ncols_pad a power of
// two, one thread per padded column). Padding indices (>= ncols) sort last.
template<sort_order order>
static inline bool sorts_before(device const float * row, int32_t a, int32_t b, int64_t ncols) {
    if (a >= ncols || b >= ncols) {
        return a < ncols;
    }
    return order == SORT_ORDER_ASC ? row[a] < row[b] : row[a] > row[b];
}

template<sort_order order>
kernel void kernel_argsort_f32_i32(
        device const float   * x,
        device       int32_t * dst,
        constant     int64_t & ncols,
        constant     int64_t & ncols_pad,
        threadgroup  int32_t * idx [[threadgroup(0)]],
        uint3 tgpig[[threadgroup_position_in_grid]],
        uint3 tpitg[[thread_position_in_threadgroup]]) {
    const int col = tpitg[0];
    const int row = tgpig[1];

    device const float * x_row = x + row * ncols;

    idx[col] = col;
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (int span = 2; span <= ncols_pad; span <<= 1) {
        for (int step = span >> 1; step > 0; step >>= 1) {
            const int partner = col ^ step;
            if (partner > col) {
                // Ascending halves where (col & span) == 0, descending ones elsewhere.
                const bool up = (col & span) == 0;
                const int32_t lo = up ? idx[col] : idx[partner];
                const int32_t hi = up ? idx[partner] : idx[col];
                if (sorts_before<order>(x_row, hi, lo, ncols)) {
                    SWAP(idx[col], idx[partner]);
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    }

    if (col < ncols) {
        dst[row * ncols + col] = idx[col];
    }
}

typedef decltype(kernel_argsort_f32_i32<SORT_ORDER_ASC>) argsort_t;

template [[host_name("kernel_argsort_f32_i32_asc")]]  kernel argsort_t kernel_argsort_f32_i32<SORT_ORDER_ASC>;
template [[host_name("kernel_argsort_f32_i32_desc")]] kernel argsort_t kernel_argsort_f32_i32<SORT_ORDER_DESC>;
