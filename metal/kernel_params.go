package metal

import "unsafe"

// The constant parameter structs of the kernels, mirrored field by field
// from kernels/*.metal (llama.cpp's ggml-metal-impl.h shares one header
// between host and kernels; MSL cannot be included from Go, so each struct
// is written twice and kernel_params_test.go compiles a probe kernel in the
// emulator that reports sizeof and offsetof of every field of the real
// .metal struct, and compares them with unsafe.Sizeof/Offsetof here).
//
// Rules for a mirrored struct: same name as the MSL struct, every MSL field
// present in the same order, each Go field tagged `msl:"name"` with the MSL
// field's name, and only 32-bit fields (uint ↔ uint32, float ↔ float32,
// int ↔ int32), so the layout is the same on every platform without
// padding rules. paramStructs lists them all for the test.

// GemmParams mirrors struct GemmParams in kernels/gemm.metal.
type GemmParams struct {
	M uint32 `msl:"m"`
	N uint32 `msl:"n"`
	K uint32 `msl:"k"`
	// Eps is the LayerNorm prologue's epsilon (gemm_ln).
	Eps float32 `msl:"eps"`
	// KSlice is the K values per slice of a split-K GEMM (gemm_split), a
	// multiple of GemmTileK.
	KSlice uint32 `msl:"k_slice"`
}

// GemmReduceParams mirrors struct GemmReduceParams in kernels/gemm.metal.
type GemmReduceParams struct {
	M      uint32 `msl:"m"`
	N      uint32 `msl:"n"`
	Slices uint32 `msl:"slices"`
}

// GegluParams mirrors struct GegluParams in kernels/gemm.metal.
type GegluParams struct {
	Rows  uint32 `msl:"rows"`
	Inner uint32 `msl:"inner"`
}

// LayerNormParams mirrors struct LayerNormParams in kernels/layernorm.metal.
type LayerNormParams struct {
	Cols uint32  `msl:"cols"`
	Eps  float32 `msl:"eps"`
}

// AttentionParams mirrors struct AttentionParams in kernels/attention.metal.
type AttentionParams struct {
	SeqLen  uint32  `msl:"seq_len"`
	Heads   uint32  `msl:"heads"`
	HeadDim uint32  `msl:"head_dim"`
	Scale   float32 `msl:"scale"`
	Radius  uint32  `msl:"radius"`
}

// RopeParams mirrors struct RopeParams in kernels/rope.metal.
type RopeParams struct {
	Rows    uint32 `msl:"rows"`
	SeqLen  uint32 `msl:"seq_len"`
	Heads2  uint32 `msl:"heads2"`
	HeadDim uint32 `msl:"head_dim"`
	Stride  uint32 `msl:"stride"`
}

// paramStruct names one mirrored struct and the .metal file declaring it.
type paramStruct struct {
	file string
	zero any // the Go struct's zero value
}

// paramStructs is every mirrored struct, for kernel_params_test.go.
var paramStructs = []paramStruct{
	{"gemm.metal", GemmParams{}},
	{"gemm.metal", GemmReduceParams{}},
	{"gemm.metal", GegluParams{}},
	{"layernorm.metal", LayerNormParams{}},
	{"attention.metal", AttentionParams{}},
	{"rope.metal", RopeParams{}},
}

// kernelParams is the set of mirrored structs: the type constraint of
// paramBytes and paramsOf, so a new struct is added here and in
// paramStructs.
type kernelParams interface {
	GemmParams | GemmReduceParams | GegluParams | LayerNormParams | AttentionParams | RopeParams
}

// paramBytes is the byte image of a parameter struct, for Arg.Bytes (a
// setBytes argument: the bytes are copied at encode time). Every mirrored
// struct holds only 32-bit fields, and the hosts (arm64, amd64) are little
// endian like the GPU, so the in-memory image is the kernel's.
func paramBytes[T kernelParams](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}
