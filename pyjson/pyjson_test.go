package pyjson

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestFloatRepr checks Python's repr(float); every expected string was written by hand
// from CPython's rules (shortest round-trip digits, ".0" on integral values, exponent form
// when the decimal exponent is < -4 or ≥ 16, two-digit exponents with a sign).
func TestFloatRepr(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{1, "1.0"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{0.9501, "0.9501"},
		{0.1, "0.1"},
		{1.5, "1.5"},
		{100, "100.0"},
		{1e-05, "1e-05"},
		{0.0001, "0.0001"},
		{0.00012345, "0.00012345"},
		{1.2345e-05, "1.2345e-05"},
		{1e15, "1000000000000000.0"},
		{9999999999999998, "9999999999999998.0"},
		{1e16, "1e+16"},
		{1.5e16, "1.5e+16"},
		{1e22, "1e+22"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{5e-324, "5e-324"},
		{123456789.125, "123456789.125"},
		{-2.5, "-2.5"},
		{0.30000000000000004, "0.30000000000000004"},
		{1.0 / 3, "0.3333333333333333"},
		{2.0 / 3, "0.6666666666666666"},
		{-1e-07, "-1e-07"},
		{math.NaN(), "nan"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
	} {
		if got := FloatRepr(tc.in); got != tc.want {
			t.Errorf("FloatRepr(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   float64
		want string
	}{{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"}, {2, "2.0"}} {
		if got := FloatLiteral(tc.in); got != tc.want {
			t.Errorf("FloatLiteral(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Python's "%g" % x.
	for _, tc := range []struct {
		in   float64
		want string
	}{{0.5, "0.5"}, {5, "5"}, {1, "1"}, {1.23456789, "1.23457"}, {1e-05, "1e-05"}, {1234567, "1.23457e+06"}, {math.NaN(), "nan"}, {math.Inf(-1), "-inf"}} {
		if got := FormatG(tc.in); got != tc.want {
			t.Errorf("FormatG(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDumps checks json.dumps(x, ensure_ascii=False) of parsed JSON; expected strings
// are written by hand from CPython's encoder (ESCAPE_DCT, float repr, int as is).
func TestDumps(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"b": 1, "a": 2}`},
		{`[1,2.50,1e2,-0,-0.0,1E-7,12345678901234567890123]`, `[1, 2.5, 100.0, 0, -0.0, 1e-07, 12345678901234567890123]`},
		{`"<a href=\"x\">&amp;</a> / \u00e9 日本"`, `"<a href=\"x\">&amp;</a> / é 日本"`},
		{`"tab\there\nnew\r\b\f\u0001\u001f\u007f"`, "\"tab\\there\\nnew\\r\\b\\f\\u0001\\u001f\u007f\""},
		{`"\u2028\u2029"`, "\"\u2028\u2029\""},
		{`"\ud83d\ude00 \\ \/"`, `"😀 \\ /"`},
		{`{"a":{"a":1,"b":[]},"c":{}}`, `{"a": {"a": 1, "b": []}, "c": {}}`},
		{`{"k":1,"j":2,"k":3}`, `{"k": 3, "j": 2}`},
		{`[true,false,null,NaN,Infinity,-Infinity]`, `[true, false, null, NaN, Infinity, -Infinity]`},
		{`1e400`, `Infinity`},
		{` "x" `, `"x"`},
		{"\t\r\n[ 1 , { } ]\n", `[1, {}]`},
		{`"\ud800"`, `"` + "\ufffd" + `"`},             // a lone surrogate: U+FFFD (Go strings are UTF-8)
		{`"\ud83d\u0041"`, `"` + "\ufffdA" + `"`},      // a high surrogate before a non-low escape
		{`"\udc00\ude00"`, `"` + "\ufffd\ufffd" + `"`}, // two lows never join
	} {
		v, err := Parse([]byte(tc.in))
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.in, err)
			continue
		}
		if got := Dumps(v); got != tc.want {
			t.Errorf("Dumps(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if got := v.String(); got != tc.want {
			t.Errorf("String(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestParseErrors holds Parse's syntax errors to CPython 3.13's
// JSONDecodeError: the cases and their (message, char) pairs are those of
// CPython's Lib/test/test_json/test_fail.py (test_truncated_input,
// test_unexpected_data, test_extra_data, test_linecol), plus escapes whose
// positions were derived from Modules/_json.c scanstring_unicode.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		msg  string
		char int
	}{
		{``, "Expecting value", 0},
		{`[`, "Expecting value", 1},
		{`[42`, "Expecting ',' delimiter", 3},
		{`[42,`, "Expecting value", 4},
		{`["`, "Unterminated string starting at", 1},
		{`["spam`, "Unterminated string starting at", 1},
		{`["spam"`, "Expecting ',' delimiter", 7},
		{`["spam",`, "Expecting value", 8},
		{`{`, "Expecting property name enclosed in double quotes", 1},
		{`{"`, "Unterminated string starting at", 1},
		{`{"spam`, "Unterminated string starting at", 1},
		{`{"spam"`, "Expecting ':' delimiter", 7},
		{`{"spam":`, "Expecting value", 8},
		{`{"spam":42`, "Expecting ',' delimiter", 10},
		{`{"spam":42,`, "Expecting property name enclosed in double quotes", 11},
		{`"`, "Unterminated string starting at", 0},
		{`"spam`, "Unterminated string starting at", 0},
		{`[,`, "Expecting value", 1},
		{`{"spam":[}`, "Expecting value", 9},
		{`[42:`, "Expecting ',' delimiter", 3},
		{`[42 "spam"`, "Expecting ',' delimiter", 4},
		{`[42,]`, "Illegal trailing comma before end of array", 3},
		{`{"spam":[42}`, "Expecting ',' delimiter", 11},
		{`["]`, "Unterminated string starting at", 1},
		{`["spam":`, "Expecting ',' delimiter", 7},
		{`["spam",]`, "Illegal trailing comma before end of array", 7},
		{`{:`, "Expecting property name enclosed in double quotes", 1},
		{`{,`, "Expecting property name enclosed in double quotes", 1},
		{`{42`, "Expecting property name enclosed in double quotes", 1},
		{`[{]`, "Expecting property name enclosed in double quotes", 2},
		{`{"spam",`, "Expecting ':' delimiter", 7},
		{`{"spam"}`, "Expecting ':' delimiter", 7},
		{`[{"spam"]`, "Expecting ':' delimiter", 8},
		{`{"spam":}`, "Expecting value", 8},
		{`[{"spam":]`, "Expecting value", 9},
		{`{"spam":42 "ham"`, "Expecting ',' delimiter", 11},
		{`[{"spam":42]`, "Expecting ',' delimiter", 11},
		{`{"spam":42,}`, "Illegal trailing comma before end of object", 10},
		{"{\"sp\x01am\":1}", "Invalid control character at", 4},
		{"{\"a\":1,\"a\nb\":2}", "Invalid control character at", 9},
		{`[]]`, "Extra data", 2},
		{`{}}`, "Extra data", 2},
		{`[],[]`, "Extra data", 2},
		{`{},{}`, "Extra data", 2},
		{`42,"spam"`, "Extra data", 2},
		{`"spam",42`, "Extra data", 6},
		// Numbers stop where CPython's NUMBER_RE does; the rest is the caller's error.
		{`01`, "Extra data", 1},
		{`1.`, "Extra data", 1},
		{`1e`, "Extra data", 1},
		{`[1.e5]`, "Expecting ',' delimiter", 2},
		{`-`, "Expecting value", 0},
		{`-x`, "Expecting value", 0},
		{`tru`, "Expecting value", 0},
		{`'a'`, "Expecting value", 0},
		{`nul`, "Expecting value", 0},
		// Strings: a control character, a bad escape at its backslash, a bad \u at its u.
		{"\"a\nb\"", "Invalid control character at", 2},
		{`"\x"`, `Invalid \escape`, 1},
		{`["ab\q"]`, `Invalid \escape`, 4},
		{`"\u12"`, `Invalid \uXXXX escape`, 2},
		{`"\u12x4"`, `Invalid \uXXXX escape`, 2},
		{`"\u1234`, `Invalid \uXXXX escape`, 2}, // CPython wants a character after the digits
		{`"\ud834\u12x4"`, `Invalid \uXXXX escape`, 8},
		{`"\`, "Unterminated string starting at", 0},
		{"\ufeff1", "Unexpected UTF-8 BOM (decode using utf-8-sig)", 0},
		// Positions count characters, not bytes.
		{`["日本" x]`, "Expecting ',' delimiter", 6},
	} {
		_, err := Parse([]byte(tc.in))
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want a *DecodeError matching ErrInvalid", tc.in, err)
			continue
		}
		if de.Msg != tc.msg || de.Pos != tc.char {
			t.Errorf("Parse(%q): %q at char %d, want %q at char %d", tc.in, de.Msg, de.Pos, tc.msg, tc.char)
		}
	}
	// test_linecol: (input, line, column, char).
	for _, tc := range []struct {
		in              string
		line, col, char int
	}{{"!", 1, 1, 0}, {" !", 1, 2, 1}, {"\n!", 2, 1, 1}, {"\n  \n\n     !", 4, 6, 10}} {
		_, err := Parse([]byte(tc.in))
		var de *DecodeError
		if !errors.As(err, &de) || de.Msg != "Expecting value" || de.Line != tc.line || de.Column != tc.col || de.Pos != tc.char {
			t.Errorf("Parse(%q) = %v, want Expecting value at line %d column %d (char %d)", tc.in, err, tc.line, tc.col, tc.char)
		}
	}
	if _, err := Parse([]byte(`{"a": 1,`)); err == nil || err.Error() != "pyjson: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 9 (char 8)" {
		t.Errorf("error text %q", err)
	}
}

// TestParseLimits covers what Python reports outside JSONDecodeError.
func TestParseLimits(t *testing.T) {
	for name, in := range map[string]string{
		"not UTF-8 in a string":  "\"a\xffb\"",
		"not UTF-8 outside":      "[1, \xc3]",
		"nesting past MaxDepth":  repeat("[", MaxDepth+2) + repeat("]", MaxDepth+2),
		"objects past MaxDepth":  repeat(`{"a":`, MaxDepth+2) + "1" + repeat("}", MaxDepth+2),
		"truncated UTF-8 at end": "\"\xe6\x97",
	} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	deep := repeat("[", MaxDepth) + repeat("]", MaxDepth)
	if _, err := Parse([]byte(deep)); err != nil {
		t.Errorf("%d nested arrays: %v", MaxDepth, err)
	}
}

func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	return string(out)
}

func TestRepr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"q"`, `'q'`},
		{`"it's"`, `"it's"`},
		{`"both ' and \""`, `'both \' and "'`},
		{`"a\nb\\c"`, `'a\nb\\c'`},
		{`["b"]`, `['b']`},
		{`{"x":[1,2.0,null,true]}`, `{'x': [1, 2.0, None, True]}`},
		{`"é\u00a0\u0007"`, `'é\xa0\x07'`},
		{`null`, `None`},
		{`0.10058280825614929`, "0.10058280825614929"},
		{`1.0`, "1.0"},
		{`1`, "1"},
		{`-0`, "0"},
		{`1e16`, "1e+16"},
		{`123456789012345.0`, "123456789012345.0"},
		{`0.0001`, "0.0001"},
		{`0.00001`, "1e-05"},
		{`NaN`, "nan"},
		{`-Infinity`, "-inf"},
		{`[1, "x", null, true]`, `[1, 'x', None, True]`},
		{`{"a": 1.5}`, `{'a': 1.5}`},
	} {
		v, err := Parse([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := Repr(v); got != tc.want {
			t.Errorf("Repr(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestStrRepr holds StrRepr to CPython's repr(str); the expected strings
// were written by hand from its rules (quote choice, escapes, isprintable).
func TestStrRepr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"q0", `'q0'`},
		{"", `''`},
		{"it's", `"it's"`},
		{`a"b`, `'a"b'`},
		{`both ' and "`, `'both \' and "'`},
		{"back\\slash", `'back\\slash'`},
		{"tab\tnew\nret\r", `'tab\tnew\nret\r'`},
		{"\x00\x1f\x7f", `'\x00\x1f\x7f'`},
		{"é日本😀", `'é日本😀'`},
		{"\u0085\u00a0", `'\x85\xa0'`},
		{"zero\u200bwidth", `'zero\u200bwidth'`},
		{"\U000e0001", `'\U000e0001'`},
	} {
		if got := StrRepr(tc.in); got != tc.want {
			t.Errorf("StrRepr(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got, want := StrListRepr([]string{"a", "it's"}), `['a', "it's"]`; got != want {
		t.Errorf("StrListRepr = %s, want %s", got, want)
	}
}

// TestPythonSemantics covers str(), type(x).__name__, dict-key identity and
// float() of parsed values, each written from Python's documented behavior.
func TestPythonSemantics(t *testing.T) {
	parse := func(s string) Value {
		v, err := Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct{ in, str, typ, key string }{
		{`"x"`, "x", "str", "x"},
		{`true`, "True", "bool", "true"},
		{`null`, "None", "NoneType", "null"},
		{`1.50`, "1.5", "float", "1.5"},
		{`7`, "7", "int", "7"},
		{`[1]`, "[1]", "list", "[1]"},
		{`{"a": "b"}`, "{'a': 'b'}", "dict", `{"a": "b"}`},
	} {
		v := parse(tc.in)
		if got := Str(v); got != tc.str {
			t.Errorf("Str(%s) = %q, want %q", tc.in, got, tc.str)
		}
		if got := TypeName(v); got != tc.typ {
			t.Errorf("TypeName(%s) = %q, want %q", tc.in, got, tc.typ)
		}
		if got := KeyText(v); got != tc.key {
			t.Errorf("KeyText(%s) = %q, want %q", tc.in, got, tc.key)
		}
	}
	// 1 == 1.0 == True as dict keys; "1" differs; NaN never collides.
	k1, _ := HashKey(parse(`1`))
	k2, _ := HashKey(parse(`1.0`))
	k3, _ := HashKey(parse(`true`))
	k4, _ := HashKey(parse(`"1"`))
	if k1 != k2 || k2 != k3 || k1 == k4 {
		t.Errorf("HashKey: 1 %q, 1.0 %q, True %q, '1' %q", k1, k2, k3, k4)
	}
	if _, ok := HashKey(parse(`NaN`)); ok {
		t.Error("HashKey(NaN) is hashable")
	}
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{`1.6`, 1.6, true}, {`2`, 2, true}, {`true`, 1, true}, {`false`, 0, true},
		{`"2"`, 2, true}, {`" 2 "`, 2, true}, {`"1_5"`, 15, true}, {`"1__5"`, 0, false},
		{`"0x10"`, 0, false}, {`"4."`, 4, true}, {`".75"`, 0.75, true}, {`"."`, 0, false},
		{`"--1"`, 0, false}, {`"1e"`, 0, false}, {`"-inf"`, math.Inf(-1), true},
		{`null`, 0, false}, {`[2]`, 0, false}, {`{}`, 0, false}, {`1e400`, math.Inf(1), true},
	} {
		got, ok := ToFloat(parse(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ToFloat(%s) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestValueOf(t *testing.T) {
	v, err := ValueOf(map[string]any{"b": 1, "a": []any{1.5, "x", nil, true, float32(0.5)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Dumps(v), `{"a": [1.5, "x", null, true, 0.5], "b": 1}`; got != want {
		t.Errorf("ValueOf = %s, want %s", got, want)
	}
	// A map[string]string takes its members in sorted key order too.
	if v, err := ValueOf(map[string]string{"z": "1", "m": "2", "a": "3"}); err != nil {
		t.Fatal(err)
	} else if got, want := Dumps(v), `{"a": "3", "m": "2", "z": "1"}`; got != want {
		t.Errorf("ValueOf(map[string]string) = %s, want %s", got, want)
	}
	if _, err := ValueOf(struct{}{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("ValueOf(struct) = %v, want ErrInvalid", err)
	}
	loop := []any{nil}
	loop[0] = loop
	if _, err := ValueOf(loop); !errors.Is(err, ErrInvalid) {
		t.Errorf("cyclic []any: %v, want ErrInvalid", err)
	}
}

func TestObjectKeepsFirstPositionLastValue(t *testing.T) {
	var members []Member
	for i := range 40 { // past scanLimit, so the index is used too
		members = append(members, Member{Key: string(rune('a' + i%20)), Value: Int(int64(i))})
	}
	v := Object(members...)
	if len(v.Members()) != 20 {
		t.Fatalf("%d members, want 20", len(v.Members()))
	}
	for i, m := range v.Members() {
		if m.Key != string(rune('a'+i)) || m.Value.Literal() != Int(int64(i+20)).Literal() {
			t.Errorf("member %d = %s: %s", i, m.Key, m.Value)
		}
	}
}

// FloatRepr lays the fixed form out from the exponent form's digits; strconv's
// own fixed formatting (the same shortest digits found again) is the
// reference, over random bit patterns and over four-decimal values, which the
// answers are.
func TestFloatReprFixedLayout(t *testing.T) {
	ref := func(f float64) string {
		sci := strconv.FormatFloat(f, 'e', -1, 64)
		exp, _ := strconv.Atoi(sci[strings.IndexByte(sci, 'e')+1:])
		if exp+1 <= -4 || exp+1 > 16 {
			return sci
		}
		fixed := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(fixed, ".") {
			fixed += ".0"
		}
		return fixed
	}
	seed := uint64(1)
	next := func() uint64 {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return seed
	}
	for i := range 200000 {
		var f float64
		switch i % 3 {
		case 0:
			f = math.Float64frombits(next())
		case 1:
			f = float64(int64(next()%2000000)-1000000) / 1e4
		default:
			f = float64(next()%1e6) * math.Pow(10, float64(int(next()%40)-20))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		if got, want := FloatRepr(f), ref(f); got != want {
			t.Fatalf("FloatRepr(%v) = %q, want %q", f, got, want)
		}
	}
}

// Keys are interned within a parse: a key spelled with an escape is the
// same key as one without, repeated keys keep their first place and last
// value (Python's dict), and a long key or many distinct ones parse as any.
func TestObjectKeys(t *testing.T) {
	long := strings.Repeat("k", 100)
	in := `[{"type": 1, "ty\u0070e": 2, "x": [3]}, {"type": 4}, {"` + long + `": 5, "` + long + `": 6}]`
	v, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	items := v.Items()
	if m := items[0].Members(); len(m) != 2 || m[0].Key != "type" || m[0].Value.Float64() != 2 || m[1].Key != "x" {
		t.Errorf("first object: %+v", m)
	}
	if m := items[1].Members(); len(m) != 1 || m[0].Key != "type" || m[0].Value.Float64() != 4 {
		t.Errorf("second object: %+v", m)
	}
	if m := items[2].Members(); len(m) != 1 || m[0].Key != long || m[0].Value.Float64() != 6 {
		t.Errorf("third object: %d members", len(m))
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d": %d`, i, i)
	}
	b.WriteString("}")
	v, err = Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if m := v.Members(); len(m) != 1000 || m[999].Key != "k999" || m[999].Value.Float64() != 999 {
		t.Errorf("1000 distinct keys: %d members", len(m))
	}
}
