// A complex type written the way MLX's complex.h is: conversions declared
// once per address space of *this (thread, threadgroup, device, constant),
// which C++ does not have and the emulator folds into one.
#pragma once

#include <metal_stdlib>

using namespace metal;

struct cplx_t;

// Which types convert to and from cplx_t (not cplx_t itself).
template <typename T>
static constexpr constant bool to_cplx_ok = is_convertible_v<T, float> && !is_same_v<T, cplx_t>;

template <typename T>
static constexpr constant bool from_cplx_ok =
    (is_convertible_v<float, T> || is_convertible_v<bfloat, T>) && !is_same_v<T, cplx_t>;

struct cplx_t {
  float real;
  float imag;

  constexpr cplx_t(float re, float im) : real(re), imag(im) {}

  template <
      typename T,
      typename = typename enable_if<to_cplx_ok<T>>::type>
  constexpr cplx_t(T x) thread : real(x), imag(0) {}

  template <
      typename T,
      typename = typename enable_if<to_cplx_ok<T>>::type>
  constexpr cplx_t(T x) threadgroup : real(x), imag(0) {}

  template <
      typename T,
      typename = typename enable_if<to_cplx_ok<T>>::type>
  constexpr cplx_t(T x) device : real(x), imag(0) {}

  template <
      typename T,
      typename = typename enable_if<to_cplx_ok<T>>::type>
  constexpr cplx_t(T x) constant : real(x), imag(0) {}

  template <
      typename T,
      typename = typename enable_if<from_cplx_ok<T>>::type>
  constexpr operator T() const thread {
    return static_cast<T>(real);
  }

  template <
      typename T,
      typename = typename enable_if<from_cplx_ok<T>>::type>
  constexpr operator T() const device {
    return static_cast<T>(real);
  }

  template <
      typename T,
      typename = typename enable_if<from_cplx_ok<T>>::type>
  constexpr operator T() const constant {
    return static_cast<T>(real);
  }
};

// A second type with a member of the same signature: only variants within
// one class are folded.
struct polar_t {
  float r;
  template <
      typename T,
      typename = typename enable_if<from_cplx_ok<T>>::type>
  constexpr operator T() const thread {
    return static_cast<T>(r);
  }
};

constexpr cplx_t operator*(cplx_t a, cplx_t b) {
  return {a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real};
}

constexpr cplx_t operator+(cplx_t a, cplx_t b) {
  return {a.real + b.real, a.imag + b.imag};
}
