package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// mdTable is a Markdown (GitHub) table: a header row, the separator row
// that makes it a table, then the rows, every one with the header's
// number of cells. Cells are padded into columns for reading as text; a |
// inside a cell is escaped so that it does not end the cell.
type mdTable struct {
	header []string
	right  []bool // right-aligned columns (numbers)
	rows   [][]string
}

// newMDTable starts a table of the given columns; a column named with a
// leading '>' is right-aligned (the '>' is not printed).
func newMDTable(columns ...string) *mdTable {
	t := &mdTable{}
	for _, c := range columns {
		name, right := strings.CutPrefix(c, ">")
		t.header = append(t.header, name)
		t.right = append(t.right, right)
	}
	return t
}

// add appends a row; missing cells are empty, extra ones are an error of
// the caller and panic.
func (t *mdTable) add(cells ...string) {
	if len(cells) > len(t.header) {
		panic(fmt.Sprintf("laya-bench: a table row of %d cells under %d columns", len(cells), len(t.header)))
	}
	row := make([]string, len(t.header))
	copy(row, cells)
	t.rows = append(t.rows, row)
}

func (t *mdTable) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	line := func(cells []string) {
		for _, c := range cells {
			fmt.Fprintf(tw, "| %s\t", mdEscape(c))
		}
		fmt.Fprintln(tw, "|")
	}
	line(t.header)
	sep := make([]string, len(t.header))
	for i, right := range t.right {
		sep[i] = "---"
		if right {
			sep[i] = "---:"
		}
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	return tw.Flush()
}

// mdEscape makes s one table cell's text: pipes escaped, no line breaks,
// no tabs (they would split the padding columns).
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "\t", " ").Replace(s)
}
