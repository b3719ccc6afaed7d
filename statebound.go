package laya

import (
	"strings"
	"unicode/utf8"

	"github.com/laya-metal/laya/pyjson"
)

// Bounded state encoding. A row holds at most max_len tokens, so no question can read
// more than the first (or, for a list state, the last) max_len tokens of the serialised
// state. Serialising and tokenising a multi-megabyte state in full only to cut it
// afterwards costs hundreds of megabytes (issue 12), so the state is serialised only up
// to a byte budget and only that text is tokenised; the budget doubles until the text
// yields enough tokens, or the whole state fits.
//
// Tokenisation is local: a pre-tokenizer splits text into words before the model's BPE
// or WordPiece runs within each word, so the tokens of a prefix agree with the tokens of
// the whole text except near the cut. stateSlackTokens tokens next to the cut are
// dropped as unsafe; TestBoundedStateMatchesFull holds the result to the full encoding.

// stateSlackTokens are the tokens next to a cut that may differ from the full text's.
const stateSlackTokens = 64

// stateEncoding is a state's tokens as rows can use them.
type stateEncoding struct {
	IDs []int
	// Left: a list state, cut from the left (its newest turns survive).
	Left bool
	// Complete: IDs are the whole state's tokens. When false the state has more tokens
	// than any row can hold (len(IDs) > the row budget), so every row is truncated.
	Complete bool
}

// encodeStateBounded tokenizes what rows of at most maxLen tokens can read of s: the
// tokens of encodeState, or as many of them as any row can take.
func (b *sequenceBuilder) encodeStateBounded(s State, maxLen int) stateEncoding {
	if maxLen < 0 {
		// No window: every token is read.
		ids, left := b.encodeState(s)
		return stateEncoding{IDs: ids, Left: left, Complete: true}
	}
	left := s.isList()
	// need is one more than any row can take, so "more than a row holds" is visible.
	need := max(maxLen, 0) + 1
	for budget := 4 * (need + stateSlackTokens); ; budget *= 2 {
		var text string
		var complete bool
		if left {
			text, complete = serializeSuffix(s, budget)
		} else {
			text, complete = serializePrefix(s, budget)
		}
		ids := b.enc.Encode(b.scrubMask(text))
		if complete {
			return stateEncoding{IDs: ids, Left: left, Complete: true}
		}
		if len(ids) >= need+stateSlackTokens {
			if left {
				ids = ids[stateSlackTokens:]
			} else {
				ids = ids[:len(ids)-stateSlackTokens]
			}
			return stateEncoding{IDs: ids, Left: left}
		}
	}
}

// boundedText collects serialised text up to a byte limit.
type boundedText struct {
	b     strings.Builder
	limit int
}

func (w *boundedText) full() bool { return w.b.Len() >= w.limit }

func (w *boundedText) write(s string) {
	if room := w.limit - w.b.Len(); len(s) > room {
		s = s[:max(room, 0)]
	}
	w.b.WriteString(s)
}

// serializePrefix returns the first limit bytes (or slightly fewer, at a character
// boundary) of s.Serialize(), and whether that is all of it.
func serializePrefix(s State, limit int) (string, bool) {
	if s.isText {
		if len(s.text) <= limit {
			return s.text, true
		}
		return validPrefix(s.text[:limit]), false
	}
	// One byte over the limit: text that reaches it is certainly not all of the state.
	w := &boundedText{limit: limit + 1}
	writePrefix(w, s.value)
	if w.full() {
		return validPrefix(w.b.String()[:limit]), false
	}
	return w.b.String(), true
}

// writePrefix writes json.dumps(v, ensure_ascii=False) until w is full. A string leaf
// longer than the room left is cut before it is escaped: escaping maps each input byte
// to one or more output bytes, so the escaped prefix is a prefix of the escaped whole.
func writePrefix(w *boundedText, v Value) {
	if w.full() {
		return
	}
	switch v.Kind() {
	case pyjson.ArrayKind:
		w.write("[")
		for i, it := range v.Items() {
			if w.full() {
				return
			}
			if i > 0 {
				w.write(", ")
			}
			writePrefix(w, it)
		}
		w.write("]")
	case pyjson.ObjectKind:
		w.write("{")
		for i, m := range v.Members() {
			if w.full() {
				return
			}
			if i > 0 {
				w.write(", ")
			}
			writePrefix(w, boundedString(m.Key, w.limit-w.b.Len()))
			w.write(": ")
			writePrefix(w, m.Value)
		}
		w.write("}")
	case pyjson.StringKind:
		w.write(pyjson.String(validPrefix(truncateBytes(v.Str(), w.limit-w.b.Len()))).String())
	default:
		w.write(v.String())
	}
}

// boundedString is a key as a string value, cut to room bytes.
func boundedString(s string, room int) Value {
	return pyjson.String(validPrefix(truncateBytes(s, room)))
}

func truncateBytes(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) > n {
		// One byte more than the room: the cut string is then still longer than what
		// fits, so the writer, not the string, decides where the text ends.
		return s[:n+1]
	}
	return s
}

// serializeSuffix returns the last limit bytes (about) of a list state's serialisation
// and whether that is all of it: json.dumps of a list is "[" + ", ".join(items) + "]",
// so it is built from its last items backwards.
func serializeSuffix(s State, limit int) (string, bool) {
	items := s.value.Items()
	pieces := []string{"]"}
	size := 1
	complete := true
	for i := len(items) - 1; i >= 0; i-- {
		if size >= limit {
			complete = false
			break
		}
		var piece string
		if it := items[i]; it.Kind() == pyjson.StringKind && len(it.Str()) > limit-size {
			// A long text turn: only its tail can be read.
			str := it.Str()
			piece = pyjson.String(validSuffix(str[len(str)-(limit-size):])).String()
			piece = piece[1:] // the opening quote is not part of the tail
			complete = false
		} else {
			piece = it.String()
		}
		if i < len(items)-1 {
			piece += ", "
		}
		pieces = append(pieces, piece)
		size += len(piece)
		if !complete {
			break
		}
	}
	if complete {
		pieces = append(pieces, "[")
	}
	var b strings.Builder
	b.Grow(size + 1)
	for i := len(pieces) - 1; i >= 0; i-- {
		b.WriteString(pieces[i])
	}
	text := b.String()
	if !complete && len(text) > limit {
		text = validSuffix(text[len(text)-limit:])
	}
	return text, complete
}

// validPrefix drops a partial UTF-8 character at the end of s.
func validPrefix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

// validSuffix drops a partial UTF-8 character at the start of s.
func validSuffix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		if utf8.RuneStart(s[0]) {
			return s
		}
		s = s[1:]
	}
	return s
}
