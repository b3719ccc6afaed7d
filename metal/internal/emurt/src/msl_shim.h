// msl_shim.h: the Metal Shading Language subset that the MSL emulator
// compiles with clang as C++. A .metal file run through the Go preprocessor
// (metal/internal/mslpp) includes this header instead of Apple's
// <metal_stdlib>; its kernels then run with every GPU thread as a fiber of
// mslemu_runtime.cpp.
//
// Design notes (facts from the proof of concept in
// shared/spec/msl-kernels-emulator-performance.md, Part 1):
//   - half is _Float16, compiled with -ffloat16-excess-precision=none so every
//     half operation rounds to half as the GPU does.
//   - floatN/halfN/... are clang ext_vector_type, which gives swizzles and
//     v[i]; float3 is 16 bytes and half3 8 bytes, as in MSL.
//   - MSL constructors (float4(a, v.xy, 1)) are function-like macros: the
//     bare type name is not followed by "(" and stays a type.
//   - Address-space qualifiers become nothing (constant becomes const, which is
//     what the constant address space means to a kernel).
//   - No <math.h> in this translation unit: libm's global overloads would
//     compete with metal::exp and friends, so everything uses __builtin_*f.
//   - Collectives and barriers take __builtin_FILE()/__builtin_LINE() as
//     default arguments: with the preprocessor's #line markers these name the
//     .metal line of the call, for grouping lanes and for diagnostics.
#ifndef MSLEMU_SHIM_H
#define MSLEMU_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <limits>
#include <type_traits>

#include "mslemu_api.h"

// ---------------------------------------------------------------------------
// Scalar and vector types.
typedef _Float16 half;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;

#define MSLEMU_VEC(T, name)                                   \
  typedef T name##2 __attribute__((ext_vector_type(2)));      \
  typedef T name##3 __attribute__((ext_vector_type(3)));      \
  typedef T name##4 __attribute__((ext_vector_type(4)));
MSLEMU_VEC(float, float)
MSLEMU_VEC(half, half)
MSLEMU_VEC(int, int)
MSLEMU_VEC(unsigned int, uint)
MSLEMU_VEC(short, short)
MSLEMU_VEC(unsigned short, ushort)
MSLEMU_VEC(char, char)
MSLEMU_VEC(unsigned char, uchar)
MSLEMU_VEC(long, long)
MSLEMU_VEC(unsigned long, ulong)
// Comparisons of clang vectors yield integer vectors of -1/0, so boolN is an
// int vector: "bool4 m = a < b;" compiles and all()/any()/select() work.
MSLEMU_VEC(int, bool)
#undef MSLEMU_VEC
typedef float4 packed_float4;
typedef half4 packed_half4;
typedef float2 packed_float2;
typedef half2 packed_half2;

namespace metal {
template <class T, int N>
using vec = T __attribute__((ext_vector_type(N)));

// vt tells scalars (N == 1) from vectors and names the element type.
template <class T>
struct vt {
  using E = T;
  static constexpr int N = 1;
};
template <class E_, int N_>
struct vt<E_ __attribute__((ext_vector_type(N_)))> {
  using E = E_;
  static constexpr int N = N_;
};

template <class E, int N>
struct __builder {
  E v[N];
  int i = 0;
  template <class A>
  void add(A a) {
    if constexpr (vt<A>::N == 1) {
      if (i < N) v[i++] = E(a);
    } else {
      for (int k = 0; k < vt<A>::N && i < N; k++) v[i++] = E(a[k]);
    }
  }
};
template <class E, int N, class... A>
inline vec<E, N> __make(A... a) {
  if constexpr (sizeof...(A) == 0) {
    return vec<E, N>(E(0));
  } else if constexpr (sizeof...(A) == 1 && (vt<A>::N + ...) == 1) {
    return vec<E, N>(E(a...));
  } else {
    static_assert((vt<A>::N + ...) == N, "MSL vector constructor: component count does not match");
    __builder<E, N> b;
    (b.add(a), ...);
    vec<E, N> r;
    for (int k = 0; k < N; k++) r[k] = b.v[k];
    return r;
  }
}
}  // namespace metal

namespace mslemu {
template <class T, class S>
inline T cast(S s) {
  if constexpr (metal::vt<T>::N > 1 && metal::vt<S>::N > 1) {
    return __builtin_convertvector(s, T);
  } else if constexpr (metal::vt<T>::N > 1) {
    return T(typename metal::vt<T>::E(s));
  } else {
    return static_cast<T>(s);
  }
}
// builtin converts a grid coordinate to the declared parameter type (uint,
// ushort2, uint3...): scalars take .x, 2-vectors .xy.
template <class T>
inline T builtin(const uint32_t* v) {
  using E = typename metal::vt<T>::E;
  if constexpr (metal::vt<T>::N == 1) {
    return T(v[0]);
  } else {
    T r;
    for (int k = 0; k < metal::vt<T>::N; k++) r[k] = E(v[k]);
    return r;
  }
}
template <class T>
inline T builtin1(uint32_t v) {
  return T(v);
}
}  // namespace mslemu

namespace metal {
using std::numeric_limits;

template <class T, class S>
inline T as_type(S s) {
  static_assert(sizeof(T) == sizeof(S), "as_type: sizes differ");
  return __builtin_bit_cast(T, s);
}

// ---------------------------------------------------------------------------
// Math. Half math computes in float and rounds once, which is at least as
// accurate as the GPU; the exact ULPs of the device (fast:: especially) can
// only be checked on a Mac.
template <class T, class F>
inline T __map1(T x, F f) {
  if constexpr (vt<T>::N == 1) {
    return f(x);
  } else {
    T r;
    for (int i = 0; i < vt<T>::N; i++) r[i] = f(x[i]);
    return r;
  }
}
template <class T, class F>
inline T __map2(T x, T y, F f) {
  if constexpr (vt<T>::N == 1) {
    return f(x, y);
  } else {
    T r;
    for (int i = 0; i < vt<T>::N; i++) r[i] = f(x[i], y[i]);
    return r;
  }
}
template <class T, class F>
inline T __map3(T x, T y, T z, F f) {
  if constexpr (vt<T>::N == 1) {
    return f(x, y, z);
  } else {
    T r;
    for (int i = 0; i < vt<T>::N; i++) r[i] = f(x[i], y[i], z[i]);
    return r;
  }
}

#define MSLEMU_UNARY(name, expr)                                            \
  template <class T>                                                        \
  inline T name(T x) {                                                      \
    using E = typename vt<T>::E;                                            \
    return __map1(x, [](E e) { float v = float(e); (void)v; return E(expr); }); \
  }
MSLEMU_UNARY(exp, __builtin_expf(v))
MSLEMU_UNARY(exp2, __builtin_exp2f(v))
MSLEMU_UNARY(exp10, __builtin_powf(10.0f, v))
MSLEMU_UNARY(log, __builtin_logf(v))
MSLEMU_UNARY(log2, __builtin_log2f(v))
MSLEMU_UNARY(log10, __builtin_log10f(v))
MSLEMU_UNARY(sqrt, __builtin_sqrtf(v))
MSLEMU_UNARY(rsqrt, 1.0f / __builtin_sqrtf(v))
MSLEMU_UNARY(sin, __builtin_sinf(v))
MSLEMU_UNARY(cos, __builtin_cosf(v))
MSLEMU_UNARY(tan, __builtin_tanf(v))
MSLEMU_UNARY(asin, __builtin_asinf(v))
MSLEMU_UNARY(acos, __builtin_acosf(v))
MSLEMU_UNARY(atan, __builtin_atanf(v))
MSLEMU_UNARY(sinh, __builtin_sinhf(v))
MSLEMU_UNARY(cosh, __builtin_coshf(v))
MSLEMU_UNARY(tanh, __builtin_tanhf(v))
MSLEMU_UNARY(floor, __builtin_floorf(v))
MSLEMU_UNARY(ceil, __builtin_ceilf(v))
MSLEMU_UNARY(round, __builtin_roundf(v))
MSLEMU_UNARY(rint, __builtin_rintf(v))
MSLEMU_UNARY(trunc, __builtin_truncf(v))
MSLEMU_UNARY(fract, v - __builtin_floorf(v))
MSLEMU_UNARY(fabs, __builtin_fabsf(v))
MSLEMU_UNARY(saturate, __builtin_fminf(__builtin_fmaxf(v, 0.0f), 1.0f))
MSLEMU_UNARY(sign, v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : 0.0f))
#undef MSLEMU_UNARY

template <class T>
inline T abs(T x) {
  using E = typename vt<T>::E;
  return __map1(x, [](E e) { return e < E(0) ? E(-e) : e; });
}

#define MSLEMU_BINARY(name, expr)                                                   \
  template <class T>                                                                \
  inline T name(T x, T y) {                                                         \
    using E = typename vt<T>::E;                                                    \
    return __map2(x, y, [](E a, E b) { float u = float(a), w = float(b); (void)u; (void)w; return E(expr); }); \
  }                                                                                 \
  template <class T, class = std::enable_if_t<(vt<T>::N > 1)>>                      \
  inline T name(T x, typename vt<T>::E y) {                                         \
    return name(x, T(y));                                                           \
  }
MSLEMU_BINARY(pow, __builtin_powf(u, w))
MSLEMU_BINARY(powr, __builtin_powf(u, w))
MSLEMU_BINARY(fmin, __builtin_fminf(u, w))
MSLEMU_BINARY(fmax, __builtin_fmaxf(u, w))
MSLEMU_BINARY(fmod, __builtin_fmodf(u, w))
MSLEMU_BINARY(atan2, __builtin_atan2f(u, w))
MSLEMU_BINARY(copysign, __builtin_copysignf(u, w))
MSLEMU_BINARY(step, w < u ? 0.0f : 1.0f)
#undef MSLEMU_BINARY

// min/max work on every element type (integers included) without going
// through float.
template <class T>
inline T min(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) { return b < a ? b : a; });
}
template <class T>
inline T max(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) { return a < b ? b : a; });
}
template <class T, class = std::enable_if_t<(vt<T>::N > 1)>>
inline T min(T x, typename vt<T>::E y) { return min(x, T(y)); }
template <class T, class = std::enable_if_t<(vt<T>::N > 1)>>
inline T max(T x, typename vt<T>::E y) { return max(x, T(y)); }
template <class T>
inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T, class = std::enable_if_t<(vt<T>::N > 1)>>
inline T clamp(T x, typename vt<T>::E lo, typename vt<T>::E hi) { return clamp(x, T(lo), T(hi)); }
template <class T>
inline T fma(T a, T b, T c) {
  using E = typename vt<T>::E;
  return __map3(a, b, c, [](E x, E y, E z) { return E(__builtin_fmaf(float(x), float(y), float(z))); });
}
template <class T>
inline T mix(T a, T b, T t) { return a + (b - a) * t; }
template <class T, class = std::enable_if_t<(vt<T>::N > 1)>>
inline T mix(T a, T b, typename vt<T>::E t) { return a + (b - a) * T(t); }
template <class T>
inline T smoothstep(T e0, T e1, T x) {
  T t = clamp((x - e0) / (e1 - e0), T(0), T(1));
  return t * t * (T(3) - T(2) * t);
}
template <class T, class C>
inline T select(T a, T b, C c) {
  if constexpr (vt<T>::N == 1) {
    return c ? b : a;
  } else {
    T r;
    for (int i = 0; i < vt<T>::N; i++) r[i] = c[i] ? b[i] : a[i];
    return r;
  }
}
template <class T>
inline typename vt<T>::E dot(T a, T b) {
  typename vt<T>::E s = 0;
  for (int i = 0; i < vt<T>::N; i++) s += a[i] * b[i];
  return s;
}
template <class T>
inline typename vt<T>::E length(T a) {
  return typename vt<T>::E(__builtin_sqrtf(float(dot(a, a))));
}
template <class T>
inline typename vt<T>::E distance(T a, T b) { return length(a - b); }
template <class T>
inline T normalize(T a) { return a * rsqrt(T(dot(a, a))); }
template <class T>
inline T cross(T a, T b) { return T(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x); }

template <class T>
inline bool all(T v) {
  if constexpr (vt<T>::N == 1) {
    return bool(v);
  } else {
    for (int i = 0; i < vt<T>::N; i++)
      if (!v[i]) return false;
    return true;
  }
}
template <class T>
inline bool any(T v) {
  if constexpr (vt<T>::N == 1) {
    return bool(v);
  } else {
    for (int i = 0; i < vt<T>::N; i++)
      if (v[i]) return true;
    return false;
  }
}
#define MSLEMU_PRED(name, expr)                                     \
  template <class T>                                                \
  inline auto name(T x) {                                           \
    if constexpr (vt<T>::N == 1) {                                  \
      float v = float(x);                                           \
      return bool(expr);                                            \
    } else {                                                        \
      vec<int, vt<T>::N> r;                                         \
      for (int i = 0; i < vt<T>::N; i++) {                          \
        float v = float(x[i]);                                      \
        r[i] = (expr) ? -1 : 0;                                     \
      }                                                             \
      return r;                                                     \
    }                                                               \
  }
MSLEMU_PRED(isnan, __builtin_isnan(v))
MSLEMU_PRED(isinf, __builtin_isinf(v))
MSLEMU_PRED(isfinite, __builtin_isfinite(v))
MSLEMU_PRED(signbit, __builtin_signbit(v))
#undef MSLEMU_PRED

template <class T>
inline T popcount(T x) {
  using E = typename vt<T>::E;
  return __map1(x, [](E e) { return E(__builtin_popcountll((unsigned long long)(std::make_unsigned_t<E>)e)); });
}

template <class T, class = std::enable_if_t<(vt<T>::N == 1)>>
inline T divide(T a, T b) { return a / b; }

namespace fast {
using metal::cos; using metal::exp; using metal::exp2; using metal::exp10; using metal::log;
using metal::log2; using metal::log10; using metal::pow; using metal::powr; using metal::rsqrt;
using metal::sin; using metal::sqrt; using metal::tanh; using metal::tan; using metal::fmax;
using metal::fmin; using metal::max; using metal::min; using metal::clamp; using metal::normalize;
using metal::length; using metal::divide; using metal::floor; using metal::ceil; using metal::fabs;
using metal::abs; using metal::atan; using metal::atan2; using metal::sinh; using metal::cosh;
using metal::saturate; using metal::trunc; using metal::round; using metal::fract;
}  // namespace fast
namespace precise {
using namespace fast;
}  // namespace precise

// ---------------------------------------------------------------------------
// Barriers.
enum class mem_flags : uint32_t {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
inline constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(uint32_t(a) | uint32_t(b));
}
inline void threadgroup_barrier(mem_flags = mem_flags::mem_none, const char* file = __builtin_FILE(),
                                int line = __builtin_LINE()) {
  mslemu::tg_barrier(file, line);
}

// ---------------------------------------------------------------------------
// SIMD-group collectives. Each lane publishes (value, parameter); when every
// live lane of the simdgroup waits at the same call site the runtime runs the
// op once for all of them. Reductions use a pairwise tree over the active lanes
// in lane order: the device's order is not documented (see the spec).
namespace __simd {
template <class T>
struct In {
  T v;
  uint32_t p;
};
template <class T, class Op>
void run(void* const* in, void* const* out) {
  T vals[32];
  uint32_t par[32];
  bool act[32];
  for (int l = 0; l < 32; l++) {
    act[l] = in[l] != nullptr;
    if (act[l]) {
      In<T> x;
      __builtin_memcpy(&x, in[l], sizeof x);
      vals[l] = x.v;
      par[l] = x.p;
    } else {
      vals[l] = T(0);
      par[l] = 0;
    }
  }
  for (int l = 0; l < 32; l++) {
    if (!act[l]) continue;
    T r = Op::template apply<T>(vals, par, act, l);
    __builtin_memcpy(out[l], &r, sizeof r);
  }
}
template <class Op, class T>
inline T call(T v, uint32_t p, const char* file, int line) {
  In<T> x{v, p};
  T r;
  mslemu::collective(&x, sizeof x, &r, sizeof r, &run<T, Op>, file, line);
  return r;
}
template <class T, class F>
inline T tree(const T* vals, const bool* act, F f) {
  T a[32];
  int n = 0;
  for (int l = 0; l < 32; l++)
    if (act[l]) a[n++] = vals[l];
  while (n > 1) {
    int h = 0;
    for (int i = 0; i + 1 < n; i += 2) a[h++] = f(a[i], a[i + 1]);
    if (n & 1) a[h++] = a[n - 1];
    n = h;
  }
  return a[0];
}
struct Sum { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { return tree(v, a, [](T x, T y) { return T(x + y); }); } };
struct Prod { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { return tree(v, a, [](T x, T y) { return T(x * y); }); } };
struct Max { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { return tree(v, a, [](T x, T y) { return metal::max(x, y); }); } };
struct Min { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { return tree(v, a, [](T x, T y) { return metal::min(x, y); }); } };
struct And { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { return tree(v, a, [](T x, T y) { return T(x & y); }); } };
struct Or { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { return tree(v, a, [](T x, T y) { return T(x | y); }); } };
struct Xor { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { return tree(v, a, [](T x, T y) { return T(x ^ y); }); } };
struct All { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { for (int l = 0; l < 32; l++) if (a[l] && !v[l]) return T(false); return T(true); } };
struct Any { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { for (int l = 0; l < 32; l++) if (a[l] && v[l]) return T(true); return T(false); } };
struct PrefixIncl { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int me) { T s = T(0); for (int l = 0; l <= me; l++) if (a[l]) s = T(s + v[l]); return s; } };
struct PrefixExcl { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int me) { T s = T(0); for (int l = 0; l < me; l++) if (a[l]) s = T(s + v[l]); return s; } };
// Shuffles read the source lane's value; a source outside the simdgroup or
// inactive leaves the lane's own value (the device calls this undefined).
template <class T>
inline T pick(const T* v, const bool* a, int me, int src) { return (src >= 0 && src < 32 && a[src]) ? v[src] : v[me]; }
struct Shuffle { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, int(p[me])); } };
struct ShuffleXor { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, me ^ int(p[me])); } };
struct ShuffleDown { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, me + int(p[me])); } };
struct ShuffleUp { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, me - int(p[me])); } };
struct First { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int me) { for (int l = 0; l < 32; l++) if (a[l]) return v[l]; return v[me]; } };
struct IsFirst { template <class T> static T apply(const T*, const uint32_t*, const bool* a, int me) { for (int l = 0; l < 32; l++) if (a[l]) return T(l == me); return T(false); } };
struct Nop { template <class T> static T apply(const T* v, const uint32_t*, const bool*, int me) { return v[me]; } };
}  // namespace __simd

#define MSLEMU_SIMD1(name, op)                                                                \
  template <class T>                                                                          \
  inline T name(T v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {      \
    return __simd::call<__simd::op>(v, 0, file, line);                                        \
  }
#define MSLEMU_SIMD2(name, op)                                                                            \
  template <class T>                                                                                      \
  inline T name(T v, uint32_t p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {      \
    return __simd::call<__simd::op>(v, p, file, line);                                                    \
  }
MSLEMU_SIMD1(simd_sum, Sum)
MSLEMU_SIMD1(simd_product, Prod)
MSLEMU_SIMD1(simd_max, Max)
MSLEMU_SIMD1(simd_min, Min)
MSLEMU_SIMD1(simd_and, And)
MSLEMU_SIMD1(simd_or, Or)
MSLEMU_SIMD1(simd_xor, Xor)
MSLEMU_SIMD1(simd_prefix_inclusive_sum, PrefixIncl)
MSLEMU_SIMD1(simd_prefix_exclusive_sum, PrefixExcl)
MSLEMU_SIMD1(simd_broadcast_first, First)
MSLEMU_SIMD2(simd_shuffle, Shuffle)
MSLEMU_SIMD2(simd_broadcast, Shuffle)
MSLEMU_SIMD2(simd_shuffle_xor, ShuffleXor)
MSLEMU_SIMD2(simd_shuffle_down, ShuffleDown)
MSLEMU_SIMD2(simd_shuffle_up, ShuffleUp)
#undef MSLEMU_SIMD1
#undef MSLEMU_SIMD2
inline bool simd_all(bool v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::All>(v, 0, file, line);
}
inline bool simd_any(bool v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::Any>(v, 0, file, line);
}
inline bool simd_is_first(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::IsFirst>(false, 0, file, line);
}
inline void simdgroup_barrier(mem_flags = mem_flags::mem_none, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  (void)__simd::call<__simd::Nop>(0, 0, file, line);
}

// ---------------------------------------------------------------------------
// simdgroup_matrix<T, 8, 8>. Each lane holds the two elements that Apple's
// hardware gives it; the lane layout is MLX's BaseMMAFrag::get_coord
// (mlx/backend/metal/kernels/steel/gemm/mma.h): qid = lane / 4,
// row = (qid & 4) + (lane / 2) % 4, columns (qid & 2) * 2 + (lane % 2) * 2 and
// the next one. Loads and stores are therefore per lane; multiply-accumulate
// is a collective that needs all 32 lanes.
inline void __mma_coord(uint32_t lane, int& row, int& col) {
  int qid = int(lane) / 4;
  row = (qid & 4) + (int(lane) / 2) % 4;
  col = (qid & 2) * 2 + (int(lane) % 2) * 2;
}
template <class T, int Rows = 8, int Cols = 8>
struct simdgroup_matrix {
  static_assert(Rows == 8 && Cols == 8, "the emulator supports 8x8 simdgroup matrices only");
  vec<T, 2> e;
  simdgroup_matrix() : e(T(0)) {}
  // An MSL simdgroup_matrix built from one value is diagonal.
  simdgroup_matrix(T diag) {
    int r, c;
    __mma_coord(mslemu::ctx()->lane, r, c);
    e[0] = r == c ? diag : T(0);
    e[1] = r == c + 1 ? diag : T(0);
  }
  vec<T, 2>& thread_elements() { return e; }
  const vec<T, 2>& thread_elements() const { return e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;

template <class T, int R = 8, int C = 8>
inline simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T v) {
  simdgroup_matrix<T, R, C> m;
  m.e = vec<T, 2>(v);
  return m;
}

// Load and store apply matrix_origin (x = column, y = row) in source
// coordinates, then transpose: the true device semantics of transpose with an
// origin need a Mac to confirm (spec, Part 1 "Semantics the emulator cannot
// settle").
template <class T, class S>
inline void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, const S* src, ulong elements_per_row = 8,
                           vec<ulong, 2> matrix_origin = vec<ulong, 2>(0), bool transpose = false) {
  int r, c;
  __mma_coord(mslemu::ctx()->lane, r, c);
  for (int k = 0; k < 2; k++) {
    ulong row = transpose ? ulong(c + k) : ulong(r);
    ulong col = transpose ? ulong(r) : ulong(c + k);
    d.e[k] = T(src[(matrix_origin.y + row) * elements_per_row + matrix_origin.x + col]);
  }
}
template <class T, class S>
inline void simdgroup_store(const simdgroup_matrix<T, 8, 8>& m, S* dst, ulong elements_per_row = 8,
                            vec<ulong, 2> matrix_origin = vec<ulong, 2>(0), bool transpose = false) {
  int r, c;
  __mma_coord(mslemu::ctx()->lane, r, c);
  for (int k = 0; k < 2; k++) {
    ulong row = transpose ? ulong(c + k) : ulong(r);
    ulong col = transpose ? ulong(r) : ulong(c + k);
    dst[(matrix_origin.y + row) * elements_per_row + matrix_origin.x + col] = S(m.e[k]);
  }
}

namespace __mma {
struct In {
  float a[2], b[2], c[2];
};
struct Out {
  float d[2];
};
// run gathers the three fragments, accumulates in fp32 in k order and hands
// every lane its two results; the caller rounds them to D's element type.
inline void run(void* const* in, void* const* out) {
  float A[8][8], B[8][8], C[8][8];
  for (int l = 0; l < 32; l++) {
    if (in[l] == nullptr) {
      mslemu::report(nullptr, 0, "simdgroup_multiply_accumulate needs all 32 lanes of the simdgroup");
      return;
    }
    In x;
    __builtin_memcpy(&x, in[l], sizeof x);
    int r, c;
    __mma_coord(uint32_t(l), r, c);
    for (int k = 0; k < 2; k++) {
      A[r][c + k] = x.a[k];
      B[r][c + k] = x.b[k];
      C[r][c + k] = x.c[k];
    }
  }
  for (int l = 0; l < 32; l++) {
    int r, c;
    __mma_coord(uint32_t(l), r, c);
    Out o;
    for (int k = 0; k < 2; k++) {
      float acc = C[r][c + k];
      for (int i = 0; i < 8; i++) acc += A[r][i] * B[i][c + k];
      o.d[k] = acc;
    }
    __builtin_memcpy(out[l], &o, sizeof o);
  }
}
}  // namespace __mma

template <class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                          const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c,
                                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  __mma::In x;
  for (int k = 0; k < 2; k++) {
    x.a[k] = float(a.e[k]);
    x.b[k] = float(b.e[k]);
    x.c[k] = float(c.e[k]);
  }
  __mma::Out o;
  mslemu::collective(&x, sizeof x, &o, sizeof o, &__mma::run, file, line);
  d.e[0] = TD(o.d[0]);
  d.e[1] = TD(o.d[1]);
}
template <class TD, class TA, class TB>
inline void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                               const simdgroup_matrix<TB, 8, 8>& b, const char* file = __builtin_FILE(),
                               int line = __builtin_LINE()) {
  simdgroup_matrix<TD, 8, 8> zero = make_filled_simdgroup_matrix<TD, 8, 8>(TD(0));
  simdgroup_multiply_accumulate(d, a, b, zero, file, line);
}
}  // namespace metal

// ---------------------------------------------------------------------------
// Constants that MSL code commonly uses.
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define HUGE_VALF __builtin_huge_valf()
#define MAXFLOAT __FLT_MAX__
#define FLT_MAX __FLT_MAX__
#define FLT_MIN __FLT_MIN__
#define FLT_EPSILON __FLT_EPSILON__
#define HALF_MAX ((half)65504.0f)
#define HALF_MIN ((half)6.103515625e-05f)
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LN2_F 0.69314718055994530942f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.70710678118654752440f

// MSL constructors: a function-like macro only expands when the type name is
// followed by "(", so "float4 v;" still declares a vector.
#define float2(...) ::metal::__make<float, 2>(__VA_ARGS__)
#define float3(...) ::metal::__make<float, 3>(__VA_ARGS__)
#define float4(...) ::metal::__make<float, 4>(__VA_ARGS__)
#define half2(...) ::metal::__make<half, 2>(__VA_ARGS__)
#define half3(...) ::metal::__make<half, 3>(__VA_ARGS__)
#define half4(...) ::metal::__make<half, 4>(__VA_ARGS__)
#define int2(...) ::metal::__make<int, 2>(__VA_ARGS__)
#define int3(...) ::metal::__make<int, 3>(__VA_ARGS__)
#define int4(...) ::metal::__make<int, 4>(__VA_ARGS__)
#define uint2(...) ::metal::__make<unsigned int, 2>(__VA_ARGS__)
#define uint3(...) ::metal::__make<unsigned int, 3>(__VA_ARGS__)
#define uint4(...) ::metal::__make<unsigned int, 4>(__VA_ARGS__)
#define short2(...) ::metal::__make<short, 2>(__VA_ARGS__)
#define short3(...) ::metal::__make<short, 3>(__VA_ARGS__)
#define short4(...) ::metal::__make<short, 4>(__VA_ARGS__)
#define ushort2(...) ::metal::__make<unsigned short, 2>(__VA_ARGS__)
#define ushort3(...) ::metal::__make<unsigned short, 3>(__VA_ARGS__)
#define ushort4(...) ::metal::__make<unsigned short, 4>(__VA_ARGS__)
#define char2(...) ::metal::__make<char, 2>(__VA_ARGS__)
#define char3(...) ::metal::__make<char, 3>(__VA_ARGS__)
#define char4(...) ::metal::__make<char, 4>(__VA_ARGS__)
#define uchar2(...) ::metal::__make<unsigned char, 2>(__VA_ARGS__)
#define uchar3(...) ::metal::__make<unsigned char, 3>(__VA_ARGS__)
#define uchar4(...) ::metal::__make<unsigned char, 4>(__VA_ARGS__)
#define long2(...) ::metal::__make<long, 2>(__VA_ARGS__)
#define long3(...) ::metal::__make<long, 3>(__VA_ARGS__)
#define long4(...) ::metal::__make<long, 4>(__VA_ARGS__)
#define ulong2(...) ::metal::__make<unsigned long, 2>(__VA_ARGS__)
#define ulong3(...) ::metal::__make<unsigned long, 3>(__VA_ARGS__)
#define ulong4(...) ::metal::__make<unsigned long, 4>(__VA_ARGS__)
#define bool2(...) ::metal::__make<int, 2>(__VA_ARGS__)
#define bool3(...) ::metal::__make<int, 3>(__VA_ARGS__)
#define bool4(...) ::metal::__make<int, 4>(__VA_ARGS__)

// Address spaces and qualifiers: erased (see the header comment). Defined
// last so that nothing above is affected.
#define kernel
#define device
#define thread
#define threadgroup
#define constant const
#define static_cast ::mslemu::cast
#define is_function_constant_defined(name) (name##__mslemu_defined)

#endif  // MSLEMU_SHIM_H
