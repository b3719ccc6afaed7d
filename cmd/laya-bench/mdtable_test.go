package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// mdCells splits one Markdown table line into its cells, the way GitHub
// reads it: the line starts and ends with a pipe, and \| is a pipe inside
// a cell.
func mdCells(t *testing.T, line string) []string {
	t.Helper()
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		t.Fatalf("table line does not start and end with |: %q", line)
	}
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return cells
}

var mdSeparator = regexp.MustCompile(`^:?-{3,}:?$`)

// parseMDTables returns every Markdown table of text (runs of lines that
// start with |), checking each is well formed: a header, a separator row
// of ---, ---: or :---, and rows of the header's width.
func parseMDTables(t *testing.T, text string) [][][]string {
	t.Helper()
	var tables [][][]string
	var cur [][]string
	flush := func() {
		if cur == nil {
			return
		}
		if len(cur) < 2 {
			t.Errorf("a table of %d line(s): %v", len(cur), cur)
		} else {
			for _, c := range cur[1] {
				if !mdSeparator.MatchString(c) {
					t.Errorf("second row %q is not a separator row", cur[1])
					break
				}
			}
			for _, r := range cur {
				if len(r) != len(cur[0]) {
					t.Errorf("row %q has %d cells, the header %d", r, len(r), len(cur[0]))
				}
			}
			tables = append(tables, append([][]string{cur[0]}, cur[2:]...))
		}
		cur = nil
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "|") {
			cur = append(cur, mdCells(t, line))
			continue
		}
		flush()
	}
	flush()
	return tables
}

func TestMDTable(t *testing.T) {
	tb := newMDTable("name", ">ms")
	tb.add("a|b", "1.5")
	tb.add("with\ttab", fmt.Sprintf("%.2f", 2.0))
	tb.add("short")
	var out strings.Builder
	if err := tb.write(&out); err != nil {
		t.Fatal(err)
	}
	tables := parseMDTables(t, out.String())
	want := fmt.Sprint([][][]string{{{"name", "ms"}, {"a|b", "1.5"}, {"with tab", "2.00"}, {"short", ""}}})
	if got := fmt.Sprint(tables); got != want {
		t.Errorf("parsed %s, want %s\n%s", got, want, out.String())
	}
	if !strings.Contains(out.String(), "| ---") || !strings.Contains(out.String(), "---: |") {
		t.Errorf("separator row lacks the alignment:\n%s", out.String())
	}
}
