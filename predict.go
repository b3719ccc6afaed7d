package laya

import (
	"context"
	"slices"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/phase"
	"github.com/laya-metal/laya/weights"
)

// Predict answers every question about state in one pass (upstream Agent.predict). All
// questions are validated before anything is tokenized; a rejected question returns a
// *QuestionError whose message is upstream's. No questions gives empty answers and zero
// usage without running the model.
func (a *Agent) Predict(ctx context.Context, state State, questions Questions) (*Result, error) {
	return a.PredictRequest(ctx, Request{State: state, Questions: questions})
}

// PredictRequest is Predict with the request's settings (language, token windows): a
// PredictBatch of one request.
func (a *Agent) PredictRequest(ctx context.Context, req Request) (*Result, error) {
	answers, err := a.PredictBatch(ctx, []Request{req})
	if err != nil {
		return nil, err
	}
	return answers[0].Result, answers[0].Err
}

// PredictJSON answers a raw request {"state": …, "questions": {…}}, keeping the order of
// its questions, criteria and state objects.
func (a *Agent) PredictJSON(ctx context.Context, request []byte) (*Result, error) {
	pt := phase.From(ctx)
	start := pt.Start()
	req, err := ParseRequest(request)
	pt.Add(phase.Parse, start)
	if err != nil {
		return nil, err
	}
	return a.PredictRequest(ctx, req)
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
func (a *Agent) PredictBatch(ctx context.Context, reqs []Request) ([]BatchAnswer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	answers := make([]BatchAnswer, len(reqs))
	if !slices.ContainsFunc(reqs, func(r Request) bool { return len(r.Questions) > 0 }) {
		// No questions gives empty answers without the model, even from an agent
		// that has none.
		for i := range answers {
			answers[i].Result = &Result{}
		}
		return answers, nil
	}
	net, done, err := a.acquire()
	if err != nil {
		return nil, err
	}
	defer done()
	type pending struct {
		index int
		qs    []*question
		rows  []row
		first int // index of its first row in fwd
	}
	var work []pending
	var fwd []forwardRow
	pt := phase.From(ctx)
	start := pt.Start()
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
	start = pt.Add(phase.Prepare, start)
	if len(fwd) == 0 {
		return answers, nil
	}
	// network.forward runs the rows shortest first, so requests of mixed sizes share
	// padded batches of similar lengths.
	outs, err := net.forward(ctx, fwd)
	if err != nil {
		return nil, err
	}
	start = pt.Add(phase.Forward, start)
	for _, p := range work {
		res, err := assembleResult(p.qs, p.rows, outs[p.first:p.first+len(p.rows)], a.temperatures(reqs[p.index].Lang))
		answers[p.index].Result, answers[p.index].Err = res, err
	}
	pt.Add(phase.Assemble, start)
	return answers, nil
}

// temperatures returns the calibration for a request in language lang.
func (a *Agent) temperatures(lang string) heads.Temperatures {
	if t, ok := a.langTemps[weights.LangKey(lang)]; ok && lang != "" {
		return t
	}
	return a.temps
}
