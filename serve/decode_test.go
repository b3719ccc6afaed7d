package serve

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// Each decision route decodes its body once: the checks and the model read the same
// decoded value. The decoder below answers with a question id the body does not
// hold, so an answer built from a second decoding of the text names the id as sent.
func TestBodyDecodedOnce(t *testing.T) {
	ts := startServer(t, realModel(t), nil)
	var calls atomic.Int32
	orig := decodeJSON
	decodeJSON = func(raw []byte) (pyjson.Value, error) {
		calls.Add(1)
		return orig(bytes.ReplaceAll(raw, []byte(`"as_sent"`), []byte(`"as_decoded"`)))
	}
	t.Cleanup(func() { decodeJSON = orig })
	qs := `{"as_sent": {"type": "noul", "instructions": "Does the customer ask for money back?"}}`
	state := `"I was billed twice, please refund me"`
	for _, tc := range []struct{ path, body string }{
		{"/v1/predict", `{"state": ` + state + `, "questions": ` + qs + `}`},
		{"/v1/systemone", `{"state": ` + state + `, "questions": ` + qs + `}`},
		{"/v1/systemone/batch", `{"states": [` + state + `, ` + state + `], "questions": ` + qs + `}`},
	} {
		calls.Store(0)
		r := post(t, ts.url+tc.path, tc.body)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", tc.path, r.status, r.body)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("%s decoded its body %d times, want once", tc.path, n)
		}
		if strings.Contains(r.body, "as_sent") || !strings.Contains(r.body, "as_decoded") {
			t.Errorf("%s answered from another decoding of the body than its checks read: %s", tc.path, r.body)
		}
	}
}
