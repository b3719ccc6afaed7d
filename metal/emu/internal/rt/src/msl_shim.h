// msl_shim.h: the Metal Shading Language subset that the MSL emulator
// compiles with clang as C++. A .metal file run through the Go preprocessor
// (metal/emu/internal/mslpp) includes this header instead of Apple's
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
//   - bfloat is clang's __bf16 (round to nearest even, one rounding per
//     operation with -fbfloat16-excess-precision=none).
//   - Atomics are real __atomic operations: threadgroups run on several OS
//     threads at once.
//   - C-style vector casts, which C++ does not convert, are rewritten into
//     constructors or ::mslemu::cast by the preprocessor.
//   - Collectives and barriers take __builtin_FILE()/__builtin_LINE() as
//     default arguments: with the preprocessor's #line markers these name the
//     .metal line of the call, for grouping lanes and for diagnostics.
#ifndef MSLEMU_SHIM_H
#define MSLEMU_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <limits>
#include <type_traits>
#include <utility>

#include "mslemu_api.h"

// ---------------------------------------------------------------------------
// Scalar and vector types.
typedef _Float16 half;
// bfloat is clang's __bf16: conversions from float round to nearest even as
// the GPU does, and with -fbfloat16-excess-precision=none every operation
// rounds back to bfloat. The runtime supplies __truncsfbf2 where libgcc lacks it.
typedef __bf16 bfloat;
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
MSLEMU_VEC(__bf16, bfloat)
MSLEMU_VEC(int, int)
MSLEMU_VEC(unsigned int, uint)
MSLEMU_VEC(short, short)
MSLEMU_VEC(unsigned short, ushort)
MSLEMU_VEC(char, char)
MSLEMU_VEC(unsigned char, uchar)
MSLEMU_VEC(long, long)
MSLEMU_VEC(unsigned long, ulong)
#undef MSLEMU_VEC
// packed_T2/packed_T4 have the size of the vector but the alignment of
// one element, as in MSL: a struct { float a; packed_float4 b; } that the
// host fills puts b at offset 4 (a plain float4 would sit at 16). A
// typedef may lower alignment, and stays the same type as the vector.
#define MSLEMU_PACKED(T, name)                                                              \
  typedef T packed_##name##2 __attribute__((ext_vector_type(2))) __attribute__((aligned(sizeof(T)))); \
  typedef T packed_##name##4 __attribute__((ext_vector_type(4))) __attribute__((aligned(sizeof(T))));
MSLEMU_PACKED(float, float)
MSLEMU_PACKED(half, half)
MSLEMU_PACKED(__bf16, bfloat)
MSLEMU_PACKED(int, int)
MSLEMU_PACKED(unsigned int, uint)
MSLEMU_PACKED(short, short)
MSLEMU_PACKED(unsigned short, ushort)
MSLEMU_PACKED(char, char)
MSLEMU_PACKED(unsigned char, uchar)
MSLEMU_PACKED(long, long)
MSLEMU_PACKED(unsigned long, ulong)
#undef MSLEMU_PACKED
// <simd/simd.h> names, for headers shared between host and shader code.
typedef float2 vector_float2;
typedef float3 vector_float3;
typedef float4 vector_float4;
typedef half2 vector_half2;
typedef half4 vector_half4;
typedef int2 vector_int2;
typedef int4 vector_int4;
typedef uint2 vector_uint2;
typedef uint3 vector_uint3;
typedef uint4 vector_uint4;
typedef float2 simd_float2;
typedef float3 simd_float3;
typedef float4 simd_float4;
typedef int2 simd_int2;
typedef int4 simd_int4;
typedef uint2 simd_uint2;
typedef uint3 simd_uint3;
typedef uint4 simd_uint4;

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

// boolN: one byte per lane as in MSL (bool4 is 4 bytes, bool3 is padded to
// 4), so buffers and unions of bool vectors have the GPU layout (MLX's
// reduction ops pun a bool4 with a uint to build atomic masks). Clang's
// comparisons of vectors give integer vectors of -1/0, which convert
// implicitly; all(), any() and select() read the lanes through vt and [].
template <int N>
struct __boolv_lanes;
template <>
struct alignas(2) __boolv_lanes<2> {
  union {
    bool v[2];
    struct { bool x, y; };
    struct { bool r, g; };
  };
};
template <>
struct alignas(4) __boolv_lanes<3> {
  union {
    bool v[4];
    struct { bool x, y, z; };
    struct { bool r, g, b; };
  };
};
template <>
struct alignas(4) __boolv_lanes<4> {
  union {
    bool v[4];
    struct { bool x, y, z, w; };
    struct { bool r, g, b, a; };
  };
};
template <int N>
struct __boolv : __boolv_lanes<N> {
  __boolv() = default;
  // From a comparison (int/short/long vector) or another vector: nonzero
  // lanes are true.
  template <class E>
  constexpr __boolv(vec<E, N> m) : __boolv_lanes<N>{} {
    for (int i = 0; i < N; i++) this->v[i] = m[i] != 0;
  }
  // bool4(true) and {true, false, true, true}.
  constexpr __boolv(bool b) : __boolv_lanes<N>{} {
    for (int i = 0; i < N; i++) this->v[i] = b;
  }
  template <class... A, class = std::enable_if_t<sizeof...(A) == N && (N > 1)>>
  constexpr __boolv(A... a) : __boolv_lanes<N>{} {
    bool b[N] = {bool(a)...};
    for (int i = 0; i < N; i++) this->v[i] = b[i];
  }
  bool& operator[](int i) { return this->v[i]; }
  constexpr bool operator[](int i) const { return this->v[i]; }
  // As the integer vector the shim's vector code expects.
  constexpr operator vec<int, N>() const {
    vec<int, N> r;
    for (int i = 0; i < N; i++) r[i] = this->v[i] ? -1 : 0;
    return r;
  }
  constexpr __boolv operator!() const {
    __boolv r;
    for (int i = 0; i < N; i++) r.v[i] = !this->v[i];
    return r;
  }
#define MSLEMU_BOOLV_OP(op, expr)                                         \
  friend constexpr __boolv operator op(__boolv a, __boolv b) {            \
    __boolv r;                                                            \
    for (int i = 0; i < N; i++) r.v[i] = (expr);                          \
    return r;                                                             \
  }
  MSLEMU_BOOLV_OP(&&, a.v[i] && b.v[i])
  MSLEMU_BOOLV_OP(||, a.v[i] || b.v[i])
  MSLEMU_BOOLV_OP(&, a.v[i] & b.v[i])
  MSLEMU_BOOLV_OP(|, a.v[i] | b.v[i])
  MSLEMU_BOOLV_OP(^, a.v[i] ^ b.v[i])
  MSLEMU_BOOLV_OP(==, a.v[i] == b.v[i])
  MSLEMU_BOOLV_OP(!=, a.v[i] != b.v[i])
#undef MSLEMU_BOOLV_OP
  __boolv& operator&=(__boolv b) { return *this = *this & b; }
  __boolv& operator|=(__boolv b) { return *this = *this | b; }
  __boolv& operator^=(__boolv b) { return *this = *this ^ b; }
};
template <int N_>
struct vt<__boolv<N_>> {
  using E = bool;
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
typedef ::metal::__boolv<2> bool2;
typedef ::metal::__boolv<3> bool3;
typedef ::metal::__boolv<4> bool4;

namespace mslemu {
// constexpr: MLX initializes static constexpr members with static_cast
// ("static constexpr constant U init = static_cast<U>(0);").
template <class T, class S>
constexpr inline T cast(S s) {
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
template <class P>
inline P builtin(const uint32_t* v) {
  using T = std::remove_cv_t<std::remove_reference_t<P>>;
  using E = typename metal::vt<T>::E;
  if constexpr (metal::vt<T>::N == 1) {
    return T(v[0]);
  } else {
    T r;
    for (int k = 0; k < metal::vt<T>::N; k++) r[k] = E(v[k]);
    return r;
  }
}
template <class P>
inline P builtin1(uint32_t v) {
  using T = std::remove_cv_t<std::remove_reference_t<P>>;
  if constexpr (metal::vt<T>::N == 1) {
    return T(v);
  } else {
    return T(typename metal::vt<T>::E(v));
  }
}
// arg_t<F, I> is parameter I of the kernel function type F: the generated
// entry points bind arguments by the function's own parameter types, so a
// templated kernel's instantiation gets its instantiated types.
template <size_t I, class T, class... R>
struct nth {
  using type = typename nth<I - 1, R...>::type;
};
template <class T, class... R>
struct nth<0, T, R...> {
  using type = T;
};
template <class F, size_t I>
struct arg_of;
template <class... P, size_t I>
struct arg_of<void (*)(P...), I> {
  using type = typename nth<I, P...>::type;
};
template <class F, size_t I>
using arg_t = typename arg_of<F, I>::type;
// bind turns a buffer or threadgroup address into a pointer or reference
// parameter (or, for a by-value parameter, a copy of the bytes).
template <class P>
inline P bind(void* p) {
  if constexpr (std::is_reference_v<P>) {
    return *(std::remove_reference_t<P>*)p;
  } else if constexpr (std::is_pointer_v<P>) {
    return (P)p;
  } else {
    return *(std::remove_cv_t<P>*)p;
  }
}
}  // namespace mslemu

namespace metal {
// metal::numeric_limits: the standard library's for the C++ types, and
// half/bfloat spelled out (libstdc++ has no _Float16 or __bf16 limits and
// would silently answer 0). Values: IEEE binary16 and bfloat16.
template <class T>
struct numeric_limits : std::numeric_limits<T> {};
template <class T, uint16_t Max, uint16_t Min, uint16_t Eps, uint16_t Den, int Dig, int MaxExp, int MinExp>
struct __limits16 {
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_exact = false;
  static constexpr bool has_infinity = true, has_quiet_NaN = true, is_iec559 = true;
  static constexpr int digits = Dig, max_exponent = MaxExp, min_exponent = MinExp, radix = 2;
  static constexpr T __b(uint16_t u) { return __builtin_bit_cast(T, u); }
  static constexpr T max() { return __b(Max); }
  static constexpr T min() { return __b(Min); }
  static constexpr T lowest() { return __b(uint16_t(Max | 0x8000)); }
  static constexpr T epsilon() { return __b(Eps); }
  static constexpr T denorm_min() { return __b(Den); }
  static constexpr T infinity() { return __b(uint16_t(Max == 0x7bff ? 0x7c00 : 0x7f80)); }
  static constexpr T quiet_NaN() { return __b(uint16_t(Max == 0x7bff ? 0x7e00 : 0x7fc0)); }
  static constexpr T round_error() { return __b(uint16_t(Max == 0x7bff ? 0x3800 : 0x3f00)); }
};
template <>
struct numeric_limits<half> : __limits16<half, 0x7bff, 0x0400, 0x1400, 0x0001, 11, 16, -13> {};
template <>
struct numeric_limits<bfloat> : __limits16<bfloat, 0x7f7f, 0x0080, 0x3c00, 0x0001, 8, 128, -125> {};
template <class T> struct numeric_limits<const T> : numeric_limits<T> {};

// <metal_type_traits> names.
using std::conditional; using std::conditional_t; using std::enable_if; using std::enable_if_t;
using std::integral_constant; using std::is_same; using std::is_same_v; using std::remove_cv;
using std::remove_cv_t; using std::remove_reference; using std::remove_reference_t; using std::decay;
using std::decay_t; using std::is_signed; using std::is_signed_v; using std::is_unsigned; using std::is_unsigned_v;
using std::make_unsigned; using std::make_unsigned_t; using std::make_signed; using std::make_signed_t;
using std::is_pointer; using std::is_pointer_v; using std::remove_pointer_t; using std::true_type; using std::false_type;
using std::is_const; using std::is_const_v; using std::add_const_t; using std::bool_constant;
using std::is_convertible; using std::is_convertible_v; using std::is_base_of; using std::is_base_of_v; using std::is_void;
using std::is_void_v; using std::remove_const; using std::remove_const_t; using std::remove_volatile_t; using std::remove_pointer;
using std::add_pointer_t; using std::is_reference_v; using std::is_trivially_copyable_v; using std::void_t; using std::common_type;
using std::common_type_t; using std::conjunction; using std::disjunction; using std::negation;
// Metal's internal names (MLX's atomic.h uses them under
// "#pragma METAL internals : enable").
template <class... B> using _disjunction = std::disjunction<B...>;
template <class... B> using _conjunction = std::conjunction<B...>;
template <class B> using _negation = std::negation<B>;
using std::underlying_type_t; using std::is_enum_v; using std::integer_sequence; using std::make_integer_sequence; using std::declval;
template <class T> struct is_floating_point : std::bool_constant<std::is_floating_point_v<T> || std::is_same_v<std::remove_cv_t<T>, half> || std::is_same_v<std::remove_cv_t<T>, bfloat>> {};
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> struct is_integral : std::is_integral<T> {};
template <class T> constexpr bool is_integral_v = std::is_integral_v<T>;
template <class T> struct is_arithmetic : std::bool_constant<is_floating_point_v<T> || std::is_integral_v<T>> {};
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> struct is_scalar : std::bool_constant<vt<T>::N == 1 && is_arithmetic_v<T>> {};
template <class T> constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T> struct is_vector : std::bool_constant<(vt<T>::N > 1)> {};
template <class T> constexpr bool is_vector_v = is_vector<T>::value;

}  // namespace metal

// packed_T3 is three elements with no padding (12 bytes for float, MLX's
// "constant packed_int3& operand_batch_ndim"); clang's 3-vectors are 16.
// It converts to and from the T3 vector and indexes like one.
template <class T>
struct __packed3 {
  T x, y, z;
  __packed3() = default;
  constexpr __packed3(T a, T b, T c) : x(a), y(b), z(c) {}
  constexpr __packed3(metal::vec<T, 3> v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator metal::vec<T, 3>() const { return metal::vec<T, 3>{x, y, z}; }
  T& operator[](int i) { return (&x)[i]; }
  const T& operator[](int i) const { return (&x)[i]; }
};
#define MSLEMU_P3OP(op)                                                                                   \
  template <class T, class U>                                                                             \
  inline auto operator op(const __packed3<T>& a, const U& b) -> decltype(metal::vec<T, 3>(a) op b) {      \
    return metal::vec<T, 3>(a) op b;                                                                      \
  }                                                                                                       \
  template <class T, class U, class = std::enable_if_t<!std::is_same_v<U, __packed3<T>>>>                 \
  inline auto operator op(const U& a, const __packed3<T>& b) -> decltype(a op metal::vec<T, 3>(b)) {      \
    return a op metal::vec<T, 3>(b);                                                                      \
  }
MSLEMU_P3OP(+)
MSLEMU_P3OP(-)
MSLEMU_P3OP(*)
MSLEMU_P3OP(/)
#undef MSLEMU_P3OP
typedef __packed3<float> packed_float3;
typedef __packed3<half> packed_half3;
typedef __packed3<__bf16> packed_bfloat3;
typedef __packed3<int> packed_int3;
typedef __packed3<unsigned int> packed_uint3;
typedef __packed3<short> packed_short3;
typedef __packed3<unsigned short> packed_ushort3;
typedef __packed3<char> packed_char3;
typedef __packed3<unsigned char> packed_uchar3;
typedef __packed3<long> packed_long3;
typedef __packed3<unsigned long> packed_ulong3;
namespace metal {

// <metal_array>: an aggregate like std::array, so that "return {q, r};"
// builds one (MLX's DivMod returns metal::array<T, 2>).
template <class T, size_t N>
struct array {
  T __elems[N > 0 ? N : 1];
  constexpr T& operator[](size_t i) { return __elems[i]; }
  constexpr const T& operator[](size_t i) const { return __elems[i]; }
  constexpr size_t size() const { return N; }
  constexpr bool empty() const { return N == 0; }
  constexpr T* data() { return __elems; }
  constexpr const T* data() const { return __elems; }
  constexpr T* begin() { return __elems; }
  constexpr T* end() { return __elems + N; }
  constexpr const T* begin() const { return __elems; }
  constexpr const T* end() const { return __elems + N; }
  constexpr T& front() { return __elems[0]; }
  constexpr T& back() { return __elems[N - 1]; }
};

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

// Integer functions (MSL spec 6.4), element-wise on scalars and vectors.
template <class E>
constexpr int __bits() { return int(sizeof(E) * 8); }
template <class E>
inline unsigned long long __u64(E e) { return (unsigned long long)(std::make_unsigned_t<E>)e; }
template <class T>
inline T clz(T x) {
  using E = typename vt<T>::E;
  return __map1(x, [](E e) { return E(e == 0 ? __bits<E>() : __builtin_clzll(__u64(e)) - (64 - __bits<E>())); });
}
template <class T>
inline T ctz(T x) {
  using E = typename vt<T>::E;
  return __map1(x, [](E e) { return E(e == 0 ? __bits<E>() : __builtin_ctzll(__u64(e))); });
}
template <class T>
inline T reverse_bits(T x) {
  using E = typename vt<T>::E;
  return __map1(x, [](E e) {
    unsigned long long u = __u64(e), r = 0;
    for (int i = 0; i < __bits<E>(); i++) r |= ((u >> i) & 1ull) << (__bits<E>() - 1 - i);
    return E(r);
  });
}
// extract_bits: bits [offset, offset+bits) of x, sign-extended for signed types.
template <class T>
inline T extract_bits(T x, uint offset, uint bits) {
  using E = typename vt<T>::E;
  return __map1(x, [=](E e) {
    if (bits == 0) return E(0);
    unsigned long long u = __u64(e) >> offset;
    if (bits < 64) u &= (1ull << bits) - 1;
    if (std::is_signed_v<E> && bits < 64 && ((u >> (bits - 1)) & 1)) u |= ~0ull << bits;
    return E(u);
  });
}
template <class T>
inline T insert_bits(T base, T insert, uint offset, uint bits) {
  using E = typename vt<T>::E;
  return __map2(base, insert, [=](E b, E i) {
    unsigned long long mask = (bits >= 64 ? ~0ull : ((1ull << bits) - 1)) << offset;
    return E((__u64(b) & ~mask) | ((__u64(i) << offset) & mask));
  });
}
// mulhi: the high half of the double-width product.
template <class T>
inline T mulhi(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) {
    if constexpr (sizeof(E) == 8) {
      using W = std::conditional_t<std::is_signed_v<E>, __int128, unsigned __int128>;
      return E((W(a) * W(b)) >> 64);
    } else {
      using W = std::conditional_t<std::is_signed_v<E>, long long, unsigned long long>;
      return E((W(a) * W(b)) >> __bits<E>());
    }
  });
}
template <class T>
inline T rotate(T v, T by) {
  using E = typename vt<T>::E;
  return __map2(v, by, [](E a, E b) {
    int n = __bits<E>(), s = int(__u64(b) % unsigned(n));
    using U = std::make_unsigned_t<E>;
    U u = U(a);
    return E(s == 0 ? u : U((u << s) | (u >> (n - s))));
  });
}
template <class T>
inline auto absdiff(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) { return E(a > b ? a - b : b - a); });
}
template <class T>
inline T hadd(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) { return E((__int128(a) + __int128(b)) >> 1); });
}
template <class T>
inline T rhadd(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) { return E((__int128(a) + __int128(b) + 1) >> 1); });
}
template <class T>
inline T addsat(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) {
    __int128 r = __int128(a) + __int128(b);
    if (r > __int128(std::numeric_limits<E>::max())) return std::numeric_limits<E>::max();
    if (r < __int128(std::numeric_limits<E>::min())) return std::numeric_limits<E>::min();
    return E(r);
  });
}
template <class T>
inline T subsat(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) {
    __int128 r = __int128(a) - __int128(b);
    if (r > __int128(std::numeric_limits<E>::max())) return std::numeric_limits<E>::max();
    if (r < __int128(std::numeric_limits<E>::min())) return std::numeric_limits<E>::min();
    return E(r);
  });
}
template <class T>
inline T mad24(T a, T b, T c) { return a * b + c; }
template <class T>
inline T mul24(T a, T b) { return a * b; }
template <class T>
inline T madhi(T a, T b, T c) { return mulhi(a, b) + c; }
template <class T>
inline T madsat(T a, T b, T c) { return addsat(T(a * b), c); }

template <class T, class = std::enable_if_t<(vt<T>::N == 1)>>
inline T divide(T a, T b) { return a / b; }

template <class T>
inline T fdim(T x, T y) {
  using E = typename vt<T>::E;
  return __map2(x, y, [](E a, E b) { return E(__builtin_fdimf(float(a), float(b))); });
}
template <class T>
inline T ldexp(T x, int e) {
  using E = typename vt<T>::E;
  return __map1(x, [=](E a) { return E(__builtin_ldexpf(float(a), e)); });
}
template <class T>
inline T cospi(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_cosf(float(a) * 3.14159265358979323846f)); }); }
template <class T>
inline T sinpi(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_sinf(float(a) * 3.14159265358979323846f)); }); }
template <class T>
inline T erf(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_erff(float(a))); }); }
template <class T>
inline T atanh(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_atanhf(float(a))); }); }
template <class T>
inline T asinh(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_asinhf(float(a))); }); }
template <class T>
inline T acosh(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_acoshf(float(a))); }); }
template <class T>
inline T log1p(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_log1pf(float(a))); }); }
template <class T>
inline T expm1(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_expm1f(float(a))); }); }
template <class T>
inline T fmin3(T a, T b, T c) { return fmin(fmin(a, b), c); }
template <class T>
inline T fmax3(T a, T b, T c) { return fmax(fmax(a, b), c); }
template <class T>
inline T min3(T a, T b, T c) { return min(min(a, b), c); }
template <class T>
inline T max3(T a, T b, T c) { return max(max(a, b), c); }
template <class T>
inline T median3(T a, T b, T c) { return max(min(a, b), min(max(a, b), c)); }
template <class T>
inline T tanpi(T x) { return __map1(x, [](typename vt<T>::E a) { return typename vt<T>::E(__builtin_tanf(float(a) * 3.14159265358979323846f)); }); }
template <class T>
inline T nextafter(T x, T y) {
  using E = typename vt<T>::E;
  // In the element's own precision: the next half after 1 is 1 + 2^-10.
  return __map2(x, y, [](E a, E b) {
    if (a != a || b != b) return E(a + b);
    if (a == b) return b;
    uint64_t bits = 0;
    __builtin_memcpy(&bits, &a, sizeof a);
    const uint64_t sign = uint64_t(1) << (8 * sizeof(E) - 1);
    if (a == E(0)) {
      bits = (b > a ? 0 : sign) | 1;
    } else if ((a < b) == !(bits & sign)) {
      bits++;
    } else {
      bits--;
    }
    E r;
    __builtin_memcpy(&r, &bits, sizeof r);
    return r;
  });
}
template <class T>
inline T frexp(T x, int& e) {
  using E = typename vt<T>::E;
  return E(__builtin_frexpf(float(x), &e));
}
template <class T>
inline T frexp(T x, vec<int, vt<T>::N>& e) {
  T r;
  for (int i = 0; i < vt<T>::N; i++) {
    int k;
    r[i] = typename vt<T>::E(__builtin_frexpf(float(x[i]), &k));
    e[i] = k;
  }
  return r;
}
template <class T>
inline T modf(T x, T& whole) {
  whole = trunc(x);
  return x - whole;
}

// metal::fast and metal::precise name the same functions; the emulator
// computes both with libm in float (more accurate than fast:: on a device).
#define MSLEMU_MATH_NAMES                                                                                   \
  using metal::cos; using metal::exp; using metal::exp2; using metal::exp10; using metal::log;              \
  using metal::log2; using metal::log10; using metal::pow; using metal::powr; using metal::rsqrt;          \
  using metal::sin; using metal::sqrt; using metal::tanh; using metal::tan; using metal::fmax;              \
  using metal::fmin; using metal::max; using metal::min; using metal::clamp; using metal::normalize;       \
  using metal::length; using metal::divide; using metal::floor; using metal::ceil; using metal::fabs;      \
  using metal::abs; using metal::atan; using metal::atan2; using metal::sinh; using metal::cosh;           \
  using metal::saturate; using metal::trunc; using metal::round; using metal::fract; using metal::asin;    \
  using metal::acos; using metal::rint; using metal::fmod; using metal::copysign; using metal::step;       \
  using metal::smoothstep; using metal::fma; using metal::mix; using metal::sign; using metal::distance;   \
  using metal::fdim; using metal::ldexp; using metal::cospi; using metal::sinpi; using metal::erf;         \
  using metal::fmin3; using metal::fmax3; using metal::log1p; using metal::expm1; using metal::atanh;       \
  using metal::asinh; using metal::acosh; using metal::dot; using metal::cross; using metal::tanpi;           \
  using metal::nextafter; using metal::frexp; using metal::modf; using metal::median3;
namespace fast {
MSLEMU_MATH_NAMES
}  // namespace fast
namespace precise {
MSLEMU_MATH_NAMES
}  // namespace precise
#undef MSLEMU_MATH_NAMES

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

inline void atomic_thread_fence(mem_flags = mem_flags::mem_none, int = 0, int = 0) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// ---------------------------------------------------------------------------
// Atomics (MSL spec 6.15). Several OS threads run different threadgroups at
// once, so device atomics are real __atomic operations. Every operation is
// sequentially consistent: stronger than the memory_order_relaxed that MSL
// kernels ask for, which is a legal implementation of it. Floating-point and
// min/max operations are compare-and-swap loops.
enum memory_order {
  memory_order_relaxed = 0,
  memory_order_acquire = 2,
  memory_order_release = 3,
  memory_order_acq_rel = 4,
  memory_order_seq_cst = 5,
};
enum thread_scope {
  thread_scope_thread = 0,
  thread_scope_simdgroup = 1,
  thread_scope_threadgroup = 2,
  thread_scope_device = 3,
};
template <class T>
struct atomic {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "MSL atomics are 32- or 64-bit");
  T __v;
};
typedef atomic<int> atomic_int;
typedef atomic<unsigned int> atomic_uint;
typedef atomic<float> atomic_float;
typedef atomic<unsigned long> atomic_ulong;
typedef atomic<long> atomic_long;

namespace __atom {
template <class T, class F>
inline T rmw(volatile atomic<T>* a, F f) {
  T old, next;
  __atomic_load(&a->__v, &old, __ATOMIC_SEQ_CST);
  do {
    next = f(old);
  } while (!__atomic_compare_exchange(&a->__v, &old, &next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  return old;
}
}  // namespace __atom

#define MSLEMU_ATOMIC_RMW(name, expr)                                                                       \
  template <class T, class U>                                                                               \
  inline T atomic_fetch_##name##_explicit(volatile atomic<T>* a, U arg, memory_order = memory_order_relaxed, \
                                          thread_scope = thread_scope_device) {                              \
    T v = T(arg);                                                                                           \
    return __atom::rmw(a, [v](T o) { return T(expr); });                                                    \
  }                                                                                                         \
  template <class T, class U>                                                                               \
  inline T atomic_fetch_##name(volatile atomic<T>* a, U arg) {                                              \
    return atomic_fetch_##name##_explicit(a, arg);                                                          \
  }
MSLEMU_ATOMIC_RMW(add, o + v)
MSLEMU_ATOMIC_RMW(sub, o - v)
MSLEMU_ATOMIC_RMW(min, v < o ? v : o)
MSLEMU_ATOMIC_RMW(max, o < v ? v : o)
MSLEMU_ATOMIC_RMW(and, o & v)
MSLEMU_ATOMIC_RMW(or, o | v)
MSLEMU_ATOMIC_RMW(xor, o ^ v)
#undef MSLEMU_ATOMIC_RMW

template <class T>
inline T atomic_load_explicit(const volatile atomic<T>* a, memory_order = memory_order_relaxed,
                              thread_scope = thread_scope_device) {
  T r;
  __atomic_load(&a->__v, &r, __ATOMIC_SEQ_CST);
  return r;
}
template <class T>
inline T atomic_load(const volatile atomic<T>* a) { return atomic_load_explicit(a); }
template <class T, class U>
inline void atomic_store_explicit(volatile atomic<T>* a, U arg, memory_order = memory_order_relaxed,
                                  thread_scope = thread_scope_device) {
  T v = T(arg);
  __atomic_store(&a->__v, &v, __ATOMIC_SEQ_CST);
}
template <class T, class U>
inline void atomic_store(volatile atomic<T>* a, U arg) { atomic_store_explicit(a, arg); }
template <class T, class U>
inline T atomic_exchange_explicit(volatile atomic<T>* a, U arg, memory_order = memory_order_relaxed,
                                  thread_scope = thread_scope_device) {
  T v = T(arg), r;
  __atomic_exchange(&a->__v, &v, &r, __ATOMIC_SEQ_CST);
  return r;
}
template <class T, class U>
inline T atomic_exchange(volatile atomic<T>* a, U arg) { return atomic_exchange_explicit(a, arg); }
// The weak form never fails spuriously here, which a weak CAS may do.
template <class T, class U>
inline bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* a, T* expected, U desired,
                                                  memory_order = memory_order_relaxed,
                                                  memory_order = memory_order_relaxed,
                                                  thread_scope = thread_scope_device) {
  T d = T(desired);
  return __atomic_compare_exchange(&a->__v, expected, &d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
template <class T, class U>
inline bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* a, T* expected, U desired,
                                                    memory_order o1 = memory_order_relaxed,
                                                    memory_order o2 = memory_order_relaxed,
                                                    thread_scope s = thread_scope_device) {
  return atomic_compare_exchange_weak_explicit(a, expected, desired, o1, o2, s);
}
template <class T, class U>
inline bool atomic_compare_exchange_weak(volatile atomic<T>* a, T* expected, U desired) {
  return atomic_compare_exchange_weak_explicit(a, expected, desired);
}
template <class T, class U>
inline bool atomic_compare_exchange_strong(volatile atomic<T>* a, T* expected, U desired) {
  return atomic_compare_exchange_weak_explicit(a, expected, desired);
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
struct PrefixInclProd { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int me) { T s = T(1); for (int l = 0; l <= me; l++) if (a[l]) s = T(s * v[l]); return s; } };
struct PrefixExclProd { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int me) { T s = T(1); for (int l = 0; l < me; l++) if (a[l]) s = T(s * v[l]); return s; } };
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
struct ShuffleRotDown { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, (me + int(p[me] % 32u)) % 32); } };
struct ShuffleRotUp { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, (me + 32 - int(p[me] % 32u)) % 32); } };
struct Ballot { template <class T> static T apply(const T* v, const uint32_t*, const bool* a, int) { T m = 0; for (int l = 0; l < 32; l++) if (a[l]) m |= (v[l] ? T(1) << l : T(0)) | (T(1) << (64 + l)); return m; } };
// Quad ops are the simdgroup ops restricted to the four lanes me&~3..me|3.
template <class Op>
struct Quad {
  template <class T>
  static T apply(const T* v, const uint32_t* p, const bool* a, int me) {
    bool qa[32] = {};
    int base = me & ~3;
    for (int l = base; l < base + 4; l++) qa[l] = a[l];
    return Op::template apply<T>(v, p, qa, me);
  }
};
struct QShuffle { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return p[me] < 4 ? pick(v, a, me, (me & ~3) + int(p[me])) : v[me]; } };
struct QShuffleXor { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, (me & ~3) + ((me & 3) ^ int(p[me] & 3u))); } };
struct QShuffleDown { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return (me & 3) + p[me] < 4 ? pick(v, a, me, me + int(p[me])) : v[me]; } };
struct QShuffleUp { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return uint32_t(me & 3) >= p[me] ? pick(v, a, me, me - int(p[me])) : v[me]; } };
struct QRotDown { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, (me & ~3) + ((me & 3) + int(p[me] & 3u)) % 4); } };
struct QRotUp { template <class T> static T apply(const T* v, const uint32_t* p, const bool* a, int me) { return pick(v, a, me, (me & ~3) + ((me & 3) + 4 - int(p[me] & 3u)) % 4); } };

// shuffle_and_fill: lanes are split into segments of `modulo` lanes (the
// simdgroup, or 4 for quads); reading past the segment's end (down) or
// before its start (up) takes filling_data from the other end instead.
template <class T>
struct InFill {
  T v, fill;
  uint32_t delta, mod;
};
template <class T, bool Down>
void run_fill(void* const* in, void* const* out) {
  InFill<T> x[32];
  bool act[32];
  for (int l = 0; l < 32; l++) {
    act[l] = in[l] != nullptr;
    if (act[l]) __builtin_memcpy(&x[l], in[l], sizeof x[l]);
  }
  for (int l = 0; l < 32; l++) {
    if (!act[l]) continue;
    int m = int(x[l].mod), d = int(x[l].delta);
    T r = x[l].v;
    if (m > 0 && m <= 32 && d <= m) {
      int idx = l % m, base = l - idx, src;
      bool fill;
      if (Down) {
        fill = idx + d >= m;
        src = base + (fill ? idx + d - m : idx + d);
      } else {
        fill = idx < d;
        src = base + (fill ? m - d + idx : idx - d);
      }
      if (src < 32 && act[src]) r = fill ? x[src].fill : x[src].v;
    }
    __builtin_memcpy(out[l], &r, sizeof r);
  }
}
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
MSLEMU_SIMD1(simd_prefix_inclusive_product, PrefixInclProd)
MSLEMU_SIMD1(simd_prefix_exclusive_product, PrefixExclProd)
MSLEMU_SIMD1(simd_broadcast_first, First)
MSLEMU_SIMD2(simd_shuffle, Shuffle)
MSLEMU_SIMD2(simd_broadcast, Shuffle)
MSLEMU_SIMD2(simd_shuffle_xor, ShuffleXor)
MSLEMU_SIMD2(simd_shuffle_down, ShuffleDown)
MSLEMU_SIMD2(simd_shuffle_up, ShuffleUp)
inline bool simd_all(bool v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::All>(v, 0, file, line);
}
inline bool simd_any(bool v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::Any>(v, 0, file, line);
}
inline bool simd_is_first(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::IsFirst>(false, 0, file, line);
}
MSLEMU_SIMD2(simd_shuffle_rotate_down, ShuffleRotDown)
MSLEMU_SIMD2(simd_shuffle_rotate_up, ShuffleRotUp)
MSLEMU_SIMD1(quad_sum, Quad<__simd::Sum>)
MSLEMU_SIMD1(quad_product, Quad<__simd::Prod>)
MSLEMU_SIMD1(quad_max, Quad<__simd::Max>)
MSLEMU_SIMD1(quad_min, Quad<__simd::Min>)
MSLEMU_SIMD1(quad_and, Quad<__simd::And>)
MSLEMU_SIMD1(quad_or, Quad<__simd::Or>)
MSLEMU_SIMD1(quad_xor, Quad<__simd::Xor>)
MSLEMU_SIMD1(quad_prefix_inclusive_sum, Quad<__simd::PrefixIncl>)
MSLEMU_SIMD1(quad_prefix_exclusive_sum, Quad<__simd::PrefixExcl>)
MSLEMU_SIMD1(quad_prefix_inclusive_product, Quad<__simd::PrefixInclProd>)
MSLEMU_SIMD1(quad_prefix_exclusive_product, Quad<__simd::PrefixExclProd>)
MSLEMU_SIMD1(quad_broadcast_first, Quad<__simd::First>)
MSLEMU_SIMD2(quad_shuffle, QShuffle)
MSLEMU_SIMD2(quad_broadcast, QShuffle)
MSLEMU_SIMD2(quad_shuffle_xor, QShuffleXor)
MSLEMU_SIMD2(quad_shuffle_down, QShuffleDown)
MSLEMU_SIMD2(quad_shuffle_up, QShuffleUp)
MSLEMU_SIMD2(quad_shuffle_rotate_down, QRotDown)
MSLEMU_SIMD2(quad_shuffle_rotate_up, QRotUp)
#undef MSLEMU_SIMD1
#undef MSLEMU_SIMD2
inline bool quad_all(bool v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::Quad<__simd::All>>(v, 0, file, line);
}
inline bool quad_any(bool v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::Quad<__simd::Any>>(v, 0, file, line);
}
inline bool quad_is_first(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __simd::call<__simd::Quad<__simd::IsFirst>>(false, 0, file, line);
}

// simd_vote is a bit per lane (MSL spec 6.9.2); all() compares with the
// lanes that took part in the vote.
struct simd_vote {
  typedef uint64_t vote_t;
  vote_t __bits, __active;
  constexpr simd_vote(vote_t b = 0, vote_t act = ~vote_t(0)) : __bits(b), __active(act) {}
  explicit constexpr operator vote_t() const { return __bits; }
  constexpr bool all() const { return (__bits & __active) == __active; }
  constexpr bool any() const { return __bits != 0; }
};
inline simd_vote simd_ballot(bool v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  // One collective answers both the vote (low 64 bits) and which lanes took
  // part (high 64 bits).
  unsigned __int128 r = __simd::call<__simd::Ballot>((unsigned __int128)(v ? 1 : 0), 0, file, line);
  return simd_vote(uint64_t(r), uint64_t(r >> 64));
}
inline simd_vote simd_active_threads_mask(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  simd_vote v = simd_ballot(true, file, line);
  return simd_vote(v.__active, v.__active);
}
template <class T>
inline T simd_shuffle_and_fill_down(T data, T filling, ushort delta, ushort modulo = 32,
                                    const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  __simd::InFill<T> x{data, filling, delta, modulo};
  T r;
  mslemu::collective(&x, sizeof x, &r, sizeof r, &__simd::run_fill<T, true>, file, line);
  return r;
}
template <class T>
inline T simd_shuffle_and_fill_up(T data, T filling, ushort delta, ushort modulo = 32,
                                  const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  __simd::InFill<T> x{data, filling, delta, modulo};
  T r;
  mslemu::collective(&x, sizeof x, &r, sizeof r, &__simd::run_fill<T, false>, file, line);
  return r;
}
template <class T>
inline T quad_shuffle_and_fill_down(T data, T filling, ushort delta, const char* file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
  return simd_shuffle_and_fill_down(data, filling, delta, 4, file, line);
}
template <class T>
inline T quad_shuffle_and_fill_up(T data, T filling, ushort delta, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return simd_shuffle_and_fill_up(data, filling, delta, 4, file, line);
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
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

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
// Matrices: matrix<T, Cols, Rows> stores columns, as MSL does (m[i] is
// column i; floatCxR has C columns of R rows).
namespace metal {
template <class T, int C, int R>
struct matrix {
  static_assert(C >= 2 && C <= 4 && R >= 2 && R <= 4, "MSL matrices are 2..4 x 2..4");
  vec<T, R> columns[C];
  matrix() : columns{} {}
  // A matrix built from one scalar is that value on the diagonal.
  explicit matrix(T diag) : columns{} {
    for (int c = 0; c < C && c < R; c++) columns[c][c] = diag;
  }
  template <class... A, std::enable_if_t<(sizeof...(A) == C || sizeof...(A) == C * R) && (sizeof...(A) > 1), int> = 0>
  matrix(A... a) {
    if constexpr (sizeof...(A) == C) {
      vec<T, R> cs[C] = {__make<T, R>(a)...};
      for (int c = 0; c < C; c++) columns[c] = cs[c];
    } else {
      T s[C * R] = {T(a)...};
      for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++) columns[c][r] = s[c * R + r];
    }
  }
  template <class U>
  explicit matrix(const matrix<U, C, R>& o) {
    for (int c = 0; c < C; c++)
      for (int r = 0; r < R; r++) columns[c][r] = T(o.columns[c][r]);
  }
  vec<T, R>& operator[](int c) { return columns[c]; }
  const vec<T, R>& operator[](int c) const { return columns[c]; }
};
template <class T, int C, int R>
inline vec<T, R> operator*(const matrix<T, C, R>& m, vec<T, C> v) {
  vec<T, R> r = vec<T, R>(T(0));
  for (int c = 0; c < C; c++) r += m.columns[c] * v[c];
  return r;
}
template <class T, int C, int R>
inline vec<T, C> operator*(vec<T, R> v, const matrix<T, C, R>& m) {
  vec<T, C> r;
  for (int c = 0; c < C; c++) r[c] = dot(v, m.columns[c]);
  return r;
}
template <class T, int K, int C, int R>
inline matrix<T, C, R> operator*(const matrix<T, K, R>& a, const matrix<T, C, K>& b) {
  matrix<T, C, R> r;
  for (int c = 0; c < C; c++) r.columns[c] = a * b.columns[c];
  return r;
}
template <class T, int C, int R>
inline matrix<T, C, R> operator*(const matrix<T, C, R>& m, T s) {
  matrix<T, C, R> r;
  for (int c = 0; c < C; c++) r.columns[c] = m.columns[c] * s;
  return r;
}
template <class T, int C, int R>
inline matrix<T, C, R> operator*(T s, const matrix<T, C, R>& m) { return m * s; }
template <class T, int C, int R>
inline matrix<T, C, R> operator+(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  matrix<T, C, R> r;
  for (int c = 0; c < C; c++) r.columns[c] = a.columns[c] + b.columns[c];
  return r;
}
template <class T, int C, int R>
inline matrix<T, C, R> operator-(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  matrix<T, C, R> r;
  for (int c = 0; c < C; c++) r.columns[c] = a.columns[c] - b.columns[c];
  return r;
}
template <class T, int C, int R>
inline matrix<T, R, C> transpose(const matrix<T, C, R>& m) {
  matrix<T, R, C> r;
  for (int c = 0; c < C; c++)
    for (int k = 0; k < R; k++) r.columns[k][c] = m.columns[c][k];
  return r;
}
}  // namespace metal
#define MSLEMU_MAT(T, name)                                                                   \
  typedef ::metal::matrix<T, 2, 2> name##2x2; typedef ::metal::matrix<T, 2, 3> name##2x3;     \
  typedef ::metal::matrix<T, 2, 4> name##2x4; typedef ::metal::matrix<T, 3, 2> name##3x2;     \
  typedef ::metal::matrix<T, 3, 3> name##3x3; typedef ::metal::matrix<T, 3, 4> name##3x4;     \
  typedef ::metal::matrix<T, 4, 2> name##4x2; typedef ::metal::matrix<T, 4, 3> name##4x3;     \
  typedef ::metal::matrix<T, 4, 4> name##4x4;
MSLEMU_MAT(float, float)
MSLEMU_MAT(half, half)
MSLEMU_MAT(__bf16, bfloat)
#undef MSLEMU_MAT
typedef float4x4 matrix_float4x4;
typedef float3x3 matrix_float3x3;
typedef float2x2 matrix_float2x2;
typedef float4x4 simd_float4x4;
typedef float3x3 simd_float3x3;

// Feature macros of the Metal compiler that kernels and shared host/shader
// headers test: Metal 3.2 with bfloat.
#define __METAL_VERSION__ 320
#define __HAVE_BFLOAT__ 1

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
#define bfloat2(...) ::metal::__make<__bf16, 2>(__VA_ARGS__)
#define bfloat3(...) ::metal::__make<__bf16, 3>(__VA_ARGS__)
#define bfloat4(...) ::metal::__make<__bf16, 4>(__VA_ARGS__)
#define bool2(...) ::metal::__boolv<2>(::metal::__make<int, 2>(__VA_ARGS__))
#define bool3(...) ::metal::__boolv<3>(::metal::__make<int, 3>(__VA_ARGS__))
#define bool4(...) ::metal::__boolv<4>(::metal::__make<int, 4>(__VA_ARGS__))

// Metal compiler internals. MLX's bf16_math.h (included by its utils.h,
// so by nearly every MLX kernel) defines bfloat overloads of the math and
// simd functions on top of them: __metal_exp(x, __METAL_FAST_MATH__),
// __metal_simd_sum(x)... They compute in the type they are given (float in
// MLX); the fast-math argument does not change the emulator's result.
#define __METAL_MAYBE_FAST_MATH__ 0
#define __METAL_FAST_MATH__ 1
#define __METAL_PRECISE_MATH__ 2
#define MSLEMU_INTERNAL1(name)                                                                    \
  template <class T>                                                                              \
  inline T __metal_##name(T x, int = 0) { return ::metal::name(x); }
#define MSLEMU_INTERNAL2(name)                                                                    \
  template <class T>                                                                              \
  inline T __metal_##name(T x, T y, int = 0) { return ::metal::name(x, y); }
#define MSLEMU_INTERNAL3(name, fn)                                                                \
  template <class T>                                                                              \
  inline T __metal_##name(T x, T y, T z, int = 0) { return ::metal::fn(x, y, z); }
MSLEMU_INTERNAL1(fabs) MSLEMU_INTERNAL1(acos) MSLEMU_INTERNAL1(acosh) MSLEMU_INTERNAL1(asin)
MSLEMU_INTERNAL1(asinh) MSLEMU_INTERNAL1(atan) MSLEMU_INTERNAL1(atanh) MSLEMU_INTERNAL1(ceil)
MSLEMU_INTERNAL1(cos) MSLEMU_INTERNAL1(cosh) MSLEMU_INTERNAL1(cospi) MSLEMU_INTERNAL1(exp)
MSLEMU_INTERNAL1(exp10) MSLEMU_INTERNAL1(exp2) MSLEMU_INTERNAL1(floor) MSLEMU_INTERNAL1(fract)
MSLEMU_INTERNAL1(log) MSLEMU_INTERNAL1(log10) MSLEMU_INTERNAL1(log2) MSLEMU_INTERNAL1(rint)
MSLEMU_INTERNAL1(round) MSLEMU_INTERNAL1(rsqrt) MSLEMU_INTERNAL1(sin) MSLEMU_INTERNAL1(sinh)
MSLEMU_INTERNAL1(sinpi) MSLEMU_INTERNAL1(sqrt) MSLEMU_INTERNAL1(tan) MSLEMU_INTERNAL1(tanh)
MSLEMU_INTERNAL1(tanpi) MSLEMU_INTERNAL1(trunc) MSLEMU_INTERNAL1(saturate) MSLEMU_INTERNAL1(log1p)
MSLEMU_INTERNAL1(erf) MSLEMU_INTERNAL1(expm1)
MSLEMU_INTERNAL2(atan2) MSLEMU_INTERNAL2(divide) MSLEMU_INTERNAL2(fmax) MSLEMU_INTERNAL2(fmin)
MSLEMU_INTERNAL2(fmod) MSLEMU_INTERNAL2(pow) MSLEMU_INTERNAL2(powr) MSLEMU_INTERNAL2(nextafter)
MSLEMU_INTERNAL2(copysign) MSLEMU_INTERNAL2(fdim)
MSLEMU_INTERNAL3(fmax3, fmax3) MSLEMU_INTERNAL3(fmin3, fmin3) MSLEMU_INTERNAL3(fmedian3, median3)
MSLEMU_INTERNAL3(fma, fma)
#undef MSLEMU_INTERNAL1
#undef MSLEMU_INTERNAL2
#undef MSLEMU_INTERNAL3
template <class T>
inline T __metal_frexp(T x, int* e) { return ::metal::frexp(x, *e); }
template <class T>
inline T __metal_ldexp(T x, int k, int = 0) { return ::metal::ldexp(x, k); }
inline ushort __metal_get_simdgroup_size(ushort) { return 32; }
#define MSLEMU_INTERNAL_SIMD1(name)                                                               \
  template <class T>                                                                              \
  inline T __metal_##name(T x, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { \
    return ::metal::name(x, file, line);                                                          \
  }
#define MSLEMU_INTERNAL_SIMD2(name)                                                               \
  template <class T>                                                                              \
  inline T __metal_##name(T x, ushort p, const char* file = __builtin_FILE(),                     \
                          int line = __builtin_LINE()) {                                          \
    return ::metal::name(x, p, file, line);                                                       \
  }
MSLEMU_INTERNAL_SIMD1(simd_max) MSLEMU_INTERNAL_SIMD1(simd_min) MSLEMU_INTERNAL_SIMD1(simd_sum)
MSLEMU_INTERNAL_SIMD1(simd_product) MSLEMU_INTERNAL_SIMD1(simd_xor) MSLEMU_INTERNAL_SIMD1(simd_and)
MSLEMU_INTERNAL_SIMD1(simd_or) MSLEMU_INTERNAL_SIMD1(simd_prefix_inclusive_sum)
MSLEMU_INTERNAL_SIMD1(simd_prefix_exclusive_sum) MSLEMU_INTERNAL_SIMD1(simd_prefix_inclusive_product)
MSLEMU_INTERNAL_SIMD1(simd_prefix_exclusive_product) MSLEMU_INTERNAL_SIMD1(simd_broadcast_first)
MSLEMU_INTERNAL_SIMD2(simd_broadcast) MSLEMU_INTERNAL_SIMD2(simd_shuffle) MSLEMU_INTERNAL_SIMD2(simd_shuffle_down)
MSLEMU_INTERNAL_SIMD2(simd_shuffle_up) MSLEMU_INTERNAL_SIMD2(simd_shuffle_xor)
MSLEMU_INTERNAL_SIMD2(simd_shuffle_rotate_down) MSLEMU_INTERNAL_SIMD2(simd_shuffle_rotate_up)
#undef MSLEMU_INTERNAL_SIMD1
#undef MSLEMU_INTERNAL_SIMD2
template <class T>
inline T __metal_simd_shuffle_and_fill_down(T x, T fill, ushort delta, ushort modulo,
                                            const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::metal::simd_shuffle_and_fill_down(x, fill, delta, modulo, file, line);
}
template <class T>
inline T __metal_simd_shuffle_and_fill_up(T x, T fill, ushort delta, ushort modulo,
                                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::metal::simd_shuffle_and_fill_up(x, fill, delta, modulo, file, line);
}

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
