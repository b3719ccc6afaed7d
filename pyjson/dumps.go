package pyjson

// Dumps is Python's json.dumps(v, ensure_ascii=False) with the default
// separators (", " and ": ").
func Dumps(v Value) string {
	return string(appendValue(nil, v))
}

// appendValue appends Dumps(v) to dst.
func appendValue(dst []byte, v Value) []byte {
	switch v.kind {
	case NullKind:
		return append(dst, "null"...)
	case BoolKind:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case NumberKind:
		return append(dst, number(v)...)
	case StringKind:
		return appendString(dst, v.text)
	case ArrayKind:
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendValue(dst, it)
		}
		return append(dst, ']')
	case ObjectKind:
		dst = append(dst, '{')
		for i, m := range v.members {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendString(dst, m.Key)
			dst = append(dst, ": "...)
			dst = appendValue(dst, m.Value)
		}
		return append(dst, '}')
	}
	return dst
}

// number renders a number as json.dumps renders what json.loads made of its
// literal: integers verbatim (Python ints are unbounded), floats as
// float.__repr__.
func number(v Value) string {
	if v.canon {
		return v.text
	}
	if v.IsFloat() {
		return FloatLiteral(v.Float64())
	}
	if v.text == "-0" {
		return "0"
	}
	return v.text
}

// appendString appends s as a JSON string literal, escaped like CPython's
// encoder with ensure_ascii=False: only '"', '\\' and C0 controls; \b \f \n
// \r \t short, the rest as lowercase \u00XX. '<', '>', '&', '/', DEL and
// U+2028/U+2029 pass through raw.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending, with nothing to escape
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch c {
		case '"':
			dst = append(dst, `\"`...)
		case '\\':
			dst = append(dst, `\\`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			dst = append(dst, `\u00`...)
			dst = append(dst, lowerHex[c>>4], lowerHex[c&0xf])
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const lowerHex = "0123456789abcdef"
