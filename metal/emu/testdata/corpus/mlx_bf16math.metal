// bfloat overloads of the metal:: math and simd functions defined the way
// MLX's bf16_math.h defines them, on top of Metal compiler internals
// (__metal_exp(x, __METAL_FAST_MATH__), __metal_simd_sum(x),
// __metal_get_simdgroup_size(ushort())...), in namespaces metal,
// metal::fast and metal::precise. MLX's utils.h includes that header, so
// nearly every MLX kernel needs these internals.
#include <metal_stdlib>

using namespace metal;

#define METAL_FUNC inline __attribute__((always_inline))

typedef bfloat bfloat16_t;

#define instantiate_math_funcs(itype, otype, ctype, mfast)                     \
  METAL_FUNC otype abs(itype x) {                                              \
    return static_cast<otype>(__metal_fabs(static_cast<ctype>(x), mfast));     \
  }                                                                            \
  METAL_FUNC otype exp(itype x) {                                              \
    return static_cast<otype>(__metal_exp(static_cast<ctype>(x), mfast));      \
  }                                                                            \
  METAL_FUNC otype atan2(itype y, itype x) {                                   \
    return static_cast<otype>(                                                 \
        __metal_atan2(static_cast<ctype>(y), static_cast<ctype>(x), mfast));   \
  }                                                                            \
  METAL_FUNC otype fma(itype x, itype y, itype z) {                            \
    return static_cast<otype>(__metal_fma(                                     \
        static_cast<ctype>(x), static_cast<ctype>(y), static_cast<ctype>(z))); \
  }                                                                            \
  METAL_FUNC otype max3(itype x, itype y, itype z) {                           \
    return static_cast<otype>(__metal_fmax3(                                   \
        static_cast<ctype>(x), static_cast<ctype>(y), static_cast<ctype>(z),   \
        mfast));                                                               \
  }                                                                            \
  METAL_FUNC otype median3(itype x, itype y, itype z) {                        \
    return static_cast<otype>(__metal_fmedian3(                                \
        static_cast<ctype>(x), static_cast<ctype>(y), static_cast<ctype>(z),   \
        mfast));                                                               \
  }                                                                            \
  METAL_FUNC otype frexp(itype x, thread int& exp) {                           \
    return static_cast<otype>(__metal_frexp(static_cast<ctype>(x), &exp));     \
  }                                                                            \
  METAL_FUNC otype ldexp(itype x, int k) {                                     \
    return static_cast<otype>(__metal_ldexp(static_cast<ctype>(x), k, mfast)); \
  }                                                                            \
  METAL_FUNC otype nextafter(itype x, itype y) {                               \
    return static_cast<otype>(                                                 \
        __metal_nextafter(static_cast<ctype>(x), static_cast<ctype>(y)));      \
  }                                                                            \
  METAL_FUNC otype fdim(itype x, itype y) {                                    \
    ctype t = static_cast<ctype>(x - y);                                       \
    return static_cast<otype>(select(t, ctype(0), t < ctype(0) || x == y));    \
  }

namespace metal {
instantiate_math_funcs(bfloat16_t, bfloat16_t, float, __METAL_MAYBE_FAST_MATH__);
namespace fast {
instantiate_math_funcs(bfloat16_t, bfloat16_t, float, __METAL_FAST_MATH__);
} // namespace fast
namespace precise {
instantiate_math_funcs(bfloat16_t, bfloat16_t, float, __METAL_PRECISE_MATH__);
} // namespace precise
} // namespace metal

#define bfloat16_to_uint16(x) as_type<uint16_t>(x)
#define uint16_to_bfloat16(x) as_type<bfloat16_t>(x)

#define instantiate_simd_funcs(itype, otype, ctype, to_c, to_o)             \
  METAL_FUNC otype simd_shuffle_down(itype data, ushort delta) {            \
    return to_o(__metal_simd_shuffle_down(to_c(data), delta));              \
  }                                                                         \
  METAL_FUNC otype simd_shuffle_and_fill_up(                                \
      itype data, itype filling_data, ushort delta) {                       \
    return to_o(__metal_simd_shuffle_and_fill_up(                           \
        to_c(data), to_c(filling_data), delta,                              \
        __metal_get_simdgroup_size(ushort())));                             \
  }                                                                         \
  METAL_FUNC otype simd_sum(itype data) {                                   \
    return static_cast<otype>(__metal_simd_sum(static_cast<float>(data)));  \
  }                                                                         \
  METAL_FUNC otype simd_max(itype data) {                                   \
    return static_cast<otype>(__metal_simd_max(static_cast<float>(data)));  \
  }

namespace metal {
instantiate_simd_funcs(bfloat16_t, bfloat16_t, uint16_t, bfloat16_to_uint16, uint16_to_bfloat16);
} // namespace metal

// Per lane: 12 results of the bfloat overloads, as float.
kernel void bf16_math(
    device const bfloat16_t* x [[buffer(0)]],
    device float* out [[buffer(1)]],
    uint i [[thread_position_in_grid]]) {
  bfloat16_t a = x[i];
  bfloat16_t b = x[(i + 1) % 32];
  int e = 0;
  bfloat16_t m = frexp(a, e);
  device float* o = out + 12 * i;
  o[0] = abs(a);
  o[1] = fast::exp(a);
  o[2] = precise::atan2(a, b);
  o[3] = fma(a, b, a);
  o[4] = max3(a, b, bfloat16_t(0.5f));
  o[5] = median3(a, b, bfloat16_t(0.5f));
  o[6] = float(m) + float(e) * 100.0f;
  o[7] = ldexp(a, 3);
  o[8] = nextafter(a, b);
  o[9] = simd_shuffle_down(a, 1);
  o[10] = simd_sum(a);
  o[11] = simd_shuffle_and_fill_up(a, bfloat16_t(-1.0f), 2) + simd_max(a);
}
