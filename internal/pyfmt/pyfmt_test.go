package pyfmt

import "testing"

// TestStrRepr holds StrRepr to CPython 3.12's repr(str); the expected strings
// were written by hand from its rules (quote choice, escapes, isprintable).
func TestStrRepr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"q0", `'q0'`},
		{"", `''`},
		{"it's", `"it's"`},
		{`a"b`, `'a"b'`},
		{`both ' and "`, `'both \' and "'`},
		{"back\\slash", `'back\\slash'`},
		{"tab\tnew\nret\r", `'tab\tnew\nret\r'`},
		{"\x00\x1f\x7f", `'\x00\x1f\x7f'`},
		{"é日本😀", `'é日本😀'`},
		{"\u0085\u00a0", `'\x85\xa0'`},
		{"zero\u200bwidth", `'zero\u200bwidth'`},
		{"\U000e0001", `'\U000e0001'`},
	} {
		if got := StrRepr(tc.in); got != tc.want {
			t.Errorf("StrRepr(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
