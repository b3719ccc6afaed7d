// Package weights reads Laya checkpoints: safetensors files over a read-only
// mmap (zero-copy tensor views), the checkpoint directory layout and its
// configs, and both upstream PyTorch and laya-mlx parameter names mapped to
// one canonical (upstream) set. It also writes deterministic synthetic
// checkpoints of the real shapes for tests and benchmarks.
package weights
