package main

// The emulator backend is linked into the CLIs (not into the root package),
// so --backend metal-emu works everywhere clang 16+ is installed.
import _ "github.com/laya-metal/laya/backend/metalemu" // registers "metal-emu"
