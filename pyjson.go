package laya

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/laya-metal/laya/internal/pyfmt"
)

// Upstream Laya builds its prompts and its answers with Python's json.dumps, so the exact
// bytes matter twice: the serialised state is what the tokenizer reads, and the answer JSON
// is compared byte for byte. Go's encoding/json differs from Python's in every way that
// shows here (map key order, HTML escaping, float formatting, ", "/": " separators), so this
// file holds an order-preserving JSON value and a Python-compatible writer for it.
// Sources: CPython Lib/json/encoder.py (ESCAPE_DCT, float.__repr__ for floats) and
// Python/pystrtod.c (repr switches to exponent form when decpt <= -4 or decpt > 16).

// ErrInvalidJSON reports input that is not a JSON value Python's json.loads would accept.
var ErrInvalidJSON = errors.New("laya: invalid JSON")

// Kind says which JSON type a Value holds.
type Kind uint8

// The JSON kinds. A zero Value is Null.
const (
	NullKind Kind = iota
	BoolKind
	NumberKind
	StringKind
	ArrayKind
	ObjectKind
)

// Value is one JSON value that keeps object key order and number literals as written.
// Requests need both: questions, criteria and state objects are read in insertion order,
// and an integer such as 4411 must stay an integer while 1.50 is re-rendered as Python's
// float 1.5. The zero Value is JSON null.
type Value struct {
	kind    Kind
	b       bool
	text    string // string content, or the number literal
	items   []Value
	members []Member
}

// Member is one key/value pair of a JSON object, in its original position.
type Member struct {
	Key   string
	Value Value
}

// NullValue returns JSON null.
func NullValue() Value { return Value{} }

// BoolValue returns JSON true or false.
func BoolValue(b bool) Value { return Value{kind: BoolKind, b: b} }

// StringValue returns a JSON string.
func StringValue(s string) Value { return Value{kind: StringKind, text: s} }

// IntValue returns a JSON integer.
func IntValue(n int64) Value { return Value{kind: NumberKind, text: strconv.FormatInt(n, 10)} }

// FloatValue returns a JSON float; it is written as Python's repr of f (1.0, 1e-05, NaN).
func FloatValue(f float64) Value {
	return Value{kind: NumberKind, text: pyFloatLiteral(f)}
}

// ArrayValue returns a JSON array of the items.
func ArrayValue(items ...Value) Value {
	return Value{kind: ArrayKind, items: append([]Value{}, items...)}
}

// ObjectValue returns a JSON object with the members in the given order. A repeated key
// keeps its first position and takes the last value, as a Python dict built from pairs does.
func ObjectValue(members ...Member) Value {
	b := objectBuilder{members: make([]Member, 0, len(members))}
	for _, m := range members {
		b.set(m.Key, m.Value)
	}
	return Value{kind: ObjectKind, members: b.members}
}

// objectBuilder collects an object's members with Python dict semantics (a repeated
// key keeps its first position and takes the last value) in linear time: a request
// of a few MB may hold hundreds of thousands of keys, and a scan per key would make
// parsing it quadratic.
type objectBuilder struct {
	members []Member
	index   map[string]int // position of each key, once there are more than scanLimit
}

// scanLimit is the member count up to which set scans instead of hashing.
const scanLimit = 16

func (b *objectBuilder) set(key string, val Value) {
	if b.index == nil {
		for i := range b.members {
			if b.members[i].Key == key {
				b.members[i].Value = val
				return
			}
		}
		b.members = append(b.members, Member{Key: key, Value: val})
		if len(b.members) > scanLimit {
			b.index = make(map[string]int, 2*len(b.members))
			for i, m := range b.members {
				b.index[m.Key] = i
			}
		}
		return
	}
	if i, ok := b.index[key]; ok {
		b.members[i].Value = val
		return
	}
	b.index[key] = len(b.members)
	b.members = append(b.members, Member{Key: key, Value: val})
}

// with sets key in an object value, keeping the position of an existing key.
func (v Value) with(key string, val Value) Value {
	for i := range v.members {
		if v.members[i].Key == key {
			v.members[i].Value = val
			return v
		}
	}
	v.members = append(v.members, Member{Key: key, Value: val})
	return v
}

// Kind returns the JSON type of v.
func (v Value) Kind() Kind { return v.kind }

// Bool returns the value of a JSON boolean (false for other kinds).
func (v Value) Bool() bool { return v.b }

// Str returns the content of a JSON string ("" for other kinds).
func (v Value) Str() string {
	if v.kind != StringKind {
		return ""
	}
	return v.text
}

// Literal returns a number's literal as written in the source ("" for other kinds).
func (v Value) Literal() string {
	if v.kind != NumberKind {
		return ""
	}
	return v.text
}

// Items returns the elements of a JSON array (nil for other kinds).
func (v Value) Items() []Value { return v.items }

// Members returns the members of a JSON object in their order (nil for other kinds).
func (v Value) Members() []Member { return v.members }

// Get returns the value of key in an object and whether it is present.
func (v Value) Get(key string) (Value, bool) {
	for _, m := range v.members {
		if m.Key == key {
			return m.Value, true
		}
	}
	return Value{}, false
}

// isFloat reports whether a number literal is what Python's json.loads makes a float of.
func (v Value) isFloat() bool {
	return v.kind == NumberKind && strings.ContainsAny(v.text, ".eEIN")
}

// float returns the number as float64, as Python's float() of it would (overflow → ±Inf).
func (v Value) float() float64 {
	switch v.text {
	case "NaN":
		return math.NaN()
	case "Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return math.NaN()
	}
	return f
}

// MarshalJSON writes v the way Python's json.dumps(v, ensure_ascii=False) does.
func (v Value) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	writePyJSON(&buf, v)
	return buf.Bytes(), nil
}

// UnmarshalJSON reads any JSON value, keeping key order and number literals.
func (v *Value) UnmarshalJSON(data []byte) error {
	parsed, err := ParseJSON(data)
	if err != nil {
		return err
	}
	*v = parsed
	return nil
}

// String returns v as Python's json.dumps(v, ensure_ascii=False) writes it.
func (v Value) String() string { return pyDumps(v) }

// pyDumps is json.dumps(v, ensure_ascii=False) with the default separators.
func pyDumps(v Value) string {
	var buf bytes.Buffer
	writePyJSON(&buf, v)
	return buf.String()
}

func writePyJSON(buf *bytes.Buffer, v Value) {
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
		buf.WriteString(pyNumber(v))
	case StringKind:
		writePyString(buf, v.text)
	case ArrayKind:
		buf.WriteByte('[')
		for i, it := range v.items {
			if i > 0 {
				buf.WriteString(", ")
			}
			writePyJSON(buf, it)
		}
		buf.WriteByte(']')
	case ObjectKind:
		buf.WriteByte('{')
		for i, m := range v.members {
			if i > 0 {
				buf.WriteString(", ")
			}
			writePyString(buf, m.Key)
			buf.WriteString(": ")
			writePyJSON(buf, m.Value)
		}
		buf.WriteByte('}')
	}
}

// pyNumber renders a number as json.dumps renders what json.loads made of its literal:
// integers verbatim (Python ints are unbounded), floats as float.__repr__.
func pyNumber(v Value) string {
	if v.isFloat() {
		return pyFloatLiteral(v.float())
	}
	if v.text == "-0" {
		return "0"
	}
	return v.text
}

// writePyString escapes like CPython's encoder with ensure_ascii=False: only '"', '\\' and
// C0 controls; \b \f \n \r \t short, the rest as lowercase \u00XX. '<', '>', '&', '/',
// DEL and U+2028/U+2029 pass through raw.
func writePyString(buf *bytes.Buffer, s string) {
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

// pyFloatLiteral is a float as json.dumps writes it: repr, with NaN/Infinity/-Infinity.
func pyFloatLiteral(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyfmt.FloatRepr(f)
}

// pyStr returns Python's str() of the value json.loads would make of v. Choice labels are
// rendered into option text with str() upstream, so True becomes "True" and null "None".
func pyStr(v Value) string {
	switch v.kind {
	case StringKind:
		return v.text
	case NumberKind:
		if v.isFloat() {
			return pyfmt.FloatRepr(v.float())
		}
		return pyNumber(v)
	default:
		return pyRepr(v)
	}
}

// pyKey returns the text json.dumps writes for v used as a dict key: strings as they are,
// numbers as repr, True/False/None as true/false/null.
func pyKey(v Value) string {
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
		return pyNumber(v)
	}
	return pyDumps(v)
}

// pyTypeName returns type(x).__name__ for the Python value json.loads makes of v.
func pyTypeName(v Value) string {
	switch v.kind {
	case NullKind:
		return "NoneType"
	case BoolKind:
		return "bool"
	case NumberKind:
		if v.isFloat() {
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

// pyRepr returns Python's repr() of the value json.loads makes of v, for error messages
// that must match upstream's "%r" output.
func pyRepr(v Value) string {
	switch v.kind {
	case NullKind:
		return "None"
	case BoolKind:
		if v.b {
			return "True"
		}
		return "False"
	case NumberKind:
		if v.isFloat() {
			return pyfmt.FloatRepr(v.float())
		}
		return pyNumber(v)
	case StringKind:
		return pyfmt.StrRepr(v.text)
	case ArrayKind:
		parts := make([]string, len(v.items))
		for i, it := range v.items {
			parts[i] = pyRepr(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		parts := make([]string, len(v.members))
		for i, m := range v.members {
			parts[i] = pyfmt.StrRepr(m.Key) + ": " + pyRepr(m.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
}

// pyStrList is repr() of a Python list of str.
func pyStrList(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = pyfmt.StrRepr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pyHashKey returns a string equal for two values exactly when Python considers them the
// same dict key: 1, 1.0 and True collide; "1" and 1 do not. dict.fromkeys over a list of
// choice labels relies on it.
func pyHashKey(v Value) string {
	switch v.kind {
	case StringKind:
		return "s:" + v.text
	case NullKind:
		return "none"
	case BoolKind:
		if v.b {
			return "n:1"
		}
		return "n:0"
	case NumberKind:
		if !v.isFloat() {
			return "n:" + pyNumber(v)
		}
		f := v.float()
		if math.IsNaN(f) {
			return nanHashKey
		}
		if !math.IsInf(f, 0) && f == math.Trunc(f) {
			return "n:" + new(big.Float).SetFloat64(f).Text('f', 0)
		}
		return "f:" + pyfmt.FloatRepr(f)
	}
	return "x:" + pyDumps(v)
}

// nanHashKey marks a NaN label: json.loads returns a fresh float object per NaN and
// NaN != NaN, so it never collides with another key.
const nanHashKey = "nan"

// ParseJSON reads one JSON value the way Python's json.loads does: object key order kept, a
// repeated key keeps its first position and its last value, NaN/Infinity/-Infinity accepted,
// number literals kept as written.
func ParseJSON(data []byte) (Value, error) {
	p := &jsonParser{data: data}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return Value{}, p.errorf("extra data after the JSON value")
	}
	return v, nil
}

// maxJSONDepth bounds nesting so a hostile request cannot exhaust the stack.
const maxJSONDepth = 512

type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", ErrInvalidJSON, fmt.Sprintf(format, args...), p.pos)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) literal(word string) bool {
	if strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(word))]), word) {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *jsonParser) value(depth int) (Value, error) {
	if depth > maxJSONDepth {
		return Value{}, p.errorf("nesting deeper than %d", maxJSONDepth)
	}
	if p.pos >= len(p.data) {
		return Value{}, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		return StringValue(s), err
	case p.literal("null"):
		return Value{}, nil
	case p.literal("true"):
		return BoolValue(true), nil
	case p.literal("false"):
		return BoolValue(false), nil
	case p.literal("NaN"):
		return Value{kind: NumberKind, text: "NaN"}, nil
	case p.literal("Infinity"):
		return Value{kind: NumberKind, text: "Infinity"}, nil
	case p.literal("-Infinity"):
		return Value{kind: NumberKind, text: "-Infinity"}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return Value{}, p.errorf("unexpected character %q", c)
	}
}

func (p *jsonParser) object(depth int) (Value, error) {
	p.pos++ // '{'
	b := objectBuilder{members: []Member{}}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return Value{kind: ObjectKind, members: b.members}, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.errorf("expected an object key in double quotes")
		}
		key, err := p.str()
		if err != nil {
			return Value{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.errorf("expected ':' after an object key")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		b.set(key, val)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.errorf("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return Value{kind: ObjectKind, members: b.members}, nil
		default:
			return Value{}, p.errorf("expected ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array(depth int) (Value, error) {
	p.pos++ // '['
	v := Value{kind: ArrayKind, items: []Value{}}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		item, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		v.items = append(v.items, item)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.errorf("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return Value{}, p.errorf("expected ',' or ']' in an array")
		}
	}
}

func (p *jsonParser) number() (Value, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	if n := digits(); n == 0 {
		return Value{}, p.errorf("a number needs digits")
	} else if n > 1 && p.data[intStart] == '0' {
		return Value{}, p.errorf("a number cannot have leading zeros")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return Value{}, p.errorf("a fraction needs digits")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return Value{}, p.errorf("an exponent needs digits")
		}
	}
	return Value{kind: NumberKind, text: string(p.data[start:p.pos])}, nil
}

func (p *jsonParser) str() (string, error) {
	p.pos++ // opening quote
	var b strings.Builder
	for {
		if p.pos >= len(p.data) {
			return "", p.errorf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", p.errorf("control character %q in a string", c)
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			b.WriteRune(r)
			p.pos += size
		}
	}
}

func (p *jsonParser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.data) {
		return p.errorf("unterminated escape")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		b.WriteByte(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, err := p.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			// A pair joins into one character; a lone surrogate cannot be written as UTF-8,
			// so it becomes U+FFFD as Go's encoding/json does.
			if r < 0xdc00 && p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
				save := p.pos
				p.pos += 2
				r2, err := p.hex4()
				if err == nil {
					if joined := utf16.DecodeRune(r, r2); joined != unicode.ReplacementChar {
						b.WriteRune(joined)
						return nil
					}
				}
				p.pos = save
			}
			r = unicode.ReplacementChar
		}
		b.WriteRune(r)
	default:
		return p.errorf("invalid escape \\%c", c)
	}
	return nil
}

func (p *jsonParser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.errorf("short \\u escape")
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.errorf("invalid \\u escape")
	}
	p.pos += 4
	return rune(n), nil
}

// ValueOf converts a Go value to a Value: nil, bool, string, the integer and float types,
// json.Number-like Stringers are not inspected. []T and [N]T become arrays; map[string]T
// becomes an object with its keys SORTED (Go maps have no order: build an ObjectValue, or
// use ParseJSON, to keep a specific order); a Value is used as it is.
func ValueOf(x any) (Value, error) { return valueOf(x, 0) }

// valueOf is ValueOf with the nesting depth so far: a self-referencing []any or map
// would otherwise recurse until the stack overflows, which no recover catches.
func valueOf(x any, depth int) (Value, error) {
	if depth > maxJSONDepth {
		return Value{}, fmt.Errorf("%w: nested deeper than %d levels (a cycle?)", ErrInvalidJSON, maxJSONDepth)
	}
	switch t := x.(type) {
	case nil:
		return Value{}, nil
	case Value:
		return t, nil
	case *Value:
		if t == nil {
			return Value{}, nil
		}
		return *t, nil
	case bool:
		return BoolValue(t), nil
	case string:
		return StringValue(t), nil
	case int:
		return IntValue(int64(t)), nil
	case int8:
		return IntValue(int64(t)), nil
	case int16:
		return IntValue(int64(t)), nil
	case int32:
		return IntValue(int64(t)), nil
	case int64:
		return IntValue(t), nil
	case uint:
		return Value{kind: NumberKind, text: strconv.FormatUint(uint64(t), 10)}, nil
	case uint8:
		return IntValue(int64(t)), nil
	case uint16:
		return IntValue(int64(t)), nil
	case uint32:
		return IntValue(int64(t)), nil
	case uint64:
		return Value{kind: NumberKind, text: strconv.FormatUint(t, 10)}, nil
	case float32:
		// Python has no float32: the value is widened, as numpy's .item() would.
		return FloatValue(float64(t)), nil
	case float64:
		return FloatValue(t), nil
	case []Value:
		return ArrayValue(t...), nil
	case []Member:
		return ObjectValue(t...), nil
	case []any:
		items := make([]Value, len(t))
		for i, e := range t {
			v, err := valueOf(e, depth+1)
			if err != nil {
				return Value{}, fmt.Errorf("element %d: %w", i, err)
			}
			items[i] = v
		}
		return ArrayValue(items...), nil
	case []string:
		items := make([]Value, len(t))
		for i, s := range t {
			items[i] = StringValue(s)
		}
		return ArrayValue(items...), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		members := make([]Member, len(keys))
		for i, k := range keys {
			v, err := valueOf(t[k], depth+1)
			if err != nil {
				return Value{}, fmt.Errorf("key %q: %w", k, err)
			}
			members[i] = Member{Key: k, Value: v}
		}
		return ObjectValue(members...), nil
	case map[string]string:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		members := make([]Member, len(keys))
		for i, k := range keys {
			members[i] = Member{Key: k, Value: StringValue(t[k])}
		}
		return ObjectValue(members...), nil
	}
	return Value{}, fmt.Errorf("%w: cannot represent a Go %T as JSON; build a Value instead", ErrInvalidJSON, x)
}
