package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// piece is a stretch of text between added tokens, on its way to the model.
type piece struct {
	text string
	// first is true when the piece starts at offset 0 of the original text;
	// Metaspace with prepend_scheme "first" prepends only there.
	first bool
}

// preTokenizer splits pieces into words (pre_tokenizers/*.rs). It appends
// the non-empty results to out, as PreTokenizedString::split drops empty
// splits.
type preTokenizer interface {
	preTokenize(in []piece, out []piece) []piece
}

func newPreTokenizer(raw json.RawMessage, where string) (preTokenizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", where, err, ErrInvalid)
	}
	switch c.Type {
	case "ByteLevel":
		bl := struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}{}
		if err := json.Unmarshal(raw, &bl); err != nil {
			return nil, fmt.Errorf("%s (ByteLevel): %v: %w", where, err, ErrInvalid)
		}
		useRegex := bl.UseRegex == nil || *bl.UseRegex // serde default true
		return byteLevelPre{addPrefixSpace: bl.AddPrefixSpace, useRegex: useRegex}, nil
	case "Metaspace":
		ms, err := parseMetaspace(raw, where)
		if err != nil {
			return nil, err
		}
		return ms, nil
	case "Split":
		var s struct {
			Pattern  patternJSON `json:"pattern"`
			Behavior string      `json:"behavior"`
			Invert   bool        `json:"invert"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s (Split): %v: %w", where, err, ErrInvalid)
		}
		b, err := parseBehavior(s.Behavior, where+" (Split)")
		if err != nil {
			return nil, err
		}
		sp := &splitPre{behavior: b, invert: s.Invert}
		switch {
		case s.Pattern.String != nil:
			sp.literal = *s.Pattern.String
		case s.Pattern.Regex != nil:
			re, err := compileSplitRegex(*s.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("%s (Split): %w", where, err)
			}
			sp.re = re
		default:
			return nil, fmt.Errorf("%s (Split): pattern is neither String nor Regex: %w", where, ErrInvalid)
		}
		return sp, nil
	case "Sequence":
		seq, err := parseSequence(raw, "pretokenizers", where, newPreTokenizer)
		return sequencePre(seq), err
	}
	return nil, fmt.Errorf("%s: type %q: %w", where, c.Type, ErrUnsupported)
}

// byteLevelPre is pre_tokenizers/byte_level.rs: an optional leading space,
// the GPT-2 split, then every byte rewritten as its visible character.
type byteLevelPre struct {
	addPrefixSpace bool
	useRegex       bool
}

func (bl byteLevelPre) preTokenize(in []piece, out []piece) []piece {
	bl.eachWord(in, func(w piece) { out = append(out, w) })
	return out
}

// eachWord is preTokenize handing each word to emit as it is found.
func (bl byteLevelPre) eachWord(in []piece, emit func(piece)) {
	for _, p := range in {
		s := p.text
		if bl.addPrefixSpace && !strings.HasPrefix(s, " ") {
			s = " " + s
		}
		if s == "" {
			continue
		}
		// Each byte maps on its own, so the words' texts are slices of the
		// whole piece's: one string for the piece rather than one a word.
		mapped := byteLevelMap(s)
		if !bl.useRegex {
			emit(piece{text: mapped, first: p.first})
			continue
		}
		at, next := 0, 0 // where s[next:] begins in mapped
		gpt2Split(s, func(start, end int) {
			if start != next {
				// Not right after the last word (the split leaves no gaps
				// today): find where it begins.
				at = byteLevelLen(s[:start])
			}
			n := byteLevelLen(s[start:end])
			emit(piece{text: mapped[at : at+n], first: p.first && start == 0})
			at, next = at+n, end
		})
	}
}

type prependScheme uint8

const (
	prependAlways prependScheme = iota
	prependFirst
	prependNever
)

// metaspace is pre_tokenizers/metaspace.rs, also used as a decoder.
type metaspace struct {
	replacement rune
	rep         string
	scheme      prependScheme
	split       bool
}

func parseMetaspace(raw json.RawMessage, where string) (*metaspace, error) {
	var m struct {
		Replacement    string  `json:"replacement"`
		PrependScheme  *string `json:"prepend_scheme"`
		AddPrefixSpace *bool   `json:"add_prefix_space"`
		Split          *bool   `json:"split"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s (Metaspace): %v: %w", where, err, ErrInvalid)
	}
	r, size := utf8.DecodeRuneInString(m.Replacement)
	if m.Replacement == "" || size != len(m.Replacement) {
		return nil, fmt.Errorf("%s (Metaspace): replacement %q is not one character: %w", where, m.Replacement, ErrInvalid)
	}
	ms := &metaspace{replacement: r, rep: m.Replacement, scheme: prependAlways, split: m.Split == nil || *m.Split}
	switch {
	case m.PrependScheme != nil:
		switch *m.PrependScheme {
		case "always":
			ms.scheme = prependAlways
		case "first":
			ms.scheme = prependFirst
		case "never":
			ms.scheme = prependNever
		default:
			return nil, fmt.Errorf("%s (Metaspace): prepend_scheme %q: %w", where, *m.PrependScheme, ErrUnsupported)
		}
	case m.AddPrefixSpace != nil && !*m.AddPrefixSpace:
		// Files from before prepend_scheme existed: add_prefix_space=false
		// means never, true (the default) means always.
		ms.scheme = prependNever
	}
	return ms, nil
}

func (m *metaspace) preTokenize(in []piece, out []piece) []piece {
	for _, p := range in {
		s := strings.ReplaceAll(p.text, " ", m.rep)
		if !strings.HasPrefix(s, m.rep) {
			if m.scheme == prependAlways || (m.scheme == prependFirst && p.first) {
				s = m.rep + s
			}
		}
		if !m.split {
			if s != "" {
				out = append(out, piece{text: s, first: p.first})
			}
			continue
		}
		out = emitSpans(out, s, p.first, applyBehavior(runeMatches(s, m.replacement), mergedWithNext))
	}
	return out
}

// span is one part of a text, flagged when it is a match of the pattern.
type span struct {
	start, end int
	match      bool
}

type splitBehavior uint8

const (
	isolated splitBehavior = iota
	removed
	mergedWithPrevious
	mergedWithNext
	contiguous
)

func parseBehavior(s, where string) (splitBehavior, error) {
	switch s {
	case "Isolated":
		return isolated, nil
	case "Removed":
		return removed, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("%s: behavior %q: %w", where, s, ErrUnsupported)
}

// runeMatches tiles s into matches of one character and the gaps between.
func runeMatches(s string, c rune) []span {
	var out []span
	last := 0
	for i, r := range s {
		if r == c {
			if last < i {
				out = append(out, span{last, i, false})
			}
			n := utf8.RuneLen(r)
			out = append(out, span{i, i + n, true})
			last = i + n
		}
	}
	if last < len(s) {
		out = append(out, span{last, len(s), false})
	}
	return out
}

// tile turns match positions into spans covering s.
func tile(s string, matches [][2]int) []span {
	out := make([]span, 0, 2*len(matches)+1)
	prev := 0
	for _, m := range matches {
		if prev != m[0] {
			out = append(out, span{prev, m[0], false})
		}
		out = append(out, span{m[0], m[1], true})
		prev = m[1]
	}
	if prev != len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out
}

// applyBehavior is NormalizedString::split: it decides which spans are kept
// and merges delimiters into their neighbours. The returned spans all have
// match=false except those to remove.
func applyBehavior(spans []span, b splitBehavior) []span {
	switch b {
	case isolated:
		for i := range spans {
			spans[i].match = false
		}
		return spans
	case removed:
		return spans
	case contiguous:
		var out []span
		prev := false
		for _, sp := range spans {
			if sp.match == prev && len(out) > 0 {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, span{sp.start, sp.end, false})
			}
			prev = sp.match
		}
		return out
	case mergedWithPrevious:
		var out []span
		prev := false
		for _, sp := range spans {
			if sp.match && !prev && len(out) > 0 {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, span{sp.start, sp.end, false})
			}
			prev = sp.match
		}
		return out
	case mergedWithNext:
		var rev []span
		prev := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !prev && len(rev) > 0 {
				rev[len(rev)-1].start = sp.start
			} else {
				rev = append(rev, span{sp.start, sp.end, false})
			}
			prev = sp.match
		}
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		return rev
	}
	return spans
}

func emitSpans(out []piece, s string, first bool, spans []span) []piece {
	for _, sp := range spans {
		if sp.match || sp.end <= sp.start {
			continue
		}
		out = append(out, piece{text: s[sp.start:sp.end], first: first && sp.start == 0})
	}
	return out
}

// splitPre is pre_tokenizers/split.rs.
type splitPre struct {
	literal  string
	re       *splitRegex
	behavior splitBehavior
	invert   bool
}

func (sp *splitPre) preTokenize(in []piece, out []piece) []piece {
	for _, p := range in {
		s := p.text
		if s == "" {
			continue
		}
		var spans []span
		switch {
		case sp.re != nil:
			spans = tile(s, sp.re.findAll(s))
		case sp.literal == "":
			// An empty String pattern matches nothing (pattern.rs).
			spans = []span{{0, len(s), false}}
		default:
			var ms [][2]int
			for i := 0; i <= len(s); {
				j := strings.Index(s[i:], sp.literal)
				if j < 0 {
					break
				}
				ms = append(ms, [2]int{i + j, i + j + len(sp.literal)})
				i += j + len(sp.literal)
			}
			spans = tile(s, ms)
		}
		if sp.invert {
			for i := range spans {
				spans[i].match = !spans[i].match
			}
		}
		out = emitSpans(out, s, p.first, applyBehavior(spans, sp.behavior))
	}
	return out
}

type sequencePre []preTokenizer

func (seq sequencePre) preTokenize(in []piece, out []piece) []piece {
	cur := in
	for i, p := range seq {
		if i == len(seq)-1 {
			return p.preTokenize(cur, out)
		}
		cur = p.preTokenize(cur, nil)
	}
	return append(out, cur...)
}
