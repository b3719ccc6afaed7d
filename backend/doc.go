// Package backend is the contract between the Laya model code (packages
// encoder and heads) and the machines that run it: a pure-Go CPU reference
// (package backend/cpu), the Metal GPU backend and the cuda backend.
//
// The contract is shaped for a GPU. Tensors are opaque handles owned by the
// backend; weights are uploaded once; a forward pass records operations on a
// Stream, which may run them asynchronously, and Stream.Read is the only
// point where the host waits for results. Every operation computes in
// float32 with float32 (or wider) accumulation, except where a backend
// documents a reduced precision (the cuda backend's 16-bit GEMM operands).
//
// Errors are sticky, like a command encoder's: an operation with a bad shape
// records the first error and turns the rest of the stream into no-ops;
// Stream.Read and Stream.Err report it. This keeps model code reading like
// the model diagram instead of a wall of error checks.
//
// Beyond Backend and Stream, a backend may implement optional interfaces,
// which callers find by type assertion: on a Backend, MappedUploader and
// MappingForgetter (weights read in place from a checkpoint's mapping),
// Timer (device time), Counter (what it did, by name), Profiler (time per
// operation), Refiner (a faster reduced precision whose near-ties the
// model runs again; RefineGate keeps its account) and Widener (a wider
// precision for the rows whose outputs overflowed the streams' own); on a
// Stream, RowPacker
// (batches without padding), TokenBucketer (token counts bucketed to share
// recorded work), Discarder (a tensor nothing reads any more) and
// Submitter (a point where recorded work may start on the device).
package backend
