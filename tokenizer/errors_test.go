package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorsCarryThePackagePrefix: what leaves the package says where it
// came from, whichever entry point failed, and keeps its sentinel.
func TestErrorsCarryThePackagePrefix(t *testing.T) {
	_, err1 := Load("testdata/does-not-exist.json")
	_, err2 := FromJSON([]byte(`{"model": `))
	_, err3 := FromJSON([]byte(`{"version": "2.0", "model": {"type": "BPE"}}`))
	_, _, err4 := LoadDir("testdata/does-not-exist")
	_, err5 := FromJSON([]byte(`{"model": {"type": "WordLevel", "vocab": {}}}`))
	for i, tc := range []struct {
		err  error
		want error
	}{{err1, nil}, {err2, ErrInvalid}, {err3, ErrUnsupported}, {err4, nil}, {err5, ErrUnsupported}} {
		if tc.err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		if !strings.HasPrefix(tc.err.Error(), "tokenizer: ") {
			t.Errorf("case %d: %q lacks the \"tokenizer: \" prefix", i, tc.err)
		}
		if tc.want != nil && !errors.Is(tc.err, tc.want) {
			t.Errorf("case %d: %v does not wrap %v", i, tc.err, tc.want)
		}
	}
}
