// Package metalbackend runs the Laya model on the Metal kernels of package
// metal: it implements backend.Backend over a metal.Device, so the same Go
// code drives an Apple GPU (registered as "metal", darwin only) and the MSL
// emulator (registered as "metal-emu", every platform with clang), which is
// how go test holds the GPU path to the CPU reference on Linux.
//
// A Stream records every operation into one command buffer; a barrier is
// encoded only where an operation reads or overwrites a buffer that an
// earlier operation since the last barrier wrote or read (the encoder is
// concurrent). Stream.Read is the only point where the host commits and
// waits. Weights are copied into device buffers at Upload: float32 as is,
// fp16 matrices as halves (the GEMM and the embedding gather widen them as
// they read), and bf16 and fp16 vectors widened to float32 once.
//
// Import it for its side effect to make the two names available to
// backend.Open:
//
//	import _ "github.com/laya-metal/laya/backend/metal"
package metalbackend
