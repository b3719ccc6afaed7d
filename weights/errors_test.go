package weights

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorsCarryThePackagePrefix: what leaves the package says where it
// came from, whichever entry point failed.
func TestErrorsCarryThePackagePrefix(t *testing.T) {
	var errs []error
	_, err := ParseDType("Q4")
	errs = append(errs, err)
	_, probs := ParseAgentConfig([]byte(`{"encoder": `))
	errs = append(errs, probs...)
	_, probs = ParseAgentConfig([]byte(`{"head_layers": 0}`))
	errs = append(errs, probs...)
	_, probs = ParseEncoderConfig([]byte(`[]`))
	errs = append(errs, probs...)
	_, err = DeriveHead(EncoderConfig{HiddenSize: 193}, AgentConfig{})
	errs = append(errs, err)
	_, err = OpenSafetensors("testdata/does-not-exist.safetensors")
	errs = append(errs, err)
	_, err = ParseSafetensors([]byte{1, 2, 3})
	errs = append(errs, err)
	_, err = LoadCheckpoint("testdata/does-not-exist")
	errs = append(errs, err)
	err = DecodeFloat32(make([]float32, 1), nil, F32)
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		if !strings.HasPrefix(err.Error(), "weights: ") {
			t.Errorf("case %d: %q lacks the \"weights: \" prefix", i, err)
		}
	}
	if _, err := ParseDType("Q4"); !errors.Is(err, ErrUnsupportedDType) {
		t.Errorf("ParseDType: %v, want ErrUnsupportedDType", err)
	}
}
