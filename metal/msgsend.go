//go:build darwin || linux

package metal

import "unsafe"

// objcID and objcSEL are Objective-C object and selector handles (purego's
// objc.ID and objc.SEL have the same representation). They are declared
// here, outside the darwin-only files, so that the trampoline signatures
// below are registered with purego by a Linux test too: purego checks a
// signature (argument kinds, struct layout) when it is registered, and a
// rejected one would otherwise surface only on a Mac.
type (
	objcID  uintptr
	objcSEL uintptr
)

// objc_msgSend trampolines, named by the C signature after (self, _cmd),
// registered once by registerMsgSend (objc_darwin.go). Used on the cold
// paths (open, compile, pipelines, buffers, commit/wait); Dispatch and
// Barrier use purego.SyscallN instead (command_darwin.go).
var (
	msgID              func(self objcID, cmd objcSEL) objcID
	msgVoid            func(self objcID, cmd objcSEL)
	msgUint            func(self objcID, cmd objcSEL) uint64
	msgFloat64         func(self objcID, cmd objcSEL) float64
	msgString          func(self objcID, cmd objcSEL) string // const char * result, copied into Go
	msgPointer         func(self objcID, cmd objcSEL) unsafe.Pointer
	msgBoolSEL         func(self objcID, cmd objcSEL, sel objcSEL) bool // BOOL is C bool on arm64
	msgBool            func(self objcID, cmd objcSEL) bool
	msgBoolInt         func(self objcID, cmd objcSEL, a int64) bool // supportsFamily:(NSInteger)
	msgIDUint          func(self objcID, cmd objcSEL, a uint64) objcID
	msgVoidUint        func(self objcID, cmd objcSEL, a uint64)
	msgVoidBool        func(self objcID, cmd objcSEL, a bool)
	msgIDUintUint      func(self objcID, cmd objcSEL, a, b uint64) objcID
	msgIDPtrUintUint   func(self objcID, cmd objcSEL, p unsafe.Pointer, a, b uint64) objcID
	msgIDPtrUintUintID func(self objcID, cmd objcSEL, p unsafe.Pointer, a, b uint64, block objcID) objcID
	msgVoidPtrUintUint func(self objcID, cmd objcSEL, p unsafe.Pointer, a, b uint64)
	msgIDIDIDErr       func(self objcID, cmd objcSEL, a, b objcID, err *objcID) objcID
	msgIDIDErr         func(self objcID, cmd objcSEL, a objcID, err *objcID) objcID
	msgVoidSizeSize    func(self objcID, cmd objcSEL, a, b mtlSize)
)

// msgSendTrampolines lists every trampoline for registration.
func msgSendTrampolines() []any {
	return []any{
		&msgID, &msgVoid, &msgUint, &msgFloat64, &msgString, &msgPointer, &msgBoolSEL, &msgBool, &msgBoolInt,
		&msgIDUint, &msgVoidUint, &msgVoidBool, &msgIDUintUint, &msgIDPtrUintUint,
		&msgIDPtrUintUintID, &msgVoidPtrUintUint, &msgIDIDIDErr, &msgIDIDErr, &msgVoidSizeSize,
	}
}
