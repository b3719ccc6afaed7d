package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of "added_tokens" (tokenizer/added_vocabulary.rs).
type addedToken struct {
	Content    string `json:"content"`
	ID         int    `json:"id"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`

	// form is the string Token and Decode give for the id: the content
	// run through the normalizer for normalized tokens, as the
	// normalized_cache of tokenizers' AddedVocabulary (simple_id_to_token)
	// does, and the content itself otherwise.
	form string
}

// isNormalized applies the default of AddedToken: normalized unless special.
func (a addedToken) isNormalized() bool {
	if a.Normalized != nil {
		return *a.Normalized
	}
	return !a.Special
}

// matcher finds added tokens in a text: leftmost-longest, non-overlapping,
// like the aho-corasick LeftmostLongest automaton of tokenizers. It is a
// byte trie walked from each candidate start; the walk is bounded by the
// longest token, so matching stays linear in the text for a fixed vocabulary.
type matcher struct {
	nodes []trieNode
	// firstByte marks bytes that begin some token, to skip quickly.
	firstByte [256]bool
	empty     bool
}

type trieNode struct {
	edges []trieEdge
	tok   int // index into tokens, -1 when no token ends here
}

type trieEdge struct {
	b    byte
	next int32
}

func newMatcher() *matcher {
	return &matcher{nodes: []trieNode{{tok: -1}}, empty: true}
}

// add inserts a pattern; an existing identical pattern keeps its first
// entry, like aho-corasick, which reports the first of duplicate patterns.
func (m *matcher) add(pattern string, tok int) {
	if pattern == "" {
		return
	}
	m.empty = false
	m.firstByte[pattern[0]] = true
	n := 0
	for i := 0; i < len(pattern); i++ {
		next := -1
		for _, e := range m.nodes[n].edges {
			if e.b == pattern[i] {
				next = int(e.next)
				break
			}
		}
		if next < 0 {
			next = len(m.nodes)
			m.nodes = append(m.nodes, trieNode{tok: -1})
			m.nodes[n].edges = append(m.nodes[n].edges, trieEdge{b: pattern[i], next: int32(next)})
		}
		n = next
	}
	if m.nodes[n].tok < 0 {
		m.nodes[n].tok = tok
	}
}

// longestAt returns the end and token of the longest pattern starting at i.
func (m *matcher) longestAt(s string, i int) (end, tok int) {
	end, tok = -1, -1
	n := 0
	for j := i; j < len(s); j++ {
		next := -1
		for _, e := range m.nodes[n].edges {
			if e.b == s[j] {
				next = int(e.next)
				break
			}
		}
		if next < 0 {
			break
		}
		n = next
		if t := m.nodes[n].tok; t >= 0 {
			end, tok = j+1, t
		}
	}
	return end, tok
}

// split is AddedVocabulary::find_matches: it calls emit for the stretches
// of s in order, with tok >= 0 for an added token (an index into tokens)
// and -1 for plain text. Stretches may be empty; callers drop those.
func (m *matcher) split(s string, tokens []addedToken, emit func(text string, offset, tok int)) {
	if m.empty || s == "" {
		emit(s, 0, -1)
		return
	}
	startOffset := 0
	for i := 0; i < len(s); {
		if !m.firstByte[s[i]] {
			i++
			continue
		}
		stop, tok := m.longestAt(s, i)
		if tok < 0 {
			i++
			continue
		}
		start := i
		// The automaton resumes after the raw match even when rstrip
		// extended the token, exactly as upstream.
		i = stop
		at := tokens[tok]
		if at.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if at.LStrip {
			// All whitespace before the token, but not what an earlier
			// token already took.
			start = max(spaceStartAtEnd(s[:start]), startOffset)
		}
		if at.RStrip {
			stop += spaceLenAtStart(s[stop:])
		}
		if startOffset < start {
			emit(s[startOffset:start], startOffset, -1)
		}
		emit(s[start:stop], start, tok)
		startOffset = stop
	}
	if startOffset < len(s) {
		emit(s[startOffset:], startOffset, -1)
	}
}

// isWordChar is \w of Rust's regex crate: Alphabetic, Mark, Decimal number,
// Connector punctuation and Join_Control.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) ||
		unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Nl, r) ||
		unicode.Is(unicode.Other_Alphabetic, r) || unicode.Is(unicode.Join_Control, r)
}

func endsWithWord(s string) bool {
	r, size := utf8.DecodeLastRuneInString(s)
	return size > 0 && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return size > 0 && isWordChar(r)
}

// spaceStartAtEnd is the offset where the trailing whitespace of s begins.
func spaceStartAtEnd(s string) int {
	i := len(s)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if !isSpace(r) {
			break
		}
		i -= size
	}
	return i
}

// spaceLenAtStart is the byte length of the leading whitespace of s.
func spaceLenAtStart(s string) int {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isSpace(r) {
			break
		}
		i += size
	}
	return i
}
