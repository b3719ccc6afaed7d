package weights

import "errors"

// Sentinel errors; every error returned by this package that stems from one
// of these conditions wraps it, so callers can test with errors.Is. Every
// error this package returns starts with "weights: " (the sentinels are
// wrapped, never returned bare, so they carry no prefix of their own).
var (
	// ErrInvalidSafetensors: the file is not a well-formed safetensors file
	// (bad header length, bad JSON, bad offsets, size mismatch, ...).
	ErrInvalidSafetensors = errors.New("invalid safetensors file")
	// ErrUnsupportedDType: a tensor's dtype is not F32, F16 or BF16.
	ErrUnsupportedDType = errors.New("unsupported dtype")
	// ErrInvalidCheckpoint: the checkpoint directory breaks a layout, config
	// or tensor rule. LoadCheckpoint joins every problem it found.
	ErrInvalidCheckpoint = errors.New("invalid checkpoint")
	// ErrClosed: the safetensors mapping was already released.
	ErrClosed = errors.New("safetensors file already closed")
)
