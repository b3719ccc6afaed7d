package metalbackend

import "github.com/laya-metal/laya/backend"

// "metal" is registered on darwin only: elsewhere there is no GPU to open.
func init() {
	backend.Register("metal", func() (backend.Backend, error) { return OpenSystem() })
}
