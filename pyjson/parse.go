package pyjson

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"
)

// MaxDepth bounds nesting (of Parse and of ValueOf) so that hostile input
// cannot exhaust the stack. CPython raises RecursionError near 1000 levels.
const MaxDepth = 512

// DecodeError is a syntax error, as CPython's json.JSONDecodeError reports
// it: the message ("Expecting value", "Expecting ',' delimiter", ...) and
// where, in characters (code points) from the start, with 1-based line and
// column. It matches ErrInvalid under errors.Is.
type DecodeError struct {
	Msg    string // CPython's message, e.g. "Expecting property name enclosed in double quotes"
	Pos    int    // character index of the error (JSONDecodeError.pos)
	Line   int    // 1-based line (JSONDecodeError.lineno)
	Column int    // 1-based column (JSONDecodeError.colno)
	Offset int    // byte offset of the error in the input
}

// Python returns str(e) of the JSONDecodeError that json.loads raises:
// "Expecting value: line 1 column 1 (char 0)".
func (e *DecodeError) Python() string {
	return fmt.Sprintf("%s: line %d column %d (char %d)", e.Msg, e.Line, e.Column, e.Pos)
}

func (e *DecodeError) Error() string { return ErrInvalid.Error() + ": " + e.Python() }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *DecodeError) Is(target error) bool { return target == ErrInvalid }

// Parse reads one JSON value the way Python's json.loads does: object key
// order kept, a repeated key keeps its first position and its last value,
// NaN/Infinity/-Infinity accepted, number literals kept as written,
// surrounding whitespace allowed. A syntax error is a *DecodeError worded as
// CPython 3.13's (Modules/_json.c). Where Python has no JSONDecodeError the
// text is ours: input that is not UTF-8 (Python fails to decode it before
// parsing), nesting deeper than MaxDepth (Python: RecursionError), and a
// lone surrogate escape, which Python keeps in its str and Go cannot hold in
// UTF-8, becomes U+FFFD as in encoding/json.
func Parse(data []byte) (Value, error) {
	if !utf8.Valid(data) {
		bad := 0
		for bad < len(data) {
			r, size := utf8.DecodeRune(data[bad:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			bad += size
		}
		return Value{}, fmt.Errorf("%w: not UTF-8: byte 0x%02x at offset %d", ErrInvalid, data[bad], bad)
	}
	p := parsers.Get().(*parser)
	defer p.release()
	p.data = data
	if bytes.HasPrefix(data, []byte("\ufeff")) {
		return Value{}, p.fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)
	}
	v, end, err := p.value(p.skipSpace(0), 0)
	if err != nil {
		return Value{}, err
	}
	if end = p.skipSpace(end); end != len(data) {
		return Value{}, p.fail("Extra data", end)
	}
	return v, nil
}

type parser struct {
	// data is the input. Strings and number literals are copies of their
	// bytes, not slices of one string of it: a string a cache keeps (a
	// question's text, a model name) must not keep a whole request alive.
	data []byte
	// stack holds the members of the objects being parsed, a nested
	// object's above its parent's, and items those of the arrays, until
	// each is complete and moves to a slice of its own, exactly its size
	// (one allocation an object, none to grow it; and a value a cache keeps
	// holds no other object's members).
	stack []Member
	items []Value
}

// parsers keeps parsers for Parse to reuse: their stacks grow to a
// request's nesting once rather than on every call.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// maxPooledStack bounds the stacks a pooled parser keeps, which release
// clears whole: one that grew for a large input is left to the collector.
const maxPooledStack = 256

// release returns p to parsers, holding nothing of the input it parsed.
func (p *parser) release() {
	if cap(p.stack) > maxPooledStack || cap(p.items) > maxPooledStack {
		return
	}
	// Cleared, the stacks' old entries keep nothing of the last input alive.
	clear(p.stack[:cap(p.stack)])
	clear(p.items[:cap(p.items)])
	*p = parser{stack: p.stack[:0], items: p.items[:0]}
	parsers.Put(p)
}

// own returns a copy of s exactly its size: a complete object's members or
// an array's items, off the parser's stacks.
func own[T any](s []T) []T {
	if len(s) == 0 {
		return []T{}
	}
	return slices.Clone(s)
}

// fail reports msg at byte offset pos, located as CPython locates it.
func (p *parser) fail(msg string, pos int) error {
	before := p.data[:min(pos, len(p.data))]
	line := bytes.Count(before, []byte{'\n'}) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return &DecodeError{
		Msg:    msg,
		Pos:    utf8.RuneCount(before),
		Line:   line,
		Column: utf8.RuneCount(before[lineStart:]) + 1,
		Offset: pos,
	}
}

// skipSpace returns the first position at or after i that is not JSON
// whitespace (space, tab, newline, carriage return).
func (p *parser) skipSpace(i int) int {
	for i < len(p.data) {
		switch p.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (p *parser) has(i int, word string) bool {
	return bytes.HasPrefix(p.data[i:], []byte(word))
}

// value is scan_once: one JSON term starting at i; it returns the position
// after it.
func (p *parser) value(i, depth int) (Value, int, error) {
	if i >= len(p.data) {
		return Value{}, i, p.fail("Expecting value", i)
	}
	switch p.data[i] {
	case '"':
		s, end, err := p.str(i + 1)
		return String(s), end, err
	case '{', '[':
		if depth > MaxDepth {
			return Value{}, i, fmt.Errorf("%w: nesting deeper than %d levels at offset %d", ErrInvalid, MaxDepth, i)
		}
		if p.data[i] == '{' {
			return p.object(i+1, depth+1)
		}
		return p.array(i+1, depth+1)
	}
	for _, lit := range []struct {
		word string
		v    Value
	}{
		{"null", Value{}},
		{"true", Bool(true)},
		{"false", Bool(false)},
		{"NaN", Value{kind: NumberKind, text: "NaN"}},
		{"Infinity", Value{kind: NumberKind, text: "Infinity"}},
		{"-Infinity", Value{kind: NumberKind, text: "-Infinity"}},
	} {
		if p.has(i, lit.word) {
			return lit.v, i + len(lit.word), nil
		}
	}
	return p.number(i)
}

// object is _parse_object: i is just after '{'.
func (p *parser) object(i, depth int) (Value, int, error) {
	b := objectBuilder{members: &p.stack, base: len(p.stack)}
	i = p.skipSpace(i)
	if i < len(p.data) && p.data[i] == '}' {
		return Value{kind: ObjectKind, members: []Member{}}, i + 1, nil
	}
	for {
		if i >= len(p.data) || p.data[i] != '"' {
			return Value{}, i, p.fail("Expecting property name enclosed in double quotes", i)
		}
		key, end, err := p.str(i + 1)
		if err != nil {
			return Value{}, end, err
		}
		i = p.skipSpace(end)
		if i >= len(p.data) || p.data[i] != ':' {
			return Value{}, i, p.fail("Expecting ':' delimiter", i)
		}
		val, end, err := p.value(p.skipSpace(i+1), depth)
		if err != nil {
			return Value{}, end, err
		}
		b.set(key, val)
		i = p.skipSpace(end)
		if i < len(p.data) && p.data[i] == '}' {
			members := own(p.stack[b.base:])
			p.stack = p.stack[:b.base]
			return Value{kind: ObjectKind, members: members}, i + 1, nil
		}
		if i >= len(p.data) || p.data[i] != ',' {
			return Value{}, i, p.fail("Expecting ',' delimiter", i)
		}
		comma := i
		i = p.skipSpace(i + 1)
		if i < len(p.data) && p.data[i] == '}' {
			return Value{}, i, p.fail("Illegal trailing comma before end of object", comma)
		}
	}
}

// array is _parse_array: i is just after '['.
func (p *parser) array(i, depth int) (Value, int, error) {
	base := len(p.items)
	i = p.skipSpace(i)
	if i < len(p.data) && p.data[i] == ']' {
		return Value{kind: ArrayKind, items: []Value{}}, i + 1, nil
	}
	for {
		item, end, err := p.value(i, depth)
		if err != nil {
			return Value{}, end, err
		}
		p.items = append(p.items, item)
		i = p.skipSpace(end)
		if i < len(p.data) && p.data[i] == ']' {
			items := own(p.items[base:])
			p.items = p.items[:base]
			return Value{kind: ArrayKind, items: items}, i + 1, nil
		}
		if i >= len(p.data) || p.data[i] != ',' {
			return Value{}, i, p.fail("Expecting ',' delimiter", i)
		}
		comma := i
		i = p.skipSpace(i + 1)
		if i < len(p.data) && p.data[i] == ']' {
			return Value{}, i, p.fail("Illegal trailing comma before end of array", comma)
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number is _match_number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?,
// the longest such prefix; nothing that matches is "Expecting value". What
// follows a number that stops early (the "." of "1.", the "1" of "01") is
// left to the caller, which reports it as CPython does.
func (p *parser) number(start int) (Value, int, error) {
	d := p.data
	i := start
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	case i < len(d) && d[i] == '0':
		i++
	default:
		return Value{}, start, p.fail("Expecting value", start)
	}
	if i+1 < len(d) && d[i] == '.' && isDigit(d[i+1]) {
		i += 2
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		j := i + 1
		if j < len(d) && (d[j] == '-' || d[j] == '+') {
			j++
		}
		if j < len(d) && isDigit(d[j]) {
			for j < len(d) && isDigit(d[j]) {
				j++
			}
			i = j
		}
	}
	return Value{kind: NumberKind, text: string(p.data[start:i])}, i, nil
}

// str is scanstring: i is just after the opening quote; it returns the
// content and the position after the closing quote.
func (p *parser) str(i int) (string, int, error) {
	d := p.data
	begin := i - 1
	var b []byte
	for {
		// The run up to the next quote or backslash, refusing control characters.
		j := i
		for j < len(d) && d[j] != '"' && d[j] != '\\' {
			if d[j] <= 0x1f {
				return "", j, p.fail("Invalid control character at", j)
			}
			j++
		}
		if j >= len(d) {
			return "", j, p.fail("Unterminated string starting at", begin)
		}
		if d[j] == '"' && b == nil {
			return string(d[i:j]), j + 1, nil // the common case: no escapes
		}
		b = append(b, d[i:j]...)
		if d[j] == '"' {
			return string(b), j + 1, nil
		}
		// A backslash at j.
		if j+1 >= len(d) {
			return "", j, p.fail("Unterminated string starting at", begin)
		}
		var msg string
		var at int
		if b, i, msg, at = appendEscape(b, d, j); msg != "" {
			return "", at, p.fail(msg, at)
		}
	}
}
