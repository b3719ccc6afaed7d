// Package weights reads Laya checkpoints: safetensors files over a read-only
// mmap (zero-copy tensor views), the checkpoint directory layout and its
// configs (read with Python's json semantics through package pyjson, as
// upstream reads them), and both upstream PyTorch and laya-mlx parameter
// names mapped to one canonical (upstream) set. Package weights/synthetic
// writes deterministic synthetic checkpoints of the real shapes for tests
// and benchmarks.
package weights
