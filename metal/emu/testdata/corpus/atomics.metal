// TEST ONLY: MSL atomics on device and threadgroup memory, run with many
// threadgroups on several OS threads. Expected values: metal/emu_corpus_test.go.
#include <metal_stdlib>
#include <metal_atomic>
using namespace metal;

// bins[v % nbins] counts the values; 7 other counters each see one
// read-modify-write per thread.
kernel void atomic_device_ops(device const uint* values [[buffer(0)]],
                              device atomic_uint* bins [[buffer(1)]],
                              device atomic_int* ints [[buffer(2)]],
                              device atomic_uint* uints [[buffer(3)]],
                              device atomic_float* fsum [[buffer(4)]],
                              constant uint& nbins [[buffer(5)]],
                              uint gid [[thread_position_in_grid]]) {
  uint v = values[gid];
  atomic_fetch_add_explicit(&bins[v % nbins], 1u, memory_order_relaxed);
  atomic_fetch_sub_explicit(&ints[0], int(v), memory_order_relaxed);
  atomic_fetch_min_explicit(&ints[1], int(v) - 500, memory_order_relaxed);
  atomic_fetch_max_explicit(&ints[2], int(v) - 500, memory_order_relaxed);
  atomic_fetch_and_explicit(&uints[0], ~(1u << (v % 32)), memory_order_relaxed);
  atomic_fetch_or_explicit(&uints[1], 1u << (v % 32), memory_order_relaxed);
  atomic_fetch_xor_explicit(&uints[2], v, memory_order_relaxed);
  atomic_fetch_add_explicit(fsum, float(v % 64), memory_order_relaxed);
  // A compare-and-swap loop keeping the maximum, as kernels without
  // atomic_fetch_max on floats do.
  uint seen = atomic_load_explicit(&uints[3], memory_order_relaxed);
  while (seen < v && !atomic_compare_exchange_weak_explicit(&uints[3], &seen, v, memory_order_relaxed,
                                                           memory_order_relaxed)) {
  }
  // Every thread swaps its value in; the values handed out plus the one
  // left behind are all values plus the initial one.
  uint old = atomic_exchange_explicit(&uints[4], v, memory_order_relaxed);
  atomic_fetch_add_explicit(&uints[5], old, memory_order_relaxed);
}

// A threadgroup counter: each thread takes a ticket; the group writes how
// many it handed out and the sum of tickets.
kernel void atomic_threadgroup_tickets(device uint* out [[buffer(0)]],
                                       uint tid [[thread_index_in_threadgroup]],
                                       uint group [[threadgroup_position_in_grid]],
                                       uint ntg [[threads_per_threadgroup]]) {
  threadgroup atomic_uint next;
  threadgroup atomic_int total;
  if (tid == 0) {
    atomic_store_explicit(&next, 0u, memory_order_relaxed);
    atomic_store_explicit(&total, 0, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint ticket = atomic_fetch_add_explicit(&next, 1u, memory_order_relaxed);
  atomic_fetch_add_explicit(&total, int(ticket), memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    out[2 * group] = atomic_load_explicit(&next, memory_order_relaxed);
    out[2 * group + 1] = uint(atomic_load_explicit(&total, memory_order_relaxed));
  }
}
