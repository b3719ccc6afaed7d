package tokenizer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestStrMatchesReference: the scanner's string reader (eight bytes at a
// time, inline UTF-8 checks) finds the same end, validity and flags as a
// byte-at-a-time reading by the JSON grammar, and decodes to what
// encoding/json decodes, on random strings of the bytes that matter.
func TestStrMatchesReference(t *testing.T) {
	pieces := []string{"a", "bcdefghij", " ", `"`, `\"`, `\\`, `\/`, `\n`, `\t`, `\u0041`, `\ud83d\ude00`, `\ud800`, `\x`, `\u12`,
		"\x01", "\x1f", "\x7f", "Ġ", "▁", "日本", "😀", "\xff", "\xc3", "\xed\xa0\x80", "\xe0\x80\x80", "\xef\xbf\xbd", "\xc2\x80"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b bytes.Buffer
		b.WriteByte('"')
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if rng.IntN(10) != 0 {
			b.WriteByte('"')
		}
		b.WriteString(`, "x"`[:rng.IntN(6)])
		data := b.Bytes()

		s := &fastScanner{d: data}
		start, end, flags, ok := s.str()
		wantEnd, wantFlags, wantOK := referenceStr(data)
		if ok != wantOK || (ok && (end != wantEnd || flags != wantFlags || start != 1 || s.i != end+1)) {
			t.Fatalf("%q: str = %d, %d, %03b, %v; want end %d, flags %03b, %v", data, start, end, flags, ok, wantEnd, wantFlags, wantOK)
		}
		if !ok {
			continue
		}
		var want string
		jsonErr := json.Unmarshal(data[:end+1], &want)
		got, decoded := appendJSONString(nil, data, start, end, flags)
		if (jsonErr == nil) != decoded || (decoded && string(got) != want) {
			t.Fatalf("%q: decoded %q, %v; encoding/json %q, %v", data[:end+1], got, decoded, want, jsonErr)
		}
	}
}

// referenceStr reads the string at data[0] a byte at a time.
func referenceStr(data []byte) (end int, flags uint8, ok bool) {
	for i := 1; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			if !utf8.Valid(data[1:i]) {
				flags |= strInvalid
			}
			return i, flags, true
		case c == '\\':
			flags |= strEsc
			if i+1 >= len(data) {
				return 0, 0, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(data) {
					return 0, 0, false
				}
				for _, h := range data[i+2 : i+6] {
					if !isHex(h) {
						return 0, 0, false
					}
				}
				i += 5
			default:
				return 0, 0, false
			}
		case c < 0x20:
			return 0, 0, false
		case c >= 0x80:
			flags |= strHigh
		}
	}
	return 0, 0, false
}
