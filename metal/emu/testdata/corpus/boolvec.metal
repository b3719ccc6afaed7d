// Bool vectors have MSL's layout, one byte per lane: MLX's reduction ops
// build atomic AND/OR masks by punning a bool4 with a uint, and kernels
// read and write buffers of boolN.
#include <metal_stdlib>

using namespace metal;

union bool4_or_uint {
  bool4 b;
  unsigned int i;
};

static_assert(sizeof(bool2) == 2 && sizeof(bool3) == 4 && sizeof(bool4) == 4, "bool vector sizes");

// mask[g] gets lane (tid % 4) of word (tid / 4) cleared when x[tid] < 0:
// an atomic AND with a bool4 of three trues and one false.
kernel void bool_mask_and(
    device const float* x [[buffer(0)]],
    device atomic_uint* mask [[buffer(1)]],
    uint tid [[thread_position_in_grid]]) {
  if (x[tid] < 0) {
    bool4_or_uint update;
    update.b = {true, true, true, true};
    update.b[tid % 4] = false;
    atomic_fetch_and_explicit(&mask[tid / 4], update.i, memory_order_relaxed);
  }
}

// Lane-wise relations of float4 rows into a bool4 buffer, and their
// all/any/select.
kernel void bool_relations(
    device const float4* a [[buffer(0)]],
    device const float4* b [[buffer(1)]],
    device bool4* lt [[buffer(2)]],
    device float4* picked [[buffer(3)]],
    device uint* flags [[buffer(4)]],
    uint i [[thread_position_in_grid]]) {
  bool4 m = a[i] < b[i];
  bool4 n = isnan(a[i]);
  lt[i] = m || n;
  picked[i] = select(a[i], b[i], m);
  bool2 lo = bool2(m.x, m.y);
  bool3 e = bool3(a[i].xyz == b[i].xyz);
  flags[i] = uint(all(m)) | uint(any(m)) << 1 | uint(any(!m)) << 2 | uint(all(lo)) << 3 | uint(any(e)) << 4 |
             uint(m.w) << 5 | uint(bool4(true).z) << 6;
}
