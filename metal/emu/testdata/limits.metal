#include <metal_stdlib>
using namespace metal;

// Kernels for the dispatch limits both devices enforce through
// metal.CheckDispatch (checked by metal/emu/emu_test.go).

// A pipeline limit below 1024 from the kernel's own attribute.
[[kernel, max_total_threads_per_threadgroup(64)]]
void limited(device float* out [[buffer(0)]],
             uint tid [[thread_position_in_grid]]) {
    out[tid] = float(tid);
}

// 16 KiB of threadgroup memory declared in the body, plus an argument.
kernel void static_tg(device float* out [[buffer(0)]],
                      threadgroup float* extra [[threadgroup(0)]],
                      uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float local[4096];
    local[tid] = float(tid);
    extra[tid] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tid] = local[tid] + extra[tid];
}
