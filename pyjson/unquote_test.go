package pyjson

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestAppendUnquoted(t *testing.T) {
	cases := []struct {
		quoted, want string
		ok           bool
	}{
		{`""`, "", true},
		{`"plain"`, "plain", true},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", true},
		{`"\u00e9\ud83d\ude00"`, "é😀", true},
		{`"\ud83d"`, "\ufffd", true},        // a lone high surrogate
		{`"\ude00x"`, "\ufffdx", true},      // a lone low surrogate
		{`"\ud83d\u0041"`, "\ufffdA", true}, // a high surrogate without its pair
		{"\"a\xffb\"", "a\ufffdb", true},    // not UTF-8, as encoding/json decodes it
		{`"\x"`, "", false},                 // an unknown escape
		{`"\u12"`, "", false},               // a short \u escape
		{`"ab\"`, "", false},                // the backslash escapes the closing quote
		{`"a"b"`, "", false},                // a bare quote inside
		{"\"a\nb\"", "", false},             // a raw control character
		{`abc`, "", false},                  // no quotes
		{`"`, "", false},                    // one quote
	}
	for _, c := range cases {
		got, ok := AppendUnquoted([]byte("prefix:"), []byte(c.quoted))
		if ok != c.ok || ok && string(got) != "prefix:"+c.want {
			t.Errorf("AppendUnquoted(%q) = %q, %v; want %q, %v", c.quoted, got, ok, "prefix:"+c.want, c.ok)
		}
	}
}

// FuzzAppendUnquoted holds the decoder to Parse on every string literal Parse reads,
// and to encoding/json on every literal encoding/json reads.
func FuzzAppendUnquoted(f *testing.F) {
	for _, seed := range []string{`""`, `"a\u00e9"`, `"\ud83d\ude00"`, `"\ud800\ud800"`, `"\\\/"`, "\"\xc3\"", `"\u12"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Parse and encoding/json allow whitespace around a value; the literal is inside.
		got, ok := AppendUnquoted(nil, bytes.Trim(data, " \t\n\r"))
		if v, err := Parse(data); err == nil && v.Kind() == StringKind {
			if !ok || string(got) != v.Str() {
				t.Fatalf("AppendUnquoted(%q) = %q, %v; Parse reads %q", data, got, ok, v.Str())
			}
		}
		var want string
		if bytes.HasPrefix(bytes.TrimLeft(data, " \t\n\r"), []byte(`"`)) && json.Unmarshal(data, &want) == nil {
			if !ok || string(got) != want {
				t.Fatalf("AppendUnquoted(%q) = %q, %v; encoding/json reads %q", data, got, ok, want)
			}
		}
		if ok && !utf8.Valid(got) {
			t.Fatalf("AppendUnquoted(%q) = %q, not UTF-8", data, got)
		}
	})
}
