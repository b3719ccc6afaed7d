package main

// laya offers --backend metal-emu on every OS (the MSL emulator, for
// checking Metal semantics without a Mac), so it links the emulator
// explicitly: package laya itself does not.
import _ "github.com/laya-metal/laya/backend/metalemu"
