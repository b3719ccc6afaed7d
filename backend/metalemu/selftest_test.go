package metalemu_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/backend/metalemu"
	"github.com/laya-metal/laya/kernels"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// Opening the backend runs the self-test, through gpu.Open as "metal" and
// "metal-cuda" do, and reports it.
func TestOpenRunsSelfTest(t *testing.T) {
	be, err := metalemu.Open(emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	rep := be.SelfTest()
	if len(rep.Results) < 20 {
		t.Fatalf("self-test report has %d canaries: %+v", len(rep.Results), rep)
	}
	for _, r := range rep.Results {
		if !(r.Worst <= 1) {
			t.Errorf("%s passed Open over tolerance", r)
		}
	}
	t.Logf("self-test on %s, measured on the emulator (CPU threads of this host, not a GPU): %v", rep.Device, rep.Elapsed)
}

// A kernel broken on purpose is refused at open, named: flash attention's
// sliding window loses its outermost keys (|i−j| = radius), an off-by-one
// that only the sliding canaries see.
func TestOpenRefusesBrokenKernel(t *testing.T) {
	var srcs []metal.KernelSource
	planted := false
	err := fs.WalkDir(kernels.FS(), ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(kernels.FS(), name)
		text := string(b)
		if name == "attention.metal" {
			broken := strings.Replace(text, "(i > j ? i - j : j - i) <= p.radius", "(i > j ? i - j : j - i) < p.radius", 1)
			planted = broken != text
			text = broken
		}
		srcs = append(srcs, metal.KernelSource{Name: "kernels/" + name, Text: text})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !planted {
		t.Fatal("kernels/attention.metal no longer has the sliding-window test the planted bug edits")
	}
	be, err := metalemu.Open(emu.Options{Sources: srcs})
	if err == nil {
		be.Close()
		t.Fatal("a broken flash attention kernel passed the self-test")
	}
	if !errors.Is(err, gpu.ErrSelfTest) || !strings.Contains(err.Error(), "attention_flash_f32 (sliding") ||
		!strings.Contains(err.Error(), "head_dim=") || !strings.Contains(err.Error(), "element ") {
		t.Fatalf("err = %v, want ErrSelfTest naming attention_flash_f32, its shape and the worst element", err)
	}
	t.Log(err)
}
