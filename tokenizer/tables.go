package tokenizer

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math"
	"math/bits"
	"math/rand/v2"
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
// probing over a power of two of 16-byte slots. With Gemma's 580k merges it
// measured here 34 ms to build in rank order and 54 ms for 1.2M lookups
// (half of them misses, as in Encode), where a Go map took 87 and 109 ms
// (and a size of exactly 4/3 n with multiply-high reduction, 56 and 101).
// The hash is multiply-shift with a random odd multiplier per table, so
// that a crafted file cannot choose colliding ids.
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

// vocabTable is model.vocab: token → id. Loading resolves three lookups
// per merge (1.7M for the Gemma tokenizer) and Encode one per character,
// so it is built for lookups: all tokens live in one string, each behind a
// uvarint length, and the open-addressing table (linear probing, at most
// 3/4 full, any size through multiply-high reduction) holds 12-byte slots
// of hash tag, token offset and id. A lookup touches one slot and, when the
// tag matches, the token's bytes: 4 MB of slots and 2.6 MB of tokens for
// Gemma's 256k, where a Go map of the same strings spans 8 MB of groups and
// the strings, and measured ~1.6× slower to look up and ~2× slower to
// build here. maphash's seeded hash keeps crafted files from choosing
// colliding tokens.
type vocabTable struct {
	keys  string // uvarint length, token bytes; one after the other
	slots []vocabSlot
	size  uint64
	seed  maphash.Seed
	n     int
	// big holds ids ≥ 2³¹-1 (which only a hand-made file has), by
	// token offset; their slot's id is bigID.
	big map[uint32]int
}

type vocabSlot struct {
	tag uint32 // 0 marks an empty slot
	off uint32 // of the token's length in keys
	id  int32
}

const bigID = math.MaxInt32

// appendVocabKey appends one token to a keys buffer.
func appendVocabKey(keys []byte, tok []byte) []byte {
	return append(binary.AppendUvarint(keys, uint64(len(tok))), tok...)
}

// newVocabTable makes a table for up to n tokens held in keys.
func newVocabTable(keys string, n int) *vocabTable {
	size := uint64(n) + uint64(n)/3 + 16
	return &vocabTable{keys: keys, slots: make([]vocabSlot, size), size: size, seed: maphash.MakeSeed()}
}

// vocabTableFromMap builds the table of a decoded vocabulary; nil when its
// tokens take more than the 4 GiB that slot offsets reach.
func vocabTableFromMap(m map[string]int) *vocabTable {
	size := 0
	for tok := range m {
		size += len(tok) + binary.MaxVarintLen64
	}
	if uint64(size) > math.MaxUint32 {
		return nil
	}
	keys := make([]byte, 0, size)
	type entry struct{ off, id int }
	entries := make([]entry, 0, len(m))
	for tok, id := range m {
		entries = append(entries, entry{len(keys), id})
		keys = append(binary.AppendUvarint(keys, uint64(len(tok))), tok...)
	}
	t := newVocabTable(string(keys), len(m))
	for _, e := range entries {
		t.put(e.off, e.id)
	}
	return t
}

// key returns the token at off in keys.
func (t *vocabTable) key(off uint32) string {
	if n := uint32(t.keys[off]); n < 0x80 {
		return t.keys[off+1 : off+1+n]
	}
	return t.longKey(off)
}

func (t *vocabTable) longKey(off uint32) string {
	n, w := binary.Uvarint([]byte(t.keys[off:min(int(off)+binary.MaxVarintLen64, len(t.keys))]))
	return t.keys[off+uint32(w) : off+uint32(w)+uint32(n)]
}

func (t *vocabTable) home(h uint64) uint64 {
	hi, _ := bits.Mul64(h, t.size)
	return hi
}

// put adds the token at off in keys with its id; a later put of the same
// token overwrites its id, as a repeated key does in encoding/json's map
// decoding.
func (t *vocabTable) put(off, id int) {
	key := t.key(uint32(off))
	h := maphash.String(t.seed, key)
	tag := uint32(h) | 1
	slotID := int32(bigID)
	if id >= 0 && id < bigID {
		slotID = int32(id)
	}
	for i := t.home(h); ; i++ {
		if i == t.size {
			i = 0
		}
		s := &t.slots[i]
		if s.tag == 0 {
			*s = vocabSlot{tag: tag, off: uint32(off), id: slotID}
			t.n++
			break
		}
		if s.tag == tag && t.key(s.off) == key {
			if s.id == bigID {
				delete(t.big, s.off)
			}
			s.id = slotID
			off = int(s.off)
			break
		}
	}
	if slotID == bigID {
		if t.big == nil {
			t.big = map[uint32]int{}
		}
		t.big[uint32(off)] = id
	}
	if uint64(t.n)*4 > t.size*3 {
		t.grow()
	}
}

func (t *vocabTable) grow() {
	bigger := newVocabTable(t.keys, 2*t.n)
	for off, id := range t.all2() {
		bigger.put(int(off), id)
	}
	*t = *bigger
}

func (t *vocabTable) get(tok string) (int, bool) {
	return vocabFind(t, maphash.String(t.seed, tok), tok)
}

func (t *vocabTable) getBytes(tok []byte) (int, bool) {
	return vocabFind(t, maphash.Bytes(t.seed, tok), tok)
}

// vocabFind is generic so that comparing a []byte token does not copy it.
func vocabFind[S string | []byte](t *vocabTable, h uint64, tok S) (int, bool) {
	tag := uint32(h) | 1
	for i := t.home(h); ; i++ {
		if i == t.size {
			i = 0
		}
		s := &t.slots[i]
		if s.tag == 0 {
			return 0, false
		}
		if s.tag != tag {
			continue
		}
		// t.key(s.off), inlined: nearly every token is shorter than
		// 0x80 bytes, and its length byte rules most tags' false
		// matches out before the bytes are compared.
		var key string
		if n := uint32(t.keys[s.off]); n < 0x80 {
			if int(n) != len(tok) {
				continue
			}
			key = t.keys[s.off+1 : s.off+1+n]
		} else {
			key = t.longKey(s.off)
		}
		if key == string(tok) {
			if s.id == bigID {
				return t.big[s.off], true
			}
			return int(s.id), true
		}
	}
}

func (t *vocabTable) len() int { return t.n }

// all2 yields each token's offset in keys with its id.
func (t *vocabTable) all2() iter.Seq2[uint32, int] {
	return func(yield func(uint32, int) bool) {
		for _, s := range t.slots {
			if s.tag == 0 {
				continue
			}
			id := int(s.id)
			if s.id == bigID {
				id = t.big[s.off]
			}
			if !yield(s.off, id) {
				return
			}
		}
	}
}

// all yields every token with its id, in no particular order.
func (t *vocabTable) all() iter.Seq2[string, int] {
	return func(yield func(string, int) bool) {
		for off, id := range t.all2() {
			if !yield(t.key(off), id) {
				return
			}
		}
	}
}
