package tokenizer

import (
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomToken is a token of 0 to ~300 bytes: long ones need a multi-byte
// length in vocabTable's keys.
func randomToken(rng *rand.Rand) string {
	n := rng.IntN(12)
	if rng.IntN(20) == 0 {
		n = 100 + rng.IntN(200)
	}
	var b strings.Builder
	for range n {
		b.WriteByte("ab▁\x00\xff "[rng.IntN(8)])
	}
	return b.String()
}

// TestVocabTableMatchesMap: the table answers every lookup as a Go map
// filled with the same puts does, through growth, repeated tokens (the
// last id wins), the empty token, long tokens and ids beyond int32.
func TestVocabTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, planned := range []int{0, 10, 5000} {
		want := map[string]int{}
		var keys []byte
		var offs, ids []int
		for i := range 5000 {
			tok := randomToken(rng)
			id := rng.IntN(1000)
			switch i % 97 {
			case 3:
				id = math.MaxInt32 + rng.IntN(10)
			case 5:
				id = math.MaxInt32 - 1
			}
			offs, ids = append(offs, len(keys)), append(ids, id)
			keys = appendVocabKey(keys, []byte(tok))
			want[tok] = id
		}
		v := newVocabTable(string(keys), planned)
		for i := range offs {
			v.put(offs[i], ids[i])
		}
		if v.len() != len(want) {
			t.Errorf("planned %d: len %d, want %d", planned, v.len(), len(want))
		}
		if got := maps.Collect(v.all()); !maps.Equal(got, want) {
			t.Errorf("planned %d: all() differs from the map (%d vs %d entries)", planned, len(got), len(want))
		}
		for tok, id := range want {
			if got, ok := v.get(tok); !ok || got != id {
				t.Fatalf("planned %d: get(%q) = %d, %v, want %d", planned, tok, got, ok, id)
			}
			if got, ok := v.getBytes([]byte(tok)); !ok || got != id {
				t.Fatalf("planned %d: getBytes(%q) = %d, %v, want %d", planned, tok, got, ok, id)
			}
		}
		for range 2000 {
			tok := randomToken(rng) + "c" // not in the table: no token has a 'c'
			if id, ok := v.get(tok); ok {
				t.Fatalf("planned %d: get(%q) = %d for a missing token", planned, tok, id)
			}
		}
		if got := vocabTableFromMap(want); !maps.Equal(maps.Collect(got.all()), want) {
			t.Errorf("vocabTableFromMap differs from its map")
		}
	}
}

// TestMergeTableMatchesMap: the same for the merge table; a later put of
// a pair overwrites its merge.
func TestMergeTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, planned := range []int{0, 100, 20000} {
		want := map[uint64]mergeTarget{}
		m := newMergeTable(planned)
		for rank := range 20000 {
			key := pairKey(rng.IntN(300), rng.IntN(300)) // many repeats
			if rank%50 == 0 {
				key = pairKey(rng.Int(), rng.Int())
			}
			target := mergeTarget{rank: int32(rank), newID: rng.Int32()}
			m.put(key, target)
			want[key] = target
		}
		if m.len() != len(want) || !maps.Equal(maps.Collect(m.all()), want) {
			t.Fatalf("planned %d: table differs from the map (%d vs %d entries)", planned, m.len(), len(want))
		}
		for key, target := range want {
			if got, ok := m.get(key); !ok || got != target {
				t.Fatalf("planned %d: get(%x) = %v, %v, want %v", planned, key, got, ok, target)
			}
		}
		if _, ok := m.get(pairKey(1000, 1000)); ok {
			t.Fatalf("planned %d: found a pair never put", planned)
		}
	}
}

// TestIDTokens: dense and sparse ids, overwrites, and ids never set.
func TestIDTokens(t *testing.T) {
	for _, tc := range []struct {
		n, maxID int
	}{{4, 3}, {4, 1 << 30}} {
		ids := newIDTokens(tc.n, tc.maxID)
		want := map[int]string{0: "a", 3: "d", tc.maxID: "z", 7: ""}
		ids.set(0, "x")
		for id, tok := range want {
			ids.set(id, tok)
		}
		if ids.len() != len(want) || !maps.Equal(maps.Collect(ids.all()), want) {
			t.Errorf("maxID %d: %v, want %v", tc.maxID, maps.Collect(ids.all()), want)
		}
		for _, id := range []int{1, 2, -1, 8} {
			if s, ok := ids.get(id); ok {
				t.Errorf("maxID %d: get(%d) = %q for an id never set", tc.maxID, id, s)
			}
		}
		if s, ok := ids.get(7); !ok || s != "" {
			t.Errorf("maxID %d: the empty token of id 7 is lost", tc.maxID)
		}
	}
}
