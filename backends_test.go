package laya

// The tests run the model on the emulator backend too; programs that import
// only the root package do not link it.
import _ "github.com/laya-metal/laya/backend/metalemu" // registers "metal-emu"
