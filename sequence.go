package laya

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/laya-metal/laya/heads"
)

// Sequence layout after upstream build_sequence (laya/common.py at 8ef5b2dd), one row
// per question:
//
//	[CLS] "<type> question: <instructions>" [SEP] [MASK] " opt0" [MASK] " opt1" … [SEP] <state> [SEP]

// Budget constants of build_sequence.
const (
	maxOptionTokens   = 48 // tokens of one option's text, after its leading space
	minHeadRoom       = 16 // option budget below which options are squeezed
	minTokensPerOpt   = 4  // floor of the squeezed per-option cap (the [MASK] included)
	minQuestionTokens = 8  // the instruction is never cut below this
)

// tokenEncoder is the tokenizer as build_sequence uses it: Encode is
// tok(text, add_special_tokens=False)["input_ids"].
type tokenEncoder interface {
	Encode(text string) []int
}

// encodeCache remembers the token ids of short texts: a question's
// instruction line and its options repeat from request to request (a
// template, a fixed label set), and tokenizing them again was a third of a
// 50-question request's host time. States, which rarely repeat, do not go
// through it (they would push the templates out). Bounded: texts over
// encodeCacheText bytes pass through, and a full cache starts over (at most
// about 4 MiB of ids).
type encodeCache struct {
	enc tokenEncoder
	mu  sync.Mutex
	ids map[string][]int
}

const (
	encodeCacheText    = 256  // bytes of the longest text kept
	encodeCacheEntries = 2048 // texts kept before starting over
)

func newEncodeCache(enc tokenEncoder) *encodeCache {
	return &encodeCache{enc: enc, ids: map[string][]int{}}
}

// Encode returns a copy, which the caller may change.
func (c *encodeCache) Encode(text string) []int {
	if len(text) > encodeCacheText {
		return c.enc.Encode(text)
	}
	c.mu.Lock()
	ids, ok := c.ids[text]
	c.mu.Unlock()
	if !ok {
		ids = c.enc.Encode(text)
		c.mu.Lock()
		if len(c.ids) >= encodeCacheEntries {
			clear(c.ids)
		}
		// A copy of the key: text may be a slice of a longer string (a
		// question's option texts share one), which the cache must not keep.
		c.ids[strings.Clone(text)] = ids
		c.mu.Unlock()
	}
	return slices.Clone(ids)
}

// specialTokens are the ids build_sequence places itself, and the mask literal it scrubs.
type specialTokens struct {
	CLS, SEP, MASK int
	MaskToken      string
}

// prefixCache remembers rows' prefixes by everything a prefix depends on
// beyond its agent (tokenizer, special tokens): the question's type,
// instructions and options and head_max_len. A request of fifty template
// questions spent two fifths of its preparation building the same few
// prefixes again (encoding cache lookups, copies, distinctSpans). The
// cached prefixes are shared and only read (withState copies them).
// Bounded like encodeCache: longer keys pass through, and a full cache
// starts over.
type prefixCache struct {
	mu   sync.Mutex
	m    map[string]rowPrefix
	size int // key bytes and token ids held
}

const (
	prefixCacheKey     = 2048    // bytes of the longest key kept
	prefixCacheEntries = 1024    // prefixes kept before starting over
	prefixCacheSize    = 1 << 20 // key bytes plus ids (8 bytes each): at most about 8 MiB; a request's head_max_len can make prefixes long
)

func newPrefixCache() *prefixCache { return &prefixCache{m: map[string]rowPrefix{}} }

// prefixKey appends q's key at head_max_len headMax to dst: its fields
// length-prefixed, so that no two questions share one.
func prefixKey(dst []byte, q *question, headMax int) []byte {
	dst = append(dst, byte(q.qtype))
	dst = binary.AppendUvarint(dst, uint64(headMax))
	dst = binary.AppendUvarint(dst, uint64(len(q.instructions)))
	dst = append(dst, q.instructions...)
	dst = binary.AppendUvarint(dst, uint64(len(q.options)))
	for _, o := range q.options {
		dst = binary.AppendUvarint(dst, uint64(len(o)))
		dst = append(dst, o...)
	}
	return dst
}

// sequenceBuilder turns a state and questions into token rows.
type sequenceBuilder struct {
	enc tokenEncoder
	// short encodes a question's line and options, which repeat across
	// requests (an encodeCache); nil: enc.
	short tokenEncoder
	// prefixes keeps the prefixes of the questions seen (nil: none kept).
	prefixes   *prefixCache
	sp         specialTokens
	maxLen     int
	headMaxLen int
}

// optionStats is build_sequence's return_stats: how many options the question defines,
// how many still have a token span of their own, and the per-option cap (0: none).
type optionStats struct {
	Options, Distinct, TokensPerOption int
}

// row is one question's sequence.
type row struct {
	IDs          []int
	Markers      []int
	QType        heads.QType
	PrefixLength int // tokens before the state: [CLS] … options [SEP]
	Options      optionStats
}

// forwardRow is what the network reads of r.
func (r row) forwardRow() forwardRow {
	return forwardRow{IDs: r.IDs, Markers: r.Markers, QType: r.QType}
}

// scrubMask replaces every literal of the mask token with one space, as upstream does to
// the serialised state, the instructions and each option before tokenizing.
func (b *sequenceBuilder) scrubMask(s string) string {
	if b.sp.MaskToken == "" {
		return s
	}
	return strings.ReplaceAll(s, b.sp.MaskToken, " ")
}

// build is build_sequence with return_stats=True for a tokenized state.
func (b *sequenceBuilder) build(q *question, stateIDs []int, truncateLeft bool) row {
	return b.withState(b.prefix(q), stateIDs, truncateLeft)
}

// rowPrefix is the part of a question's row that no state changes: [CLS], the
// question, the options and their [SEP]. PredictLong tokenizes it once per
// question and reuses it for every window of the state.
type rowPrefix struct {
	ids     []int
	markers []int
	qtype   heads.QType
	options optionStats
}

// prefix tokenizes the question and its options within head_max_len, or
// finds them in b.prefixes. The result is shared: callers only read it.
func (b *sequenceBuilder) prefix(q *question) rowPrefix {
	c := b.prefixes
	if c == nil {
		return b.newPrefix(q)
	}
	var buf [256]byte
	key := prefixKey(buf[:0], q, b.headMaxLen)
	if len(key) > prefixCacheKey {
		return b.newPrefix(q)
	}
	c.mu.Lock()
	p, ok := c.m[string(key)]
	c.mu.Unlock()
	if ok {
		return p
	}
	p = b.newPrefix(q)
	size := len(key) + len(p.ids) + len(p.markers)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[string(key)]; ok {
		return p // another request built it meanwhile
	}
	if len(c.m) >= prefixCacheEntries || c.size+size > prefixCacheSize {
		clear(c.m)
		c.size = 0
	}
	c.m[string(key)] = p
	c.size += size
	return p
}

// newPrefix is prefix without the cache.
func (b *sequenceBuilder) newPrefix(q *question) rowPrefix {
	short := b.short
	if short == nil {
		short = b.enc
	}
	headIDs := short.Encode(q.qtype.String() + " question: " + b.scrubMask(q.instructions))
	optIDs := make([][]int, len(q.options))
	for i, opt := range q.options {
		// The leading space is part of the option text (laya-spec §2.4).
		text := short.Encode(" " + b.scrubMask(opt))
		text = text[:min(len(text), maxOptionTokens)]
		optIDs[i] = append([]int{b.sp.MASK}, text...)
	}
	budget := b.headMaxLen - totalLen(optIDs)
	perOption := 0
	if budget < minHeadRoom {
		perOption = max(minTokensPerOpt, floorDiv(b.headMaxLen-minHeadRoom, max(1, len(optIDs))))
		for i, o := range optIDs {
			optIDs[i] = o[:min(len(o), perOption)]
		}
		budget = b.headMaxLen - totalLen(optIDs)
	}
	headIDs = headIDs[:min(len(headIDs), max(minQuestionTokens, budget))]

	ids := make([]int, 0, 2+len(headIDs)+totalLen(optIDs))
	ids = append(ids, b.sp.CLS)
	ids = append(ids, headIDs...)
	ids = append(ids, b.sp.SEP)
	markers := make([]int, 0, len(optIDs))
	for _, o := range optIDs {
		markers = append(markers, len(ids))
		ids = append(ids, o...)
	}
	ids = append(ids, b.sp.SEP)
	return rowPrefix{
		ids:     ids,
		markers: markers,
		qtype:   q.qtype,
		options: optionStats{Options: len(optIDs), Distinct: distinctSpans(optIDs), TokensPerOption: perOption},
	}
}

// withState completes a question's row with the state tokens its room holds.
// p is only read, so one prefix serves any number of rows.
func (b *sequenceBuilder) withState(p rowPrefix, stateIDs []int, truncateLeft bool) row {
	// Sized to what the row holds, not to the agent's max_len (512 and 1024
	// tokens in the published configs: 4 and 8 KiB a row for a question of a
	// hundred).
	buf := rowBuffer{ids: make([]int, 0, b.rowCap(p, len(stateIDs))), markers: make([]int, 0, len(p.markers))}
	return b.appendRow(&buf, p, stateIDs, truncateLeft)
}

// rowBuffer holds the ids and markers of rows, one after the other: a
// request's rows share a few arrays rather than taking two each.
type rowBuffer struct {
	ids, markers []int
}

// rowChunk is the most ids or markers reserve puts in one array: 16 KiB,
// well within the objects the allocator serves from its per-thread caches
// (up to 32 KiB, less its header); a larger one costs a trip to the page
// heap, and the scavenger's work once it is freed.
const rowChunk = 2048

// reserve makes room for a row of up to n ids and m markers, the first of
// rows rows that need about as much.
func (buf *rowBuffer) reserve(n, m, rows int) {
	if cap(buf.ids)-len(buf.ids) < n {
		buf.ids = make([]int, 0, max(n, min(rows*n, rowChunk)))
	}
	if cap(buf.markers)-len(buf.markers) < m {
		buf.markers = make([]int, 0, max(m, min(rows*m, rowChunk)))
	}
}

// rowCap is the most ids that p's row over n state tokens appends to a rowBuffer.
func (b *sequenceBuilder) rowCap(p rowPrefix, n int) int {
	return len(p.ids) + min(n, b.stateRoom(p)) + 1
}

// stateRoom is how many state tokens p's row holds.
func (b *sequenceBuilder) stateRoom(p rowPrefix) int {
	return max(0, b.maxLen-len(p.ids)-1)
}

// appendRow is withState with the row's ids and markers appended to buf's.
// The row's slices have no capacity beyond their length, so that appending
// to one row cannot overwrite the next row's ids.
func (b *sequenceBuilder) appendRow(buf *rowBuffer, p rowPrefix, stateIDs []int, truncateLeft bool) row {
	room := b.stateRoom(p)
	start := len(buf.ids)
	ids := append(buf.ids, p.ids...)
	var st []int
	if truncateLeft {
		// Not state[-room:]: with room 0 that would be the whole state (upstream #112).
		st = stateIDs[max(0, len(stateIDs)-room):]
	} else {
		st = stateIDs[:min(len(stateIDs), room)]
	}
	ids = append(ids, st...)
	ids = append(ids, b.sp.SEP)
	if b.maxLen >= 0 && len(ids)-start > b.maxLen {
		ids = ids[:start+b.maxLen]
	}
	buf.ids = ids
	mstart := len(buf.markers)
	for _, m := range p.markers {
		if m < b.maxLen {
			buf.markers = append(buf.markers, m)
		}
	}
	rowIDs := ids[start:len(ids):len(ids)]
	return row{
		IDs:          rowIDs,
		Markers:      buf.markers[mstart:len(buf.markers):len(buf.markers)],
		QType:        p.qtype,
		PrefixLength: min(len(p.ids), len(rowIDs)),
		Options:      p.options,
	}
}

// distinctSpans counts the options whose capped token spans differ: two options that
// share a prefix can collapse into the same span once squeezed (upstream #538).
func distinctSpans(optIDs [][]int) int {
	seen := make(map[string]bool, len(optIDs))
	var key strings.Builder
	for _, o := range optIDs {
		key.Reset()
		for _, id := range o {
			key.WriteString(strconv.Itoa(id))
			key.WriteByte(',')
		}
		seen[key.String()] = true
	}
	return len(seen)
}

func totalLen(spans [][]int) int {
	n := 0
	for _, s := range spans {
		n += len(s)
	}
	return n
}

// floorDiv is Python's // on ints.
func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
