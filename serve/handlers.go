package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

// decision is one state's routed request, ready to queue.
type decision struct {
	routing router.Decision
	req     laya.Request
}

// handleSystemone is POST /v1/systemone: upstream laya-serve's decision route.
func (s *Server) handleSystemone(w http.ResponseWriter, r *http.Request) {
	d, c, results, ok := s.decide(w, r, false)
	if !ok {
		return
	}
	v := systemoneValue(results[0].answer.Result, results[0].answer.State, d[0].routing, c, s.cfg.JevStrict)
	s.answer(w, results, compact(v))
}

// handleBatch is POST /v1/systemone/batch: one questions set over "states": [...],
// answered as {"results": [...], "total_usage": {...}}. Each state is routed and queued
// on its own, so the states of one call share forward passes with each other and with
// concurrent requests.
func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request) {
	d, c, results, ok := s.decide(w, r, true)
	if !ok {
		return
	}
	items := make([]pyjson.Value, len(results))
	input := 0
	for i, res := range results {
		items[i] = systemoneValue(res.answer.Result, res.answer.State, d[i].routing, c, s.cfg.JevStrict)
		input += res.answer.Result.Usage.InputTokens
	}
	v := pyjson.Object(
		pyjson.Member{Key: "results", Value: pyjson.Array(items...)},
		pyjson.Member{Key: "total_usage", Value: pyjson.Object(
			pyjson.Member{Key: "input_tokens", Value: pyjson.Int(int64(input))},
			pyjson.Member{Key: "output_tokens", Value: pyjson.Int(0)},
		)},
	)
	s.answer(w, results, compact(v))
}

// handlePredict is POST /v1/predict: {"state", "questions"} answered with the library's
// JSON byte for byte, as laya predict prints it (routing added under --router).
func (s *Server) handlePredict(w http.ResponseWriter, r *http.Request) {
	// The request's shape (400) before the limits (413), as upstream orders its
	// checks; the questions themselves after both (400).
	var req laya.Request
	_, e := s.readJSON(w, r, func(body pyjson.Value, lim Limits) *apiError {
		var err error
		if req, err = laya.ValueRequest(body); err != nil {
			return errorf(400, "%s", err.Error())
		}
		return checkRequestLimits(body, lim)
	})
	if e != nil {
		s.fail(w, "", e)
		return
	}
	if err := laya.ValidateQuestions(req.Questions); err != nil {
		s.fail(w, "", errorf(400, "%s", err.Error()))
		return
	}
	d, e := s.routeDecision(req.State, req.Questions, router.RouteOptions{})
	if e != nil {
		s.fail(w, "", e)
		return
	}
	results, e := s.runAdmitted(w, r, []decision{d})
	if e != nil {
		if e.status == 422 {
			e.status = 400 // /v1/predict has always answered invalid questions with 400
		}
		s.fail(w, d.routing.Model, e)
		return
	}
	res := results[0].answer.Result
	var text string
	if _, one := s.models.(*single); one {
		text = res.String()
	} else {
		text = (&router.Result{Result: res, Routing: d.routing}).String()
	}
	s.answer(w, results, []byte(text+"\n"))
}

// routeDecision routes a request that has no per-call settings (422 when no
// checkpoint can answer it).
func (s *Server) routeDecision(state laya.State, qs laya.Questions, opts router.RouteOptions) (decision, *apiError) {
	routing, err := s.models.route(state, qs, opts)
	if err != nil {
		return decision{}, errorf(422, "%s", err.Error())
	}
	return decision{routing: routing, req: laya.Request{State: state, Questions: qs, Lang: requestLang("", routing)}}, nil
}

// decide reads, routes and runs a decision body (both /v1/systemone routes). When it
// fails it has already answered w with the error, and ok is false.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, batch bool) (d []decision, c controls, results []jobResult, ok bool) {
	d, c, e := s.readDecision(w, r, batch)
	if e != nil {
		s.fail(w, "", e)
		return nil, c, nil, false
	}
	results, e = s.runAdmitted(w, r, d)
	if e != nil {
		s.fail(w, d[0].routing.Model, e)
		return nil, c, nil, false
	}
	return d, c, results, true
}

// readDecision reads and validates a decision body, and routes each state. Nothing is
// queued and no slot is held yet.
func (s *Server) readDecision(w http.ResponseWriter, r *http.Request, batch bool) ([]decision, controls, *apiError) {
	var c controls
	// Checked in upstream's order: the body's shape and the limits (400, 413,
	// checkDecision), the control fields (422), then the questions themselves (422).
	body, e := s.readJSON(w, r, checkDecision(batch))
	if e != nil {
		return nil, c, e
	}
	lim := s.cfg.Limits
	// checkDecision has held the questions, their options and texts, the states and
	// their number to the limits: what is left is to build them.
	stateValues, _ := decisionStates(body, batch)
	qv, _ := body.Get("questions")
	qs := questionsOf(qv)
	states := make([]laya.State, len(stateValues))
	for i, sv := range stateValues {
		states[i] = laya.ValueState(sv)
	}
	if c, e = parseControls(body, lim, s.models); e != nil {
		return nil, c, e
	}
	if err := laya.ValidateQuestions(qs); err != nil {
		return nil, c, errorf(422, "%s", err.Error())
	}
	out := make([]decision, len(states))
	for i, st := range states {
		routing, err := s.models.route(st, qs, c.route)
		if err != nil {
			return nil, c, errorf(422, "%s", err.Error())
		}
		out[i] = decision{routing: routing, req: laya.Request{
			State: st, Questions: qs, Lang: requestLang(c.lang, routing),
			MaxLen: c.maxLen, HeadMaxLen: c.headMaxLen, CountStateTokens: c.countTokens,
		}}
	}
	return out, c, nil
}

// runAdmitted admits the request, queues its decisions and waits for their answers
// within the request timeout.
func (s *Server) runAdmitted(w http.ResponseWriter, r *http.Request, ds []decision) (_ []jobResult, failure *apiError) {
	if len(ds) > s.cfg.QueueMax {
		// Never fits, however long the caller waits: not a retryable 503.
		return nil, errorf(413, "too many states for the queue (%d > %d, LAYA_QUEUE_MAX)", len(ds), s.cfg.QueueMax)
	}
	release, e := s.admit(r)
	if e != nil {
		return nil, e
	}
	defer release()
	client := s.clientKey(r)
	ok, probe, retry := s.state.breakerAllow(r.Context(), client)
	if !ok {
		return nil, s.reject(503, "circuit_open", "inference circuit breaker is open", retry)
	}
	defer func() {
		// Only inference failures and successes move the breaker.
		inference := failure != nil && failure.status == 500
		s.state.breakerDone(client, probe, failure == nil || inference, inference)
	}()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	jobs := make([]*job, len(ds))
	for i, d := range ds {
		jobs[i] = &job{ctx: ctx, key: d.routing.Model, req: d.req, done: make(chan jobResult, 1)}
	}
	switch err := s.batcher.submit(jobs); {
	case errors.Is(err, errQueueFull):
		return nil, s.reject(503, "queue_full", err.Error(), 0)
	case errors.Is(err, errShuttingDown):
		return nil, s.reject(503, "draining", err.Error(), 0)
	}
	results := make([]jobResult, len(jobs))
	for i, j := range jobs {
		select {
		case results[i] = <-j.done:
		case <-ctx.Done():
			results[i] = jobResult{err: ctx.Err()}
		}
		if e := s.resultError(r, results[i]); e != nil {
			return nil, e
		}
	}
	var queued time.Duration
	for _, j := range jobs {
		if !j.started.IsZero() {
			queued = max(queued, j.started.Sub(j.enqueued))
		}
	}
	logAttrs(w, "model", ds[0].routing.Model, "queue_wait_ms", ms(queued), "batch_size", results[0].batchSize)
	return results, nil
}

// errClientGone marks a request whose client disconnected: nothing is written.
var errClientGone = &apiError{status: 499, detail: "client closed request"}

// resultError maps a job's outcome to the HTTP error upstream answers.
// deviceLostDetail answers requests once the backend lost its device.
const deviceLostDetail = "the device is lost; the server must be restarted"

func (s *Server) resultError(r *http.Request, res jobResult) *apiError {
	err := res.err
	if err == nil {
		err = res.answer.Err
		if err == nil {
			return nil
		}
		var qe *laya.QuestionError
		if errors.As(err, &qe) || errors.Is(err, laya.ErrInvalidRequest) || errors.Is(err, laya.ErrInvalidQuestion) {
			return errorf(422, "%s", err.Error())
		}
	}
	switch {
	case errors.Is(err, errShuttingDown):
		return &apiError{status: 503, detail: errShuttingDown.Error(), reason: "draining"}
	case errors.Is(err, errNotLoaded):
		return errorf(503, "the model is still loading")
	case errors.Is(err, backend.ErrDeviceLost):
		return errorf(503, "%s", deviceLostDetail)
	case isLoadError(err):
		// The checkpoint this request needs cannot load (a missing directory, the Hub
		// unreachable): this request fails and says why; the server and the other
		// checkpoints carry on, and the next request for it tries the load again.
		s.log.Error("model failed to load", "error", err.Error())
		return &apiError{status: 503, detail: hidePaths(err.Error())}
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: 504, detail: "inference timed out"}
	case r.Context().Err() != nil:
		return errClientGone
	}
	s.log.Error("inference failed", "error", err.Error())
	return &apiError{status: 500, detail: "inference failed"}
}

// answer writes a successful decision with its timing headers.
func (s *Server) answer(w http.ResponseWriter, results []jobResult, body []byte) {
	var infer time.Duration
	for _, r := range results {
		infer = max(infer, r.inference)
	}
	inferMs := strconv.FormatFloat(ms(infer), 'f', 3, 64)
	w.Header().Set("Server-Timing", "inference;dur="+inferMs)
	w.Header().Set("X-Inference-Time-Ms", inferMs)
	logAttrs(w, "infer_ms", ms(infer))
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	writeJSON(w, http.StatusOK, body)
	if rec, ok := w.(*recorder); ok {
		s.countRequest(rec, "ok")
		s.metrics.latency.Observe(time.Since(rec.start).Seconds())
	}
}

// fail writes e (nothing when the client is gone) and counts it.
func (s *Server) fail(w http.ResponseWriter, model string, e *apiError) {
	status := "error"
	switch {
	case e.status == 504:
		status = "timeout"
	case e.status == 429:
		status = "rate_limited"
	case e.reason != "" || e.status == 503:
		status = "rejected"
	case e == errClientGone:
		status = "cancelled"
	case e.status < 500:
		status = "invalid"
	}
	if model == "" {
		model = "auto"
	}
	s.metrics.requests.WithLabelValues(model, status).Inc()
	if rec, ok := w.(*recorder); ok && status != "invalid" {
		s.metrics.latency.Observe(time.Since(rec.start).Seconds())
	}
	if e == errClientGone {
		return
	}
	writeError(w, e)
}

func (s *Server) countRequest(rec *recorder, status string) {
	model := "auto"
	for i := 0; i+1 < len(rec.attrs); i += 2 {
		if rec.attrs[i] == "model" {
			model = fmt.Sprint(rec.attrs[i+1])
		}
	}
	s.metrics.requests.WithLabelValues(model, status).Inc()
}

// --- probes --------------------------------------------------------------------

// names is a list of names as a JSON value.
func names(ns []string) pyjson.Value {
	vs := make([]pyjson.Value, len(ns))
	for i, n := range ns {
		vs[i] = pyjson.String(n)
	}
	return pyjson.Array(vs...)
}

func member(k string, v pyjson.Value) pyjson.Member { return pyjson.Member{Key: k, Value: v} }

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if p := s.batcher.deviceLost.Load(); p != nil {
		// Liveness fails: only a restart brings the device back. What failed
		// is for key holders (as what is resident).
		detail := []pyjson.Member{member("status", pyjson.String("error"))}
		if s.authorized(r) {
			detail = append(detail, member("device_error", pyjson.String(*p)))
		}
		writeJSON(w, 503, compact(pyjson.Object(member("detail", pyjson.Object(detail...)))))
		return
	}
	if p := s.preloadErr.Load(); p != nil {
		writeJSON(w, 503, compact(pyjson.Object(member("detail", pyjson.Object(
			member("status", pyjson.String("error")), member("preload_error", pyjson.String(*p)))))))
		return
	}
	if !s.authorized(r) {
		// Liveness stays open; what is resident is not (docs/http-api.md).
		writeJSON(w, 200, []byte(`{"status":"ok"}`))
		return
	}
	writeJSON(w, 200, compact(pyjson.Object(member("status", pyjson.String("ok")),
		member("loaded", names(s.models.loaded())), member("device", pyjson.String(s.cfg.Device)))))
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		// Readiness stays open to probes; what is resident, and why a load failed, is
		// for key holders only (as /health).
		if !s.Ready() {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 503, []byte(`{"detail":{"ready":false}}`))
			return
		}
		writeJSON(w, 200, []byte(`{"status":"ready"}`))
		return
	}
	loaded := names(s.models.loaded())
	if !s.Ready() {
		perr := pyjson.Null()
		if p := s.preloadErr.Load(); p != nil {
			perr = pyjson.String(*p)
		}
		w.Header().Set("Retry-After", "1")
		derr := pyjson.Null()
		if p := s.batcher.deviceLost.Load(); p != nil {
			derr = pyjson.String(*p)
		}
		writeJSON(w, 503, compact(pyjson.Object(member("detail", pyjson.Object(
			member("ready", pyjson.Bool(false)), member("draining", pyjson.Bool(s.draining.Load())),
			member("preload_error", perr), member("device_error", derr), member("loaded", loaded))))))
		return
	}
	writeJSON(w, 200, compact(pyjson.Object(member("status", pyjson.String("ready")), member("loaded", loaded),
		member("device", pyjson.String(s.cfg.Device)), member("queue_depth", pyjson.Int(s.batcher.depth())))))
}

// compact is v as Starlette's JSONResponse renders a Python dict: json.dumps with
// ensure_ascii=False and separators (",", ":"). The library writes json.dumps' default
// separators; removing the insignificant spaces leaves every string and number as it is.
func compact(v pyjson.Value) []byte {
	text := v.String()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return []byte(text)
	}
	return buf.Bytes()
}
