package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe is the BPE model of tokenizers (models/bpe/model.rs): per word, one
// symbol per character (or per byte through byte_fallback), then merges by
// rank until none applies.
type bpe struct {
	vocab       *vocabTable
	vocabR      *idTokens
	merges      *mergeTable
	unkID       int // -1 when the model has no unk_token
	fuseUnk     bool
	byteFall    bool
	ignoreMerge bool
	prefix      string // continuing_subword_prefix
	suffix      string // end_of_word_suffix
	// byteIDs[b] is the id of the "<0xNN>" token for byte b, -1 if absent.
	byteIDs [256]int

	cache wordCache
}

type mergeTarget struct {
	rank  int32
	newID int32
}

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

type bpeJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

func newModel(raw json.RawMessage) (*bpe, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("model: missing: %w", ErrInvalid)
	}
	var m bpeJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("model: %v: %w", err, ErrInvalid)
	}
	return buildModel(&m, nil, nil, func(b *bpe) error {
		pairs, err := parseMerges(m.Merges)
		if err != nil {
			return err
		}
		return b.setMerges(len(pairs), func(rank int) (string, string) { return pairs[rank][0], pairs[rank][1] })
	})
}

// buildModel checks the decoded model and builds its tables. vocab and
// byID, when not nil, are the vocabulary and id_to_token already built (by
// the fast path, which has checked the ids), else they are built from
// m.Vocab. mergesFrom fills b.merges once everything else is in place, as
// the merges are checked last.
func buildModel(m *bpeJSON, vocab *vocabTable, byID *idTokens, mergesFrom func(b *bpe) error) (*bpe, error) {
	if m.Type != "BPE" && !(m.Type == "" && m.Merges != nil) {
		return nil, fmt.Errorf("model: type %q: only BPE is implemented: %w", m.Type, ErrUnsupported)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		// Dropout makes encoding random; inference never uses it.
		return nil, fmt.Errorf("model: BPE dropout %v: %w", *m.Dropout, ErrUnsupported)
	}
	b := &bpe{
		vocab:       vocab,
		vocabR:      byID,
		unkID:       -1,
		fuseUnk:     m.FuseUnk,
		byteFall:    m.ByteFallback,
		ignoreMerge: m.IgnoreMerges,
	}
	if b.vocab == nil {
		maxID := -1
		for tok, id := range m.Vocab {
			if id < 0 {
				return nil, fmt.Errorf("model.vocab: token %q has negative id %d: %w", tok, id, ErrInvalid)
			}
			maxID = max(maxID, id)
		}
		if b.vocab = vocabTableFromMap(m.Vocab); b.vocab == nil {
			return nil, fmt.Errorf("model.vocab: over 4 GiB of tokens: %w", ErrUnsupported)
		}
		// Of several tokens with one id, one is kept, as upstream's
		// HashMap inversion keeps one.
		b.vocabR = newIDTokens(len(m.Vocab), maxID)
		for tok, id := range m.Vocab {
			b.vocabR.set(id, tok)
		}
	}
	if m.ContinuingSubwordPrefix != nil {
		b.prefix = *m.ContinuingSubwordPrefix
	}
	if m.EndOfWordSuffix != nil {
		b.suffix = *m.EndOfWordSuffix
	}
	if m.UnkToken != nil {
		id, ok := b.vocab.get(*m.UnkToken)
		if !ok {
			return nil, fmt.Errorf("model.unk_token %q is not in the vocabulary: %w", *m.UnkToken, ErrInvalid)
		}
		b.unkID = id
	}
	for i := range b.byteIDs {
		b.byteIDs[i] = -1
		// Rust formats the byte with {:#04X}: "<0x0A>", upper-case digits.
		if id, ok := b.vocab.get(fmt.Sprintf("<0x%02X>", i)); ok {
			b.byteIDs[i] = id
		}
	}
	if err := mergesFrom(b); err != nil {
		return nil, err
	}
	return b, nil
}

// setMerges resolves n merges, pair(rank) giving the two tokens of each,
// into b.merges.
func (b *bpe) setMerges(n int, pair func(rank int) (string, string)) error {
	b.merges = newMergeTable(n)
	for rank := range n {
		left, right := pair(rank)
		key, target, err := b.resolveMerge(rank, left, right)
		if err != nil {
			return err
		}
		// A later duplicate overwrites an earlier one, as in the Rust HashMap collect.
		b.merges.put(key, target)
	}
	return nil
}

// resolveMerge gives the table entry of merge rank (left, right).
func (b *bpe) resolveMerge(rank int, left, right string) (uint64, mergeTarget, error) {
	a, ok := b.vocab.get(left)
	if !ok {
		return 0, mergeTarget{}, fmt.Errorf("model.merges[%d]: token %q is not in the vocabulary: %w", rank, left, ErrInvalid)
	}
	c, ok := b.vocab.get(right)
	if !ok {
		return 0, mergeTarget{}, fmt.Errorf("model.merges[%d]: token %q is not in the vocabulary: %w", rank, right, ErrInvalid)
	}
	// With a continuing-subword prefix the right part loses it when
	// merged (models/bpe/model.rs, BpeBuilder::build).
	tail := right
	if b.prefix != "" && strings.HasPrefix(tail, b.prefix) {
		tail = tail[len(b.prefix):]
	}
	n, ok := b.vocab.get(left + tail)
	if !ok {
		return 0, mergeTarget{}, fmt.Errorf("model.merges[%d]: merged token %q is not in the vocabulary: %w", rank, left+tail, ErrInvalid)
	}
	return pairKey(a, c), mergeTarget{rank: int32(rank), newID: int32(n)}, nil
}

// parseMerges accepts both serializations: "a b" strings (tokenizers < 0.20)
// and ["a", "b"] pairs (newer files).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var asStrings []string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		out := make([][2]string, len(asStrings))
		for i, s := range asStrings {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("model.merges[%d]: %q is not two tokens separated by one space: %w", i, s, ErrInvalid)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var asPairs [][]string
	if err := json.Unmarshal(raw, &asPairs); err != nil {
		return nil, fmt.Errorf("model.merges: neither \"a b\" strings nor [a, b] pairs: %v: %w", err, ErrInvalid)
	}
	out := make([][2]string, len(asPairs))
	for i, p := range asPairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: %d elements, want 2: %w", i, len(p), ErrInvalid)
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// maxCachedWordLen mirrors MAX_LENGTH in models/bpe/model.rs: longer words
// are not cached.
const maxCachedWordLen = 256

// tokenize appends the ids of one pre-tokenized word to out.
func (b *bpe) tokenize(word string, out []int) []int {
	if word == "" {
		return out
	}
	if b.ignoreMerge {
		if id, ok := b.vocab.get(word); ok {
			return append(out, id)
		}
	}
	if ids, ok := b.cache.get(word); ok {
		return append(out, ids...)
	}
	start := len(out)
	out = b.mergeWord(word, out)
	if len(word) < maxCachedWordLen {
		b.cache.put(word, out[start:])
	}
	return out
}

// symbol is one node of the doubly linked list of a word being merged.
type symbol struct {
	id         int32
	prev, next int32 // -1 at the ends
	gone       bool  // merged into its left neighbour
}

type mergeCand struct {
	rank  int32
	pos   int32
	newID int32
}

// mergeWord is merge_word + Word::merge_all of tokenizers: characters (or
// byte-fallback bytes, or unk runs) become symbols, then a min-heap keyed by
// (rank, position) applies merges; stale heap entries are skipped by
// re-checking the pair. O(n log n) in the word length.
func (b *bpe) mergeWord(word string, out []int) []int {
	syms := make([]symbol, 0, utf8.RuneCountInString(word))
	add := func(id int) {
		n := int32(len(syms))
		if n > 0 {
			syms[n-1].next = n
		}
		syms = append(syms, symbol{id: int32(id), prev: n - 1, next: -1})
	}
	unk := -1 // pending unk id, flushed before the next known symbol
	for i := 0; i < len(word); {
		_, size := utf8.DecodeRuneInString(word[i:])
		s := word[i : i+size]
		isFirst, isLast := i == 0, i+size == len(word)
		i += size
		if (!isFirst && b.prefix != "") || (isLast && b.suffix != "") {
			if !isFirst {
				s = b.prefix + s
			}
			if isLast {
				s += b.suffix
			}
		}
		if id, ok := b.vocab.get(s); ok {
			if unk >= 0 {
				add(unk)
				unk = -1
			}
			add(id)
			continue
		}
		if b.byteFall {
			all := true
			for j := 0; j < len(s); j++ {
				if b.byteIDs[s[j]] < 0 {
					all = false
					break
				}
			}
			if all {
				// A pending unk is not flushed here: tokenizers adds it
				// only before the next vocabulary hit or at the end.
				for j := 0; j < len(s); j++ {
					add(b.byteIDs[s[j]])
				}
				continue
			}
		}
		if b.unkID >= 0 {
			if unk >= 0 && !b.fuseUnk {
				add(unk)
			}
			unk = b.unkID
		}
		// Without unk_token an unknown character is dropped, as upstream.
	}
	if unk >= 0 {
		add(unk)
	}

	if len(syms) > 1 && b.merges.len() > 0 {
		h := make(mergeHeap, 0, len(syms))
		for p := 0; p+1 < len(syms); p++ {
			if m, ok := b.merges.get(pairKey(int(syms[p].id), int(syms[p+1].id))); ok {
				h = append(h, mergeCand{rank: m.rank, pos: int32(p), newID: m.newID})
			}
		}
		h.init()
		for len(h) > 0 {
			top := h.pop()
			cur := &syms[top.pos]
			if cur.gone || cur.next < 0 {
				continue
			}
			right := syms[cur.next]
			m, ok := b.merges.get(pairKey(int(cur.id), int(right.id)))
			if !ok || m.newID != top.newID {
				continue // stale entry
			}
			cur.id = top.newID
			syms[cur.next].gone = true
			cur.next = right.next
			if right.next >= 0 {
				syms[right.next].prev = top.pos
			}
			if cur.prev >= 0 {
				if m, ok := b.merges.get(pairKey(int(syms[cur.prev].id), int(cur.id))); ok {
					h.push(mergeCand{rank: m.rank, pos: cur.prev, newID: m.newID})
				}
			}
			if cur.next >= 0 {
				if m, ok := b.merges.get(pairKey(int(cur.id), int(syms[cur.next].id))); ok {
					h.push(mergeCand{rank: m.rank, pos: top.pos, newID: m.newID})
				}
			}
		}
	}
	for i := range syms {
		if !syms[i].gone {
			out = append(out, int(syms[i].id))
		}
	}
	return out
}

// mergeHeap is a binary min-heap ordered by (rank, pos), the order of Merge
// in models/bpe/word.rs.
type mergeHeap []mergeCand

func (h mergeHeap) less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c mergeCand) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *mergeHeap) pop() mergeCand {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return top
}

func (h mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		small := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			small = r
		}
		if !h.less(small, i) {
			return
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}

// maxCacheEntries bounds the word cache like the 10 000-entry cache of
// tokenizers; once full, new words are simply not cached.
const maxCacheEntries = 20000

// wordCache maps a word to its ids. It is safe for concurrent use.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int
}

func (c *wordCache) get(word string) ([]int, bool) {
	c.mu.RLock()
	ids, ok := c.m[word]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word string, ids []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string][]int)
	}
	if len(c.m) >= maxCacheEntries {
		return
	}
	c.m[strings.Clone(word)] = append([]int(nil), ids...)
}
