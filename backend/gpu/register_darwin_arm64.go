package gpu

import "github.com/laya-metal/laya/backend"

// "metal" is registered on darwin/arm64 only (the file name's build
// constraint): Apple Silicon is the only place its kernels run. Intel Macs
// have no Apple7 GPU family; OpenSystem explains that when called directly.
func init() {
	backend.Register("metal", func() (backend.Backend, error) { return WithSelfTestTimeout(OpenSystem) }, backend.Accelerator)
}
