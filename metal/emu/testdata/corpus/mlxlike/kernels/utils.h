// Helpers included with a path from the repository root, as MLX's headers
// include each other ("mlx/backend/metal/kernels/bf16.h" built with -I at
// the root): the emulator finds the root among the including file's
// ancestors.
#pragma once

#include <metal_math>
#include "mlxlike/kernels/complex.h"

typedef bfloat bfloat16_t;

inline size_t elem_to_loc_2(uint2 elem, constant const size_t strides[2]) {
  return elem.x * strides[1] + elem.y * strides[0];
}
