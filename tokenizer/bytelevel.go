package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// byteRune is GPT-2's bytes_to_unicode table: printable Latin-1 bytes map
// to themselves, the other 68 bytes to U+0100 upwards in byte order, so that
// every byte becomes a visible character (pre_tokenizers/byte_level.rs).
var byteRune [256]rune

// byteStr[b] is byteRune[b] encoded as UTF-8, for building words quickly.
var byteStr [256]string

// runeByte inverts byteRune for the ByteLevel decoder.
var runeByte = map[rune]byte{}

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteRune[b] = rune(b)
		} else {
			byteRune[b] = 256 + n
			n++
		}
		byteStr[b] = string(byteRune[b])
		runeByte[byteRune[b]] = byte(b)
	}
}

// byteLevelMap rewrites every byte of s as its bytes_to_unicode character.
func byteLevelMap(s string) string {
	var sb strings.Builder
	sb.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		sb.WriteString(byteStr[s[i]])
	}
	return sb.String()
}

// byteLevelLen is len(byteLevelMap(s)).
func byteLevelLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n += len(byteStr[s[i]])
	}
	return n
}

// isSpace is Oniguruma's Unicode \s and Rust's char::is_whitespace: the
// White_Space property, which is what unicode.IsSpace implements.
func isSpace(r rune) bool { return unicode.IsSpace(r) }

// charClass buckets a rune for the GPT-2 split regex.
type charClass uint8

const (
	classOther charClass = iota // [^\s\p{L}\p{N}]
	classLetter
	classNumber
	classSpace
)

func classify(r rune) charClass {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}

var asciiClass [utf8.RuneSelf]charClass

func init() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		switch {
		case unicode.IsLetter(r):
			asciiClass[r] = classLetter
		case unicode.IsNumber(r):
			asciiClass[r] = classNumber
		case unicode.IsSpace(r):
			asciiClass[r] = classSpace
		default:
			asciiClass[r] = classOther
		}
	}
}

// gpt2Split calls emit for each match of the GPT-2 pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// in order. The alternatives cover every character, so the matches tile s.
// Go's regexp has no lookahead, so \s+(?!\S) is written out: a whitespace
// run followed by a non-space gives up its last character (which then
// prefixes the next word, or stands alone when it is not a plain space).
func gpt2Split(s string, emit func(start, end int)) {
	for p := 0; p < len(s); {
		end := gpt2MatchAt(s, p)
		emit(p, end)
		p = end
	}
}

// gpt2MatchAt returns the end of the GPT-2 pattern match starting at p.
func gpt2MatchAt(s string, p int) int {
	c := s[p]
	if c == '\'' && p+1 < len(s) {
		switch s[p+1] {
		case 's', 't', 'm', 'd':
			return p + 2
		case 'r', 'v':
			if p+2 < len(s) && s[p+2] == 'e' {
				return p + 3
			}
		case 'l':
			if p+2 < len(s) && s[p+2] == 'l' {
				return p + 3
			}
		}
	}
	r, size := utf8.DecodeRuneInString(s[p:])
	cls := classify(r)
	start := p
	if r == ' ' && p+1 < len(s) {
		// " ?X+": a single plain space joins the run that follows it.
		r2, _ := utf8.DecodeRuneInString(s[p+1:])
		if c2 := classify(r2); c2 != classSpace {
			cls = c2
			start = p + 1
		}
	}
	if cls != classSpace {
		q := start
		for q < len(s) {
			r, n := utf8.DecodeRuneInString(s[q:])
			if classify(r) != cls {
				break
			}
			q += n
		}
		return q
	}
	// Whitespace run.
	q, last := p+size, p
	for q < len(s) {
		r, n := utf8.DecodeRuneInString(s[q:])
		if !isSpace(r) {
			break
		}
		last = q
		q += n
	}
	if q == len(s) || last == p {
		// At the end of the text \s+(?!\S) takes the whole run; a single
		// space before a non-space fails the lookahead and \s+ takes it.
		return q
	}
	return last
}
