package metal

import "github.com/laya-metal/laya/metal/internal/kernelref"

// The float64 references of the kernels live in package metal/internal/kernelref,
// which the self-test shares; these adapt them to this package's types for
// the kernel tests.

var (
	geluRef        = kernelref.Gelu
	gegluRef       = kernelref.Geglu
	actFeaturesRef = kernelref.ActFeatures
	vectorAddRef   = kernelref.VectorAdd
	gatherRowsRef  = kernelref.GatherRows
	gemmRef        = kernelref.Gemm
	layerNormRef   = kernelref.LayerNorm
	ropeRef        = kernelref.Rope
	softmaxRef     = kernelref.Softmax
)

func activateRef(in []float32, act Activation) []float64 { return kernelref.Activate(in, int(act)) }

func attentionRef(qkv []float32, lengths []int, a AttentionShape) []float64 {
	return kernelref.Attention(qkv, lengths, kernelref.AttentionShape(a))
}
