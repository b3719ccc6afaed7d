package pyjson

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
			v, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := v.String(); got != tc.want {
				t.Errorf("Parse:\n got %s\nwant %s", got, tc.want)
			}
			// Object from the same pairs agrees with the parser.
			var pairs []Member
			raw := strings.TrimSuffix(strings.TrimPrefix(tc.in, "{"), "}")
			for _, kv := range strings.Split(raw, ", ") {
				if kv == "" {
					continue
				}
				k, val, _ := strings.Cut(kv, ": ")
				pv, err := Parse([]byte(val))
				if err != nil {
					t.Fatal(err)
				}
				pairs = append(pairs, Member{Key: strings.Trim(k, `"`), Value: pv})
			}
			if got := Object(pairs...).String(); got != tc.want {
				t.Errorf("Object:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestValueOfCycle: a self-referencing Go value is an error, not a fatal stack overflow.
func TestValueOfCycle(t *testing.T) {
	loop := []any{nil}
	loop[0] = loop
	if _, err := ValueOf(loop); !errors.Is(err, ErrInvalid) {
		t.Errorf("cyclic []any: %v, want ErrInvalid", err)
	}
	m := map[string]any{}
	m["self"] = m
	if _, err := ValueOf(m); !errors.Is(err, ErrInvalid) {
		t.Errorf("cyclic map: %v, want ErrInvalid", err)
	}
}
