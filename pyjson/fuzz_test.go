package pyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzParse holds Parse to two independent references on arbitrary input:
// encoding/json decides what is JSON wherever Python's json.loads and the
// RFC agree (UTF-8 input without the NaN/Infinity extensions, nesting within
// MaxDepth), and Dumps(Parse(x)) must parse back to the same Dumps (a fixed
// point), since json.loads(json.dumps(v)) == v. Errors must be ErrInvalid
// and nothing may panic.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `1`, `-0.0`, `1e400`, `"a\u00e9\ud83d\ude00"`, `[1, 2.50, {"a": [true, false, null]}]`,
		`{"k": 1, "j": 2, "k": 3}`, `[NaN, Infinity, -Infinity]`, `{"a" 1}`, `[1,]`, `01`, `"\ud800"`,
		"\"\x01\"", `{"a": "b"} x`, "\ufeff1", `[[[[[[[[[[]]]]]]]]]]`, `"\u12"`, `1.`, `-`, `tru`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q): %v does not match ErrInvalid", data, err)
			}
		}
		comparable := utf8.Valid(data) && !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) &&
			bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) <= MaxDepth
		if comparable {
			if want := json.Valid(data); want != (err == nil) {
				t.Fatalf("Parse(%q) error %v, but encoding/json.Valid = %v", data, err, want)
			}
		}
		if err != nil {
			return
		}
		out := Dumps(v)
		again, err := Parse([]byte(out))
		if err != nil {
			t.Fatalf("Dumps(Parse(%q)) = %q does not parse: %v", data, out, err)
		}
		if Dumps(again) != out {
			t.Fatalf("not a fixed point: %q → %q → %q", data, out, Dumps(again))
		}
	})
}
