package pyjson

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnquoted appends the value of the JSON string literal quoted (its quotes
// included) to dst, decoding escapes as Parse does: a surrogate pair joins into one
// character, a lone surrogate becomes U+FFFD. Bytes that are not UTF-8 also become
// U+FFFD each, as encoding/json makes them (Parse refuses such input before it reaches
// a string). It reports false for a literal that is not a well-formed JSON string.
func AppendUnquoted(dst, quoted []byte) ([]byte, bool) {
	end := len(quoted) - 1
	if end < 1 || quoted[0] != '"' || quoted[end] != '"' {
		return dst, false
	}
	for i := 1; i < end; {
		switch c := quoted[i]; {
		case c == '\\':
			if i+1 >= end {
				return dst, false // the backslash escapes the closing quote
			}
			var msg string
			if dst, i, msg, _ = appendEscape(dst, quoted, i); msg != "" || i > end {
				return dst, false
			}
		case c == '"' || c < 0x20:
			return dst, false
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(quoted[i:end])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, quoted[i:i+size]...)
			}
			i += size
		}
	}
	return dst, true
}

// appendEscape decodes the escape sequence at d[j] (a backslash with at least one byte
// after it) and appends its text to dst. d runs at least to the end of the string
// literal: CPython looks past a \u escape for a second half of a surrogate pair only
// when more follows it. It returns the index after the sequence or, for a malformed
// one, CPython's message and the offset it reports.
func appendEscape(dst, d []byte, j int) (out []byte, next int, msg string, at int) {
	c := d[j+1]
	if c != 'u' {
		switch c {
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			return dst, j, `Invalid \escape`, j
		}
		return append(dst, c), j + 2, "", 0
	}
	// \uXXXX: CPython wants the four digits and at least one more character.
	r, ok := hex4(d, j+2)
	if !ok {
		return dst, j, `Invalid \uXXXX escape`, j + 1
	}
	i := j + 6
	if utf16.IsSurrogate(r) {
		if r < 0xdc00 && i+6 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
			r2, ok := hex4(d, i+2)
			if !ok {
				return dst, i, `Invalid \uXXXX escape`, i + 1
			}
			if joined := utf16.DecodeRune(r, r2); joined != unicode.ReplacementChar {
				return utf8.AppendRune(dst, joined), i + 6, "", 0
			}
		}
		r = unicode.ReplacementChar // a lone surrogate: see Parse
	}
	return utf8.AppendRune(dst, r), i, "", 0
}

// hex4 decodes the four hex digits at d[i:]; CPython also requires a character after
// them (the string's closing quote at the least).
func hex4(d []byte, i int) (rune, bool) {
	if i+4 >= len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}
