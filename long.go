package laya

import (
	"context"
	"errors"
	"fmt"

	"github.com/laya-metal/laya/pyjson"
)

// Long states. A question row holds max_len tokens, and the question and its
// options take their share first, so Predict reads only the head of a long
// text (or the newest part of a conversation). PredictLong reads all of it:
// each question scans the state in windows of the room its row leaves, all
// windows of all questions run in one pass over padded batches, and the
// window answers are combined per question type.

// DefaultMaxWindows is how many windows PredictLong reads per question unless
// LongOptions says otherwise.
const DefaultMaxWindows = 16

// MaxLongWindows caps LongOptions.MaxWindows: the scan budget is what bounds
// the tokenizer's and the forward pass's work on a hostile state, so no
// request can lift it past this.
const MaxLongWindows = 256

// ErrInvalidLong reports LongOptions that cannot be honoured.
var ErrInvalidLong = errors.New("laya: invalid long-state options")

// LongOptions are PredictLong's settings; the zero value is the default.
type LongOptions struct {
	// MaxWindows is the scan budget: the most windows one question reads
	// (0: DefaultMaxWindows; at most MaxLongWindows). A state longer than the
	// budget covers is read from its start (a conversation, a JSON list: from
	// its end, the newest turns), and usage says so.
	MaxWindows int
	// Overlap is how many tokens neighbouring windows share, so that a sentence
	// cut by one window boundary is whole in the other (0: a quarter of the
	// window). It must be smaller than the window.
	Overlap int
}

// WindowUsage reports how a question read a state longer than its window
// (the JSON usage "windows" entry of that question).
type WindowUsage struct {
	QuestionID string
	// Windows is the number of windows read, each one forward row.
	Windows int
	// WindowTokens is the state tokens each window holds; StateTokens the state
	// tokens the windows cover together.
	WindowTokens, StateTokens int
	// Truncated: the state is longer than the scan budget covers.
	Truncated bool
}

func (o LongOptions) resolve() (LongOptions, error) {
	switch {
	case o.MaxWindows < 0 || o.MaxWindows > MaxLongWindows:
		return o, fmt.Errorf("%w: MaxWindows %d, want 1..%d (0 for %d)", ErrInvalidLong, o.MaxWindows, MaxLongWindows, DefaultMaxWindows)
	case o.Overlap < 0:
		return o, fmt.Errorf("%w: Overlap %d, want ≥ 0", ErrInvalidLong, o.Overlap)
	case o.MaxWindows == 0:
		o.MaxWindows = DefaultMaxWindows
	}
	return o, nil
}

// window is one span of the state's tokens, [start, start+n).
type window struct{ start, n int }

// longWindows places the windows of one question over n state tokens, room
// tokens each: from the start every stride tokens, the last one flush with the
// end, so every token is read and no window runs short. Past the budget the
// windows keep the start of the state, or its end when fromEnd (a list state,
// whose newest turns matter most, as Predict keeps them). It reports whether
// the budget cut the state.
func longWindows(n, room, overlap, budget int, fromEnd bool) ([]window, bool) {
	if n <= room || room <= 0 {
		return []window{{0, n}}, false
	}
	if overlap <= 0 {
		overlap = room / 4
	}
	stride := max(1, room-min(overlap, room-1))
	var ws []window
	for start := 0; ; start += stride {
		if start+room >= n {
			ws = append(ws, window{n - room, room})
			break
		}
		ws = append(ws, window{start, room})
	}
	if len(ws) <= budget {
		return ws, false
	}
	if !fromEnd {
		return ws[:budget], true
	}
	// The same grid laid from the end: the newest budget windows.
	ws = ws[:0]
	for end := n; len(ws) < budget; end -= stride {
		ws = append([]window{{end - room, room}}, ws...)
	}
	return ws, true
}

// PredictLong answers every question about a state that may be longer than a
// row can hold. A state that fits every question's row is answered exactly as
// PredictRequest answers it, byte for byte (on a backend that runs batches in
// a reduced precision first, backend.Refiner, to that precision's rounding:
// which batches do depends on their size and on recent near-ties). A longer
// one is read in windows, which never run in a reduced precision:
// for each question, spans of the state as long as the room its row leaves
// (max_len minus the question, its options and three special tokens),
// neighbours sharing opts.Overlap tokens, the last span flush with the end.
// Every window of every question runs in one pass over padded batches of the
// agent's batch size. Window answers combine per question type:
//
//   - noul: the window with the highest P(true): a yes anywhere in the state is a yes;
//   - score: the window with the highest expected level: the worst section decides;
//   - choice: the most confident window (highest answer_confidence).
//
// Ties go to the earlier window. usage.input_tokens counts every window row,
// and usage.windows reports, for each question read in more than one window,
// how many, how long, and whether the scan budget cut the state.
func (a *Agent) PredictLong(ctx context.Context, req Request, opts LongOptions) (*Result, error) {
	opts, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	call, err := a.startCall(ctx, req)
	if err != nil {
		return nil, err
	}
	if call == nil {
		return &Result{}, nil // no questions: no model
	}
	defer call.done()
	net, qs, b := call.net, call.qs, call.b
	left := req.State.isList()
	// Each question's prefix is tokenized once; every window's row reuses it.
	prefixes := make([]rowPrefix, len(qs))
	rooms := make([]int, len(qs))
	maxRoom := 0
	for i, q := range qs {
		prefixes[i] = b.prefix(q)
		r := b.withState(prefixes[i], nil, left)
		if err := checkMarkers(q, r, b.headMaxLen); err != nil {
			return nil, err
		}
		rooms[i] = max(0, b.maxLen-r.PrefixLength-1)
		maxRoom = max(maxRoom, rooms[i])
	}
	// The scan budget bounds the tokenizer too: no question reads past
	// MaxWindows windows of its room, so no more of the state is tokenized.
	enc := b.encodeStateBounded(req.State, opts.MaxWindows*maxRoom)
	ids := enc.IDs
	if !enc.Complete {
		if keep := opts.MaxWindows * maxRoom; left {
			ids = ids[max(0, len(ids)-keep):]
		} else {
			ids = ids[:min(len(ids), keep)]
		}
	}
	type span struct{ first, n int } // a question's rows in fwd
	spans := make([]span, len(qs))
	var rows []row
	var usage []WindowUsage
	for i, q := range qs {
		ws, cut := longWindows(len(ids), rooms[i], opts.Overlap, opts.MaxWindows, left)
		spans[i] = span{len(rows), len(ws)}
		for _, w := range ws {
			rows = append(rows, b.withState(prefixes[i], ids[w.start:w.start+w.n], left))
		}
		if len(ws) > 1 || cut || !enc.Complete {
			covered := ws[len(ws)-1].start + ws[len(ws)-1].n - ws[0].start
			usage = append(usage, WindowUsage{QuestionID: q.id, Windows: len(ws), WindowTokens: rooms[i],
				StateTokens: covered, Truncated: cut || !enc.Complete})
		}
	}
	fwd := make([]forwardRow, len(rows))
	for i, r := range rows {
		fwd[i] = r.forwardRow()
	}
	// Windows of one question compete (the best one answers), and a
	// reduced precision's refinement only looks within a row: several
	// windows run in the backend's own precision, never a reduced one. A
	// window whose outputs overflow it runs in a wider one (widen), which
	// is closer to upstream, not further: the alternative is no answer.
	forward := net.forward
	if len(rows) > len(qs) {
		forward = net.forwardExact
	}
	outs, err := forward(ctx, fwd)
	if err != nil {
		return nil, err
	}
	temps := a.temperatures(req.Lang)
	res := &Result{answers: make([]answer, len(qs))}
	for i, q := range qs {
		sp := spans[i]
		best := -1
		var bestAns answer
		for j := sp.first; j < sp.first+sp.n; j++ {
			ans, err := decodeAnswer(q, outs[j].Logits, outs[j].ActProbs, temps)
			if err != nil {
				return nil, err
			}
			if best < 0 || windowBetter(ans, bestAns) {
				best, bestAns = j, ans
			}
			res.Usage.InputTokens += len(rows[j].IDs)
		}
		res.answers[i] = bestAns
		if st := rows[sp.first].Options; st.Distinct < st.Options {
			res.Usage.Options = append(res.Usage.Options, OptionUsage{
				QuestionID: q.id, Total: st.Options, Distinct: st.Distinct, TokensPerOption: st.TokensPerOption,
			})
		}
	}
	res.Usage.Windows = usage
	return res, nil
}

// windowBetter reports whether window answer x beats the best one so far.
func windowBetter(x, best answer) bool {
	switch {
	case x.noul != nil:
		return x.noul.Noul > best.noul.Noul
	case x.score != nil:
		return x.score.Score > best.score.Score
	}
	return x.choice.AnswerConfidence > best.choice.AnswerConfidence
}

// windowsValue is usage["windows"]: {question id: {"windows", "window_tokens",
// "state_tokens", "truncated"}}.
func windowsValue(ws []WindowUsage) Value {
	m := make([]pyjson.Member, len(ws))
	for i, w := range ws {
		m[i] = pyjson.Member{Key: w.QuestionID, Value: pyjson.Object(
			pyjson.Member{Key: "windows", Value: pyjson.Int(int64(w.Windows))},
			pyjson.Member{Key: "window_tokens", Value: pyjson.Int(int64(w.WindowTokens))},
			pyjson.Member{Key: "state_tokens", Value: pyjson.Int(int64(w.StateTokens))},
			pyjson.Member{Key: "truncated", Value: pyjson.Bool(w.Truncated)},
		)}
	}
	return rawObject(m)
}
