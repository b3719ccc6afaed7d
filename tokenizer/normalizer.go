package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

var decodeRune = utf8.DecodeRuneInString

// normalizer rewrites a piece of text (normalizers/*.rs). Only the text
// matters here; offsets are not tracked.
type normalizer interface {
	normalize(s string) string
}

type componentJSON struct {
	Type string `json:"type"`
}

// patternJSON is the {"String": ...} or {"Regex": ...} object of Replace
// and Split.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func newNormalizer(raw json.RawMessage, where string) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", where, err, ErrInvalid)
	}
	switch c.Type {
	case "NFC":
		return formNormalizer{norm.NFC}, nil
	case "NFD":
		return formNormalizer{norm.NFD}, nil
	case "NFKC":
		return formNormalizer{norm.NFKC}, nil
	case "NFKD":
		return formNormalizer{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "Strip":
		var s struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s (Strip): %v: %w", where, err, ErrInvalid)
		}
		return strip{left: s.Left, right: s.Right}, nil
	case "Prepend":
		var p struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("%s (Prepend): %v: %w", where, err, ErrInvalid)
		}
		return prepend{p.Prepend}, nil
	case "Replace":
		rep, err := parseReplacer(raw, where)
		if err != nil {
			return nil, err
		}
		return rep, nil
	case "Sequence":
		seq, err := parseSequence(raw, "normalizers", where, newNormalizer)
		return sequenceNormalizer(seq), err
	}
	return nil, fmt.Errorf("%s: type %q: %w", where, c.Type, ErrUnsupported)
}

type formNormalizer struct{ form norm.Form }

// cgj is U+034F COMBINING GRAPHEME JOINER.
const cgj = "\u034F"

// normalize applies the Unicode normalization form. x/text/unicode/norm
// implements the Stream-Safe Text Format: after 30 non-starters in a row it
// inserts U+034F, which stops reordering and composition there. The Rust
// unicode-normalization crate under tokenizers does not, so when x/text
// inserted a CGJ the text is normalized again without the limit.
func (f formNormalizer) normalize(s string) string {
	out := f.form.String(s)
	if out == s || strings.Count(out, cgj) == strings.Count(s, cgj) {
		return out
	}
	return unboundedNormalize(s, f.form)
}

// unboundedNormalize is the textbook normalization algorithm (UAX #15):
// full decomposition rune by rune, canonical ordering of each run of
// non-starters, then canonical composition for the composed forms.
func unboundedNormalize(s string, form norm.Form) string {
	decompose, compose := norm.NFD, false
	switch form {
	case norm.NFC:
		compose = true
	case norm.NFKC:
		decompose, compose = norm.NFKD, true
	case norm.NFKD:
		decompose = norm.NFKD
	}
	var runes []rune
	for _, r := range s {
		// One rune decomposes to at most 18 runes, far from the limit.
		runes = append(runes, []rune(decompose.String(string(r)))...)
	}
	ccc := func(r rune) uint8 { return norm.NFD.PropertiesString(string(r)).CCC() }
	// Canonical ordering: a stable sort of every run of non-starters.
	for i := 0; i < len(runes); {
		if ccc(runes[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(runes) && ccc(runes[j]) != 0 {
			j++
		}
		run := runes[i:j]
		sort.SliceStable(run, func(a, b int) bool { return ccc(run[a]) < ccc(run[b]) })
		i = j
	}
	if !compose {
		return string(runes)
	}
	out := make([]rune, 0, len(runes))
	starter, lastCCC := -1, -1 // lastCCC: class of the last rune kept after the starter, -1 if none
	for _, r := range runes {
		c := int(ccc(r))
		if starter >= 0 && (lastCCC == -1 || lastCCC < c) {
			if comp, ok := composePair(out[starter], r); ok {
				out[starter] = comp
				continue
			}
		}
		if c == 0 {
			starter, lastCCC = len(out), -1
		} else {
			lastCCC = c
		}
		out = append(out, r)
	}
	return string(out)
}

// composePair returns the primary composite of a starter and a following
// rune, if any; NFC of the pair is a single rune exactly then (NFC already
// leaves out the composition exclusions).
func composePair(a, b rune) (rune, bool) {
	s := norm.NFC.String(string([]rune{a, b}))
	r, size := utf8.DecodeRuneInString(s)
	if size != len(s) {
		return 0, false
	}
	return r, true
}

// lowercase is Rust's str::to_lowercase per character. Go's unicode.ToLower
// agrees except for U+0130, whose full lowercase mapping is two runes.
type lowercase struct{}

func (lowercase) normalize(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.ToLower(s)
	}
	return strings.ToLower(strings.ReplaceAll(s, "İ", "i\u0307"))
}

type strip struct{ left, right bool }

func (st strip) normalize(s string) string {
	if st.left {
		s = strings.TrimLeftFunc(s, isSpace)
	}
	if st.right {
		s = strings.TrimRightFunc(s, isSpace)
	}
	return s
}

// prepend adds its text to non-empty pieces only (normalizers/prepend.rs).
type prepend struct{ text string }

func (p prepend) normalize(s string) string {
	if s == "" {
		return s
	}
	return p.text + s
}

type sequenceNormalizer []normalizer

func (seq sequenceNormalizer) normalize(s string) string {
	for _, n := range seq {
		s = n.normalize(s)
	}
	return s
}

// replacer replaces every non-overlapping match of a literal string or a
// regex, left to right.
type replacer struct {
	literal string
	re      *regexp.Regexp
	content string
}

// parseReplacer reads a Replace component (normalizer or decoder: the same
// JSON and the same semantics).
func parseReplacer(raw json.RawMessage, where string) (*replacer, error) {
	var r struct {
		Pattern patternJSON `json:"pattern"`
		Content string      `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s (Replace): %v: %w", where, err, ErrInvalid)
	}
	return newReplacer(r.Pattern, r.Content, where+" (Replace)")
}

func newReplacer(p patternJSON, content, where string) (*replacer, error) {
	switch {
	case p.String != nil:
		return &replacer{literal: *p.String, content: content}, nil
	case p.Regex != nil:
		tr, err := translateRegex(*p.Regex)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		re, err := regexp.Compile(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: regex %q: %v: %w", where, *p.Regex, err, ErrUnsupported)
		}
		return &replacer{re: re, content: content}, nil
	}
	return nil, fmt.Errorf("%s: pattern is neither String nor Regex: %w", where, ErrInvalid)
}

func (r *replacer) normalize(s string) string { return r.replace(s) }

func (r *replacer) replace(s string) string {
	if r.re != nil {
		return r.re.ReplaceAllLiteralString(s, r.content)
	}
	if r.literal == "" {
		// An empty pattern matches nothing in tokenizers (pattern.rs).
		return s
	}
	return strings.ReplaceAll(s, r.literal, r.content)
}
