// A header with an include guard: its kernel is always compiled.
#ifndef COND_GUARDED_H
#define COND_GUARDED_H

kernel void guarded_header_kernel(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = int(i) * 7;
}

#endif // COND_GUARDED_H
