package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns token strings back into text (decoders/*.rs).
type decoder interface {
	decodeChain(tokens []string) []string
}

func newDecoder(raw json.RawMessage, where string) (decoder, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", where, err, ErrInvalid)
	}
	switch c.Type {
	case "ByteLevel":
		return byteLevelDecoder{}, nil
	case "Metaspace":
		ms, err := parseMetaspace(raw, where)
		if err != nil {
			return nil, err
		}
		return metaspaceDecoder{ms}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Strip":
		var s struct {
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s (Strip): %v: %w", where, err, ErrInvalid)
		}
		r, size := utf8.DecodeRuneInString(s.Content)
		if s.Content == "" || size != len(s.Content) {
			return nil, fmt.Errorf("%s (Strip): content %q is not one character: %w", where, s.Content, ErrInvalid)
		}
		return stripDecoder{content: r, start: s.Start, stop: s.Stop}, nil
	case "Replace":
		rep, err := parseReplacer(raw, where)
		if err != nil {
			return nil, err
		}
		return replaceDecoder{rep}, nil
	case "Sequence":
		seq, err := parseSequence(raw, "decoders", where, newDecoder)
		return sequenceDecoder(seq), err
	}
	return nil, fmt.Errorf("%s: type %q: %w", where, c.Type, ErrUnsupported)
}

// byteLevelDecoder maps visible characters back to bytes over all tokens at
// once, then decodes UTF-8 lossily. A token with a character outside the
// table (an added token such as a space run) is taken as raw bytes.
type byteLevelDecoder struct{}

func (byteLevelDecoder) decodeChain(tokens []string) []string {
	var buf []byte
	for _, tok := range tokens {
		start := len(buf)
		ok := true
		for _, r := range tok {
			b, found := runeByte[r]
			if !found {
				ok = false
				break
			}
			buf = append(buf, b)
		}
		if !ok {
			buf = append(buf[:start], tok...)
		}
	}
	return []string{lossyUTF8(buf)}
}

// lossyUTF8 is Rust's String::from_utf8_lossy: each maximal invalid
// subsequence (the longest prefix of a well-formed sequence, or one byte)
// becomes one U+FFFD. Go's strings.ToValidUTF8 would merge whole runs.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[i : i+size])
			i += size
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart is the length of the invalid sequence starting at b[0],
// per the Unicode table of well-formed UTF-8 byte sequences.
func maximalSubpart(b []byte) int {
	type rng struct{ lo, hi byte }
	cont := rng{0x80, 0xBF}
	var want []rng
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		want = []rng{cont}
	case c == 0xE0:
		want = []rng{{0xA0, 0xBF}, cont}
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		want = []rng{cont, cont}
	case c == 0xED:
		want = []rng{{0x80, 0x9F}, cont}
	case c == 0xF0:
		want = []rng{{0x90, 0xBF}, cont, cont}
	case c >= 0xF1 && c <= 0xF3:
		want = []rng{cont, cont, cont}
	case c == 0xF4:
		want = []rng{{0x80, 0x8F}, cont, cont}
	}
	n := 1
	for _, w := range want {
		if n >= len(b) || b[n] < w.lo || b[n] > w.hi {
			break
		}
		n++
	}
	return n
}

type metaspaceDecoder struct{ m *metaspace }

func (d metaspaceDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		var sb strings.Builder
		for _, r := range tok {
			if r == d.m.replacement {
				if i == 0 && d.m.scheme != prependNever {
					continue
				}
				r = ' '
			}
			sb.WriteRune(r)
		}
		out[i] = sb.String()
	}
	return out
}

// byteFallbackDecoder joins runs of <0xNN> tokens into their UTF-8 text; an
// invalid run becomes one U+FFFD per byte.
type byteFallbackDecoder struct{}

func (byteFallbackDecoder) decodeChain(tokens []string) []string {
	var out []string
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, tok := range tokens {
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && tok[5] == '>' {
			if b, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
				pending = append(pending, byte(b))
				continue
			}
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

type fuseDecoder struct{}

func (fuseDecoder) decodeChain(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}

// stripDecoder removes up to start leading and stop trailing copies of
// content from each token.
type stripDecoder struct {
	content     rune
	start, stop int
}

func (d stripDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		rs := []rune(tok)
		lo := 0
		for lo < d.start && lo < len(rs) && rs[lo] == d.content {
			lo++
		}
		hi := len(rs)
		for n := 0; n < d.stop && hi > lo && rs[hi-1] == d.content; n++ {
			hi--
		}
		out[i] = string(rs[lo:hi])
	}
	return out
}

type replaceDecoder struct{ r *replacer }

func (d replaceDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i] = d.r.replace(tok)
	}
	return out
}

type sequenceDecoder []decoder

func (seq sequenceDecoder) decodeChain(tokens []string) []string {
	for _, d := range seq {
		tokens = d.decodeChain(tokens)
	}
	return tokens
}
