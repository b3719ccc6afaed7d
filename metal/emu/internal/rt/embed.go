// Package emurt holds the MSL emulator's C++ sources: the shim header that
// maps MSL onto clang C++ (msl_shim.h and the <metal_*> stand-ins), the fiber
// runtime (mslemu_runtime.cpp) and the ASan runner (mslemu_runner.cpp). The
// emu package writes them into its cache directory and compiles them with
// clang; nothing here is built by the Go toolchain.
package rt

import "embed"

// Files holds the sources under src/.
//
//go:embed src
var Files embed.FS

// Runtime and Runner are the translation units besides the kernels.
const (
	Runtime = "mslemu_runtime.cpp"
	Runner  = "mslemu_runner.cpp"
)
