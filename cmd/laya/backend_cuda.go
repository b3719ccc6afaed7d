//go:build cuda

package main

// The cuda backend (--backend cuda) reaches the NVIDIA driver, NVRTC and
// cuBLAS through purego, which on Linux makes the binary dynamically linked
// (it still needs no cgo and no CUDA at build time). The release laya is a
// static binary, so it has the backend only when built with -tags cuda:
//
//	CGO_ENABLED=0 go build -tags cuda ./cmd/laya
import _ "github.com/laya-metal/laya/backend/cuda"
