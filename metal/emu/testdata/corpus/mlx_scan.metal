// A prefix scan in the style of MLX's scan.h: operator structs with
// "static constexpr constant U init = static_cast<U>(...)" and limits from
// a specialized Limits<T> template, simd_prefix_{inclusive,exclusive}_
// {sum,product}, simd_shuffle_up / simd_shuffle_and_fill_up scans, a bool
// specialization of an operator, array parameters of helper functions
// sized by template arguments, and threadgroup memory in a templated
// kernel instantiated through instantiate_kernel.
#include <metal_stdlib>

using namespace metal;

template <typename U>
struct Limits {
  static const constant U max = metal::numeric_limits<U>::max();
  static const constant U min = metal::numeric_limits<U>::min();
};

#define instantiate_float_limit(type)             \
  template <>                                     \
  struct Limits<type> {                           \
    static constexpr constant type max =          \
        metal::numeric_limits<type>::infinity();  \
    static constexpr constant type min =          \
        -metal::numeric_limits<type>::infinity(); \
  };

instantiate_float_limit(float);

inline size_t ceildiv(size_t N, size_t M) {
  return (N + M - 1) / M;
}

template <typename U>
struct CumSum {
  static constexpr constant U init = static_cast<U>(0);
  template <typename T>
  U operator()(U a, T b) {
    return a + b;
  }
  U simd_exclusive_scan(U x) {
    return simd_prefix_exclusive_sum(x);
  }
};

template <typename U>
struct CumProd {
  static constexpr constant U init = static_cast<U>(1.0f);
  template <typename T>
  U operator()(U a, T b) {
    return a * b;
  }
  U simd_exclusive_scan(U x) {
    // The inclusive product divided by the own value would lose zeros:
    // use the exclusive builtin, and check it against the inclusive one.
    U incl = simd_prefix_inclusive_product(x);
    U excl = simd_prefix_exclusive_product(x);
    return incl == excl * x ? excl : U(0) / U(0);
  }
};

template <>
struct CumProd<bool> {
  static constexpr constant bool init = true;
  template <typename T>
  bool operator()(bool a, T b) {
    return a & static_cast<bool>(b);
  }
  bool simd_scan(bool x) {
    for (int i = 1; i <= 16; i *= 2) {
      bool other = simd_shuffle_up(x, i);
      x &= other;
    }
    return x;
  }
  bool simd_exclusive_scan(bool x) {
    x = simd_scan(x);
    return simd_shuffle_and_fill_up(x, init, 1);
  }
};

template <typename U>
struct CumMax {
  static constexpr constant U init = Limits<U>::min;
  template <typename T>
  U operator()(U a, T b) {
    return (a >= b) ? a : b;
  }
  U simd_scan(U x) {
    for (int i = 1; i <= 16; i *= 2) {
      U other = simd_shuffle_up(x, i);
      x = (x >= other) ? x : other;
    }
    return x;
  }
  U simd_exclusive_scan(U x) {
    x = simd_scan(x);
    return simd_shuffle_and_fill_up(x, init, 1);
  }
};

template <typename T, typename U, int N_READS>
inline void load_safe(U values[N_READS], const device T* input, int start, int total, U init) {
  for (int i = 0; i < N_READS; i++) {
    values[i] = (start + i < total) ? static_cast<U>(input[i]) : init;
  }
}

template <typename U, int N_READS>
inline void write_safe(U values[N_READS], device U* out, int start, int total) {
  for (int i = 0; i < N_READS; i++) {
    if (start + i < total) {
      out[i] = values[i];
    }
  }
}

// One row per threadgroup; inclusive or exclusive scan along the row.
template <typename T, typename U, typename Op, int N_READS, bool inclusive>
[[kernel]] void contiguous_scan(
    const device T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    const constant size_t& axis_size [[buffer(2)]],
    uint gid [[thread_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint lsize [[threads_per_threadgroup]],
    uint simd_size [[threads_per_simdgroup]],
    uint simd_lane_id [[thread_index_in_simdgroup]],
    uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  Op op;
  in += (gid / lsize) * axis_size;
  out += (gid / lsize) * axis_size;

  U prefix = Op::init;
  U values[N_READS];
  threadgroup U simdgroup_sums[32];

  for (uint r = 0; r < ceildiv(axis_size, N_READS * lsize); r++) {
    uint offset = r * lsize * N_READS + lid * N_READS;
    load_safe<T, U, N_READS>(values, in + offset, offset, axis_size, Op::init);

    for (int i = 1; i < N_READS; i++) {
      values[i] = op(values[i], values[i - 1]);
    }

    U prev_thread = op.simd_exclusive_scan(values[N_READS - 1]);

    if (simd_lane_id == simd_size - 1) {
      simdgroup_sums[simd_group_id] = op(prev_thread, values[N_READS - 1]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    if (simd_group_id == 0) {
      U prev_simdgroup = op.simd_exclusive_scan(simdgroup_sums[simd_lane_id]);
      simdgroup_sums[simd_lane_id] = prev_simdgroup;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (int i = 0; i < N_READS; i++) {
      values[i] = op(values[i], prefix);
      values[i] = op(values[i], simdgroup_sums[simd_group_id]);
      values[i] = op(values[i], prev_thread);
    }

    if (inclusive) {
      write_safe<U, N_READS>(values, out + offset, offset, axis_size);
    } else {
      if (lid == 0 && offset == 0) {
        out[0] = Op::init;
      }
      write_safe<U, N_READS>(values, out + offset + 1, offset + 1, axis_size);
    }

    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (simd_group_id == lsize / simd_size - 1 && simd_lane_id == simd_size - 1) {
      simdgroup_sums[0] = values[N_READS - 1];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    prefix = simdgroup_sums[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

#define instantiate_kernel(name, func, ...) \
  template [[host_name(                     \
      name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;

#define instantiate_contiguous_scan(inclusive, tname, itype, otype, op, nreads) \
  instantiate_kernel("contig_scan_" #inclusive "_" #op "_" #tname,             \
                     contiguous_scan, itype, otype, op<otype>, nreads, inclusive)

instantiate_contiguous_scan(true, int32, int32_t, int32_t, CumSum, 4)
instantiate_contiguous_scan(false, int32, int32_t, int32_t, CumSum, 4)
instantiate_contiguous_scan(true, float32, float, float, CumProd, 2)
instantiate_contiguous_scan(false, float32, float, float, CumMax, 3)
instantiate_contiguous_scan(true, bool_, bool, bool, CumProd, 4)
