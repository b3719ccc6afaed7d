package pyjson

import (
	"bytes"
	"fmt"
)

// Dumps is Python's json.dumps(v, ensure_ascii=False) with the default
// separators (", " and ": ").
func Dumps(v Value) string {
	var buf bytes.Buffer
	write(&buf, v)
	return buf.String()
}

func write(buf *bytes.Buffer, v Value) {
	switch v.kind {
	case NullKind:
		buf.WriteString("null")
	case BoolKind:
		if v.b {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case NumberKind:
		buf.WriteString(number(v))
	case StringKind:
		writeString(buf, v.text)
	case ArrayKind:
		buf.WriteByte('[')
		for i, it := range v.items {
			if i > 0 {
				buf.WriteString(", ")
			}
			write(buf, it)
		}
		buf.WriteByte(']')
	case ObjectKind:
		buf.WriteByte('{')
		for i, m := range v.members {
			if i > 0 {
				buf.WriteString(", ")
			}
			writeString(buf, m.Key)
			buf.WriteString(": ")
			write(buf, m.Value)
		}
		buf.WriteByte('}')
	}
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

// writeString escapes like CPython's encoder with ensure_ascii=False: only
// '"', '\\' and C0 controls; \b \f \n \r \t short, the rest as lowercase
// \u00XX. '<', '>', '&', '/', DEL and U+2028/U+2029 pass through raw.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(buf, `\u%04x`, c)
			} else {
				buf.WriteByte(c)
			}
		}
	}
	buf.WriteByte('"')
}
