// Package gpu is the model's operations (backend.Backend, backend.Stream)
// on any metal.Device. Four packages share the GPU path:
//
//   - kernels (github.com/laya-metal/laya/kernels): the .metal sources;
//   - metal: the device layer, which compiles and dispatches those kernels
//     on Apple's Metal (darwin/arm64) or on the MSL emulator of metal/emu
//     (any platform with clang), one kernel family per kernel_<family>.go;
//   - gpu (this package): the ops of package backend's contract on a
//     metal.Device, with fusion, barriers, a buffer arena and chunked
//     commits; it knows nothing of the model that calls it;
//   - internal/gpuplan: the work plan of one request (laya-bench --plan),
//     the library's own forward pass recorded on a PlanDevice and priced.
//
// The same Go code drives an Apple GPU (registered here as "metal",
// darwin/arm64 only) and the emulator (registered as "metal-emu" by package
// backend/metalemu), which is how go test holds the GPU path to the CPU
// reference on Linux.
//
// Every registered backend on this package ("metal", "metal-emu",
// "metal-cuda") opens through Open, which runs the self-test first
// (metal.SelfTest: a canary of every kernel family against float64
// references) and refuses the device with ErrSelfTest, naming the kernel,
// shape and worst element, if any canary is off; New and NewOwning, for
// devices the caller vouches for (a PlanDevice, test wrappers), do not.
// Prebuild builds ahead the pipelines a plan of the model's forward passes
// will dispatch (laya.Load does on the GPU). A command buffer that fails
// names the dispatches it held (operation, ordinal, kernel; oplabels.go),
// and on a device that takes them each dispatch is a debug group of that
// name (metal.DebugLabeler).
//
// A Stream records operations into command buffers of one concurrent
// encoder each; a barrier is encoded only where a dispatch reads or
// overwrites a buffer that an earlier dispatch since the last barrier
// wrote or read, by the access each kernel's binding declares
// (metal.Arg.Access; hazards, in stream.go). The first command buffer is
// committed after 16 dispatches and the next every 48, so the GPU starts
// while Go is still encoding; Stream.Read blocks once, on the last one. Stream tensors come from an
// arena of buffers kept by size class across streams (arena.go): once a
// request of a shape has run, the same request allocates no device buffer.
// Small index arrays (gather rows, attention lengths) travel inline with
// the dispatch (setBytes).
//
// Operations are fused by deferred recording (fuse.go): the stream holds
// the last operation back so the next can join its dispatch — a LayerNorm
// becomes the next GEMM's prologue, a residual Add and a GeGLU its
// epilogue, a RoPE part of the attention that follows. What a fused
// dispatch would not store is only skipped when the model has declared it
// dead with backend.Discard. An encoder layer is 5 dispatches, and so is a
// decision-head layer. SetSplitK turns on deterministic split-K for GEMMs
// whose tiles would leave the GPU idle (two dispatches each: off by
// default). PlanDevice is a metal.Device that runs nothing and records what
// is dispatched, for work plans and host-encoding benchmarks.
//
// Host encoding allocates nothing per dispatch: argument lists and inline
// bytes come from a pool (metal.CommandBuffer.Dispatch keeps neither),
// tensors from one slab per stream, and a closed stream's lists go to the
// next; a warm request's encoding allocates a fixed handful of times
// (internal/gpuplan's TestEncodeRequestAllocs).
//
// Weights of an mmap'd checkpoint are read in place (UploadMapped, used by
// backend.Loader): the page-aligned file mapping is wrapped once in a
// no-copy buffer, or in a few if it exceeds the device's buffer limit, and
// float32 tensors and fp16 matrices are bound at their file offsets. The
// GEMM (weight, bias), the gather (embedding table) and LayerNorm (weight,
// bias) bind such an offset; another kernel that reads a mapped weight
// gets a copy on first use. The mapping must stay open until the backend
// is closed (laya.Agent.Close closes the network before the checkpoint).
// fp16 vectors, bf16 and weights given to Upload are copied: float32 as
// is, fp16 matrices as halves (the GEMM and the embedding gather widen
// them as they read), bf16 and fp16 vectors widened to float32 once.
//
// Linear is one GEMM (GEMV for up to 8 rows) whose store adds the bias and
// applies GELU or ReLU, and the fused work above (metal.GemmOp).
// The backend reports the GPU time of its command buffers
// (backend.Timer) and, on request, per operation (backend.Profiler).
//
// Import it for its side effect to make "metal" available to backend.Open
// on darwin/arm64 (for the emulator, import backend/metalemu):
//
//	import _ "github.com/laya-metal/laya/backend/gpu"
package gpu
