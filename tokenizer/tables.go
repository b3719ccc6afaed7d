package tokenizer

import (
	"encoding/binary"
	"iter"
	"math/bits"
	"math/rand/v2"
	"strings"
)

// idTokens maps vocabulary ids to tokens (id_to_token). Real files number
// their tokens 0..n-1, so it is a slice; ids far beyond the count (a
// hand-written or hostile file) go to a map, to bound memory.
type idTokens struct {
	dense  []string
	has    []bool
	sparse map[int]string
	n      int
}

// newIDTokens makes room for n tokens with ids up to maxID.
func newIDTokens(n, maxID int) *idTokens {
	t := &idTokens{}
	if maxID < 2*n+1024 {
		t.dense = make([]string, maxID+1)
		t.has = make([]bool, maxID+1)
	} else {
		t.sparse = make(map[int]string, n)
	}
	return t
}

// set gives id its token; a later set of the same id wins.
func (t *idTokens) set(id int, tok string) {
	if id >= 0 && id < len(t.dense) {
		if !t.has[id] {
			t.has[id] = true
			t.n++
		}
		t.dense[id] = tok
		return
	}
	if t.sparse == nil {
		t.sparse = map[int]string{}
	}
	if _, ok := t.sparse[id]; !ok {
		t.n++
	}
	t.sparse[id] = tok
}

func (t *idTokens) get(id int) (string, bool) {
	if id >= 0 && id < len(t.dense) {
		return t.dense[id], t.has[id]
	}
	s, ok := t.sparse[id]
	return s, ok
}

func (t *idTokens) len() int { return t.n }

// all yields every id with its token, dense ids in order.
func (t *idTokens) all() iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for id, ok := range t.has {
			if ok && !yield(id, t.dense[id]) {
				return
			}
		}
		for id, s := range t.sparse {
			if !yield(id, s) {
				return
			}
		}
	}
}

// mergeTable maps a pair of ids (pairKey) to its merge. It is built once
// and then only read, so it is a flat open-addressing table with linear
// probing: one 16-byte slot per probe, cheaper to build and to read than a
// Go map of 580k entries. The hash is multiply-shift with a random odd
// multiplier per table, so that a crafted file cannot choose colliding ids.
type mergeTable struct {
	slots []mergeSlot
	shift uint8
	mul   uint64
	n     int
}

type mergeSlot struct {
	key   uint64
	rank1 int32 // rank+1; 0 marks an empty slot
	newID int32
}

// newMergeTable makes a table for up to n merges, at most 3/4 full.
func newMergeTable(n int) *mergeTable {
	size := 8
	for size*3 < n*4 {
		size *= 2
	}
	return &mergeTable{
		slots: make([]mergeSlot, size),
		shift: uint8(64 - bits.TrailingZeros(uint(size))),
		mul:   rand.Uint64() | 1,
	}
}

func (t *mergeTable) home(key uint64) uint64 { return (key * t.mul) >> t.shift }

// put sets the merge of key; a later put of the same key overwrites, as a
// later duplicate does in the Rust HashMap collect.
func (t *mergeTable) put(key uint64, m mergeTarget) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.rank1 == 0 {
			*s = mergeSlot{key: key, rank1: m.rank + 1, newID: m.newID}
			t.n++
			if t.n*4 > len(t.slots)*3 {
				t.grow()
			}
			return
		}
		if s.key == key {
			s.rank1, s.newID = m.rank+1, m.newID
			return
		}
	}
}

func (t *mergeTable) grow() {
	old := t.slots
	bigger := newMergeTable(2 * t.n)
	for _, s := range old {
		if s.rank1 != 0 {
			bigger.put(s.key, mergeTarget{rank: s.rank1 - 1, newID: s.newID})
		}
	}
	*t = *bigger
}

func (t *mergeTable) get(key uint64) (mergeTarget, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.rank1 == 0 {
			return mergeTarget{}, false
		}
		if s.key == key {
			return mergeTarget{rank: s.rank1 - 1, newID: s.newID}, true
		}
	}
}

func (t *mergeTable) len() int { return t.n }

// all yields every pair key with its merge, in no particular order.
func (t *mergeTable) all() iter.Seq2[uint64, mergeTarget] {
	return func(yield func(uint64, mergeTarget) bool) {
		for _, s := range t.slots {
			if s.rank1 != 0 && !yield(s.key, mergeTarget{rank: s.rank1 - 1, newID: s.newID}) {
				return
			}
		}
	}
}

// vocabTable is model.vocab: token → id. All tokens live in one string
// (keys), and each 32-byte slot of the open-addressing table holds the
// first 16 bytes of its token inline, so that a lookup of a token of up to
// 16 bytes — nearly every token — touches one slot and no other memory;
// a Go map of 256k strings touches its control word, the slot and the
// string's bytes. Loading resolves three lookups per merge (1.7M for the
// Gemma tokenizer), and Encode one per character, so this pays in both.
// The hash is wyhash's multiply-mix with random secrets per table, so a
// crafted file cannot choose colliding tokens.
type vocabTable struct {
	keys  string
	slots []vocabSlot
	sec   [3]uint64
	n     int
}

type vocabSlot struct {
	k0, k1 uint64 // the token's first 16 bytes, zero-padded
	id     int
	off    uint32 // the token is keys[off : off+n1-1]
	n1     uint32 // length+1; 0 marks an empty slot
}

// newVocabTable makes a table for up to n tokens held in keys, at most
// 3/4 full.
func newVocabTable(keys string, n int) *vocabTable {
	size := 16
	for size*3 < n*4 {
		size *= 2
	}
	return &vocabTable{
		keys:  keys,
		slots: make([]vocabSlot, size),
		sec:   [3]uint64{rand.Uint64() | 1, rand.Uint64() | 1, rand.Uint64() | 1},
	}
}

// vocabTableFromMap builds the table of a decoded vocabulary.
func vocabTableFromMap(m map[string]int) *vocabTable {
	size := 0
	for tok := range m {
		size += len(tok)
	}
	var keys strings.Builder
	keys.Grow(size)
	type entry struct{ off, n, id int }
	entries := make([]entry, 0, len(m))
	for tok, id := range m {
		entries = append(entries, entry{keys.Len(), len(tok), id})
		keys.WriteString(tok)
	}
	t := newVocabTable(keys.String(), len(m))
	for _, e := range entries {
		t.put(e.off, e.n, e.id)
	}
	return t
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// head returns the first 16 bytes of s, zero-padded, as two words.
func head[S string | []byte](s S) (k0, k1 uint64) {
	var buf [16]byte
	copy(buf[:], s)
	return binary.LittleEndian.Uint64(buf[:8]), binary.LittleEndian.Uint64(buf[8:])
}

func vocabHash[S string | []byte](sec *[3]uint64, s S, k0, k1 uint64) uint64 {
	h := mix(k0^sec[0], k1^sec[1])
	for rest := s[min(16, len(s)):]; len(rest) > 0; {
		c0, c1 := head(rest)
		rest = rest[min(16, len(rest)):]
		h = mix(h^c0^sec[2], c1^sec[0])
	}
	return mix(h^uint64(len(s)), sec[2])
}

// put adds keys[off:off+n] with its id; a later put of the same token
// overwrites its id, as a repeated key does in encoding/json's map decoding.
func (t *vocabTable) put(off, n, id int) {
	key := t.keys[off : off+n]
	k0, k1 := head(key)
	mask := uint64(len(t.slots) - 1)
	for i := vocabHash(&t.sec, key, k0, k1) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.n1 == 0 {
			*s = vocabSlot{k0: k0, k1: k1, id: id, off: uint32(off), n1: uint32(n + 1)}
			t.n++
			if t.n*4 > len(t.slots)*3 {
				t.grow()
			}
			return
		}
		if s.k0 == k0 && s.k1 == k1 && int(s.n1) == n+1 && (n <= 16 || t.keys[s.off+16:int(s.off)+n] == key[16:]) {
			s.id = id
			return
		}
	}
}

func (t *vocabTable) grow() {
	bigger := newVocabTable(t.keys, 2*t.n)
	for _, s := range t.slots {
		if s.n1 != 0 {
			bigger.put(int(s.off), int(s.n1-1), s.id)
		}
	}
	*t = *bigger
}

func (t *vocabTable) get(tok string) (int, bool) { return vocabGet(t, tok) }

func (t *vocabTable) getBytes(tok []byte) (int, bool) { return vocabGet(t, tok) }

func vocabGet[S string | []byte](t *vocabTable, tok S) (int, bool) {
	k0, k1 := head(tok)
	n1 := uint32(len(tok) + 1)
	mask := uint64(len(t.slots) - 1)
	for i := vocabHash(&t.sec, tok, k0, k1) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.n1 == 0 {
			return 0, false
		}
		if s.k0 == k0 && s.k1 == k1 && s.n1 == n1 && (n1 <= 17 || t.keys[s.off+16:s.off+n1-1] == string(tok[16:])) {
			return s.id, true
		}
	}
}

func (t *vocabTable) len() int { return t.n }

// all yields every token with its id, in no particular order.
func (t *vocabTable) all() iter.Seq2[string, int] {
	return func(yield func(string, int) bool) {
		for _, s := range t.slots {
			if s.n1 != 0 && !yield(t.keys[s.off:s.off+s.n1-1], s.id) {
				return
			}
		}
	}
}
