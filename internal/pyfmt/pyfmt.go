// Package pyfmt writes values the way Python's repr() does. Upstream Laya's
// error messages, warnings and JSON output are Python-formatted, and this
// runtime reproduces them byte for byte.
package pyfmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// FloatRepr returns Python's repr(float(f)): the shortest round-trip digits, ".0" on
// integral values, exponent form (1e-05, 1e+16) when the decimal point falls outside
// (-4, 16]. NaN and the infinities come out as 'nan', 'inf', '-inf'.
func FloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // d[.ddd]e±XX, at least two exponent digits
	ePos := strings.IndexByte(sci, 'e')
	exp, _ := strconv.Atoi(sci[ePos+1:])
	decpt := exp + 1 // the value is 0.DIGITS × 10^decpt
	if decpt <= -4 || decpt > 16 {
		return sci
	}
	fixed := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(fixed, ".") {
		fixed += ".0"
	}
	return fixed
}

// StrRepr is repr() of a Python str: single quotes unless the text holds a single quote
// and no double quote; backslash escapes for \\, \n, \r, \t, the quote, and non-printable
// characters (\xNN, \uNNNN, \UNNNNNNNN). Printable non-ASCII stays raw.
func StrRepr(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}
