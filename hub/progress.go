package hub

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress reports one file's download. Callbacks get one call when a file
// starts (Downloaded may be non-zero when a partial download is resumed),
// calls while bytes arrive, and one with Done set when the file is complete.
type Progress struct {
	Repo       string // org/name
	File       string // path inside the repository
	Downloaded int64  // bytes on disk so far, resumed bytes included
	Total      int64  // expected size, or -1 when the Hub did not say
	Done       bool
}

// Fraction is Downloaded/Total in [0, 1], or 0 when the size is unknown.
func (p Progress) Fraction() float64 {
	if p.Total <= 0 {
		return 0
	}
	return min(1, float64(p.Downloaded)/float64(p.Total))
}

// TerminalProgress returns a callback that draws a one-line progress bar on
// w, or nil when w is not a terminal, so that piped and logged output stay
// clean. Typical use: client.Progress = hub.TerminalProgress(os.Stderr).
func TerminalProgress(w io.Writer) func(Progress) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return NewProgressBar(w)
}

// NewProgressBar draws to w unconditionally, redrawing at most ten times a
// second. The returned callback is safe for concurrent use.
func NewProgressBar(w io.Writer) func(Progress) {
	var (
		mu        sync.Mutex
		lastDraw  time.Time
		startTime time.Time
		startSize int64
		file      string
	)
	return func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if p.File != file {
			file, startTime, startSize = p.File, now, p.Downloaded
		}
		if !p.Done && now.Sub(lastDraw) < 100*time.Millisecond {
			return
		}
		lastDraw = now
		const width = 30
		filled := int(p.Fraction() * width)
		bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
		rate := ""
		if el := now.Sub(startTime).Seconds(); el > 0.2 {
			rate = fmt.Sprintf(" %s/s", humanBytes(int64(float64(p.Downloaded-startSize)/el)))
		}
		total := "?"
		if p.Total >= 0 {
			total = humanBytes(p.Total)
		}
		fmt.Fprintf(w, "\r%s [%s] %3.0f%% %s/%s%s\x1b[K", p.File, bar, 100*p.Fraction(), humanBytes(p.Downloaded), total, rate)
		if p.Done {
			fmt.Fprintln(w)
		}
	}
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
