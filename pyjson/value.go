package pyjson

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid reports input that is not a JSON value Python's json.loads would
// accept, or a Go value ValueOf cannot represent.
var ErrInvalid = errors.New("pyjson: invalid JSON")

// Kind says which JSON type a Value holds.
type Kind uint8

// The JSON kinds. A zero Value is NullKind.
const (
	NullKind Kind = iota
	BoolKind
	NumberKind
	StringKind
	ArrayKind
	ObjectKind
)

// Value is one JSON value that keeps object key order and number literals as
// written. Upstream's requests need both: questions, criteria and state
// objects are read in insertion order, and an integer such as 4411 must stay
// an integer while 1.50 is re-rendered as Python's float 1.5. The zero Value
// is JSON null.
type Value struct {
	// The small fields first: packed into one word, they keep a Value (and
	// so every member and item of a parsed request) at 72 bytes, not 80.
	kind    Kind
	b       bool
	canon   bool   // text is already json.dumps' spelling of the number (Float)
	text    string // string content, or the number literal
	items   []Value
	members []Member
}

// Member is one key/value pair of a JSON object, in its original position.
type Member struct {
	Key   string
	Value Value
}

// Null returns JSON null.
func Null() Value { return Value{} }

// Bool returns JSON true or false.
func Bool(b bool) Value { return Value{kind: BoolKind, b: b} }

// String returns a JSON string.
func String(s string) Value { return Value{kind: StringKind, text: s} }

// Int returns a JSON integer.
func Int(n int64) Value { return Value{kind: NumberKind, text: strconv.FormatInt(n, 10)} }

// Float returns a JSON float; it is written as Python's repr of f (1.0, 1e-05, NaN).
func Float(f float64) Value { return Value{kind: NumberKind, text: FloatLiteral(f), canon: true} }

// Array returns a JSON array of the items.
func Array(items ...Value) Value {
	return Value{kind: ArrayKind, items: append([]Value{}, items...)}
}

// Object returns a JSON object with the members in the given order. A
// repeated key keeps its first position and takes the last value, as a Python
// dict built from pairs does.
func Object(members ...Member) Value {
	out := make([]Member, 0, len(members))
	b := objectBuilder{members: &out}
	for _, m := range members {
		b.set(m.Key, m.Value)
	}
	return Value{kind: ObjectKind, members: out}
}

// Pairs returns a JSON object with the members exactly as given, repeated
// keys included. json.dumps of a Python dict with the distinct keys 1 and "1"
// writes the key "1" twice, which Object would merge.
func Pairs(members ...Member) Value {
	return Value{kind: ObjectKind, members: append([]Member{}, members...)}
}

// objectBuilder collects an object's members with Python dict semantics (a
// repeated key keeps its first position and takes the last value) in linear
// time: a request of a few MB may hold hundreds of thousands of keys, and a
// scan per key would make parsing it quadratic. The object's members are
// (*members)[base:]: the parser keeps those of nested objects on one stack.
type objectBuilder struct {
	members *[]Member
	base    int
	index   map[string]int // position of each key, once there are more than scanLimit
}

// scanLimit is the member count up to which set scans instead of hashing.
const scanLimit = 16

func (b *objectBuilder) set(key string, val Value) {
	ms := (*b.members)[b.base:]
	if b.index == nil {
		for i := range ms {
			if ms[i].Key == key {
				ms[i].Value = val
				return
			}
		}
		*b.members = append(*b.members, Member{Key: key, Value: val})
		if ms = (*b.members)[b.base:]; len(ms) > scanLimit {
			b.index = make(map[string]int, 2*len(ms))
			for i, m := range ms {
				b.index[m.Key] = i
			}
		}
		return
	}
	if i, ok := b.index[key]; ok {
		ms[i].Value = val
		return
	}
	b.index[key] = len(ms)
	*b.members = append(*b.members, Member{Key: key, Value: val})
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

// IsFloat reports whether v is a number that Python's json.loads makes a
// float of (a fraction, an exponent, NaN or an infinity); other numbers are
// ints.
func (v Value) IsFloat() bool {
	return v.kind == NumberKind && strings.ContainsAny(v.text, ".eEIN")
}

// Float64 returns a number as float64, as Python's float() of it would
// (overflow → ±Inf). It is NaN for the other kinds.
func (v Value) Float64() float64 {
	if v.kind != NumberKind {
		return math.NaN()
	}
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

// MarshalJSON writes v the way Python's json.dumps(v, ensure_ascii=False)
// does. (encoding/json compacts what it gets and rejects NaN and the
// infinities; write Dumps(v) yourself where those can occur.)
func (v Value) MarshalJSON() ([]byte, error) {
	return appendValue(nil, v), nil
}

// UnmarshalJSON reads any JSON value with Parse, keeping key order and number literals.
func (v *Value) UnmarshalJSON(data []byte) error {
	parsed, err := Parse(data)
	if err != nil {
		return err
	}
	*v = parsed
	return nil
}

// String returns v as Python's json.dumps(v, ensure_ascii=False) writes it.
func (v Value) String() string { return Dumps(v) }

// ValueOf converts a Go value to a Value: nil, bool, string, the integer and
// float types, []any, []string, []Value, []Member, map[string]any and
// map[string]string. Go maps have no order, so their keys are SORTED (build
// an Object, or Parse JSON text, to keep a specific order); a Value is used
// as it is. Anything else fails with ErrInvalid.
func ValueOf(x any) (Value, error) { return valueOf(x, 0) }

// valueOf is ValueOf with the nesting depth so far: a self-referencing []any
// or map would otherwise recurse until the stack overflows, which no recover
// catches.
func valueOf(x any, depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, fmt.Errorf("%w: nested deeper than %d levels (a cycle?)", ErrInvalid, MaxDepth)
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
		return Bool(t), nil
	case string:
		return String(t), nil
	case int:
		return Int(int64(t)), nil
	case int8:
		return Int(int64(t)), nil
	case int16:
		return Int(int64(t)), nil
	case int32:
		return Int(int64(t)), nil
	case int64:
		return Int(t), nil
	case uint:
		return Value{kind: NumberKind, text: strconv.FormatUint(uint64(t), 10)}, nil
	case uint8:
		return Int(int64(t)), nil
	case uint16:
		return Int(int64(t)), nil
	case uint32:
		return Int(int64(t)), nil
	case uint64:
		return Value{kind: NumberKind, text: strconv.FormatUint(t, 10)}, nil
	case float32:
		// Python has no float32: the value is widened, as numpy's .item() would.
		return Float(float64(t)), nil
	case float64:
		return Float(t), nil
	case []Value:
		return Array(t...), nil
	case []Member:
		return Object(t...), nil
	case []any:
		items := make([]Value, len(t))
		for i, e := range t {
			v, err := valueOf(e, depth+1)
			if err != nil {
				return Value{}, fmt.Errorf("element %d: %w", i, err)
			}
			items[i] = v
		}
		return Array(items...), nil
	case []string:
		items := make([]Value, len(t))
		for i, s := range t {
			items[i] = String(s)
		}
		return Array(items...), nil
	case map[string]any:
		keys := sortedKeys(t)
		members := make([]Member, len(keys))
		for i, k := range keys {
			v, err := valueOf(t[k], depth+1)
			if err != nil {
				return Value{}, fmt.Errorf("key %q: %w", k, err)
			}
			members[i] = Member{Key: k, Value: v}
		}
		return Object(members...), nil
	case map[string]string:
		keys := sortedKeys(t)
		members := make([]Member, len(keys))
		for i, k := range keys {
			members[i] = Member{Key: k, Value: String(t[k])}
		}
		return Object(members...), nil
	}
	return Value{}, fmt.Errorf("%w: cannot represent a Go %T as JSON; build a Value instead", ErrInvalid, x)
}

// sortedKeys is m's keys in sorted order: a Go map has none of its own, so
// ValueOf gives its members this one, as json.Marshal does.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
