//go:build darwin || linux

package metal

import (
	"runtime"
	"testing"

	"github.com/ebitengine/purego"
)

// TestMsgSendSignaturesRegister registers every objc_msgSend trampoline
// with purego, which validates each signature (kinds, struct layout) at
// registration. On Linux the target is libc's labs, never called: only the
// registration is under test. On darwin it is objc_msgSend itself.
func TestMsgSendSignaturesRegister(t *testing.T) {
	lib, sym := "libc.so.6", "labs"
	if runtime.GOOS == "darwin" {
		lib, sym = libobjcPathForTest, "objc_msgSend"
	}
	handle, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Skipf("cannot dlopen %s here: %v", lib, err)
	}
	addr, err := purego.Dlsym(handle, sym)
	if err != nil {
		t.Fatal(err)
	}
	for _, fptr := range msgSendTrampolines() {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("purego rejects trampoline %T: %v", fptr, r)
				}
			}()
			purego.RegisterFunc(fptr, addr)
		}()
	}
	if runtime.GOOS != "darwin" {
		// Leave no Linux-bound trampolines behind for later tests.
		for _, fptr := range msgSendTrampolines() {
			clearFunc(fptr)
		}
	}
}
