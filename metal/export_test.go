package metal

// Exports for the external test package (see helpers_emu_test.go): the float64
// references and dispatch variants of kernel_*.go the kernel tests call.
var (
	ExportActFeaturesRef   = actFeaturesRef
	ExportActivateRef      = activateRef
	ExportGegluRef         = gegluRef
	ExportGeluRef          = geluRef
	ExportAttentionRef     = attentionRef
	ExportVectorAddRef     = vectorAddRef
	ExportGatherRowsRef    = gatherRowsRef
	ExportGemmRef          = gemmRef
	ExportLayerNormRef     = layerNormRef
	ExportLayerNormThreads = layerNormThreads
	ExportParamBytes       = paramBytes
	ExportRopeRef          = ropeRef
	ExportSoftmaxRef       = softmaxRef
	ExportSoftmaxThreads   = softmaxThreads
	ExportCeilDiv          = ceilDiv
	ExportU32s             = u32s
)
