package pyjson

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounded dumps. A caller that reads only the first (or last) few kilobytes of a
// value's serialisation, such as a model that sees at most max_len tokens of it, should
// not pay for serialising megabytes. DumpsPrefix and DumpsSuffix write about limit
// bytes, however large the value: they walk it in order (or in reverse), cut a string
// leaf that does not fit before it is escaped, and stop once the limit is reached.
// Escaping maps each byte of a string to one or more bytes on its own, so the escaped
// prefix (suffix) of a string is a prefix (suffix) of the escaped whole, and the result
// is exactly the corresponding end of Dumps(v).

// DumpsPrefix returns the first limit bytes of Dumps(v), fewer where the cut would
// split a UTF-8 character, and whether that is all of Dumps(v).
func DumpsPrefix(v Value, limit int) (text string, complete bool) {
	limit = max(limit, 0)
	// One byte over the limit: text that reaches it is certainly not all of v.
	w := &prefixWriter{limit: limit + 1}
	w.value(v)
	if w.full() {
		return validPrefix(string(w.b[:limit])), false
	}
	return string(w.b), true
}

// DumpsSuffix returns the last limit bytes of Dumps(v), fewer where the cut would
// split a UTF-8 character, and whether that is all of Dumps(v).
func DumpsSuffix(v Value, limit int) (text string, complete bool) {
	limit = max(limit, 0)
	w := &suffixWriter{limit: limit + 1}
	w.value(v)
	var b strings.Builder
	b.Grow(w.size)
	for _, p := range slices.Backward(w.pieces) {
		b.WriteString(p)
	}
	text = b.String()
	if w.full() {
		return validSuffix(text[len(text)-limit:]), false
	}
	return text, true
}

// prefixWriter collects the start of a serialisation, up to limit bytes.
// It escapes strings straight into b: a string of its own for each leaf was
// most of a request state's serialisation cost.
type prefixWriter struct {
	b     []byte
	limit int
}

func (w *prefixWriter) full() bool { return len(w.b) >= w.limit }

// write appends as much of s as fits.
func (w *prefixWriter) write(s string) {
	w.b = append(w.b, s[:min(len(s), max(w.limit-len(w.b), 0))]...)
}

// cut drops what the last append wrote past the limit.
func (w *prefixWriter) cut() {
	w.b = w.b[:min(len(w.b), w.limit)]
}

// str writes a string leaf, escaping only the part that can fit: one byte more than
// the room, so that the cut string still overflows and the writer, not the string,
// decides where the text ends.
func (w *prefixWriter) str(s string) {
	if room := w.limit - len(w.b); len(s) > room {
		s = s[:max(room, 0)+1]
	}
	w.b = appendString(w.b, s)
	w.cut()
}

func (w *prefixWriter) value(v Value) {
	if w.full() {
		return
	}
	switch v.kind {
	case ArrayKind:
		w.write("[")
		for i, it := range v.items {
			if w.full() {
				return
			}
			if i > 0 {
				w.write(", ")
			}
			w.value(it)
		}
		w.write("]")
	case ObjectKind:
		w.write("{")
		for i, m := range v.members {
			if w.full() {
				return
			}
			if i > 0 {
				w.write(", ")
			}
			w.str(m.Key)
			w.write(": ")
			w.value(m.Value)
		}
		w.write("}")
	case StringKind:
		w.str(v.text)
	default:
		w.b = appendValue(w.b, v)
		w.cut()
	}
}

// suffixWriter collects the end of a serialisation backwards, up to limit bytes:
// pieces holds it last piece first.
type suffixWriter struct {
	pieces      []string
	size, limit int
}

func (w *suffixWriter) full() bool { return w.size >= w.limit }

// write prepends as much of the end of s as fits.
func (w *suffixWriter) write(s string) {
	if room := w.limit - w.size; len(s) > room {
		s = s[len(s)-max(room, 0):]
	}
	w.pieces = append(w.pieces, s)
	w.size += len(s)
}

// str writes a string leaf, escaping only its end that can fit (and one byte more).
func (w *suffixWriter) str(s string) {
	if room := w.limit - w.size; len(s) > room {
		s = s[len(s)-max(room, 0)-1:]
	}
	w.write(quote(s))
}

func (w *suffixWriter) value(v Value) {
	if w.full() {
		return
	}
	switch v.kind {
	case ArrayKind:
		w.write("]")
		for i := len(v.items) - 1; i >= 0; i-- {
			if w.full() {
				return
			}
			w.value(v.items[i])
			if i > 0 {
				w.write(", ")
			}
		}
		w.write("[")
	case ObjectKind:
		w.write("}")
		for i := len(v.members) - 1; i >= 0; i-- {
			if w.full() {
				return
			}
			m := v.members[i]
			w.value(m.Value)
			w.write(": ")
			w.str(m.Key)
			if i > 0 {
				w.write(", ")
			}
		}
		w.write("{")
	case StringKind:
		w.str(v.text)
	default:
		w.write(Dumps(v))
	}
}

// quote is s as a JSON string literal, escaped as Dumps escapes it.
func quote(s string) string {
	return string(appendString(make([]byte, 0, len(s)+2), s))
}

// validPrefix drops a partial UTF-8 character at the end of s.
func validPrefix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

// validSuffix drops a partial UTF-8 character at the start of s.
func validSuffix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		if utf8.RuneStart(s[0]) {
			return s
		}
		s = s[1:]
	}
	return s
}
