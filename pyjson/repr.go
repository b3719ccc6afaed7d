package pyjson

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// nonFinite spells NaN and the infinities: as repr() does (nan, inf, -inf)
// or, with json set, as json.dumps does (NaN, Infinity, -Infinity). ok is
// false for a finite f. This is the one place those spellings live.
func nonFinite(f float64, json bool) (text string, ok bool) {
	switch {
	case math.IsNaN(f):
		if json {
			return "NaN", true
		}
		return "nan", true
	case math.IsInf(f, 1):
		if json {
			return "Infinity", true
		}
		return "inf", true
	case math.IsInf(f, -1):
		if json {
			return "-Infinity", true
		}
		return "-inf", true
	}
	return "", false
}

// FloatRepr returns Python's repr(float(f)): the shortest round-trip digits,
// ".0" on integral values, exponent form (1e-05, 1e+16) when the decimal
// point falls outside (-4, 16]. NaN and the infinities come out as 'nan',
// 'inf', '-inf'.
func FloatRepr(f float64) string {
	if s, ok := nonFinite(f, false); ok {
		return s
	}
	// One shortest formatting in exponent form gives the digits and the
	// point; the fixed form is laid out from them (strconv's 'f' with -1
	// would find the same digits a second time).
	var buf [32]byte
	sci := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // [-]d[.ddd]e±XX, at least two exponent digits
	ePos := len(sci) - 1
	for sci[ePos] != 'e' {
		ePos--
	}
	exp := 0
	for _, c := range sci[ePos+2:] {
		exp = 10*exp + int(c-'0')
	}
	if sci[ePos+1] == '-' {
		exp = -exp
	}
	decpt := exp + 1 // the value is 0.DIGITS × 10^decpt
	if decpt <= -4 || decpt > 16 {
		return string(sci)
	}
	var out [40]byte
	fixed := out[:0]
	mant := sci[:ePos]
	if mant[0] == '-' {
		fixed = append(fixed, '-')
		mant = mant[1:]
	}
	var digits [20]byte
	d := append(digits[:0], mant[0])
	if len(mant) > 1 {
		d = append(d, mant[2:]...) // past the point
	}
	switch {
	case decpt <= 0:
		fixed = append(fixed, "0."...)
		for range -decpt {
			fixed = append(fixed, '0')
		}
		fixed = append(fixed, d...)
	case decpt >= len(d):
		fixed = append(fixed, d...)
		for range decpt - len(d) {
			fixed = append(fixed, '0')
		}
		fixed = append(fixed, ".0"...)
	default:
		fixed = append(fixed, d[:decpt]...)
		fixed = append(fixed, '.')
		fixed = append(fixed, d[decpt:]...)
	}
	return string(fixed)
}

// FloatLiteral is a float as json.dumps writes it: repr, with NaN, Infinity
// and -Infinity for the non-finite values.
func FloatLiteral(f float64) string {
	if s, ok := nonFinite(f, true); ok {
		return s
	}
	return FloatRepr(f)
}

// FormatG is Python's "%g" % f (6 significant digits, trailing zeros dropped,
// nan/inf/-inf).
func FormatG(f float64) string {
	if s, ok := nonFinite(f, false); ok {
		return s
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// StrRepr is repr() of a Python str: single quotes unless the text holds a
// single quote and no double quote; backslash escapes for \\, \n, \r, \t, the
// quote, and non-printable characters (\xNN, \uNNNN, \UNNNNNNNN). Printable
// non-ASCII stays raw.
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

// StrListRepr is repr() of a Python list of str.
func StrListRepr(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = StrRepr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Repr returns Python's repr() of the value json.loads makes of v, for error
// messages and warnings that must match upstream's "%r" output.
func Repr(v Value) string {
	switch v.kind {
	case NullKind:
		return "None"
	case BoolKind:
		if v.b {
			return "True"
		}
		return "False"
	case NumberKind:
		if v.IsFloat() {
			return FloatRepr(v.Float64())
		}
		return number(v)
	case StringKind:
		return StrRepr(v.text)
	case ArrayKind:
		parts := make([]string, len(v.items))
		for i, it := range v.items {
			parts[i] = Repr(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		parts := make([]string, len(v.members))
		for i, m := range v.members {
			parts[i] = StrRepr(m.Key) + ": " + Repr(m.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
}

// Str returns Python's str() of the value json.loads would make of v. Choice
// labels are rendered into option text with str() upstream, so True becomes
// "True" and null "None".
func Str(v Value) string {
	if v.kind == StringKind {
		return v.text
	}
	return Repr(v)
}

// KeyText returns the text json.dumps writes for v used as a dict key:
// strings as they are, numbers as repr, True/False/None as true/false/null.
func KeyText(v Value) string {
	switch v.kind {
	case StringKind:
		return v.text
	case BoolKind:
		if v.b {
			return "true"
		}
		return "false"
	case NullKind:
		return "null"
	case NumberKind:
		return number(v)
	}
	return Dumps(v)
}

// TypeName returns type(x).__name__ for the Python value json.loads makes of v.
func TypeName(v Value) string {
	switch v.kind {
	case NullKind:
		return "NoneType"
	case BoolKind:
		return "bool"
	case NumberKind:
		if v.IsFloat() {
			return "float"
		}
		return "int"
	case StringKind:
		return "str"
	case ArrayKind:
		return "list"
	default:
		return "dict"
	}
}

// HashKey returns a string equal for two values exactly when Python considers
// them the same dict key: 1, 1.0 and True collide; "1" and 1 do not.
// dict.fromkeys over a list of choice labels relies on it. ok is false for a
// NaN: json.loads returns a fresh float object per NaN and NaN != NaN, so it
// never collides with another key.
func HashKey(v Value) (key string, ok bool) {
	switch v.kind {
	case StringKind:
		return "s:" + v.text, true
	case NullKind:
		return "none", true
	case BoolKind:
		if v.b {
			return "n:1", true
		}
		return "n:0", true
	case NumberKind:
		if !v.IsFloat() {
			return "n:" + number(v), true
		}
		f := v.Float64()
		if math.IsNaN(f) {
			return "", false
		}
		if !math.IsInf(f, 0) && f == math.Trunc(f) {
			return "n:" + new(big.Float).SetFloat64(f).Text('f', 0), true
		}
		return "f:" + FloatRepr(f), true
	}
	return "x:" + Dumps(v), true
}

// ToFloat is Python's float(x) of the value json.loads makes of v: numbers
// (a huge int or float becomes ±Inf here, where Python's float() raises
// OverflowError or gives inf: both are non-finite), bools and numeric strings
// convert; null, lists, dicts and other strings fail.
func ToFloat(v Value) (float64, bool) {
	switch v.kind {
	case NumberKind:
		return v.Float64(), true
	case BoolKind:
		if v.b {
			return 1, true
		}
		return 0, true
	case StringKind:
		return ParseFloat(v.text)
	}
	return 0, false
}

// ParseFloat is Python's float(str): surrounding whitespace is ignored, "_"
// may separate digits, inf/infinity/nan in any case with a sign; hex and
// Go-only spellings are rejected.
func ParseFloat(s string) (float64, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	// digitpart ("." digitpart?)? | "." digitpart, then an optional exponent;
	// a digitpart is digits with single underscores between them.
	var clean strings.Builder
	i, digits := 0, 0
	readDigits := func() bool {
		n := 0
		for i < len(body) {
			c := body[i]
			switch {
			case c >= '0' && c <= '9':
				clean.WriteByte(c)
				n++
				i++
			case c == '_' && n > 0 && i+1 < len(body) && body[i+1] >= '0' && body[i+1] <= '9':
				i++
			default:
				return n > 0
			}
		}
		return n > 0
	}
	if readDigits() {
		digits++
	}
	if i < len(body) && body[i] == '.' {
		clean.WriteByte('.')
		i++
		if i < len(body) && body[i] >= '0' && body[i] <= '9' {
			if readDigits() {
				digits++
			}
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		clean.WriteByte('e')
		i++
		if i < len(body) && (body[i] == '+' || body[i] == '-') {
			clean.WriteByte(body[i])
			i++
		}
		if !readDigits() {
			return 0, false
		}
	}
	if i != len(body) {
		return 0, false
	}
	f, err := strconv.ParseFloat(clean.String(), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	if strings.HasPrefix(s, "-") {
		f = -f
	}
	return f, true
}
