// Package backend is the contract between the Laya model code (packages
// encoder and heads) and the machines that run it: a pure-Go CPU reference
// (package backend/cpu) and the Metal GPU backend.
//
// The contract is shaped for a GPU. Tensors are opaque handles owned by the
// backend; weights are uploaded once; a forward pass records operations on a
// Stream, which may run them asynchronously, and Stream.Read is the only
// point where the host waits for results. Every operation computes in
// float32 with float32 (or wider) accumulation.
//
// Errors are sticky, like a command encoder's: an operation with a bad shape
// records the first error and turns the rest of the stream into no-ops;
// Stream.Read and Stream.Err report it. This keeps model code reading like
// the model diagram instead of a wall of error checks.
package backend
