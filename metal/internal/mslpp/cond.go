package mslpp

import (
	"regexp"
	"strings"
)

var (
	condOpenRe  = regexp.MustCompile(`^\s*#\s*if(?:n?def)?\b`)
	condNextRe  = regexp.MustCompile(`^\s*#\s*(?:elif(?:n?def)?|else)\b`)
	condEndRe   = regexp.MustCompile(`^\s*#\s*endif\b`)
	ifndefRe    = regexp.MustCompile(`^\s*#\s*ifndef\s+(\w+)\s*$`)
	defineNameR = regexp.MustCompile(`^\s*#\s*define\s+(\w+)\s*$`)
)

// markConditionals records for each line the #if/#ifdef/#ifndef blocks
// around it (l.guard, l.depth). The preprocessor does not evaluate
// conditions, clang does; what it finds inside a block (a kernel, a
// feature the emulator lacks) is therefore emitted under the same
// directives. An include guard (#ifndef X followed by #define X) is not
// counted: its condition is false by the end of the file.
func markConditionals(lines []line, inDefine []bool) {
	type frame struct {
		directives []string
		guard      bool // an include guard
	}
	var stack []frame
	guardText := func() (string, int) {
		var sb strings.Builder
		n := 0
		for _, f := range stack {
			if f.guard {
				continue
			}
			n++
			for _, d := range f.directives {
				sb.WriteString(d)
				sb.WriteByte('\n')
			}
		}
		return sb.String(), n
	}
	// directive returns the directive starting at line i with its
	// continuation lines joined.
	directive := func(i int) string {
		var sb strings.Builder
		for j := i; j < len(lines); j++ {
			t := strings.TrimRight(lines[j].blank, " \t")
			if !strings.HasSuffix(t, "\\") {
				sb.WriteString(t)
				break
			}
			sb.WriteString(strings.TrimSuffix(t, "\\"))
			sb.WriteByte(' ')
		}
		return strings.Join(strings.Fields(sb.String()), " ")
	}
	for i := range lines {
		b := lines[i].blank
		switch {
		case inDefine[i]:
		case condOpenRe.MatchString(b):
			f := frame{directives: []string{directive(i)}}
			if m := ifndefRe.FindStringSubmatch(b); m != nil {
				for j := i + 1; j < len(lines); j++ {
					if strings.TrimSpace(lines[j].blank) == "" {
						continue
					}
					if d := defineNameR.FindStringSubmatch(lines[j].blank); d != nil && d[1] == m[1] {
						f.guard = true
					}
					break
				}
			}
			stack = append(stack, f)
		case condNextRe.MatchString(b):
			if len(stack) > 0 {
				stack[len(stack)-1].directives = append(stack[len(stack)-1].directives, directive(i))
			}
		case condEndRe.MatchString(b):
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		lines[i].guard, lines[i].depth = guardText()
	}
}

// guardDepth counts the blocks a Kernel.Guard opens.
func guardDepth(guard string) int {
	n := 0
	for _, d := range strings.Split(guard, "\n") {
		if condOpenRe.MatchString(d) {
			n++
		}
	}
	return n
}
