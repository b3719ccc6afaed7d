package laya

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Repeated object keys keep their first position and take their last value, as
// a Python dict does, both below and above the member count where the builder
// switches from scanning to an index.
func TestObjectRepeatedKeys(t *testing.T) {
	wide := func(n int, tail string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			fmt.Fprintf(&b, `"k%d": %d, `, i, i)
		}
		b.WriteString(tail)
		b.WriteByte('}')
		return b.String()
	}
	tests := []struct {
		name, in, want string
	}{
		{"empty", `{}`, `{}`},
		{"repeat", `{"a": 1, "b": 2, "a": 3}`, `{"a": 3, "b": 2}`},
		{"repeat at the limit", wide(scanLimit-1, `"k0": "x", "z": 0`), strings.Replace(wide(scanLimit-1, `"z": 0`), `"k0": 0`, `"k0": "x"`, 1)},
		{"repeat past the limit", wide(3*scanLimit, `"k1": "x", "k40": "y", "z": 0, "k0": "w"`),
			strings.NewReplacer(`"k0": 0`, `"k0": "w"`, `"k1": 1`, `"k1": "x"`, `"k40": 40`, `"k40": "y"`).Replace(wide(3*scanLimit, `"z": 0`))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ParseJSON([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := v.String(); got != tc.want {
				t.Errorf("ParseJSON:\n got %s\nwant %s", got, tc.want)
			}
			// ObjectValue from the same pairs agrees with the parser.
			var pairs []Member
			raw := strings.TrimSuffix(strings.TrimPrefix(tc.in, "{"), "}")
			for _, kv := range strings.Split(raw, ", ") {
				if kv == "" {
					continue
				}
				k, val, _ := strings.Cut(kv, ": ")
				pv, err := ParseJSON([]byte(val))
				if err != nil {
					t.Fatal(err)
				}
				pairs = append(pairs, Member{strings.Trim(k, `"`), pv})
			}
			if got := ObjectValue(pairs...).String(); got != tc.want {
				t.Errorf("ObjectValue:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// BenchmarkParseWideObject parses a request whose state has 100 000 keys: linear
// work (a scan per key made it take minutes).
func BenchmarkParseWideObject(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"state": {`)
	for i := range 100000 {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, `"k%d": %d`, i, i)
	}
	sb.WriteString(`}, "questions": {}}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseRequest(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestValueOfCycle: a self-referencing Go value is an error, not a fatal stack overflow.
func TestValueOfCycle(t *testing.T) {
	loop := []any{nil}
	loop[0] = loop
	if _, err := ValueOf(loop); !errors.Is(err, ErrInvalidJSON) {
		t.Errorf("cyclic []any: %v, want ErrInvalidJSON", err)
	}
	m := map[string]any{}
	m["self"] = m
	if _, err := ValueOf(m); !errors.Is(err, ErrInvalidJSON) {
		t.Errorf("cyclic map: %v, want ErrInvalidJSON", err)
	}
}
