package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Hugging Face tokenizers compiles "Regex" patterns with Oniguruma, where
// \s, \d and \w are Unicode-aware; in Go's RE2 they are ASCII-only. The
// pattern is therefore rewritten with explicit Unicode classes. Lookaround
// does not exist in RE2, with one exception handled by hand: a trailing
// "\s+(?!\S)|\s+", the whitespace tail of the GPT-2 family of split patterns.

// whiteSpaceClass is the White_Space property as an RE2 class body.
const whiteSpaceClass = `\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// wordClass approximates Oniguruma's Unicode \w (Letter, Mark, Decimal
// number, Connector punctuation).
const wordClass = `\p{L}\p{M}\p{Nd}\p{Pc}`

// nonWhiteSpaceClass is the complement of whiteSpaceClass, for \S inside a
// bracket expression where RE2 cannot nest a negated class.
var nonWhiteSpaceClass = func() string {
	var sb strings.Builder
	lo := rune(0)
	for _, rg := range unicode.White_Space.R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			if r > lo {
				fmt.Fprintf(&sb, `\x{%X}-\x{%X}`, lo, r-1)
			}
			lo = r + 1
		}
	}
	fmt.Fprintf(&sb, `\x{%X}-\x{10FFFF}`, lo)
	return sb.String()
}()

// translateRegex rewrites an Oniguruma pattern into RE2 syntax.
func translateRegex(pat string) (string, error) {
	var sb strings.Builder
	inClass := false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat):
			e := pat[i+1]
			i++
			switch e {
			case 's':
				if inClass {
					sb.WriteString(whiteSpaceClass)
				} else {
					sb.WriteString("[" + whiteSpaceClass + "]")
				}
			case 'S':
				if inClass {
					sb.WriteString(nonWhiteSpaceClass)
				} else {
					sb.WriteString("[^" + whiteSpaceClass + "]")
				}
			case 'd':
				sb.WriteString(`\p{Nd}`)
			case 'D':
				sb.WriteString(`\P{Nd}`)
			case 'w':
				if inClass {
					sb.WriteString(wordClass)
				} else {
					sb.WriteString("[" + wordClass + "]")
				}
			case 'W':
				if inClass {
					return "", fmt.Errorf(`regex %q: \W inside a bracket expression: %w`, pat, ErrUnsupported)
				}
				sb.WriteString("[^" + wordClass + "]")
			default:
				sb.WriteByte('\\')
				sb.WriteByte(e)
			}
		case c == '[' && !inClass:
			inClass = true
			sb.WriteByte(c)
			// A ']' right after '[' or '[^' is a literal.
			if i+1 < len(pat) && pat[i+1] == '^' {
				sb.WriteByte('^')
				i++
			}
			if i+1 < len(pat) && pat[i+1] == ']' {
				sb.WriteString(`\]`)
				i++
			}
		case c == '[' && inClass:
			if strings.HasPrefix(pat[i:], "[:") {
				// POSIX class such as [:alpha:], copied through.
				end := strings.Index(pat[i:], ":]")
				if end > 0 {
					sb.WriteString(pat[i : i+end+2])
					i += end + 1
					continue
				}
			}
			return "", fmt.Errorf("regex %q: nested bracket expression: %w", pat, ErrUnsupported)
		case c == ']' && inClass:
			inClass = false
			sb.WriteByte(c)
		case c == '(' && !inClass && strings.HasPrefix(pat[i:], "(?"):
			rest := pat[i+2:]
			for _, look := range []string{"=", "!", "<=", "<!", ">"} {
				if strings.HasPrefix(rest, look) {
					return "", fmt.Errorf("regex %q: lookaround or atomic group (?%s: %w", pat, look, ErrUnsupported)
				}
			}
			sb.WriteByte(c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String(), nil
}

// whitespaceLookaheadTail is the GPT-2 whitespace tail, handled by hand.
const whitespaceLookaheadTail = `\s+(?!\S)|\s+`

// splitRegex is a compiled split pattern: an RE2 regexp for everything but
// an optional GPT-2 whitespace tail.
type splitRegex struct {
	head     *regexp.Regexp // anchored at the start of the text; nil if the whole pattern is the tail
	headFree *regexp.Regexp // unanchored, used when there is no tail
	wsTail   bool
}

func compileSplitRegex(pat string) (*splitRegex, error) {
	sr := &splitRegex{}
	head := pat
	if pat == whitespaceLookaheadTail {
		sr.wsTail = true
		head = ""
	} else if strings.HasSuffix(pat, "|"+whitespaceLookaheadTail) {
		sr.wsTail = true
		head = strings.TrimSuffix(pat, "|"+whitespaceLookaheadTail)
	}
	if head == "" {
		if !sr.wsTail {
			return nil, fmt.Errorf("regex %q: empty pattern: %w", pat, ErrUnsupported)
		}
		return sr, nil
	}
	tr, err := translateRegex(head)
	if err != nil {
		return nil, err
	}
	if sr.wsTail {
		sr.head, err = regexp.Compile(`^(?:` + tr + `)`)
	} else {
		sr.headFree, err = regexp.Compile(tr)
	}
	if err != nil {
		return nil, fmt.Errorf("regex %q: %v: %w", pat, err, ErrUnsupported)
	}
	return sr, nil
}

// findAll returns the [start, end) byte spans of the non-overlapping
// leftmost-first matches of the pattern in s.
func (sr *splitRegex) findAll(s string) [][2]int {
	if !sr.wsTail {
		var out [][2]int
		for _, m := range sr.headFree.FindAllStringIndex(s, -1) {
			out = append(out, [2]int{m[0], m[1]})
		}
		return out
	}
	var out [][2]int
	for p := 0; p < len(s); {
		if sr.head != nil {
			if m := sr.head.FindStringIndex(s[p:]); m != nil && m[1] > 0 {
				out = append(out, [2]int{p, p + m[1]})
				p += m[1]
				continue
			}
		}
		r, size := decodeRune(s[p:])
		if !isSpace(r) {
			p += size
			continue
		}
		q, last := p+size, p
		for q < len(s) {
			r, n := decodeRune(s[q:])
			if !isSpace(r) {
				break
			}
			last = q
			q += n
		}
		end := last
		if q == len(s) || last == p {
			end = q
		}
		out = append(out, [2]int{p, end})
		p = end
	}
	return out
}
