//go:build darwin && arm64

package laya

// On Apple Silicon the Metal backend is linked in, so WithBackend("metal")
// works with nothing more than this package imported: a Mac user should not
// need to know about a blank import to use the GPU the library exists for.
// Elsewhere there is no Metal device to open, and linking the device layer
// (purego, Objective-C bindings) would only grow every binary; see doc.go.
import _ "github.com/laya-metal/laya/backend/gpu" // registers "metal"
