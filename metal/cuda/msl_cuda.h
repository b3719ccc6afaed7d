// msl_cuda.h: the Metal Shading Language standard library for kernels that
// mslpp translated to CUDA C++ (target mslpp.CUDA), compiled by NVRTC with
// -default-device. It is the CUDA counterpart of the emulator's msl_shim.h:
// the same MSL semantics on an NVIDIA GPU, where a simdgroup is a warp
// (both 32 lanes, both numbered from the linear thread index, x fastest).
//
// Semantics pinned by the shim tests (metal/cuda, shim_test.go) to agree
// with the emulator:
//   - half is IEEE binary16 with MSL's promotions: half∘half → half (one
//     rounding, PTX f16 arithmetic), half∘float → float, half∘int → half.
//   - Vector types have MSL's sizes and alignments (float3 is 16 bytes,
//     half3 8).
//   - Plain math functions are fast math, as Metal compiles by default
//     (MSL_FAST_MATH=0 makes them precise); metal::fast:: and
//     metal::precise:: name each form explicitly.
//   - simd_* reductions over a full simdgroup add in the emulator's
//     pairwise order (lanes 2i and 2i+1 first), so results agree bit for
//     bit; over a partial or divergent simdgroup they take the active lanes
//     (__activemask) in the same order.
//   - simdgroup_matrix<T, 8, 8> holds two elements a lane in Apple's lane
//     layout (MLX's BaseMMAFrag::get_coord); multiply-accumulate gathers the
//     fragments with shuffles and accumulates in fp32 in k order.
#pragma once

#ifndef MSL_FAST_MATH
#define MSL_FAST_MATH 1
#endif

#ifndef INFINITY
#define INFINITY (::__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (::__int_as_float(0x7fc00000))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (::__int_as_float(0x7f800000))
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38f
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38f
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 1.192092896e-07f
#endif
#ifndef M_PI_F
#define M_PI_F 3.14159265358979323846f
#endif
#ifndef M_SQRT2_F
#define M_SQRT2_F 1.41421356237309504880f
#endif
#ifndef M_LN2_F
#define M_LN2_F 0.69314718055994530942f
#endif
#ifndef M_LOG2E_F
#define M_LOG2E_F 1.44269504088896340736f
#endif
#define METAL_FUNC inline
#define is_function_constant_defined(name) (name##__mslfc_defined)

namespace metal {

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef long long long_t;
typedef unsigned long long ulong;
typedef unsigned long long size_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef long long ptrdiff_t;

// ---------------------------------------------------------------------------
// Type traits (no standard library under NVRTC).
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T&> { typedef T type; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> struct remove_cv { typedef T type; };
template <class T> struct remove_cv<const T> { typedef T type; };
template <class T> struct remove_cv<volatile T> { typedef T type; };
template <class T> struct remove_cv<const volatile T> { typedef T type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> struct is_reference { static constexpr bool value = false; };
template <class T> struct is_reference<T&> { static constexpr bool value = true; };
template <class T> struct is_pointer { static constexpr bool value = false; };
template <class T> struct is_pointer<T*> { static constexpr bool value = true; };
template <class T, class U> struct is_same { static constexpr bool value = false; };
template <class T> struct is_same<T, T> { static constexpr bool value = true; };
template <class T, class U> constexpr bool is_same_v = is_same<T, U>::value;
template <class T> struct type_identity { typedef T type; };
template <class T> using identity_t = typename type_identity<T>::type;
template <class T> T&& declval();

struct half;
template <class T> struct is_integral_ { static constexpr bool value = false; };
#define MSLCUDA_INTEGRAL(T) template <> struct is_integral_<T> { static constexpr bool value = true; };
MSLCUDA_INTEGRAL(bool) MSLCUDA_INTEGRAL(char) MSLCUDA_INTEGRAL(signed char) MSLCUDA_INTEGRAL(unsigned char)
MSLCUDA_INTEGRAL(short) MSLCUDA_INTEGRAL(unsigned short) MSLCUDA_INTEGRAL(int) MSLCUDA_INTEGRAL(unsigned int)
MSLCUDA_INTEGRAL(long) MSLCUDA_INTEGRAL(unsigned long) MSLCUDA_INTEGRAL(long long) MSLCUDA_INTEGRAL(unsigned long long)
#undef MSLCUDA_INTEGRAL
template <class T> struct is_integral { static constexpr bool value = is_integral_<remove_cv_t<T>>::value; };
template <class T> constexpr bool is_integral_v = is_integral<T>::value;
template <class T> struct is_floating_point {
  static constexpr bool value = is_same_v<remove_cv_t<T>, float> || is_same_v<remove_cv_t<T>, double> || is_same_v<remove_cv_t<T>, half>;
};
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> struct is_scalar { static constexpr bool value = is_integral_v<T> || is_floating_point_v<T>; };
template <class T> constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T> struct is_arithmetic { static constexpr bool value = is_scalar_v<T>; };
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> struct is_signed { static constexpr bool value = T(-1) < T(0); };

// NVRTC has no __builtin_memcpy: bytes are copied one by one (the
// compiler turns it into register moves).
inline void __copy(void* d, const void* s, int n) {
  for (int i = 0; i < n; i++) static_cast<unsigned char*>(d)[i] = static_cast<const unsigned char*>(s)[i];
}
template <class T> inline T __bits_as(const void* p) { T t; __copy(&t, p, sizeof t); return t; }

// ---------------------------------------------------------------------------
// half: binary16 storage; arithmetic rounds once per operation.
inline unsigned short __f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
inline float __h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }

struct half {
  unsigned short bits;
  half() = default;
  constexpr half(const half&) = default;
  half(float f) : bits(__f2h(f)) {}
  half(double d) : bits(__f2h(float(d))) {}
  template <class I, enable_if_t<is_integral_v<I>, int> = 0> half(I i) : bits(__f2h(float(i))) {}
  operator float() const { return __h2f(bits); }
  half& operator=(const half&) = default;
  half& operator+=(half o);
  half& operator-=(half o);
  half& operator*=(half o);
  half& operator/=(half o);
  half operator-() const { half r; r.bits = bits ^ 0x8000u; return r; }
  half operator+() const { return *this; }
};
constexpr half half_bits(unsigned short b) { half h{}; h.bits = b; return h; }

inline half __hop_add(half a, half b) { half r; asm("add.rn.f16 %0, %1, %2;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits)); return r; }
inline half __hop_sub(half a, half b) { half r; asm("sub.rn.f16 %0, %1, %2;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits)); return r; }
inline half __hop_mul(half a, half b) { half r; asm("mul.rn.f16 %0, %1, %2;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits)); return r; }
inline half __hop_div(half a, half b) { return half(float(a) / float(b)); }
inline half& half::operator+=(half o) { return *this = __hop_add(*this, o); }
inline half& half::operator-=(half o) { return *this = __hop_sub(*this, o); }
inline half& half::operator*=(half o) { return *this = __hop_mul(*this, o); }
inline half& half::operator/=(half o) { return *this = __hop_div(*this, o); }

#define MSLCUDA_HALF_OP(op, fn)                                                                       \
  inline half operator op(half a, half b) { return fn(a, b); }                                       \
  inline float operator op(half a, float b) { return float(a) op b; }                                \
  inline float operator op(float a, half b) { return a op float(b); }                                \
  inline float operator op(half a, double b) { return float(a) op float(b); }                        \
  inline float operator op(double a, half b) { return float(a) op float(b); }                        \
  template <class I, enable_if_t<is_integral_v<I>, int> = 0> inline half operator op(half a, I b) { \
    return fn(a, half(b));                                                                            \
  }                                                                                                   \
  template <class I, enable_if_t<is_integral_v<I>, int> = 0> inline half operator op(I a, half b) { \
    return fn(half(a), b);                                                                            \
  }
MSLCUDA_HALF_OP(+, __hop_add)
MSLCUDA_HALF_OP(-, __hop_sub)
MSLCUDA_HALF_OP(*, __hop_mul)
MSLCUDA_HALF_OP(/, __hop_div)
#undef MSLCUDA_HALF_OP
#define MSLCUDA_HALF_CMP(op)                                                                          \
  inline bool operator op(half a, half b) { return float(a) op float(b); }                           \
  inline bool operator op(half a, float b) { return float(a) op b; }                                 \
  inline bool operator op(float a, half b) { return a op float(b); }                                 \
  inline bool operator op(half a, double b) { return float(a) op float(b); }                         \
  inline bool operator op(double a, half b) { return float(a) op float(b); }                         \
  template <class I, enable_if_t<is_integral_v<I>, int> = 0> inline bool operator op(half a, I b) { \
    return float(a) op float(b);                                                                      \
  }                                                                                                   \
  template <class I, enable_if_t<is_integral_v<I>, int> = 0> inline bool operator op(I a, half b) { \
    return float(a) op float(b);                                                                      \
  }
MSLCUDA_HALF_CMP(<) MSLCUDA_HALF_CMP(>) MSLCUDA_HALF_CMP(<=) MSLCUDA_HALF_CMP(>=) MSLCUDA_HALF_CMP(==) MSLCUDA_HALF_CMP(!=)
#undef MSLCUDA_HALF_CMP
inline float& operator+=(float& a, half b) { return a += float(b); }
inline float& operator-=(float& a, half b) { return a -= float(b); }
inline float& operator*=(float& a, half b) { return a *= float(b); }
inline float& operator/=(float& a, half b) { return a /= float(b); }
inline half& operator+=(half& a, float b) { return a = half(float(a) + b); }
inline half& operator-=(half& a, float b) { return a = half(float(a) - b); }
inline half& operator*=(half& a, float b) { return a = half(float(a) * b); }
inline half& operator/=(half& a, float b) { return a = half(float(a) / b); }

// ---------------------------------------------------------------------------
// Vectors with MSL's sizes: 2 elements aligned to 2×, 3 and 4 to 4× the
// element size.
template <class T, int N> struct vec;

template <class T> struct is_vector { static constexpr bool value = false; };
template <class T, int N> struct is_vector<vec<T, N>> { static constexpr bool value = true; };
template <class T> struct vec_traits { typedef T elem; static constexpr int n = 1; };
template <class T, int N> struct vec_traits<vec<T, N>> { typedef T elem; static constexpr int n = N; };

#define MSLCUDA_VEC_COMMON(N)                                                                             \
  vec() = default;                                                                                        \
  template <class S, enable_if_t<is_scalar_v<S>, int> = 0> vec(S s) {                                    \
    for (int i = 0; i < N; i++) (*this)[i] = T(s);                                                        \
  }                                                                                                       \
  template <class U> explicit vec(const vec<U, N>& o) {                                                   \
    for (int i = 0; i < N; i++) (*this)[i] = T(o[i]);                                                     \
  }                                                                                                       \
  T& operator[](int i) { return (&x)[i]; }                                                                \
  const T& operator[](int i) const { return (&x)[i]; }                                                    \
  vec& operator+=(const vec& o) { for (int i = 0; i < N; i++) (*this)[i] = T((*this)[i] + o[i]); return *this; } \
  vec& operator-=(const vec& o) { for (int i = 0; i < N; i++) (*this)[i] = T((*this)[i] - o[i]); return *this; } \
  vec& operator*=(const vec& o) { for (int i = 0; i < N; i++) (*this)[i] = T((*this)[i] * o[i]); return *this; } \
  vec& operator/=(const vec& o) { for (int i = 0; i < N; i++) (*this)[i] = T((*this)[i] / o[i]); return *this; } \
  template <class S, enable_if_t<is_scalar_v<S>, int> = 0> vec& operator+=(S s) { return *this += vec(s); } \
  template <class S, enable_if_t<is_scalar_v<S>, int> = 0> vec& operator-=(S s) { return *this -= vec(s); } \
  template <class S, enable_if_t<is_scalar_v<S>, int> = 0> vec& operator*=(S s) { return *this *= vec(s); } \
  template <class S, enable_if_t<is_scalar_v<S>, int> = 0> vec& operator/=(S s) { return *this /= vec(s); }

template <class T> struct alignas(2 * sizeof(T)) vec<T, 2> {
  T x, y;
  MSLCUDA_VEC_COMMON(2)
  vec(T a, T b) : x(a), y(b) {}
};
template <class T> struct alignas(4 * sizeof(T)) vec<T, 3> {
  T x, y, z;
  MSLCUDA_VEC_COMMON(3)
  vec(T a, T b, T c) : x(a), y(b), z(c) {}
  vec(const vec<T, 2>& a, T c) : x(a.x), y(a.y), z(c) {}
  vec(T a, const vec<T, 2>& b) : x(a), y(b.x), z(b.y) {}
};
template <class T> struct alignas(4 * sizeof(T)) vec<T, 4> {
  T x, y, z, w;
  MSLCUDA_VEC_COMMON(4)
  vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
  vec(const vec<T, 2>& a, const vec<T, 2>& b) : x(a.x), y(a.y), z(b.x), w(b.y) {}
  vec(const vec<T, 3>& a, T d) : x(a.x), y(a.y), z(a.z), w(d) {}
  vec(T a, const vec<T, 3>& b) : x(a), y(b.x), z(b.y), w(b.z) {}
  vec(const vec<T, 2>& a, T c, T d) : x(a.x), y(a.y), z(c), w(d) {}
};
#undef MSLCUDA_VEC_COMMON

#define MSLCUDA_VEC_BINOP(op)                                                                              \
  template <class T, int N> inline vec<T, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {        \
    vec<T, N> r;                                                                                           \
    for (int i = 0; i < N; i++) r[i] = T(a[i] op b[i]);                                                    \
    return r;                                                                                              \
  }                                                                                                        \
  template <class T, int N, class S, enable_if_t<is_scalar_v<S>, int> = 0>                                 \
  inline vec<T, N> operator op(const vec<T, N>& a, S s) { return a op vec<T, N>(s); }                      \
  template <class T, int N, class S, enable_if_t<is_scalar_v<S>, int> = 0>                                 \
  inline vec<T, N> operator op(S s, const vec<T, N>& a) { return vec<T, N>(s) op a; }
MSLCUDA_VEC_BINOP(+) MSLCUDA_VEC_BINOP(-) MSLCUDA_VEC_BINOP(*) MSLCUDA_VEC_BINOP(/)
MSLCUDA_VEC_BINOP(%) MSLCUDA_VEC_BINOP(&) MSLCUDA_VEC_BINOP(|) MSLCUDA_VEC_BINOP(^)
MSLCUDA_VEC_BINOP(<<) MSLCUDA_VEC_BINOP(>>)
#undef MSLCUDA_VEC_BINOP
#define MSLCUDA_VEC_CMP(op)                                                                                \
  template <class T, int N> inline vec<bool, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {     \
    vec<bool, N> r;                                                                                        \
    for (int i = 0; i < N; i++) r[i] = a[i] op b[i];                                                       \
    return r;                                                                                              \
  }                                                                                                        \
  template <class T, int N, class S, enable_if_t<is_scalar_v<S>, int> = 0>                                 \
  inline vec<bool, N> operator op(const vec<T, N>& a, S s) { return a op vec<T, N>(s); }
MSLCUDA_VEC_CMP(<) MSLCUDA_VEC_CMP(>) MSLCUDA_VEC_CMP(<=) MSLCUDA_VEC_CMP(>=) MSLCUDA_VEC_CMP(==) MSLCUDA_VEC_CMP(!=)
#undef MSLCUDA_VEC_CMP
template <class T, int N> inline vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = T(-a[i]);
  return r;
}

#define MSLCUDA_VEC_TYPES(T, name)                                                                        \
  typedef vec<T, 2> name##2;                                                                              \
  typedef vec<T, 3> name##3;                                                                              \
  typedef vec<T, 4> name##4;
MSLCUDA_VEC_TYPES(float, float) MSLCUDA_VEC_TYPES(half, half) MSLCUDA_VEC_TYPES(int, int)
MSLCUDA_VEC_TYPES(uint, uint) MSLCUDA_VEC_TYPES(short, short) MSLCUDA_VEC_TYPES(ushort, ushort)
MSLCUDA_VEC_TYPES(char, char) MSLCUDA_VEC_TYPES(uchar, uchar) MSLCUDA_VEC_TYPES(bool, bool)
MSLCUDA_VEC_TYPES(long_t, long) MSLCUDA_VEC_TYPES(ulong, ulong)
#undef MSLCUDA_VEC_TYPES
typedef float4 vector_float4;
typedef float3 vector_float3;
typedef float2 vector_float2;
typedef uint4 vector_uint4;
typedef uint3 vector_uint3;
typedef uint2 vector_uint2;

// packed_floatN: no padding, element alignment.
template <class T, int N> struct packed_vec {
  T v[N];
  packed_vec() = default;
  packed_vec(const vec<T, N>& o) { for (int i = 0; i < N; i++) v[i] = o[i]; }
  operator vec<T, N>() const { vec<T, N> r; for (int i = 0; i < N; i++) r[i] = v[i]; return r; }
  T& operator[](int i) { return v[i]; }
  const T& operator[](int i) const { return v[i]; }
};
typedef packed_vec<float, 2> packed_float2;
typedef packed_vec<float, 3> packed_float3;
typedef packed_vec<float, 4> packed_float4;
typedef packed_vec<half, 2> packed_half2;
typedef packed_vec<half, 3> packed_half3;
typedef packed_vec<half, 4> packed_half4;

// cast<T>(x): what a C-style cast to a template type parameter becomes
// (mslpp rewrites it): element-wise for vectors.
template <class T, class U> inline T cast(const U& u) { return T(u); }

template <class T, class U> inline T as_type(const U& u) {
  static_assert(sizeof(T) == sizeof(U), "as_type needs types of one size");
  return __bits_as<T>(&u);
}

// ---------------------------------------------------------------------------
// Math. Scalars of float; half computes in float and rounds once; vectors
// apply element-wise.
namespace precise {
inline float exp(float x) { return ::expf(x); }
inline float exp2(float x) { return ::exp2f(x); }
inline float exp10(float x) { return ::exp10f(x); }
inline float log(float x) { return ::logf(x); }
inline float log2(float x) { return ::log2f(x); }
inline float log10(float x) { return ::log10f(x); }
inline float pow(float x, float y) { return ::powf(x, y); }
inline float powr(float x, float y) { return ::powf(x, y); }
inline float sqrt(float x) { return ::sqrtf(x); }
inline float rsqrt(float x) { return 1.0f / ::sqrtf(x); }
inline float sin(float x) { return ::sinf(x); }
inline float cos(float x) { return ::cosf(x); }
inline float tan(float x) { return ::tanf(x); }
inline float tanh(float x) { return ::tanhf(x); }
inline float divide(float x, float y) { return x / y; }
}  // namespace precise
namespace fast {
inline float exp(float x) { return ::__expf(x); }
inline float exp2(float x) { return ::exp2f(x); }
inline float exp10(float x) { return ::__exp10f(x); }
inline float log(float x) { return ::__logf(x); }
inline float log2(float x) { return ::__log2f(x); }
inline float log10(float x) { return ::__log10f(x); }
inline float pow(float x, float y) { return ::__powf(x, y); }
inline float powr(float x, float y) { return ::__powf(x, y); }
inline float sqrt(float x) { return ::sqrtf(x); }
inline float rsqrt(float x) { return ::rsqrtf(x); }
inline float sin(float x) { return ::__sinf(x); }
inline float cos(float x) { return ::__cosf(x); }
inline float tan(float x) { return ::__tanf(x); }
inline float tanh(float x) { return ::tanhf(x); }
inline float divide(float x, float y) { return ::__fdividef(x, y); }
}  // namespace fast
#if MSL_FAST_MATH
namespace __math = fast;
#else
namespace __math = precise;
#endif

#define MSLCUDA_MATH1(name)                                                                             \
  inline float name(float x) { return __math::name(x); }                                                \
  inline half name(half x) { return half(__math::name(float(x))); }                                     \
  template <class T, int N> inline vec<T, N> name(const vec<T, N>& v) {                                 \
    vec<T, N> r;                                                                                        \
    for (int i = 0; i < N; i++) r[i] = name(v[i]);                                                      \
    return r;                                                                                           \
  }
MSLCUDA_MATH1(exp) MSLCUDA_MATH1(exp2) MSLCUDA_MATH1(exp10) MSLCUDA_MATH1(log) MSLCUDA_MATH1(log2)
MSLCUDA_MATH1(log10) MSLCUDA_MATH1(sqrt) MSLCUDA_MATH1(rsqrt) MSLCUDA_MATH1(sin) MSLCUDA_MATH1(cos)
MSLCUDA_MATH1(tan) MSLCUDA_MATH1(tanh)
#undef MSLCUDA_MATH1
inline float pow(float x, float y) { return __math::pow(x, y); }
inline float powr(float x, float y) { return __math::powr(x, y); }
inline float divide(float x, float y) { return __math::divide(x, y); }

#define MSLCUDA_EXACT1(name, f)                                                                         \
  inline float name(float x) { return f(x); }                                                           \
  inline half name(half x) { return half(f(float(x))); }                                                \
  template <class T, int N> inline vec<T, N> name(const vec<T, N>& v) {                                 \
    vec<T, N> r;                                                                                        \
    for (int i = 0; i < N; i++) r[i] = name(v[i]);                                                      \
    return r;                                                                                           \
  }
MSLCUDA_EXACT1(fabs, ::fabsf) MSLCUDA_EXACT1(floor, ::floorf) MSLCUDA_EXACT1(ceil, ::ceilf)
MSLCUDA_EXACT1(round, ::roundf) MSLCUDA_EXACT1(trunc, ::truncf) MSLCUDA_EXACT1(rint, ::rintf)
MSLCUDA_EXACT1(asin, ::asinf) MSLCUDA_EXACT1(acos, ::acosf) MSLCUDA_EXACT1(atan, ::atanf)
MSLCUDA_EXACT1(sinh, ::sinhf) MSLCUDA_EXACT1(cosh, ::coshf)
#undef MSLCUDA_EXACT1
inline float abs(float x) { return ::fabsf(x); }
inline half abs(half x) { half r = x; r.bits &= 0x7fffu; return r; }
inline int abs(int x) { return x < 0 ? -x : x; }
template <class T, int N> inline vec<T, N> abs(const vec<T, N>& v) { vec<T, N> r; for (int i = 0; i < N; i++) r[i] = abs(v[i]); return r; }
inline float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
inline half fma(half a, half b, half c) { half r; asm("fma.rn.f16 %0, %1, %2, %3;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits), "h"(c.bits)); return r; }
template <class T, int N> inline vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = fma(a[i], b[i], c[i]);
  return r;
}
inline float atan2(float y, float x) { return ::atan2f(y, x); }
inline float fmod(float x, float y) { return ::fmodf(x, y); }
inline float copysign(float x, float y) { return ::copysignf(x, y); }
inline bool isnan(float x) { return x != x; }
inline bool isinf(float x) { return ::fabsf(x) == INFINITY; }
inline bool isfinite(float x) { return !isnan(x) && !isinf(x); }
inline bool isnan(half x) { return isnan(float(x)); }
inline bool isinf(half x) { return isinf(float(x)); }
inline bool signbit(float x) { return (__bits_as<uint>(&x) >> 31) != 0; }

// max/min: MSL's fmax semantics for floats (a NaN operand yields the other).
inline float max(float a, float b) { return ::fmaxf(a, b); }
inline float min(float a, float b) { return ::fminf(a, b); }
inline float fmax(float a, float b) { return ::fmaxf(a, b); }
inline float fmin(float a, float b) { return ::fminf(a, b); }
inline half max(half a, half b) { return half(::fmaxf(float(a), float(b))); }
inline half min(half a, half b) { return half(::fminf(float(a), float(b))); }
#define MSLCUDA_IMAXMIN(T)                                  \
  inline T max(T a, T b) { return a > b ? a : b; }          \
  inline T min(T a, T b) { return a < b ? a : b; }
MSLCUDA_IMAXMIN(int) MSLCUDA_IMAXMIN(uint) MSLCUDA_IMAXMIN(short) MSLCUDA_IMAXMIN(ushort)
MSLCUDA_IMAXMIN(char) MSLCUDA_IMAXMIN(uchar) MSLCUDA_IMAXMIN(long_t) MSLCUDA_IMAXMIN(ulong)
#undef MSLCUDA_IMAXMIN
template <class T, int N> inline vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) { vec<T, N> r; for (int i = 0; i < N; i++) r[i] = max(a[i], b[i]); return r; }
template <class T, int N> inline vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) { vec<T, N> r; for (int i = 0; i < N; i++) r[i] = min(a[i], b[i]); return r; }
template <class T, int N, class S, enable_if_t<is_scalar_v<S>, int> = 0> inline vec<T, N> max(const vec<T, N>& a, S b) { return max(a, vec<T, N>(b)); }
template <class T, int N, class S, enable_if_t<is_scalar_v<S>, int> = 0> inline vec<T, N> min(const vec<T, N>& a, S b) { return min(a, vec<T, N>(b)); }
template <class T> inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T, int N, class S, enable_if_t<is_scalar_v<S>, int> = 0> inline vec<T, N> clamp(const vec<T, N>& x, S lo, S hi) { return min(max(x, vec<T, N>(lo)), vec<T, N>(hi)); }
template <class T> inline T saturate(T x) { return clamp(x, T(0), T(1)); }
template <class T> inline T mix(T a, T b, T t) { return a + (b - a) * t; }
template <class T, int N, class S, enable_if_t<is_scalar_v<S>, int> = 0> inline vec<T, N> mix(const vec<T, N>& a, const vec<T, N>& b, S t) { return a + (b - a) * vec<T, N>(t); }
template <class T> inline T sign(T x) { return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0); }
template <class T> inline T step(T edge, T x) { return x < edge ? T(0) : T(1); }
template <class T> inline T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N> inline vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = c[i] ? b[i] : a[i];
  return r;
}
template <class T, int N> inline T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = T(a[0] * b[0]);
  for (int i = 1; i < N; i++) s = T(s + a[i] * b[i]);
  return s;
}
template <class T, int N> inline T length(const vec<T, N>& a) { return sqrt(dot(a, a)); }
template <int N> inline bool all(const vec<bool, N>& v) { for (int i = 0; i < N; i++) if (!v[i]) return false; return true; }
template <int N> inline bool any(const vec<bool, N>& v) { for (int i = 0; i < N; i++) if (v[i]) return true; return false; }
inline bool all(bool b) { return b; }
inline bool any(bool b) { return b; }
inline uint popcount(uint x) { return uint(::__popc(x)); }
inline uint clz(uint x) { return uint(::__clz(int(x))); }
inline uint ctz(uint x) { return x == 0 ? 32u : uint(::__ffs(int(x)) - 1); }
inline uint mulhi(uint a, uint b) { return ::__umulhi(a, b); }

// ---------------------------------------------------------------------------
// Numeric limits (metal_limits).
template <class T> struct numeric_limits;
template <> struct numeric_limits<float> {
  static float max() { return FLT_MAX; }
  static float min() { return FLT_MIN; }
  static float lowest() { return -FLT_MAX; }
  static float infinity() { return INFINITY; }
  static float epsilon() { return FLT_EPSILON; }
  static float quiet_NaN() { return NAN; }
};
template <> struct numeric_limits<half> {
  static half max() { return half_bits(0x7bffu); }
  static half lowest() { return half_bits(0xfbffu); }
  static half min() { return half_bits(0x0400u); }
  static half infinity() { return half_bits(0x7c00u); }
  static half epsilon() { return half_bits(0x1400u); }
  static half quiet_NaN() { return half_bits(0x7e00u); }
};
template <> struct numeric_limits<int> { static constexpr int max() { return 2147483647; } static constexpr int min() { return -2147483647 - 1; } static constexpr int lowest() { return -2147483647 - 1; } };
template <> struct numeric_limits<uint> { static constexpr uint max() { return 4294967295u; } static constexpr uint min() { return 0; } static constexpr uint lowest() { return 0; } };

// ---------------------------------------------------------------------------
// Barriers.
enum class mem_flags : uint { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 16, mem_object_data = 32 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint(a) | uint(b)); }
inline void threadgroup_barrier(mem_flags f = mem_flags::mem_none) {
  if (uint(f) & uint(mem_flags::mem_device)) ::__threadfence();
  ::__syncthreads();
}
inline void simdgroup_barrier(mem_flags f = mem_flags::mem_none) {
  if (uint(f) & uint(mem_flags::mem_device)) ::__threadfence();
  ::__syncwarp(::__activemask());
}
inline void atomic_thread_fence(mem_flags, int = 0, int = 0) { ::__threadfence(); }

// ---------------------------------------------------------------------------
// Builtins of the launch (what the entry points mslpp writes bind).
struct Launch {
  void* buf[31];
  uint tgoff[31];  // byte offsets of [[threadgroup(n)]] arguments in dynamic shared memory
  uint groups[3];  // the dispatch's threadgroups, as Metal counts them
  uint goff[3];    // this launch's first threadgroup (grids over CUDA's y/z limits run in parts)
};
static_assert(sizeof(Launch) == 400, "Launch must match the layout metal/cuda's command.go writes");
struct __u3 { uint x, y, z; };
inline uint __lin() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline uint __nthreads() { return blockDim.x * blockDim.y * blockDim.z; }
inline __u3 bi_tgpig(const Launch& L) { return {blockIdx.x + L.goff[0], blockIdx.y + L.goff[1], blockIdx.z + L.goff[2]}; }
inline __u3 bi_tpitg(const Launch&) { return {threadIdx.x, threadIdx.y, threadIdx.z}; }
inline __u3 bi_tptg(const Launch&) { return {blockDim.x, blockDim.y, blockDim.z}; }
inline __u3 bi_tgpg(const Launch& L) { return {L.groups[0], L.groups[1], L.groups[2]}; }
inline __u3 bi_tpg(const Launch& L) { return {L.groups[0] * blockDim.x, L.groups[1] * blockDim.y, L.groups[2] * blockDim.z}; }
inline __u3 bi_tpig(const Launch& L) {
  __u3 g = bi_tgpig(L);
  return {g.x * blockDim.x + threadIdx.x, g.y * blockDim.y + threadIdx.y, g.z * blockDim.z + threadIdx.z};
}
inline uint bi_tiitg(const Launch&) { return __lin(); }
inline uint bi_lane(const Launch&) { return __lin() & 31u; }
inline uint bi_sgitg(const Launch&) { return __lin() >> 5; }
inline uint bi_sgptg(const Launch&) { return (__nthreads() + 31u) >> 5; }
inline uint bi_width(const Launch&) { return 32u; }
inline uint bi_qlane(const Launch&) { return __lin() & 3u; }
inline uint bi_qgitg(const Launch&) { return __lin() >> 2; }
inline uint bi_qgptg(const Launch&) { return (__nthreads() + 3u) >> 2; }

template <class T> inline T builtin(uint v) { return T(v); }
template <class T> inline T builtin(__u3 v) {
  typedef remove_cv_t<remove_reference_t<T>> U;
  if constexpr (vec_traits<U>::n == 1) {
    return U(v.x);
  } else if constexpr (vec_traits<U>::n == 2) {
    typedef typename vec_traits<U>::elem E;
    return U(E(v.x), E(v.y));
  } else {
    typedef typename vec_traits<U>::elem E;
    return U(E(v.x), E(v.y), E(v.z));
  }
}

template <class F, int I> struct arg_;
template <class R, class... A, int I> struct arg_<R (*)(A...), I> {
  template <int J, class H, class... Rest> struct at { typedef typename at<J - 1, Rest...>::type type; };
  template <class H, class... Rest> struct at<0, H, Rest...> { typedef H type; };
  typedef typename at<I, A...>::type type;
};
template <class F, int I> using arg_t = typename arg_<F, I>::type;

// bind turns a buffer address into a pointer parameter, or dereferences it
// for a reference parameter (constant Params& p).
template <class T> inline T bind(void* p) {
  if constexpr (is_reference<T>::value) {
    return *static_cast<remove_reference_t<T>*>(p);
  } else {
    return static_cast<T>(p);
  }
}
extern __shared__ unsigned char __msl_dynamic_tg[];
inline void* tgmem(const Launch& L, int i) { return __msl_dynamic_tg + L.tgoff[i]; }

// ---------------------------------------------------------------------------
// SIMD-group functions.
inline uint __lane() { return __lin() & 31u; }
inline uint __active() { return ::__activemask(); }

template <class T> inline T __shfl(uint mask, T v, int src) {
  constexpr int W = (sizeof(T) + 3) / 4;
  uint w[W] = {};
  __copy(w, &v, sizeof(T));
  for (int i = 0; i < W; i++) w[i] = ::__shfl_sync(mask, w[i], src);
  T r;
  __copy(&r, w, sizeof(T));
  return r;
}
template <class T> inline T __shfl_xor(uint mask, T v, int m) {
  constexpr int W = (sizeof(T) + 3) / 4;
  uint w[W] = {};
  __copy(w, &v, sizeof(T));
  for (int i = 0; i < W; i++) w[i] = ::__shfl_xor_sync(mask, w[i], m);
  T r;
  __copy(&r, w, sizeof(T));
  return r;
}

// __gather collects the values of the active lanes in lane order; n is how
// many. Used where the simdgroup is not full, so that results follow the
// emulator's order exactly.
template <class T> inline int __gather(uint mask, T v, T* out) {
  int n = 0;
  for (int l = 0; l < 32; l++) {
    if (mask & (1u << l)) out[n++] = __shfl(mask, v, l);
  }
  return n;
}
// __tree reduces a[0..n) pairwise in the emulator's order.
template <class T, class Op> inline T __tree(T* a, int n, Op op) {
  while (n > 1) {
    int h = 0;
    for (int i = 0; i + 1 < n; i += 2) a[h++] = op(a[i], a[i + 1]);
    if (n & 1) a[h++] = a[n - 1];
    n = h;
  }
  return a[0];
}
template <class T, class Op> inline T __reduce(T v, Op op) {
  uint m = __active();
  if (m == 0xffffffffu) {
    // Butterfly over lanes 2i, 2i+1 first: the emulator's pairwise tree.
    for (int o = 1; o < 32; o <<= 1) {
      T other = __shfl_xor(m, v, o);
      v = (__lane() & uint(o)) ? op(other, v) : op(v, other);
    }
    return v;
  }
  T a[32];
  int n = __gather(m, v, a);
  return __tree(a, n, op);
}
struct __Sum { template <class T> T operator()(T a, T b) const { return T(a + b); } };
struct __Prod { template <class T> T operator()(T a, T b) const { return T(a * b); } };
struct __Max { template <class T> T operator()(T a, T b) const { return max(a, b); } };
struct __Min { template <class T> T operator()(T a, T b) const { return min(a, b); } };
struct __And { template <class T> T operator()(T a, T b) const { return T(a & b); } };
struct __Or { template <class T> T operator()(T a, T b) const { return T(a | b); } };
struct __Xor { template <class T> T operator()(T a, T b) const { return T(a ^ b); } };
template <class T> inline T simd_sum(T v) { return __reduce(v, __Sum()); }
template <class T> inline T simd_product(T v) { return __reduce(v, __Prod()); }
template <class T> inline T simd_max(T v) { return __reduce(v, __Max()); }
template <class T> inline T simd_min(T v) { return __reduce(v, __Min()); }
template <class T> inline T simd_and(T v) { return __reduce(v, __And()); }
template <class T> inline T simd_or(T v) { return __reduce(v, __Or()); }
template <class T> inline T simd_xor(T v) { return __reduce(v, __Xor()); }

// Prefix operations add the active lanes below (and at) this one in lane
// order, as the emulator does.
template <class T, class Op> inline T __prefix(T v, Op op, T init, bool inclusive) {
  uint m = __active();
  T a[32];
  int n = __gather(m, v, a);
  uint me = __lane();
  int mine = ::__popc(m & ((1u << me) - 1u));
  T s = init;
  for (int i = 0; i < n && (i < mine || (inclusive && i == mine)); i++) s = op(s, a[i]);
  return s;
}
template <class T> inline T simd_prefix_inclusive_sum(T v) { return __prefix(v, __Sum(), T(0), true); }
template <class T> inline T simd_prefix_exclusive_sum(T v) { return __prefix(v, __Sum(), T(0), false); }
template <class T> inline T simd_prefix_inclusive_product(T v) { return __prefix(v, __Prod(), T(1), true); }
template <class T> inline T simd_prefix_exclusive_product(T v) { return __prefix(v, __Prod(), T(1), false); }

// Shuffles read the source lane's value; a source outside the simdgroup or
// inactive leaves the lane's own value (the device calls it undefined; the
// emulator does the same).
template <class T> inline T __pick(T v, int src) {
  uint m = __active();
  T r = __shfl(m, v, (src >= 0 && src < 32) ? src : int(__lane()));
  return (src >= 0 && src < 32 && (m & (1u << src))) ? r : v;
}
template <class T> inline T simd_shuffle(T v, ushort l) { return __pick(v, int(l)); }
template <class T> inline T simd_broadcast(T v, ushort l) { return __pick(v, int(l)); }
template <class T> inline T simd_shuffle_xor(T v, ushort m) { return __pick(v, int(__lane() ^ uint(m))); }
template <class T> inline T simd_shuffle_down(T v, ushort d) { return __pick(v, int(__lane()) + int(d)); }
template <class T> inline T simd_shuffle_up(T v, ushort d) { return __pick(v, int(__lane()) - int(d)); }
template <class T> inline T simd_shuffle_rotate_down(T v, ushort d) { return __pick(v, int((__lane() + d % 32u) % 32u)); }
template <class T> inline T simd_shuffle_rotate_up(T v, ushort d) { return __pick(v, int((__lane() + 32u - d % 32u) % 32u)); }
template <class T> inline T simd_broadcast_first(T v) {
  uint m = __active();
  return __shfl(m, v, ::__ffs(int(m)) - 1);
}
inline bool simd_is_first() { uint m = __active(); return int(__lane()) == ::__ffs(int(m)) - 1; }
inline bool simd_all(bool b) { return ::__all_sync(__active(), b) != 0; }
inline bool simd_any(bool b) { return ::__any_sync(__active(), b) != 0; }
struct simd_vote {
  ulong v;
  explicit operator ulong() const { return v; }
  bool all() const { return uint(v) == uint(v >> 32) ; }
  bool any() const { return uint(v) != 0; }
};
inline simd_vote simd_ballot(bool b) {
  uint m = __active();
  return simd_vote{ulong(::__ballot_sync(m, b)) | (ulong(m) << 32)};
}
inline simd_vote simd_active_threads_mask() { uint m = __active(); return simd_vote{ulong(m) | (ulong(m) << 32)}; }

// Quad-group functions: the simdgroup functions on the lanes me&~3..me|3.
template <class T> inline T quad_shuffle_xor(T v, ushort m) { return __pick(v, int((__lane() & ~3u) | ((__lane() ^ uint(m)) & 3u))); }
template <class T> inline T quad_broadcast(T v, ushort l) { return __pick(v, int((__lane() & ~3u) | (uint(l) & 3u))); }
template <class T> inline T quad_sum(T v) { T a = v + quad_shuffle_xor(v, 1); return a + quad_shuffle_xor(a, 2); }

// ---------------------------------------------------------------------------
// simdgroup_matrix<T, 8, 8> in Apple's lane layout: qid = lane / 4,
// row = (qid & 4) + (lane / 2) % 4, columns (qid & 2) * 2 + (lane % 2) * 2 and
// the next; the lane holding (row r, columns 2p, 2p+1) is
// (r&4)<<2 | (p&2)<<2 | (r&2)<<1 | (r&1)<<1 | (p&1).
inline void __mma_coord(uint lane, int& row, int& col) {
  int qid = int(lane) / 4;
  row = (qid & 4) + (int(lane) / 2) % 4;
  col = (qid & 2) * 2 + (int(lane) % 2) * 2;
}
inline int __mma_lane(int r, int p) { return ((r & 4) << 2) | ((p & 2) << 2) | ((r & 2) << 1) | ((r & 1) << 1) | (p & 1); }

template <class T, int Rows = 8, int Cols = 8> struct simdgroup_matrix {
  static_assert(Rows == 8 && Cols == 8, "only 8x8 simdgroup matrices are translated");
  vec<T, 2> e;
  simdgroup_matrix() : e(T(0)) {}
  // An MSL simdgroup_matrix built from one value is diagonal.
  simdgroup_matrix(T diag) {
    int r, c;
    __mma_coord(__lane(), r, c);
    e[0] = r == c ? diag : T(0);
    e[1] = r == c + 1 ? diag : T(0);
  }
  vec<T, 2>& thread_elements() { return e; }
  const vec<T, 2>& thread_elements() const { return e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;

template <class T, int R = 8, int C = 8> inline simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T v) {
  simdgroup_matrix<T, R, C> m;
  m.e = vec<T, 2>(v);
  return m;
}
// Load and store apply matrix_origin (x = column, y = row) in source
// coordinates, then transpose, as the emulator does.
template <class T, class S>
inline void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, const S* src, ulong elements_per_row = 8,
                           ulong2 matrix_origin = ulong2(0), bool transpose = false) {
  int r, c;
  __mma_coord(__lane(), r, c);
  for (int k = 0; k < 2; k++) {
    ulong row = transpose ? ulong(c + k) : ulong(r);
    ulong col = transpose ? ulong(r) : ulong(c + k);
    d.e[k] = T(src[(matrix_origin.y + row) * elements_per_row + matrix_origin.x + col]);
  }
}
template <class T, class S>
inline void simdgroup_store(const simdgroup_matrix<T, 8, 8>& m, S* dst, ulong elements_per_row = 8,
                            ulong2 matrix_origin = ulong2(0), bool transpose = false) {
  int r, c;
  __mma_coord(__lane(), r, c);
  for (int k = 0; k < 2; k++) {
    ulong row = transpose ? ulong(c + k) : ulong(r);
    ulong col = transpose ? ulong(r) : ulong(c + k);
    dst[(matrix_origin.y + row) * elements_per_row + matrix_origin.x + col] = S(m.e[k]);
  }
}
// D = A·B + C over the whole simdgroup (all 32 lanes): each lane gathers its
// row of A (4 lanes, 2 elements each) and its two columns of B (8 lanes),
// then accumulates in fp32 from C in k order, as the emulator does.
template <class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                          const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c) {
  int r, col;
  __mma_coord(__lane(), r, col);
  const int p = col / 2;
  float a0 = float(a.e[0]), a1 = float(a.e[1]);
  float b0 = float(b.e[0]), b1 = float(b.e[1]);
  float arow[8];
  for (int q = 0; q < 4; q++) {
    int src = __mma_lane(r, q);
    arow[2 * q] = ::__shfl_sync(0xffffffffu, a0, src);
    arow[2 * q + 1] = ::__shfl_sync(0xffffffffu, a1, src);
  }
  float acc0 = float(c.e[0]), acc1 = float(c.e[1]);
  for (int k = 0; k < 8; k++) {
    int src = __mma_lane(k, p);
    float bk0 = ::__shfl_sync(0xffffffffu, b0, src);
    float bk1 = ::__shfl_sync(0xffffffffu, b1, src);
    acc0 += arow[k] * bk0;
    acc1 += arow[k] * bk1;
  }
  d.e[0] = TD(acc0);
  d.e[1] = TD(acc1);
}
template <class TD, class TA, class TB>
inline void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                               const simdgroup_matrix<TB, 8, 8>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<TD, 8, 8>(TD(0)));
}

}  // namespace metal
