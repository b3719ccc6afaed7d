package mslpp

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// asMemberRe finds a member function qualified by an address space, as in
// MLX's complex.h:
//
//	constexpr complex64_t(T x) thread : real(x), imag(0) {}
//	constexpr complex64_t(T x) device : real(x), imag(0) {}
//	constexpr operator T() const constant { ... }
//
// MSL overloads members on the address space of *this; the emulator has one
// flat address space, so the variants are the same function to C++.
var asMemberRe = regexp.MustCompile(`\)\s*(?:const\s+)?(thread|threadgroup|device|constant)\b\s*(?:const\b\s*)?(?:noexcept\b\s*)?(:|\{|;|->)`)

var accessSpecRe = regexp.MustCompile(`^(?:public|private|protected)\s*:\s*`)

// rewriteQualifiedMembers keeps the first of each set of address-space
// variants of a member function (with its qualifier removed) and blanks the
// others, which would otherwise be redefinitions. Variants are told apart
// by their enclosing class and their declaration text without the
// qualifier and body.
func rewriteQualifiedMembers(lines []line, inDefine []bool) {
	joined := joinBlank(lines)
	blank, starts, lineAt := joined.text, joined.starts, joined.lineAt
	clear := func(from, to int) { // [from, to) in blank
		for li := lineAt(from); li < len(lines) && starts[li] < to; li++ {
			a, b := max(from, starts[li])-starts[li], min(to, starts[li]+len(lines[li].blank))-starts[li]
			if a < b {
				clearSpan(&lines[li], a, b)
			}
		}
	}
	seen := map[string]bool{}
	for _, m := range asMemberRe.FindAllStringSubmatchIndex(blank, -1) {
		if inDefine[lineAt(m[0])] {
			continue
		}
		open, ok := matchingBack(blank, m[0], '(', ')')
		if !ok {
			continue
		}
		start := open - len(declPrefix(blank, open))
		qualFrom, qualTo := m[2], m[3]
		end := -1
		switch tok := blank[m[4]:m[5]]; tok {
		case ";":
			end = m[5]
		default:
			if brace := strings.IndexByte(blank[m[4]:], '{'); brace >= 0 {
				if e, ok := matching(blank, m[4]+brace, '{', '}'); ok {
					end = e + 1
				}
			}
		}
		if end < 0 {
			continue
		}
		sigEnd := m[4]
		if brace := strings.IndexByte(blank[m[4]:end], '{'); brace >= 0 && blank[m[4]:m[5]] != ";" {
			sigEnd = m[4] + brace
		}
		sig := accessSpecRe.ReplaceAllString(strings.Join(strings.Fields(blank[start:qualFrom]+" "+blank[qualTo:sigEnd]), " "), "")
		key := strconv.Itoa(enclosingBrace(blank, start)) + "\x00" + sig
		if seen[key] {
			clear(start, end)
			continue
		}
		seen[key] = true
		clear(qualFrom, qualTo)
	}
}

// matchingBack returns the index of the opening bracket o that matches the
// closing bracket c at s[close].
func matchingBack(s string, close int, o, c byte) (int, bool) {
	depth := 0
	for i := close; i >= 0; i-- {
		switch s[i] {
		case c:
			depth++
		case o:
			depth--
			if depth == 0 {
				return i, true
			}
		}
	}
	return 0, false
}

// enclosingBrace returns the offset of the unclosed '{' before off, or -1.
func enclosingBrace(s string, off int) int {
	depth := 0
	for i := off - 1; i >= 0; i-- {
		switch s[i] {
		case '}':
			depth++
		case '{':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

// blankText is the blanked text of lines joined with a newline after each,
// and the offset in it where each line starts: the text the rewriting
// passes match their patterns against, mapped back to lines by lineAt.
type blankText struct {
	text   string
	starts []int
}

func joinBlank(lines []line) blankText {
	var sb strings.Builder
	starts := make([]int, len(lines))
	for i, l := range lines {
		starts[i] = sb.Len()
		sb.WriteString(l.blank)
		sb.WriteByte('\n')
	}
	return blankText{text: sb.String(), starts: starts}
}

// lineAt is the index of the line holding offset off of the text.
func (b blankText) lineAt(off int) int {
	return sort.Search(len(b.starts), func(i int) bool { return b.starts[i] > off }) - 1
}
