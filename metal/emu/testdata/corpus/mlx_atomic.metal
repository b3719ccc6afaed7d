// Atomics in the style of MLX's atomic.h and reduction/ops.h: a
// wide_atomic<T> wrapper chosen with enable_if over Metal's internal
// _disjunction, compare-exchange loops on a uint that packs several
// narrower values through a union (half and uint8 maxima and sums), and
// reduction op structs whose simd_reduce is picked by sizeof(T) in a
// macro-generated enable_if pair, with 64-bit values reduced by
// simd_shuffle_down.
#include <metal_atomic>
#include <metal_simdgroup>
#include <metal_stdlib>

using namespace metal;

#define METAL_FUNC inline __attribute__((always_inline))

#pragma METAL internals : enable
template <typename T>
constexpr constant bool has_native_atomic = _disjunction<
    is_same<T, int>,
    is_same<T, uint>,
    is_same<T, ulong>,
    is_same<T, float>>::value;
#pragma METAL internals : disable

template <typename T, typename = void>
struct wide_atomic {
  atomic<uint> val;
};

template <typename T>
struct wide_atomic<T, enable_if_t<has_native_atomic<T>>> {
  atomic<T> val;
};

template <typename T, enable_if_t<has_native_atomic<T>, bool> = true>
METAL_FUNC void wide_atomic_add(device wide_atomic<T>* object, T val, uint offset) {
  atomic_fetch_add_explicit(&(object[offset].val), val, memory_order_relaxed);
}

template <typename T, enable_if_t<has_native_atomic<T>, bool> = true>
METAL_FUNC bool wide_atomic_cas(
    device wide_atomic<T>* object, thread T* expected, T val, uint offset) {
  return atomic_compare_exchange_weak_explicit(
      &(object[offset].val), expected, val, memory_order_relaxed, memory_order_relaxed);
}

// float has no atomic_fetch_max_explicit: a compare-exchange loop.
template <typename T, enable_if_t<has_native_atomic<T>, bool> = true>
METAL_FUNC void wide_atomic_max(device wide_atomic<T>* object, T val, uint offset) {
  T expected = atomic_load_explicit(&(object[offset].val), memory_order_relaxed);
  while (val > expected) {
    if (wide_atomic_cas(object, &expected, val, offset)) {
      return;
    }
  }
}

namespace {

template <typename T>
constexpr constant uint lanes_per_word = sizeof(uint) / sizeof(T);

template <typename T>
union lanes_in_word {
  T lane[lanes_per_word<T>];
  uint bits;
};

template <typename T>
struct PackedAdd {
  static bool wanted(T a, T b) {
#pragma unused(a)
#pragma unused(b)
    return true;
  }
  T operator()(T a, T b) {
    return a + b;
  }
};

template <typename T>
struct PackedMax {
  static bool wanted(T a, T b) {
    return a > b;
  }
  T operator()(T a, T b) {
    return max(a, b);
  }
};

template <typename T, typename Op>
METAL_FUNC void packed_cas_update(device wide_atomic<T>* object, T update, uint offset) {
  device atomic<uint>* word = &object[offset / lanes_per_word<T>].val;
  const uint lane = offset % lanes_per_word<T>;
  lanes_in_word<T> expected;
  expected.bits = atomic_load_explicit(word, memory_order_relaxed);
  // On failure the compare-exchange reloads expected; retry until the
  // update is no longer needed or lands.
  for (;;) {
    if (!Op::wanted(update, expected.lane[lane])) {
      return;
    }
    lanes_in_word<T> desired = expected;
    desired.lane[lane] = Op()(update, expected.lane[lane]);
    if (atomic_compare_exchange_weak_explicit(word, &expected.bits, desired.bits, memory_order_relaxed,
                                              memory_order_relaxed)) {
      return;
    }
  }
}

} // namespace

template <typename T, enable_if_t<!has_native_atomic<T>, bool> = true>
METAL_FUNC void wide_atomic_max(device wide_atomic<T>* object, T val, uint offset) {
  packed_cas_update<T, PackedMax<T>>(object, val, offset);
}

template <typename T, enable_if_t<!has_native_atomic<T>, bool> = true>
METAL_FUNC void wide_atomic_add(device wide_atomic<T>* object, T val, uint offset) {
  packed_cas_update<T, PackedAdd<T>>(object, val, offset);
}

static constant constexpr const uint8_t simd_size = 32;

// Values narrower than 8 bytes use the op's simdgroup builtin; 64-bit
// ones halve the active span with simd_shuffle_down.
#define SIMD_REDUCE_BY_SIZE()                                            \
  template <typename T, metal::enable_if_t<(sizeof(T) < 8), bool> = true> \
  T simd_reduce(T val) {                                                 \
    return reduce_narrow(val);                                           \
  }                                                                      \
  template <typename T, metal::enable_if_t<(sizeof(T) >= 8), bool> = true> \
  T simd_reduce(T val) {                                                 \
    for (ushort span = simd_size >> 1; span != 0; span >>= 1) {          \
      val = (*this)(val, simd_shuffle_down(val, span));                  \
    }                                                                    \
    return val;                                                          \
  }

template <typename U>
struct Sum {
  SIMD_REDUCE_BY_SIZE()

  template <typename T>
  T reduce_narrow(T val) {
    return simd_sum(val);
  }

  static constexpr constant U init = U(0);

  template <typename T>
  void atomic_update(device wide_atomic<T>* out, T val, size_t offset = 0) {
    wide_atomic_add(out, val, offset);
  }

  U operator()(U a, U b) {
    return a + b;
  }
};

template <typename U>
struct Max {
  SIMD_REDUCE_BY_SIZE()

  template <typename T>
  T reduce_narrow(T val) {
    return simd_max(val);
  }

  static constexpr constant U init = metal::numeric_limits<U>::lowest();

  template <typename T>
  void atomic_update(device wide_atomic<T>* out, T val, size_t offset = 0) {
    wide_atomic_max(out, val, offset);
  }

  U operator()(U a, U b) {
    return a > b ? a : b;
  }
};

// Each simdgroup reduces its values, then lane 0 updates out[slot], where
// slot = group % n_out: several threadgroups (on several OS threads) race
// on the same packed word.
template <typename T, typename U, typename Op>
[[kernel]] void all_reduce_atomic(
    const device T* in [[buffer(0)]],
    device wide_atomic<U>* out [[buffer(1)]],
    const constant uint& n_out [[buffer(2)]],
    uint gid [[thread_position_in_grid]],
    uint tgid [[threadgroup_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]]) {
  Op op;
  U v = op.simd_reduce(static_cast<U>(in[gid]));
  if (lane == 0) {
    op.atomic_update(out, v, tgid % n_out);
  }
}

// 64-bit values take the simd_shuffle_down path of SIMD_REDUCE_BY_SIZE;
// lane 0 of each simdgroup writes its result.
template <typename T, typename Op>
[[kernel]] void simd_reduce_only(
    const device T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    uint gid [[thread_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]]) {
  Op op;
  T v = op.simd_reduce(in[gid]);
  if (lane == 0) {
    out[gid / 32] = v;
  }
}

#define instantiate_kernel(name, func, ...) \
  template [[host_name(                     \
      name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;

instantiate_kernel("all_reduce_sum_int32", all_reduce_atomic, int, int, Sum<int>)
instantiate_kernel("all_reduce_max_float32", all_reduce_atomic, float, float, Max<float>)
instantiate_kernel("all_reduce_max_float16", all_reduce_atomic, half, half, Max<half>)
instantiate_kernel("all_reduce_sum_uint8", all_reduce_atomic, uint8_t, uint8_t, Sum<uint8_t>)
instantiate_kernel("simd_reduce_sum_int64", simd_reduce_only, int64_t, Sum<int64_t>)
instantiate_kernel("simd_reduce_max_int64", simd_reduce_only, int64_t, Max<int64_t>)
