// Element-wise kernels in the style of MLX's binary.metal: operator structs
// with in-class explicit specializations and enable_if overloads, an
// operator returning metal::array, array parameters
// ("constant const size_t a_strides[2]"), instantiation that spells out
// the whole signature through nested macros with stringized names, and a
// complex type with address-space-qualified members.
#include <metal_integer>
#include <metal_math>

#include "mlxlike/kernels/utils.h"
#include "mlxlike/kernels/complex.h"

struct FloorDivide {
  template <typename T>
  T operator()(T x, T y) {
    return x / y;
  }
  template <>
  float operator()(float x, float y) {
    return trunc(x / y);
  }
  template <>
  half operator()(half x, half y) {
    return trunc(x / y);
  }
};

struct Remainder {
  template <typename T>
  metal::enable_if_t<metal::is_integral_v<T> & !metal::is_signed_v<T>, T>
  operator()(T x, T y) {
    return x % y;
  }
  template <typename T>
  metal::enable_if_t<metal::is_integral_v<T> & metal::is_signed_v<T>, T>
  operator()(T x, T y) {
    auto r = x % y;
    if (r != 0 && (r < 0 != y < 0)) {
      r += y;
    }
    return r;
  }
  template <typename T>
  metal::enable_if_t<!metal::is_integral_v<T>, T> operator()(T x, T y) {
    T r = fmod(x, y);
    if (r != 0 && (r < 0 != y < 0)) {
      r += y;
    }
    return r;
  }
};

struct DivMod {
  template <typename T>
  metal::array<T, 2> operator()(T x, T y) {
    return {FloorDivide{}(x, y), Remainder{}(x, y)};
  };
};

struct Multiply {
  template <typename T>
  T operator()(T x, T y) {
    return x * y;
  }
};

template <typename T, typename U, typename Op>
[[kernel]] void binary_op_vv(
    device const T* a,
    device const T* b,
    device U* c,
    uint index [[thread_position_in_grid]]) {
  c[index] = Op()(a[index], b[index]);
}

template <typename T, typename U, typename Op>
[[kernel]] void binary_op_g_nd2(
    device const T* a,
    device const T* b,
    device U* c,
    constant const size_t a_strides[2],
    constant const size_t b_strides[2],
    uint2 index [[thread_position_in_grid]],
    uint2 grid_dim [[threads_per_grid]]) {
  auto a_idx = elem_to_loc_2(index, a_strides);
  auto b_idx = elem_to_loc_2(index, b_strides);
  size_t out_idx = index.x + (size_t)grid_dim.x * index.y;
  c[out_idx] = Op()(a[a_idx], b[b_idx]);
}

template <typename T, typename U, typename Op>
[[kernel]] void binary_two_vv(
    device const T* a,
    device const T* b,
    device U* c,
    device U* d,
    uint index [[thread_position_in_grid]]) {
  auto out = Op()(a[index], b[index]);
  c[index] = out[0];
  d[index] = out[1];
}

// out = a * a + b, then its real part again through the conversion operator.
[[kernel]] void complex_fma(
    device const cplx_t* a [[buffer(0)]],
    device const cplx_t* b [[buffer(1)]],
    device cplx_t* out [[buffer(2)]],
    device float* re [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  cplx_t sq = a[i] * a[i];
  cplx_t two = 2.0f; // converting constructor
  out[i] = sq + b[i] * two * cplx_t(0.5f, 0.0f);
  float r = out[i];
  polar_t p = {r};
  re[i] = float(p);
}

#define instantiate_binary(name, itype, otype, op, bopt) \
  template [[host_name(name)]]                           \
  [[kernel]] void binary_op_##bopt<itype, otype, op>(    \
      device const itype* a,                             \
      device const itype* b,                             \
      device otype* c,                                   \
      uint index [[thread_position_in_grid]]);

#define instantiate_binary_g_nd(name, itype, otype, op) \
  template [[host_name(name "_2")]]                     \
  [[kernel]] void binary_op_g_nd2<itype, otype, op>(    \
      device const itype* a,                            \
      device const itype* b,                            \
      device otype* c,                                  \
      constant const size_t a_strides[2],               \
      constant const size_t b_strides[2],               \
      uint2 index [[thread_position_in_grid]],          \
      uint2 grid_dim [[threads_per_grid]]);

#define instantiate_binary_all(name, tname, itype, otype, op) \
  instantiate_binary("vv" #name #tname, itype, otype, op, vv) \
  instantiate_binary_g_nd("g" #name #tname, itype, otype, op)

#define instantiate_binary_types(name, op)                     \
  instantiate_binary_all(name, int32, int32_t, int32_t, op)    \
  instantiate_binary_all(name, uint32, uint32_t, uint32_t, op) \
  instantiate_binary_all(name, float32, float, float, op)      \
  instantiate_binary_all(name, float16, half, half, op)

instantiate_binary_types(rem, Remainder)
instantiate_binary_types(mul, Multiply)

template [[host_name("vvdivmodint32")]] [[kernel]] decltype(binary_two_vv<int, int, DivMod>) binary_two_vv<int, int, DivMod>;
template [[host_name("vvdivmodfloat32")]] [[kernel]] decltype(binary_two_vv<float, float, DivMod>) binary_two_vv<float, float, DivMod>;
