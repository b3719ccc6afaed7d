package laya

import (
	"context"
	"fmt"

	"github.com/laya-metal/laya/pyjson"
)

// Request preparation, the work between a request and the forward pass: the questions
// are validated and normalised (questions.go), the state is serialised (state.go) and
// tokenised as far as a row can read it, and each question's row is built
// (sequence.go). Each step calls only the ones after it.

// prepareRequest is the work Predict and PredictBatch share before the forward pass:
// it validates the request's questions before anything is tokenized, then tokenizes the
// state once, only as far as a row can read it (encodeStateBounded), and builds one row per
// question. A question whose option markers do not all fit max_len is rejected, as
// upstream does. positions is the checkpoint's max_position_embeddings.
func (a *Agent) prepareRequest(req Request, positions int) ([]*question, []row, StateUsage, error) {
	qs, err := prepareQuestions(req.Questions)
	if err != nil {
		return nil, nil, StateUsage{}, err
	}
	b, err := a.builderFor(req, positions)
	if err != nil {
		return nil, nil, StateUsage{}, err
	}
	rows, usage, err := buildRows(&b, req.State, qs, req.CountStateTokens)
	if err != nil {
		return nil, nil, StateUsage{}, err
	}
	return qs, rows, usage, nil
}

// call is one request's hold on the network, its validated questions and its
// sequence builder.
type call struct {
	net  *network
	done func()
	qs   []*question
	b    sequenceBuilder
}

// startCall validates a request and holds the network for it; a nil call
// (and nil error) means the request has no questions. The caller ends a
// call with done.
func (a *Agent) startCall(ctx context.Context, req Request) (*call, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(req.Questions) == 0 {
		return nil, nil
	}
	net, done, err := a.acquire()
	if err != nil {
		return nil, err
	}
	qs, err := prepareQuestions(req.Questions)
	if err == nil {
		var b sequenceBuilder
		if b, err = a.builderFor(req, net.maxLen); err == nil {
			return &call{net: net, done: done, qs: qs, b: b}, nil
		}
	}
	done()
	return nil, err
}

// builderFor is the sequence builder of one request: the checkpoint's windows unless
// the request sets its own.
func (a *Agent) builderFor(req Request, positions int) (sequenceBuilder, error) {
	b := a.builder
	if req.MaxLen < 0 || req.HeadMaxLen < 0 {
		return b, fmt.Errorf("%w: max_len %d and head_max_len %d, want ≥ 1", ErrInvalidRequest, req.MaxLen, req.HeadMaxLen)
	}
	if req.MaxLen > 0 {
		if req.MaxLen > positions {
			return b, fmt.Errorf("%w: max_len %d exceeds the checkpoint's %d positions (max_position_embeddings)", ErrInvalidRequest, req.MaxLen, positions)
		}
		b.maxLen = req.MaxLen
	}
	if req.HeadMaxLen > 0 {
		b.headMaxLen = req.HeadMaxLen
	}
	return b, nil
}

// buildRows builds one row per question over a bounded state encoding, with the
// truncation report upstream puts in usage.
func buildRows(b *sequenceBuilder, state State, qs []*question, count bool) ([]row, StateUsage, error) {
	enc := b.encodeStateBounded(state, b.maxLen)
	var usage StateUsage
	total := len(enc.IDs)
	if count {
		if !enc.Complete {
			// The caller asked for the exact count: that needs the whole state.
			ids, _ := b.encodeState(state)
			total = len(ids)
		}
		usage.Counted, usage.StateTokens = true, total
	}
	var buf rowBuffer
	rows := make([]row, len(qs))
	for i, q := range qs {
		p := b.prefix(q)
		buf.reserve(b.rowCap(p, len(enc.IDs)), len(p.markers), len(qs)-i)
		rows[i] = b.appendRow(&buf, p, enc.IDs, enc.Left)
		if err := checkMarkers(q, rows[i], b.headMaxLen); err != nil {
			return nil, StateUsage{}, err
		}
		// The state tokens the row kept: all of it but the prefix and the closing [SEP].
		kept := min(max(len(rows[i].IDs)-rows[i].PrefixLength-1, 0), len(enc.IDs))
		if !enc.Complete || kept < len(enc.IDs) {
			usage.Truncated = true
			usage.TruncatedQuestions = append(usage.TruncatedQuestions, q.id)
		}
		if count {
			usage.StateTokensDropped = max(usage.StateTokensDropped, total-kept)
		}
	}
	return rows, usage, nil
}

// checkMarkers refuses a question whose option markers do not all fit the row.
func checkMarkers(q *question, r row, headMaxLen int) error {
	if len(r.Markers) == r.Options.Options {
		return nil
	}
	e := questionErrorf(q.id, "")
	e.msg = fmt.Sprintf("question %s options exceed head_max_len=%d", pyjson.StrRepr(q.id), headMaxLen)
	e.tooMany = true
	return e
}

// prepareQuestions validates every question, then normalizes them; nothing is tokenized
// before every question has passed, so a bad request has no effect.
func prepareQuestions(qs Questions) ([]*question, error) {
	seen := make(map[string]bool, len(qs))
	for _, q := range qs {
		if seen[q.ID] {
			return nil, questionErrorf(q.ID, "the id is used twice; every question needs its own id")
		}
		seen[q.ID] = true
		if err := checkQuestion(q.ID, q.Definition); err != nil {
			return nil, err
		}
	}
	// The questions share one array: one allocation rather than one each.
	internal := make([]question, len(qs))
	out := make([]*question, len(qs))
	var text optionTexts
	for i, q := range qs {
		internal[i].fromDefinition(q.ID, q.Definition, &text)
		out[i] = &internal[i]
	}
	return out, nil
}

// Bounded state encoding. A row holds at most max_len tokens, so no question can read
// more than the first (or, for a list state, the last) max_len tokens of the serialised
// state. Serialising and tokenising a multi-megabyte state in full only to cut it
// afterwards costs hundreds of megabytes, so the state is serialised only up
// to a byte budget and only that text is tokenised; the budget doubles until the text
// yields enough tokens, or the whole state fits.
//
// Tokenisation is local: a pre-tokenizer splits text into words before the model's BPE
// or WordPiece runs within each word, so the tokens of a prefix agree with the tokens of
// the whole text except near the cut. stateSlackTokens tokens next to the cut are
// dropped as unsafe; TestBoundedStateMatchesFull holds the result to the full encoding.

// stateSlackTokens are the tokens next to a cut that may differ from the full text's.
const stateSlackTokens = 64

// stateEncoding is a state's tokens as rows can use them.
type stateEncoding struct {
	IDs []int
	// Left: a list state, cut from the left (its newest turns survive).
	Left bool
	// Complete: IDs are the whole state's tokens. When false the state has more tokens
	// than any row can hold (len(IDs) > the row budget), so every row is truncated.
	Complete bool
}

// encodeStateBounded tokenizes what rows of at most maxLen tokens can read of s: the
// tokens of encodeState, or as many of them as any row can take.
func (b *sequenceBuilder) encodeStateBounded(s State, maxLen int) stateEncoding {
	if maxLen < 0 {
		// No window: every token is read.
		ids, left := b.encodeState(s)
		return stateEncoding{IDs: ids, Left: left, Complete: true}
	}
	left := s.isList()
	// need is one more than any row can take, so "more than a row holds" is visible.
	need := max(maxLen, 0) + 1
	for budget := 4 * (need + stateSlackTokens); ; budget *= 2 {
		var text string
		var complete bool
		if left {
			text, complete = serializeSuffix(s, budget)
		} else {
			text, complete = serializePrefix(s, budget)
		}
		ids := b.enc.Encode(b.scrubMask(text))
		if complete {
			return stateEncoding{IDs: ids, Left: left, Complete: true}
		}
		if len(ids) >= need+stateSlackTokens {
			if left {
				ids = ids[stateSlackTokens:]
			} else {
				ids = ids[:len(ids)-stateSlackTokens]
			}
			return stateEncoding{IDs: ids, Left: left}
		}
	}
}

// encodeState serialises and tokenizes the state once for every question. A list state
// (a conversation) is cut from the left so that its newest turns survive (upstream #224).
func (b *sequenceBuilder) encodeState(s State) (ids []int, truncateLeft bool) {
	return b.enc.Encode(b.scrubMask(s.Serialize())), s.isList()
}
