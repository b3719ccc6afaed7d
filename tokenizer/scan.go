package tokenizer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/laya-metal/laya/pyjson"
)

// The fast path of Load. Nearly all of a tokenizer.json is two members:
// model.vocab (string → id) and model.merges ("a b" strings or [a, b]
// pairs); the 256k-token Gemma file holds 256 000 and 580 604 of them in
// 17.5 MB. encoding/json reads them slowly: it validates the document, then
// rescans it once per json.RawMessage level, tries the merges as []string
// before [][]string, and allocates a string per token and per merge.
//
// parseFast reads the top-level object and the model object with a small
// scanner, decodes vocab and merges itself in one pass, and hands every
// other member — copied, in order and with its key as written, into a small
// document — to encoding/json, which therefore decides what they mean and
// whether they are valid, exactly as before. Anything unusual (an escape in
// a member name, a name that differs from "model", "vocab" or "merges" only
// in case, a repeated model/vocab/merges member, null where an object or
// array is expected, a non-integer id, a merge element of another shape,
// invalid JSON, any error while building) makes it give up, and parse
// decodes the file again with encoding/json alone (parseSlow), which
// produces the same tokenizer or the error text the file always got.
//
// Strictness: the scanner checks the JSON grammar of all it reads itself
// (structure, strings, integers) and encoding/json checks each member it
// skips, so the fast path never accepts a file that encoding/json rejects.

// parseFast returns ok=false when the file needs parseSlow.
func parseFast(data []byte) (*Tokenizer, *fileJSON, bool) {
	if len(data) >= math.MaxInt32 {
		return nil, nil, false // offsets are kept as int32
	}
	s := &fastScanner{d: data}
	doc, ok := s.file()
	if !ok {
		return nil, nil, false
	}
	var f fileJSON
	if err := json.Unmarshal(doc.top, &f); err != nil {
		return nil, nil, false
	}
	// (This aliases data, as nothing built keeps f.)
	f.Model = json.RawMessage(data[doc.modelStart:doc.modelEnd:doc.modelEnd])
	if checkVersion(f.Version) != nil {
		return nil, nil, false
	}
	var m bpeJSON
	if err := json.Unmarshal(doc.model, &m); err != nil {
		return nil, nil, false
	}
	if doc.minID < 0 {
		return nil, nil, false // buildModel's error, from parseSlow
	}
	vocab := newVocabTable(string(doc.vocabKeys), len(doc.vocab)) // one string for all tokens
	for _, v := range doc.vocab {
		vocab.put(int(v.off), v.id)
	}
	prefix := ""
	if m.ContinuingSubwordPrefix != nil {
		prefix = *m.ContinuingSubwordPrefix
	}
	merged, ok := resolveMerges(data, doc, vocab, prefix)
	if !ok {
		return nil, nil, false
	}
	byID := doc.idTokens(vocab)
	if doc.hasMerges {
		// Only the presence matters to buildModel (a model without
		// "type" is BPE when it has merges); the merges come from doc.
		m.Merges = json.RawMessage(`[]`)
	}
	model, err := buildModel(&m, vocab, byID, func(b *bpe) error {
		b.merges = newMergeTable(len(merged))
		for rank, r := range merged {
			// A later duplicate overwrites an earlier one, as in setMerges.
			b.merges.put(r.key, mergeTarget{rank: int32(rank), newID: r.newID})
		}
		return nil
	})
	if err != nil {
		return nil, nil, false
	}
	t, err := finishTokenizer(model, &f)
	if err != nil {
		return nil, nil, false
	}
	return t, &f, true
}

// fastDoc is what the scanner took from the file.
type fastDoc struct {
	top   []byte // {"version":…, …} without "model"
	model []byte // the model object without "vocab" and "merges"
	// modelStart:modelEnd is the model value in the file.
	modelStart, modelEnd int

	hasVocab bool
	// vocab[i] is a token, at off in vocabKeys (vocabTable's layout), with
	// its id.
	vocab     []vocabSpan
	vocabKeys []byte
	maxID     int
	minID     int

	hasMerges  bool
	mergePairs bool        // [a, b] pairs rather than "a b" strings
	merges     []mergeSpan // one per merge, in rank order
}

type vocabSpan struct {
	off int32
	id  int
}

// mergeSpan locates the string(s) of one merge in the file: a is the "a b"
// string or the first of a pair, b the second of a pair. The flags say
// whether a string can be used as it stands in the file, or must be
// decoded (escapes, invalid UTF-8).
type mergeSpan struct {
	a0, a1, b0, b1 int32
	aFlags, bFlags uint8 // what str found in each
}

// idTokens builds id_to_token from the scanned entries and the model's
// vocabulary. An entry whose key comes again later is not a token of its id
// any more; of several tokens with one id the last in the file is kept
// (upstream keeps one of them too).
func (d *fastDoc) idTokens(vocab *vocabTable) *idTokens {
	t := newIDTokens(vocab.len(), d.maxID)
	repeats := vocab.len() < len(d.vocab)
	for _, v := range d.vocab {
		key := vocab.key(uint32(v.off))
		if repeats {
			if id, _ := vocab.get(key); id != v.id {
				continue
			}
		}
		t.set(v.id, key)
	}
	return t
}

type fastScanner struct {
	d []byte
	i int
}

// ws skips whitespace; runs of spaces (the indentation of pretty-printed
// files, a third of Gemma's) eight at a time.
func (s *fastScanner) ws() {
	d, i := s.d, s.i
	for i < len(d) {
		switch d[i] {
		case ' ':
			if i+8 <= len(d) {
				if x := binary.LittleEndian.Uint64(d[i:]) ^ (ones * ' '); x != 0 {
					i += bits.TrailingZeros64(x) >> 3
				} else {
					i += 8
				}
				continue
			}
			i++
		case '\t', '\n', '\r':
			i++
		default:
			s.i = i
			return
		}
	}
	s.i = i
}

// peek returns the next byte, 0 at the end.
func (s *fastScanner) peek() byte {
	if s.i < len(s.d) {
		return s.d[s.i]
	}
	return 0
}

// str reads a string starting at s.i and returns its content span and
// what it holds (strEsc, strHigh, strInvalid). It checks the JSON grammar:
// no control characters, only the escapes JSON defines.
func (s *fastScanner) str() (start, end int, flags uint8, ok bool) {
	d := s.d
	if s.i >= len(d) || d[s.i] != '"' {
		return
	}
	i := s.i + 1
	start = i
	for {
		// Eight bytes at a time while none needs a look: no quote,
		// backslash, control character or byte ≥ 0x80 (the lowest
		// flagged byte of each test is exact).
		for i+8 <= len(d) {
			x := binary.LittleEndian.Uint64(d[i:])
			q, b := x^(ones*'"'), x^(ones*'\\')
			m := ((q - ones) &^ q) | ((b - ones) &^ b) | ((x - ones*0x20) &^ x) | x
			if m &= highBits; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(d) {
			return
		}
		switch strClass[d[i]] {
		case strPlain:
			i++
		case strHighByte:
			flags |= strHigh
			// The two- and three-byte sequences of real tokens ("Ġ",
			// "▁") are checked here; the others by utf8.
			c := d[i]
			if 0xC2 <= c && c <= 0xDF && i+1 < len(d) && d[i+1]&0xC0 == 0x80 {
				i += 2
				continue
			}
			if (0xE1 <= c && c <= 0xEC || c == 0xEE || c == 0xEF) && i+2 < len(d) && d[i+1]&0xC0 == 0x80 && d[i+2]&0xC0 == 0x80 {
				i += 3
				continue
			}
			if r, n := utf8.DecodeRune(d[i:]); r == utf8.RuneError && n == 1 {
				flags |= strInvalid
				i++
			} else {
				i += n
			}
		case strQuote:
			s.i = i + 1
			return start, i, flags, true
		case strEscape:
			flags |= strEsc
			if i+1 >= len(d) {
				return
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) || !isHex(d[i+5]) {
					return
				}
				i += 6
			default:
				return
			}
		default: // a control character
			return
		}
	}
}

// What a string holds, as str reports it.
const (
	strEsc     = 1 << iota // a backslash escape
	strHigh                // a byte ≥ 0x80
	strInvalid             // bytes that are not UTF-8 (encoding/json makes them U+FFFD)
)

const (
	ones     = 0x0101010101010101
	highBits = 0x8080808080808080
)

// strClass sorts the bytes of a JSON string for str: one table load per
// byte instead of a chain of comparisons.
var strClass = func() (c [256]uint8) {
	for b := range c {
		switch {
		case b < 0x20:
			c[b] = strControl
		case b == '"':
			c[b] = strQuote
		case b == '\\':
			c[b] = strEscape
		case b >= 0x80:
			c[b] = strHighByte
		}
	}
	return c
}()

const (
	strPlain = iota
	strHighByte
	strQuote
	strEscape
	strControl
)

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// key reads a member name and the colon after it. plain is false when the
// name has an escape or a byte ≥ 0x80, which encoding/json may fold onto a
// field name in ways the scanner does not model.
func (s *fastScanner) key() (name []byte, raw []byte, plain, ok bool) {
	q := s.i
	start, end, flags, ok := s.str()
	if !ok {
		return nil, nil, false, false
	}
	raw = s.d[q:s.i]
	s.ws()
	if s.peek() != ':' {
		return nil, nil, false, false
	}
	s.i++
	s.ws()
	return s.d[start:end], raw, flags&(strEsc|strHigh) == 0, true
}

// next reads what follows a member or element: true with more to come,
// false at the closing bracket; ok=false on anything else.
func (s *fastScanner) next(closing byte) (more, ok bool) {
	s.ws()
	switch s.peek() {
	case ',':
		s.i++
		s.ws()
		return true, true
	case closing:
		s.i++
		return false, true
	}
	return false, false
}

// skipValue steps over one value, finding where it ends; the value is
// checked later by encoding/json, which gets it in a small document.
func (s *fastScanner) skipValue() bool {
	d := s.d
	switch s.peek() {
	case '"':
		_, _, _, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(d) {
			switch d[s.i] {
			case '"':
				if _, _, _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	start := s.i
	for s.i < len(d) {
		switch d[s.i] {
		case ' ', '\t', '\n', '\r', ',', '}', ']':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}

// fieldLike reports whether encoding/json could match name to field while
// the scanner's exact comparison does not.
func fieldLike(name []byte, field string) bool {
	return !bytes.Equal(name, []byte(field)) && bytes.EqualFold(name, []byte(field))
}

// file reads the whole document.
func (s *fastScanner) file() (*fastDoc, bool) {
	doc := &fastDoc{}
	top := make([]byte, 0, 4096)
	top = append(top, '{')
	s.ws()
	if s.peek() != '{' {
		return nil, false
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		return nil, false // no model: parseSlow reports it
	}
	hasModel := false
	for more := true; more; {
		name, raw, plain, ok := s.key()
		if !ok || !plain || fieldLike(name, "model") {
			return nil, false
		}
		if string(name) == "model" {
			if hasModel || s.peek() != '{' {
				return nil, false
			}
			hasModel = true
			doc.modelStart = s.i
			if !s.modelObject(doc) {
				return nil, false
			}
			doc.modelEnd = s.i
		} else {
			start := s.i
			if !s.skipValue() {
				return nil, false
			}
			if len(top) > 1 {
				top = append(top, ',')
			}
			top = append(top, raw...)
			top = append(top, ':')
			top = append(top, s.d[start:s.i]...)
		}
		if more, ok = s.next('}'); !ok {
			return nil, false
		}
	}
	s.ws()
	if !hasModel || s.i != len(s.d) {
		return nil, false
	}
	doc.top = append(top, '}')
	return doc, true
}

// modelObject reads the model object, at its '{'.
func (s *fastScanner) modelObject(doc *fastDoc) bool {
	model := make([]byte, 0, 512)
	model = append(model, '{')
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		doc.model = append(model, '}')
		return true
	}
	for more := true; more; {
		name, raw, plain, ok := s.key()
		if !ok || !plain || fieldLike(name, "vocab") || fieldLike(name, "merges") {
			return false
		}
		switch string(name) {
		case "vocab":
			if doc.hasVocab || !s.vocab(doc) {
				return false
			}
			doc.hasVocab = true
		case "merges":
			if doc.hasMerges || !s.merges(doc) {
				return false
			}
			doc.hasMerges = true
		default:
			start := s.i
			if !s.skipValue() {
				return false
			}
			if len(model) > 1 {
				model = append(model, ',')
			}
			model = append(model, raw...)
			model = append(model, ':')
			model = append(model, s.d[start:s.i]...)
		}
		if more, ok = s.next('}'); !ok {
			return false
		}
	}
	doc.model = append(model, '}')
	return true
}

// vocab reads the vocab object: string keys, integer ids.
func (s *fastScanner) vocab(doc *fastDoc) bool {
	if s.peek() != '{' {
		return false // null or another type: parseSlow
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return true
	}
	// Real files spend about 20 bytes per entry and then about as many
	// on the merges; a guess, to size the slices, capped so that a short
	// vocabulary before some other huge member costs little.
	guess := min((len(s.d)-s.i)/40, 1<<19)
	doc.vocab = make([]vocabSpan, 0, guess)
	keys := make([]byte, 0, guess*8)
	var scratch []byte
	for more := true; more; {
		start, end, flags, ok := s.str()
		if !ok {
			return false
		}
		off := len(keys)
		if usable(flags) {
			keys = appendVocabKey(keys, s.d[start:end])
		} else {
			if scratch, ok = appendJSONString(scratch[:0], s.d, start, end, flags); !ok {
				return false
			}
			keys = appendVocabKey(keys, scratch)
		}
		s.ws()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		id, ok := s.integer()
		if !ok {
			return false
		}
		doc.vocab = append(doc.vocab, vocabSpan{off: int32(off), id: id})
		doc.maxID, doc.minID = max(doc.maxID, id), min(doc.minID, id)
		if more, ok = s.next('}'); !ok {
			return false
		}
	}
	if len(keys) >= math.MaxInt32 {
		return false
	}
	doc.vocabKeys = keys
	return true
}

// integer reads an id: a JSON integer of at most 18 digits, so that it
// fits an int as encoding/json would decode it. Fractions, exponents and
// longer numbers are left to parseSlow.
func (s *fastScanner) integer() (int, bool) {
	d := s.d
	i := s.i
	neg := false
	if i < len(d) && d[i] == '-' {
		neg = true
		i++
	}
	start := i
	v := 0
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		v = v*10 + int(d[i]-'0')
		i++
	}
	n := i - start
	if n == 0 || n > 18 || (n > 1 && d[start] == '0') {
		return 0, false
	}
	if i < len(d) && (d[i] == '.' || d[i] == 'e' || d[i] == 'E') {
		return 0, false
	}
	s.i = i
	if neg {
		v = -v
	}
	return v, true
}

// merges reads the merges array, recording where each merge's strings are.
func (s *fastScanner) merges(doc *fastDoc) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	s.ws()
	switch s.peek() {
	case ']':
		s.i++
		return true
	case '[':
		doc.mergePairs = true
	case '"':
	default:
		return false
	}
	guess := min((len(s.d)-s.i)/16, 1<<20) // as in vocab
	doc.merges = make([]mergeSpan, 0, guess)
	for more := true; more; {
		var m mergeSpan
		if doc.mergePairs {
			if s.peek() != '[' {
				return false
			}
			s.i++
			s.ws()
			a0, a1, aFlags, ok := s.str()
			if !ok {
				return false
			}
			if more, ok := s.next(']'); !ok || !more {
				return false
			}
			b0, b1, bFlags, ok := s.str()
			if !ok {
				return false
			}
			if more, ok := s.next(']'); !ok || more {
				return false
			}
			m = mergeSpan{a0: int32(a0), a1: int32(a1), b0: int32(b0), b1: int32(b1), aFlags: aFlags, bFlags: bFlags}
		} else {
			a0, a1, flags, ok := s.str()
			if !ok {
				return false
			}
			m = mergeSpan{a0: int32(a0), a1: int32(a1), aFlags: flags}
		}
		doc.merges = append(doc.merges, m)
		var ok bool
		if more, ok = s.next(']'); !ok {
			return false
		}
	}
	return true
}

// usable reports whether a string's content is its value as it stands:
// no escapes, valid UTF-8.
func usable(flags uint8) bool { return flags&(strEsc|strInvalid) == 0 }

// appendJSONString appends the decoded content d[start:end] of a string
// the scanner has checked. Plain strings are copied; escapes and invalid
// UTF-8 (which encoding/json, the slow path's decoder, replaces with
// U+FFFD) go through pyjson's decoder, which decodes them as encoding/json
// does.
func appendJSONString(dst, d []byte, start, end int, flags uint8) ([]byte, bool) {
	if usable(flags) {
		return append(dst, d[start:end]...), true
	}
	return pyjson.AppendUnquoted(dst, d[start-1:end+1])
}

// resolvedMerge is one merge of the file: its pair key and merged id.
type resolvedMerge struct {
	key   uint64
	newID int32
}

// resolveMerges looks up the tokens of every merge the scanner found, as
// setMerges does, in parallel over GOMAXPROCS workers (the vocabulary is
// only read). It returns false on any merge setMerges would reject, leaving the
// error text to parseSlow.
func resolveMerges(data []byte, doc *fastDoc, vocab *vocabTable, prefix string) ([]resolvedMerge, bool) {
	spans := doc.merges
	out := make([]resolvedMerge, len(spans))
	workers := min(runtime.GOMAXPROCS(0), len(spans)/8192+1)
	chunk := (len(spans) + workers - 1) / workers
	var bad atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(spans))
		wg.Go(func() {
			if !resolveRange(data, spans[lo:hi], doc.mergePairs, vocab, []byte(prefix), out[lo:hi]) {
				bad.Store(true)
			}
		})
	}
	wg.Wait()
	return out, !bad.Load()
}

func resolveRange(data []byte, spans []mergeSpan, pairs bool, vocab *vocabTable, prefix []byte, out []resolvedMerge) bool {
	var bufA, bufB, joined []byte
	for i := range spans {
		sp := &spans[i]
		var left, right []byte
		if usable(sp.aFlags) {
			left = data[sp.a0:sp.a1]
		} else {
			var ok bool
			if bufA, ok = appendJSONString(bufA[:0], data, int(sp.a0), int(sp.a1), sp.aFlags); !ok {
				return false
			}
			left = bufA
		}
		if pairs {
			if usable(sp.bFlags) {
				right = data[sp.b0:sp.b1]
			} else {
				var ok bool
				if bufB, ok = appendJSONString(bufB[:0], data, int(sp.b0), int(sp.b1), sp.bFlags); !ok {
					return false
				}
				right = bufB
			}
		} else {
			// "a b": exactly one space (parseMerges).
			sep := bytes.IndexByte(left, ' ')
			if sep < 0 || bytes.IndexByte(left[sep+1:], ' ') >= 0 {
				return false
			}
			left, right = left[:sep], left[sep+1:]
		}
		a, ok1 := vocab.getBytes(left)
		c, ok2 := vocab.getBytes(right)
		tail := right
		if len(prefix) > 0 && bytes.HasPrefix(tail, prefix) {
			tail = tail[len(prefix):]
		}
		joined = append(append(joined[:0], left...), tail...)
		n, ok3 := vocab.getBytes(joined)
		if !ok1 || !ok2 || !ok3 {
			return false
		}
		out[i] = resolvedMerge{key: pairKey(a, c), newID: int32(n)}
	}
	return true
}
