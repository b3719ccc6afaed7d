package laya

import (
	"context"
	"fmt"

	"github.com/laya-metal/laya/pyjson"
)

// BatchRequest is one request of PredictBatch: what Predict takes, plus the per-request
// settings upstream's HTTP surface forwards to predict().
type BatchRequest struct {
	State     State
	Questions Questions
	// Lang calibrates as PredictOptions.Lang does.
	Lang string
	// MaxLen and HeadMaxLen override the checkpoint's token windows for this request
	// (upstream predict(max_len=..., head_max_len=...)); 0 keeps the checkpoint's.
	MaxLen, HeadMaxLen int
	// CountStateTokens tokenizes the whole state to report StateUsage.StateTokens and
	// StateTokensDropped (upstream state_token_counts=True). It costs a full
	// tokenization, so it is off by default.
	CountStateTokens bool
}

// StateUsage says how much of the state the question rows read (upstream usage keys
// truncated, truncated_questions, state_tokens, state_tokens_dropped).
type StateUsage struct {
	// Truncated: some question's row dropped part of the state.
	Truncated bool
	// TruncatedQuestions are the ids of those questions, in request order.
	TruncatedQuestions []string
	// Counted: StateTokens and StateTokensDropped are set (CountStateTokens).
	Counted bool
	// StateTokens is the whole serialised state's token count; StateTokensDropped the
	// most tokens of it any one question did not get.
	StateTokens, StateTokensDropped int
}

// BatchAnswer is PredictBatch's answer to one request: a Result, or the error that
// request alone caused (an invalid question, a window too small for its options).
type BatchAnswer struct {
	Result *Result
	State  StateUsage
	Err    error
}

// PredictBatch answers several requests with one pass over all their question rows, in
// padded batches of the agent's batch size: concurrent callers of one checkpoint share
// forward passes. Each answer is the one Predict gives for that request alone (the rows
// of a padded batch never see each other). A request that is invalid gets its own Err
// and takes no part in the pass; the returned error is a failure of the pass itself
// (cancellation, the backend), which leaves every answer unset, so that a caller can
// retry the requests one by one.
func (a *Agent) PredictBatch(ctx context.Context, reqs []BatchRequest) ([]BatchAnswer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	net, done, err := a.acquire()
	if err != nil {
		return nil, err
	}
	defer done()
	answers := make([]BatchAnswer, len(reqs))
	type pending struct {
		index int
		qs    []*question
		rows  []row
		first int // index of its first row in fwd
	}
	var work []pending
	var fwd []forwardRow
	for i, req := range reqs {
		if len(req.Questions) == 0 {
			answers[i].Result = &Result{}
			continue
		}
		qs, rows, usage, err := a.prepareRequest(req, net.maxLen)
		if err != nil {
			answers[i].Err = err
			continue
		}
		answers[i].State = usage
		work = append(work, pending{index: i, qs: qs, rows: rows, first: len(fwd)})
		for _, r := range rows {
			fwd = append(fwd, r.forwardRow())
		}
	}
	if len(fwd) == 0 {
		return answers, nil
	}
	// network.forward runs the rows shortest first, so requests of mixed sizes share
	// padded batches of similar lengths.
	outs, err := net.forward(ctx, fwd)
	if err != nil {
		return nil, err
	}
	for _, p := range work {
		res, err := assembleResult(p.qs, p.rows, outs[p.first:p.first+len(p.rows)], a.temperatures(reqs[p.index].Lang))
		answers[p.index].Result, answers[p.index].Err = res, err
	}
	return answers, nil
}

// prepareRequest is the work Predict and PredictBatch share before the forward pass:
// it validates the request's questions before anything is tokenized, then tokenizes the
// state once, only as far as a row can read it (statebound.go), and builds one row per
// question. A question whose option markers do not all fit max_len is rejected, as
// upstream does. positions is the checkpoint's max_position_embeddings.
func (a *Agent) prepareRequest(req BatchRequest, positions int) ([]*question, []row, StateUsage, error) {
	qs, err := prepareQuestions(req.Questions)
	if err != nil {
		return nil, nil, StateUsage{}, err
	}
	b, err := a.builderFor(req, positions)
	if err != nil {
		return nil, nil, StateUsage{}, err
	}
	rows, usage, err := buildRowsBounded(&b, req.State, qs, req.CountStateTokens)
	if err != nil {
		return nil, nil, StateUsage{}, err
	}
	return qs, rows, usage, nil
}

// builderFor is the sequence builder of one request: the checkpoint's windows unless
// the request sets its own.
func (a *Agent) builderFor(req BatchRequest, positions int) (sequenceBuilder, error) {
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

// buildRowsBounded builds one row per question over a bounded state encoding, with
// the truncation report upstream puts in usage.
func buildRowsBounded(b *sequenceBuilder, state State, qs []*question, count bool) ([]row, StateUsage, error) {
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
	rows := make([]row, len(qs))
	for i, q := range qs {
		rows[i] = b.build(q, enc.IDs, enc.Left)
		if len(rows[i].Markers) != len(q.options) {
			e := questionErrorf(q.id, "")
			e.msg = fmt.Sprintf("question %s options exceed head_max_len=%d", pyjson.StrRepr(q.id), b.headMaxLen)
			e.tooMany = true
			return nil, StateUsage{}, e
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

// ValidateQuestions checks questions as Predict does before it tokenizes anything, and
// returns the same *QuestionError Predict would: a server can refuse a bad request
// before it queues it. Options that overflow head_max_len are found only by tokenizing,
// so Predict can still refuse questions that pass.
func ValidateQuestions(qs Questions) error {
	_, err := prepareQuestions(qs)
	return err
}
