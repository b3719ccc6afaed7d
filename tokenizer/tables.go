package tokenizer

import (
	"iter"
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
