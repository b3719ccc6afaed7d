// A tiled GEMM written the way MLX's steel kernels are: namespace
// mlx::steel helpers, STEEL_CONST/STEEL_PRAGMA_UNROLL/METAL_FUNC macros, a
// block loader that moves aligned "ReadVector" structs into threadgroup
// memory, a block MMA that fills simdgroup matrices through
// thread_elements(), function constants (one derived from two others),
// threadgroup arrays sized by template parameters, a kernel attribute list
// with max_total_threads_per_threadgroup(WM * WN * 32), a struct of
// parameters read through a constant pointer, and instantiation through
// nested macros.
#include <metal_stdlib>
#include <metal_simdgroup>
#include <metal_simdgroup_matrix>

using namespace metal;

#define STEEL_CONST static constant constexpr const
#define STEEL_PRAGMA_UNROLL _Pragma("clang loop unroll(full)")
#define METAL_FUNC inline __attribute__((always_inline))

namespace mlx {
namespace steel {

struct GEMMParams {
  const int M;
  const int N;
  const int K;
  const int lda;
  const int ldb;
  const int ldd;
  const int tiles_n;
  const int tiles_m;
  const int gemm_k_iterations;
};

template <typename OutT, typename InT>
struct TransformScale {
  static METAL_FUNC OutT apply(InT x, InT s) {
    return static_cast<OutT>(x * s);
  }
};

template <
    typename T,
    short BROWS,
    short BCOLS,
    short dst_ld,
    short reduction_dim,
    short tgp_size,
    short n_reads = (BCOLS * BROWS) / (tgp_size),
    short TCOLS = BCOLS / n_reads,
    short TROWS = tgp_size / TCOLS>
struct TileLoader {
  STEEL_CONST short vec_size = n_reads;

  const int src_ld;
  const int tile_stride;
  const short thread_idx;
  const short bi;
  const short bj;

  threadgroup T* dst;
  const device T* src;

  struct alignas(sizeof(T)) ReadVector {
    uint8_t v[sizeof(T) * vec_size];
  };

  METAL_FUNC TileLoader(
      const device T* src_,
      const int src_ld_,
      threadgroup T* dst_,
      ushort simd_group_id [[simdgroup_index_in_threadgroup]],
      ushort simd_lane_id [[thread_index_in_simdgroup]])
      : src_ld(src_ld_),
        tile_stride(reduction_dim ? BCOLS : BROWS * src_ld),
        thread_idx(simd_group_id * 32 + simd_lane_id),
        bi(thread_idx / TCOLS),
        bj(vec_size * (thread_idx % TCOLS)),
        dst(dst_ + bi * dst_ld + bj),
        src(src_ + bi * src_ld + bj) {}

  METAL_FUNC void load_unsafe() const {
    STEEL_PRAGMA_UNROLL
    for (short i = 0; i < BROWS; i += TROWS) {
      *((threadgroup ReadVector*)(&dst[i * dst_ld])) =
          *((const device ReadVector*)(&src[i * src_ld]));
    }
  }

  // Rows or columns past the matrix read as zero.
  METAL_FUNC void load_safe(short2 src_tile_dim) const {
    src_tile_dim = src_tile_dim - short2(bj, bi);
    STEEL_PRAGMA_UNROLL
    for (short i = 0; i < BROWS; i += TROWS) {
      STEEL_PRAGMA_UNROLL
      for (short j = 0; j < vec_size; j++) {
        bool ok = (i < src_tile_dim.y) && (j < src_tile_dim.x);
        dst[i * dst_ld + j] = ok ? src[i * src_ld + j] : T(0);
      }
    }
  }

  METAL_FUNC void next() {
    src += tile_stride;
  }
};

template <
    typename T,
    typename U,
    int BM,
    int BN,
    int BK,
    int WM,
    int WN,
    short lda_tgp,
    short ldb_tgp,
    typename AccumType = float>
struct TileMMA {
  STEEL_CONST short TM_stride = 8 * WM;
  STEEL_CONST short TN_stride = 8 * WN;
  STEEL_CONST short TM = BM / TM_stride;
  STEEL_CONST short TN = BN / TN_stride;
  STEEL_CONST short simd_stride_a = {TM_stride * lda_tgp};
  STEEL_CONST short simd_stride_b = {TN_stride};
  STEEL_CONST short tile_stride_a = {8};
  STEEL_CONST short tile_stride_b = {8 * ldb_tgp};

  simdgroup_matrix<AccumType, 8, 8> Asimd[TM];
  simdgroup_matrix<AccumType, 8, 8> Bsimd[TN];
  simdgroup_matrix<AccumType, 8, 8> results[TM * TN] = {
      simdgroup_matrix<AccumType, 8, 8>(0)};

  const short tm;
  const short tn;
  short sm;
  short sn;
  short As_offset;
  short Bs_offset;

  METAL_FUNC TileMMA(
      ushort simd_group_id [[simdgroup_index_in_threadgroup]],
      ushort simd_lane_id [[thread_index_in_simdgroup]])
      : tm(8 * (simd_group_id / WN)), tn(8 * (simd_group_id % WN)) {
    // The lane's place in an 8x8 simdgroup matrix (Apple's layout).
    short qid = simd_lane_id / 4;
    sm = (qid & 4) + (simd_lane_id / 2) % 4;
    sn = (qid & 2) * 2 + (simd_lane_id % 2) * 2;
    As_offset = (sn) + (tm + sm) * lda_tgp;
    Bs_offset = (sm)*ldb_tgp + (tn + sn);
  }

  METAL_FUNC void mma(const threadgroup T* As, const threadgroup T* Bs) {
    As += As_offset;
    Bs += Bs_offset;
    STEEL_PRAGMA_UNROLL
    for (short kk = 0; kk < BK; kk += 8) {
      simdgroup_barrier(mem_flags::mem_none);
      STEEL_PRAGMA_UNROLL
      for (short i = 0; i < TM; i++) {
        Asimd[i].thread_elements()[0] = static_cast<AccumType>(As[i * simd_stride_a + 0]);
        Asimd[i].thread_elements()[1] = static_cast<AccumType>(As[i * simd_stride_a + 1]);
      }
      simdgroup_barrier(mem_flags::mem_none);
      STEEL_PRAGMA_UNROLL
      for (short j = 0; j < TN; j++) {
        Bsimd[j].thread_elements()[0] = static_cast<AccumType>(Bs[j * simd_stride_b + 0]);
        Bsimd[j].thread_elements()[1] = static_cast<AccumType>(Bs[j * simd_stride_b + 1]);
      }
      simdgroup_barrier(mem_flags::mem_none);
      STEEL_PRAGMA_UNROLL
      for (short i = 0; i < TM; i++) {
        STEEL_PRAGMA_UNROLL
        for (short j = 0; j < TN; j++) {
          short j_serp = (i % 2) ? (TN - 1 - j) : j;
          simdgroup_multiply_accumulate(
              results[i * TN + j_serp], Asimd[i], Bsimd[j_serp], results[i * TN + j_serp]);
        }
      }
      As += tile_stride_a;
      Bs += tile_stride_b;
    }
  }

  template <typename Epilogue>
  METAL_FUNC void store_result_safe(device U* D, const int ldd, short2 dst_tile_dims, AccumType scale) const {
    D += (sm + tm) * ldd + (tn + sn);
    dst_tile_dims -= short2(tn + sn, sm + tm);
    STEEL_PRAGMA_UNROLL
    for (int i = 0; i < TM; i++) {
      if (i * TM_stride < dst_tile_dims.y) {
        STEEL_PRAGMA_UNROLL
        for (int j = 0; j < TN; j++) {
          thread const auto& accum = results[i * TN + j].thread_elements();
          int offset = (i * TM_stride) * ldd + (j * TN_stride);
          if (j * TN_stride < dst_tile_dims.x) {
            D[offset] = Epilogue::apply(accum[0], scale);
          }
          if (j * TN_stride + 1 < dst_tile_dims.x) {
            D[offset + 1] = Epilogue::apply(accum[1], scale);
          }
        }
      }
    }
  }
};

} // namespace steel
} // namespace mlx

using namespace mlx::steel;

constant bool align_M [[function_constant(200)]];
constant bool align_N [[function_constant(201)]];
constant bool align_MN = align_M && align_N;
constant float out_scale [[function_constant(300)]];

// clang-format off
template <
    typename T,
    int BM,
    int BN,
    int BK,
    int WM,
    int WN,
    typename AccumType = float>
[[kernel, max_total_threads_per_threadgroup(WM* WN * 32)]] void steel_like_gemm(
    const device T* A [[buffer(0)]],
    const device T* B [[buffer(1)]],
    device T* D [[buffer(3)]],
    const constant GEMMParams* params [[buffer(4)]],
    uint simd_lane_id [[thread_index_in_simdgroup]],
    uint simd_group_id [[simdgroup_index_in_threadgroup]],
    uint3 tid [[threadgroup_position_in_grid]],
    uint3 lid [[thread_position_in_threadgroup]]) { // clang-format on
  (void)lid;
  STEEL_CONST short tgp_padding = 16 / sizeof(T);
  STEEL_CONST short tgp_size = WM * WN * 32;
  using loader_a_t = TileLoader<T, BM, BK, BK + tgp_padding, 1, tgp_size>;
  using loader_b_t = TileLoader<T, BK, BN, BN + tgp_padding, 0, tgp_size>;
  using mma_t = TileMMA<T, T, BM, BN, BK, WM, WN, BK + tgp_padding, BN + tgp_padding, AccumType>;

  const int tid_y = tid.y;
  const int tid_x = tid.x;
  if (params->tiles_n <= tid_x || params->tiles_m <= tid_y) {
    return;
  }

  threadgroup T As[BM * (BK + tgp_padding)];
  threadgroup T Bs[BK * (BN + tgp_padding)];

  const int c_row = tid_y * BM;
  const int c_col = tid_x * BN;
  A += size_t(c_row) * params->lda;
  B += size_t(c_col);
  D += size_t(c_row) * params->ldd + size_t(c_col);

  thread mma_t mma_op(simd_group_id, simd_lane_id);
  thread loader_a_t loader_a(A, params->lda, As, simd_group_id, simd_lane_id);
  thread loader_b_t loader_b(B, params->ldb, Bs, simd_group_id, simd_lane_id);

  const short tgp_bm = align_M ? BM : short(min(BM, params->M - c_row));
  const short tgp_bn = align_N ? BN : short(min(BN, params->N - c_col));

  for (int k = 0; k < params->gemm_k_iterations; k++) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (align_MN) {
      loader_a.load_unsafe();
      loader_b.load_unsafe();
    } else {
      loader_a.load_safe(short2(BK, tgp_bm));
      loader_b.load_safe(short2(tgp_bn, BK));
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    mma_op.mma(As, Bs);
    loader_a.next();
    loader_b.next();
  }
  threadgroup_barrier(mem_flags::mem_none);
  const AccumType scale = is_function_constant_defined(out_scale) ? AccumType(out_scale) : AccumType(1);
  return mma_op.template store_result_safe<TransformScale<T, AccumType>>(D, params->ldd, short2(tgp_bn, tgp_bm), scale);
}

#define instantiate_kernel(name, func, ...) \
  template [[host_name(                     \
      name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;

#define instantiate_gemm(tname, itype, bm, bn, bk, wm, wn) \
  instantiate_kernel(                                      \
      "steel_gemm_" #tname "_bm" #bm "_bn" #bn "_bk" #bk "_wm" #wm "_wn" #wn, \
      steel_like_gemm, itype, bm, bn, bk, wm, wn)

#define instantiate_gemm_shapes(tname, itype)     \
  instantiate_gemm(tname, itype, 32, 32, 16, 2, 2) \
  instantiate_gemm(tname, itype, 64, 32, 16, 2, 2)

instantiate_gemm_shapes(float32, float)
instantiate_gemm_shapes(float16, half)
