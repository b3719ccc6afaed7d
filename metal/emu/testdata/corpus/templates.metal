// TEST ONLY: templated kernels instantiated by host_name, directly, through
// an MLX-style instantiate_kernel macro, and llama.cpp-style through a
// typedef of the function type. Expected values: metal/emu_corpus_test.go.
#include <metal_stdlib>
using namespace metal;

#define METAL_FUNC inline __attribute__((always_inline))
#define instantiate_kernel(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;

struct Affine {
  float scale;
  float shift;
};

template <typename T>
METAL_FUNC T apply(T x, constant Affine& a) {
  return static_cast<T>(float(x) * a.scale + a.shift);
}

// out[i] = in[i] * scale + shift, N elements per thread.
template <typename T, int N>
[[kernel]] void affine(device const T* in [[buffer(0)]],
                       device T* out [[buffer(1)]],
                       constant Affine& a [[buffer(2)]],
                       constant uint& n [[buffer(3)]],
                       uint gid [[thread_position_in_grid]]) {
  for (int k = 0; k < N; k++) {
    uint i = gid * N + k;
    if (i < n) {
      out[i] = apply(in[i], a);
    }
  }
}

template [[host_name("affine_f32_1")]] [[kernel]] decltype(affine<float, 1>) affine<float, 1>;
instantiate_kernel("affine_f16_4", affine, half, 4)

#define instantiate_affine(tname, type, n) \
  instantiate_kernel("affine_" #tname "_" #n, affine, type, n)
instantiate_affine(f32, float, 2)
instantiate_affine(bf16, bfloat, 2)

// Templated over the reduction; a threadgroup array sized by a template
// parameter; max threads from the kernel attribute.
struct SumOp {
  template <typename T> T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  template <typename T> T operator()(T a, T b) const { return max(a, b); }
};

template <typename Op, int TG>
[[kernel, max_total_threads_per_threadgroup(TG)]] void reduce_rows(
    device const float* in [[buffer(0)]],
    device float* out [[buffer(1)]],
    constant uint& cols [[buffer(2)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_position_in_threadgroup]]) {
  threadgroup float partial[TG];
  Op op;
  float acc = in[row * cols + tid];
  for (uint c = tid + TG; c < cols; c += TG) {
    acc = op(acc, in[row * cols + c]);
  }
  partial[tid] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = TG / 2; s > 0; s /= 2) {
    if (tid < s) {
      partial[tid] = op(partial[tid], partial[tid + s]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) {
    out[row] = partial[0];
  }
}

typedef decltype(reduce_rows<SumOp, 64>) reduce_sum_t;
template [[host_name("reduce_sum_64")]] kernel reduce_sum_t reduce_rows<SumOp, 64>;
template [[host_name("reduce_max_32")]] [[kernel]] decltype(reduce_rows<MaxOp, 32>) reduce_rows<MaxOp, 32>;

// A plain kernel whose host name differs from its function name.
[[host_name("renamed_fill")]] kernel void fill_impl(device uint* out [[buffer(0)]],
                                                    uint gid [[thread_position_in_grid]]) {
  out[gid] = gid * 3u;
}

// llama.cpp style: implicit buffer indices, an argument struct by value,
// char pointers, and C-style casts to a template type parameter (a vector
// type here, which C++ would not convert).
typedef struct {
  int32_t n;
  uint64_t row_bytes;
  float scale;
} scale_args;

template <typename T4>
kernel void scale_rows(constant scale_args & args,
                       device const char * src,
                       device       char * dst,
                       uint3  tgpig[[threadgroup_position_in_grid]],
                       ushort tiisg[[thread_index_in_simdgroup]]) {
  device const T4 * x = (device const T4 *) (src + tgpig.x*args.row_bytes);
  device       T4 * y = (device       T4 *) (dst + tgpig.x*args.row_bytes);
  for (int i = tiisg; i < args.n; i += 32) {
    float4 v = (float4) x[i];
    y[i] = (T4) (v * args.scale);
  }
}

typedef decltype(scale_rows<half4>) scale_rows_t;
template [[host_name("scale_rows_f16")]] kernel scale_rows_t scale_rows<half4>;
