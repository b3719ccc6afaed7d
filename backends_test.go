package laya

// The root links only the cpu backend (and metal on Apple Silicon); the
// tests that compare backends run "metal-emu" too, so they import it as any
// program must.
import _ "github.com/laya-metal/laya/backend/metalemu"
