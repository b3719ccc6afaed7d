package metal

// Exports for the external test package (see helpers_emu_test.go): the dispatch
// variants of kernel_*.go the kernel tests call.
var (
	ExportLayerNormThreads = layerNormThreads
	ExportSoftmaxThreads   = softmaxThreads
	ExportCeilDiv          = ceilDiv
	ExportParamStructs     = paramStructs
)

// ExportParamStruct is paramStruct for the layout test.
type ExportParamStruct = paramStruct

// File and Zero expose a paramStruct's fields to the layout test.
func (p paramStruct) File() string { return p.file }
func (p paramStruct) Zero() any    { return p.zero }

// ExportSetSelfTestWant plants f as the self-test's reference hook (a
// broken reference) until the returned function restores it.
func ExportSetSelfTestWant(f func(kernel string, want []float64)) (restore func()) {
	old := selfTestWant
	selfTestWant = f
	return func() { selfTestWant = old }
}
