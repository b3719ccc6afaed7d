package pyjson

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// wantPrefix is the reference for DumpsPrefix: the full serialisation cut to its
// longest valid UTF-8 prefix of at most limit bytes.
func wantPrefix(full string, limit int) (string, bool) {
	if len(full) <= limit {
		return full, true
	}
	for k := max(limit, 0); ; k-- {
		if utf8.ValidString(full[:k]) {
			return full[:k], false
		}
	}
}

// wantSuffix is the reference for DumpsSuffix: the longest valid UTF-8 suffix of at
// most limit bytes.
func wantSuffix(full string, limit int) (string, bool) {
	if len(full) <= limit {
		return full, true
	}
	for k := len(full) - max(limit, 0); ; k++ {
		if utf8.ValidString(full[k:]) {
			return full[k:], false
		}
	}
}

// checkBounded holds DumpsPrefix and DumpsSuffix of v to Dumps(v) at every limit
// from 0 to past the whole, byte for byte.
func checkBounded(t *testing.T, v Value) {
	t.Helper()
	full := Dumps(v)
	for limit := -1; limit <= len(full)+2; limit++ {
		got, complete := DumpsPrefix(v, limit)
		want, wantComplete := wantPrefix(full, limit)
		if got != want || complete != wantComplete {
			t.Fatalf("DumpsPrefix(%s, %d) = %q, %v; want %q, %v", full, limit, got, complete, want, wantComplete)
		}
		got, complete = DumpsSuffix(v, limit)
		want, wantComplete = wantSuffix(full, limit)
		if got != want || complete != wantComplete {
			t.Fatalf("DumpsSuffix(%s, %d) = %q, %v; want %q, %v", full, limit, got, complete, want, wantComplete)
		}
	}
}

// randomValue builds a value of every kind, with strings that need escaping and
// multi-byte characters, nested up to depth.
func randomValue(r *rand.Rand, depth int) Value {
	pieces := []string{"a", "é", "😀", "\"", "\\", "\n", "\x01", "\t", " ", "<&>", "\u2028", "z"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	kind := r.IntN(7)
	if depth <= 0 {
		kind = r.IntN(5)
	}
	switch kind {
	case 0:
		return Null()
	case 1:
		return Bool(r.IntN(2) == 0)
	case 2:
		return Int(r.Int64N(2_000_001) - 1_000_000)
	case 3:
		return Float(r.NormFloat64() * 1e3)
	case 4:
		return String(str())
	case 5:
		items := make([]Value, r.IntN(5))
		for i := range items {
			items[i] = randomValue(r, depth-1)
		}
		return Array(items...)
	default:
		members := make([]Member, r.IntN(5))
		for i := range members {
			members[i] = Member{Key: str() + fmt.Sprint(i), Value: randomValue(r, depth-1)}
		}
		return Object(members...)
	}
}

func TestDumpsBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		checkBounded(t, randomValue(r, 4))
	}
	// A long string leaf is cut before it is escaped, from either end.
	long := strings.Repeat("ab\"é\n", 1000)
	checkBounded(t, Array(String(long), Int(1), Object(Member{Key: long, Value: String(long)})))
}

// FuzzDumpsBounded holds the bounded writers to Dumps on any value Parse accepts.
func FuzzDumpsBounded(f *testing.F) {
	for _, seed := range []string{`null`, `[1, "a\u00e9", {"k": [true, 2.50]}]`, `"\ud83d\ude00\n"`, `{"a": {"b": []}, "c": "\\"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		checkBounded(t, v)
	})
}
