//go:build linux || darwin

package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

// copyingDevice copies every NewBufferWithBytes, as Metal's copying path
// would after a refused newBufferWithBytesNoCopy, and has no
// NewBufferNoCopy.
type copyingDevice struct{ metal.Device }

func (d copyingDevice) NewBufferWithBytes(data []byte) (metal.Buffer, error) {
	b, err := d.Device.NewBuffer(len(data))
	if err != nil {
		return nil, err
	}
	copy(b.Bytes(), data)
	return b, nil
}

// A device that copies instead of wrapping gets the weights right but the
// fallback is reported (MappingReport), never silent.
func TestMappingFallbackIsReported(t *testing.T) {
	st := writeWeights(t, []weights.TensorHeader{
		{Name: "w", DType: weights.F32, Shape: []int{8, 8}},
		{Name: "bf", DType: weights.BF16, Shape: []int{4, 8}},
	})
	mapping := st.Mapping()
	w, _ := st.Tensor("w")
	bf, _ := st.Tensor("bf")

	wrapping := New("metal-emu", emulator(t).Device())
	defer wrapping.Close()
	copying := New("metal-emu-copying", copyingDevice{emulator(t).Device()})
	defer copying.Close()
	for _, be := range []*Backend{wrapping, copying} {
		if _, err := be.UploadMapped("w", weights.F32, 8, 8, mapping, int(w.Offset)); err != nil {
			t.Fatal(err)
		}
		if _, err := be.UploadMapped("bf", weights.BF16, 4, 8, mapping, int(bf.Offset)); err != nil {
			t.Fatal(err)
		}
	}
	if rep := wrapping.Mapping(); rep.InPlaceBytes != 4*64 || rep.CopiedBytes != 2*32 || rep.FallbackBytes != 0 || rep.Fallback != "" {
		t.Errorf("wrapping device: %v; want 256 bytes in place, 64 copied by design, no fallback", rep)
	}
	rep := copying.Mapping()
	if rep.InPlaceBytes != 0 || rep.FallbackBytes != 4*64 || !strings.Contains(rep.Fallback, "w: ") || !strings.Contains(rep.Fallback, "copied the memory") {
		t.Errorf("copying device: %v; want the 256-byte fallback of w reported with its reason", rep)
	}
	if !strings.Contains(rep.String(), "256 copied as a fallback (first: w: ") {
		t.Errorf("report line %q", rep.String())
	}
	if _, err := wrapNoCopy(copyingDevice{emulator(t).Device()}, mapping); !errors.Is(err, metal.ErrNoCopy) {
		t.Errorf("wrapNoCopy on a copying device: err = %v, want ErrNoCopy", err)
	}
}
