package gpu

import (
	"fmt"
	"strings"

	"github.com/laya-metal/laya/metal"
)

// A command buffer that fails on the GPU says only that it failed (Metal's
// status, code and description); a stream commits 16, then 48 dispatches
// per command buffer, so the error alone does not say which operation
// broke. The stream therefore keeps, for the command buffers it has not
// waited for yet, which dispatches each held (the stream operation, its
// ordinal among the stream's dispatches of that operation, and the
// kernel), and a failed wait names them. On a device whose command buffers
// take debug labels (metal.DebugLabeler: the Apple GPU with labels on),
// each dispatch is also wrapped in a debug group of the same name, so
// Xcode's GPU capture and the Metal validation layer show it.

// dispatchLabel is one dispatch of a stream.
type dispatchLabel struct {
	op     string
	nth    int // the op's nth dispatch in the stream, from 1: the layer, for per-layer ops
	kernel string
}

func (l dispatchLabel) String() string { return fmt.Sprintf("%s #%d (%s)", l.op, l.nth, l.kernel) }

type opCount struct {
	op string
	n  int
}

// opLog is a stream's dispatches since its last wait.
type opLog struct {
	op     string // of the dispatch being encoded (Stream.begin)
	nth    int
	counts []opCount
	labels []dispatchLabel
	// ends[i] is where the labels of the i-th committed command buffer
	// not yet waited for end.
	ends []int
}

// begin starts a dispatch of op.
func (l *opLog) begin(op string) {
	for i := range l.counts {
		if l.counts[i].op == op {
			l.counts[i].n++
			l.op, l.nth = op, l.counts[i].n
			return
		}
	}
	l.counts = append(l.counts, opCount{op, 1})
	l.op, l.nth = op, 1
}

// dispatched records the dispatch of kernel by the current op.
func (l *opLog) dispatched(kernel string) {
	l.labels = append(l.labels, dispatchLabel{op: l.op, nth: l.nth, kernel: kernel})
}

// committed marks the end of a command buffer's labels.
func (l *opLog) committed() { l.ends = append(l.ends, len(l.labels)) }

// waited forgets the labels of the command buffers waited for.
func (l *opLog) waited() { l.labels, l.ends = l.labels[:0], l.ends[:0] }

// held describes what the i-th committed command buffer held.
func (l *opLog) held(i int) string {
	if i < 0 || i >= len(l.ends) {
		return ""
	}
	start := 0
	if i > 0 {
		start = l.ends[i-1]
	}
	labels := l.labels[start:l.ends[i]]
	const most = 8
	var b strings.Builder
	fmt.Fprintf(&b, "the command buffer held %d dispatches: ", len(labels))
	for j, d := range labels[:min(len(labels), most)] {
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.String())
	}
	if len(labels) > most {
		fmt.Fprintf(&b, ", … %s", labels[len(labels)-1])
	}
	return b.String()
}

// heldErr wraps the error of the i-th committed command buffer with what
// it held.
func (l *opLog) heldErr(i int, err error) error {
	if h := l.held(i); h != "" {
		return fmt.Errorf("%w (%s)", err, h)
	}
	return err
}

// labelDispatch wraps a dispatch of kernel in a debug group where cb
// takes them; the returned function closes it.
func labelDispatch(cb metal.CommandBuffer, l *opLog, kernel string) (end func()) {
	dl, ok := cb.(metal.DebugLabeler)
	if !ok || !dl.Labels() {
		return nil
	}
	dl.PushDebugGroup(dispatchLabel{op: l.op, nth: l.nth, kernel: kernel}.String())
	return dl.PopDebugGroup
}
