// Package cuda is a metal.Device on an NVIDIA GPU: the repository's .metal
// kernels, translated to CUDA C++ by the same MSL front end the emulator
// uses (package metal/internal/mslpp, target CUDA) and compiled at run time
// by NVRTC against msl_cuda.h, run through the CUDA driver API. It is
// reached through purego, without cgo: the driver (libcuda.so.1) and NVRTC
// are loaded when a device is opened.
//
// What it is for: the whole model at full size through the Metal backend's
// own host code (package backend/gpu) and its own kernels, checked against
// the cpu backend in seconds, plus NVIDIA's compute-sanitizer (races,
// out-of-bounds accesses, barrier misuse) over the .metal files' lines. Its
// timings are NVIDIA timings of Apple-tuned kernels, not Apple estimates.
//
// How Metal maps onto CUDA:
//   - Buffers are managed memory, so Buffer.Bytes is a host view as on
//     Apple's unified memory. Allocations are refused beyond the memory the
//     GPU had free when the device was opened (less a margin): managed
//     memory over the card's free memory can hang the GPU.
//     NewBufferNoCopy fails with metal.ErrNoCopy unless Options.MapHost is
//     set, so weights are copied into device memory (backend/gpu reports
//     the copy); with MapHost it registers host memory (an mmap'd
//     checkpoint) with cuMemHostRegister, read-only, so kernels read it in
//     place over the bus, and fails where the driver refuses.
//   - Pipelines are translated kernels compiled by NVRTC with function
//     constants as compile-time values (dead branches compile away as on
//     Apple), cached by source and constant values. Apple's limits hold:
//     at most 1024 threads and 32 KiB of threadgroup memory.
//   - A command buffer is a set of streams. Dispatches between two barriers
//     are spread over several streams (and optionally shuffled), so that
//     they may run concurrently as in Metal's concurrent encoder: a missing
//     Barrier is a race on the GPU, not hidden by a serial stream. Barriers
//     join the streams with events. Command buffers run one after another
//     in commit order, as on one Metal queue.
//   - setBytes data is copied at encode time into pinned host memory the
//     kernels read.
//
// Every CUDA call of a device runs on one goroutine locked to its OS
// thread: a CUDA context is current per thread.
package cuda
