package weights

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/laya-metal/laya/internal/pyfmt"
)

// The configs are read by upstream with Python's json module and float(),
// so the parts of their semantics that change results are reproduced here:
// duplicate keys (the last value wins, at the first key's position), the
// NaN/Infinity literals Python accepts, float() parsing and repr() for
// warning texts.

// Python's json module accepts these bare literals; encoding/json does not.
// They are rewritten to marked strings before decoding and recognised by
// pyFloat and pyRepr.
const pyLiteralMark = "\x00pyjson:"

// pyJSONCompat rewrites bare NaN, Infinity and -Infinity outside strings.
func pyJSONCompat(src []byte) []byte {
	if !bytes.Contains(src, []byte("NaN")) && !bytes.Contains(src, []byte("Infinity")) {
		return src
	}
	var out bytes.Buffer
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			out.WriteByte(c)
			if c == '\\' && i+1 < len(src) {
				i++
				out.WriteByte(src[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out.WriteByte(c)
			continue
		}
		for _, lit := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(src[i:], []byte(lit)) {
				quoted, _ := json.Marshal(pyLiteralMark + lit)
				out.Write(quoted)
				i += len(lit) - 1
				goto next
			}
		}
		out.WriteByte(c)
	next:
	}
	return out.Bytes()
}

// pyLiteral reports which Python literal a marked string stands for.
func pyLiteral(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return strings.CutPrefix(s, pyLiteralMark)
}

// pyObject decodes a JSON object the way Python's json.loads builds a dict:
// keys in first-seen order, a repeated key overwriting the earlier value.
func pyObject(raw json.RawMessage) (keys []string, values map[string]json.RawMessage, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object: %s", truncate(raw))
	}
	values = map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := values[key]; !dup {
			keys = append(keys, key)
		}
		values[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, nil, fmt.Errorf("trailing data after the JSON object")
	}
	return keys, values, nil
}

// pyArray splits a JSON array into its raw elements.
func pyArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	return items, true
}

// pyFloat mirrors Python float(x) for a JSON value: numbers, bools and
// numeric strings convert; null, lists, objects and other strings fail.
func pyFloat(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	if lit, ok := pyLiteral(raw); ok {
		return pyFloatString(lit)
	}
	switch raw[0] {
	case 't':
		return 1, string(raw) == "true"
	case 'f':
		return 0, string(raw) == "false"
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		return pyFloatString(s)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		// A huge JSON integer makes Python's float() raise OverflowError
		// and a huge JSON float is inf; both end up non-finite here, which
		// the temperature clamp treats as invalid.
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// pyFloatString is Python's float(str): surrounding whitespace is ignored,
// "_" may separate digits, inf/infinity/nan in any case with a sign; hex
// and Go-only spellings are rejected.
func pyFloatString(s string) (float64, bool) {
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

// pyRepr renders a JSON value as Python's repr() of what json.loads built,
// for warning texts ("choice:11+=0.1006 -> 0.5", "temperature[0]=None -> 1").
func pyRepr(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if lit, ok := pyLiteral(raw); ok {
		switch lit {
		case "NaN":
			return "nan"
		case "Infinity":
			return "inf"
		}
		return "-inf"
	}
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case 'n':
		return "None"
	case 't':
		return "True"
	case 'f':
		return "False"
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return string(raw)
		}
		return pyfmt.StrRepr(s)
	case '[':
		items, _ := pyArray(raw)
		parts := make([]string, len(items))
		for i, it := range items {
			parts[i] = pyRepr(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case '{':
		keys, values, err := pyObject(raw)
		if err != nil {
			return string(raw)
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = pyfmt.StrRepr(k) + ": " + pyRepr(values[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	// A number: Python keeps integers as int, anything with a fraction or
	// exponent becomes a float.
	if !bytes.ContainsAny(raw, ".eE") {
		if v, ok := pyIntRepr(string(raw)); ok {
			return v
		}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !math.IsInf(f, 0) {
		return string(raw)
	}
	return pyfmt.FloatRepr(f)
}

// pyIntRepr normalises a JSON integer literal ("-0" is int 0 in Python).
func pyIntRepr(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return "", false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	if strings.Trim(digits, "0") == "" {
		return "0", true
	}
	if neg {
		return "-" + digits, true
	}
	return digits, true
}

// pyG is Python's "%g" (6 significant digits, trailing zeros dropped).
func pyG(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}
