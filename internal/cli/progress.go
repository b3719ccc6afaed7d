package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Progress is a status line rewritten in place on a terminal. Long work
// shows where it is to a person watching; a log file or a pipe gets
// nothing, so that scripts read only the results. The zero of *Progress
// (nil) draws nothing.
type Progress struct {
	w     io.Writer
	width int // of the line drawn last, to blank its tail
}

// NewProgress returns a Progress drawing to w when w is a terminal, and nil
// (silent) otherwise.
func NewProgress(w io.Writer) *Progress {
	if !IsTerminal(w) {
		return nil
	}
	return &Progress{w: w}
}

// Printf replaces the status line with the formatted text.
func (p *Progress) Printf(format string, args ...any) {
	if p == nil {
		return
	}
	line := fmt.Sprintf(format, args...)
	pad := max(p.width-len(line), 0)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
	p.width = len(line)
}

// Clear blanks the status line, leaving the cursor at its start, so that
// what is printed next starts on a clean line.
func (p *Progress) Clear() {
	if p == nil || p.width == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	p.width = 0
}

// WatchFile shows, on a terminal only, how much of the file at path has
// been written of the total bytes expected, as "label: 120 of 843 MB (14
// %)", redrawn every 200 ms until the returned function is called, which
// clears the line. It suits work that writes one large file through a
// library that reports no progress of its own.
func WatchFile(w io.Writer, label, path string, total int64) (stop func()) {
	p := NewProgress(w)
	if p == nil || total <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				p.Clear()
				return
			case <-tick.C:
			}
			if st, err := os.Stat(path); err == nil {
				p.Printf("%s: %.0f of %.0f MB (%.0f %%)", label, float64(st.Size())/1e6, float64(total)/1e6,
					min(100, 100*float64(st.Size())/float64(total)))
			}
		}
	}()
	return func() { close(done); <-finished }
}
