package serve

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLimits sends one request over each of upstream's limits and each malformed body,
// and checks upstream's status and detail.
func TestLimits(t *testing.T) {
	ts := startServer(t, realModel(t), nil)
	noul := `{"type": "noul", "instructions": "x"}`
	questions := func(n int) string {
		var qs []string
		for i := range n {
			qs = append(qs, fmt.Sprintf(`"q%d": %s`, i, noul))
		}
		return "{" + strings.Join(qs, ", ") + "}"
	}
	options := func(n int) string {
		var os []string
		for i := range n {
			os = append(os, fmt.Sprintf(`"o%d"`, i))
		}
		return "[" + strings.Join(os, ", ") + "]"
	}
	manyChoices := func(q, each int) string {
		var qs []string
		for i := range q {
			qs = append(qs, fmt.Sprintf(`"c%d": {"type": "choice", "instructions": "x", "criteria": %s}`, i, options(each)))
		}
		return "{" + strings.Join(qs, ", ") + "}"
	}
	req := func(state, qs, extra string) string {
		return `{"state": ` + state + `, "questions": ` + qs + extra + `}`
	}
	one := `{"q": ` + noul + `}`
	for _, tc := range []struct {
		name, path, body string
		status           int
		detail           string
	}{
		{"body too large", "/v1/systemone", req(`"`+strings.Repeat("a", 2<<20)+`"`, one, ""), 413, "request body too large"},
		{"questions", "/v1/systemone", req(`"x"`, questions(65), ""), 413, "too many questions (65 > 64)"},
		{"choice options", "/v1/systemone", req(`"x"`, `{"c": {"type": "choice", "instructions": "x", "criteria": `+options(101)+`}}`, ""), 413, "too many choice options for 'c' (101 > 100)"},
		{"score levels", "/v1/systemone", req(`"x"`, `{"s": {"type": "score", "instructions": "x", "criteria": `+options(33)+`}}`, ""), 413, "too many score levels for 's' (33 > 32)"},
		{"total options", "/v1/systemone", req(`"x"`, manyChoices(6, 90), ""), 413, "too many answer options across questions (540 > 512)"},
		{"state chars", "/v1/systemone", req(`"`+strings.Repeat("é", 50001)+`"`, one, ""), 413, "state too large (50001 > 50000 chars)"},
		{"state chars json", "/v1/systemone", req(`{"body": "`+strings.Repeat("a", 49990)+`"}`, one, ""), 413, "state too large (50002 > 50000 chars)"},
		{"batch states", "/v1/systemone/batch", `{"states": [` + strings.Repeat(`"a", `, 64) + `"a"], "questions": ` + one + `}`, 413, "too many states (65 > 64)"},
		{"batch empty", "/v1/systemone/batch", `{"states": [], "questions": ` + one + `}`, 400, "'states' must be a non-empty list"},
		{"batch null state", "/v1/systemone/batch", `{"states": ["a", null], "questions": ` + one + `}`, 400, "'state' is required"},
		{"not json", "/v1/systemone", `{"state": `, 400, "request body must be valid JSON"},
		{"not object", "/v1/systemone", `[1]`, 400, "request body must be an object with a 'questions' field"},
		{"no questions", "/v1/systemone", `{"state": "x"}`, 400, "request body must be an object with a 'questions' field"},
		{"no state", "/v1/systemone", `{"questions": ` + one + `}`, 400, "'state' is required"},
		{"null state", "/v1/systemone", req(`null`, one, ""), 400, "'state' is required"},
		{"questions list", "/v1/systemone", req(`"x"`, `[]`, ""), 400, "'questions' must be an object"},
		{"lone surrogate", "/v1/systemone", req(`"\ud800 x"`, one, ""), 400, "unpaired surrogate"},
		{"lone low surrogate in question", "/v1/systemone", req(`"x"`, `{"q": {"type": "noul", "instructions": "\udfff"}}`, ""), 400, "unpaired surrogate"},
		{"bad type", "/v1/systemone", req(`"x"`, `{"q": {"type": "multi", "instructions": "x"}}`, ""), 422, "question 'q': unknown type 'multi'"},
		{"hook", "/v1/systemone", req(`"x"`, one, `, "hooks": []`), 422, "'hooks' is not accepted over HTTP"},
		{"max_len string", "/v1/systemone", req(`"x"`, one, `, "max_len": "fast"`), 422, "'max_len' must be an integer"},
		{"max_len float", "/v1/systemone", req(`"x"`, one, `, "max_len": 3.0`), 422, "'max_len' must be an integer"},
		{"max_len bool", "/v1/systemone", req(`"x"`, one, `, "max_len": true`), 422, "'max_len' must be an integer"},
		{"max_len zero", "/v1/systemone", req(`"x"`, one, `, "max_len": 0`), 422, "'max_len' must be a positive integer"},
		{"max_len cap", "/v1/systemone", req(`"x"`, one, `, "max_len": 9000`), 422, "'max_len' exceeds server limit (9000 > 8192"},
		{"max_len positions", "/v1/systemone", req(`"x"`, one, `, "max_len": 4096`), 422, "max_len 4096 exceeds the checkpoint's"},
		{"head_max_len", "/v1/systemone", req(`"x"`, one, `, "head_max_len": -1`), 422, "'head_max_len' must be a positive integer"},
		{"options over head window", "/v1/systemone", req(`"x"`, `{"c": {"type": "choice", "instructions": "x", "criteria": `+options(30)+`}}`, `, "max_len": 20`), 422, "options exceed head_max_len="},
		{"min_confidence", "/v1/systemone", req(`"x"`, one, `, "min_confidence": 1.5`), 422, "'min_confidence' must be a number between 0.0 and 1.0"},
		{"min_confidence string", "/v1/systemone", req(`"x"`, one, `, "min_confidence": "high"`), 422, "'min_confidence' must be a number"},
		{"state_token_counts", "/v1/systemone", req(`"x"`, one, `, "state_token_counts": "yes"`), 422, "'state_token_counts' must be a boolean"},
		{"lang", "/v1/systemone", req(`"x"`, one, `, "lang": 5`), 422, "'lang' must be a string"},
		{"task", "/v1/systemone", req(`"x"`, one, `, "task": "poetry"`), 422, "unknown task 'poetry'"},
		{"predict bad question", "/v1/predict", req(`"x"`, `{"q": {"type": "multi", "instructions": "x"}}`, ""), 400, "question 'q': unknown type 'multi'"},
		{"predict extra field", "/v1/predict", req(`"x"`, one, `, "lang": "en"`), 400, "unknown field \"lang\""},
		{"unknown path", "/v2/nothing", `{}`, 404, "Not Found"},
	} {
		r := post(t, ts.url+tc.path, tc.body)
		if r.status != tc.status || !strings.Contains(detail(t, r), tc.detail) {
			t.Errorf("%s: %d %.300s, want %d with %q", tc.name, r.status, r.body, tc.status, tc.detail)
		}
	}
	if r := do(t, nil, "GET", ts.url+"/v1/systemone", "", nil); r.status != 405 || r.header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/systemone: %d %v", r.status, r.header)
	}
	// Ignored model ids route as usual (a Jev client's "jev-1").
	if r := post(t, ts.url+"/v1/systemone", req(`"x"`, one, `, "model": "jev-1", "lang": "", "lang_guess": null, "max_len": null`)); r.status != 200 {
		t.Errorf("ignored fields: %d %s", r.status, r.body)
	}
	// A paired surrogate is one character.
	if r := post(t, ts.url+"/v1/systemone", req(`"hi \ud83d\ude00"`, one, "")); r.status != 200 {
		t.Errorf("paired surrogate: %d %s", r.status, r.body)
	}
}

// TestConfiguredLimits: every limit is configurable, and the configured value is what
// the detail reports.
func TestConfiguredLimits(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) {
		c.Limits.StateChars, c.Limits.Questions, c.Limits.BodyBytes = 10, 1, 300
	})
	one := `{"q": {"type": "noul", "instructions": "x"}}`
	for _, tc := range []struct {
		body, detail string
	}{
		{`{"state": "` + strings.Repeat("a", 11) + `", "questions": ` + one + `}`, "state too large (11 > 10 chars)"},
		{`{"state": "a", "questions": {"a": {"type": "noul"}, "b": {"type": "noul"}}}`, "too many questions (2 > 1)"},
		{`{"state": "` + strings.Repeat("a", 300) + `", "questions": ` + one + `}`, "request body too large"},
	} {
		if r := post(t, ts.url+"/v1/systemone", tc.body); r.status != 413 || !strings.Contains(detail(t, r), tc.detail) {
			t.Errorf("%d %s, want 413 %q", r.status, r.body, tc.detail)
		}
	}
}

// TestAuth: with an API key every route but /health's liveness needs the bearer token;
// any header bytes answer 401, never 500.
func TestAuth(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) { c.APIKey = "s3cret" })
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer s\xe9cret"}, {"Authorization": "s3cret"}} {
		for _, path := range []string{"/v1/systemone", "/v1/systemone/batch", "/v1/predict", "/drain"} {
			if r := do(t, nil, "POST", ts.url+path, smallRequest, h); r.status != 401 || detail(t, r) != "invalid or missing bearer token" {
				t.Errorf("%s %v: %d %s", path, h, r.status, r.body)
			}
		}
		if r := do(t, nil, "GET", ts.url+"/metrics", "", h); r.status != 401 {
			t.Errorf("/metrics %v: %d", h, r.status)
		}
		if r := do(t, nil, "GET", ts.url+"/health", "", h); r.status != 200 || r.body != `{"status":"ok"}` {
			t.Errorf("/health without the token: %d %s", r.status, r.body)
		}
	}
	ok := map[string]string{"Authorization": "Bearer s3cret"}
	if r := do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, ok); r.status != 200 {
		t.Errorf("with the token: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", ts.url+"/health", "", ok); !strings.Contains(r.body, `"loaded":["real-en"]`) {
		t.Errorf("/health with the token: %s", r.body)
	}
}

// TestQueueAndClientLimits holds the model in a pass and fills the queue: the request
// past LAYA_QUEUE_MAX gets 503 + Retry-After, a client past its in-flight cap 429 while
// other clients are still queued, and everything queued is answered once the pass ends.
func TestQueueAndClientLimits(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) {
		c.QueueMax, c.BatchMax, c.BatchWindow, c.ClientMaxInflight = 2, 1, 0, 2
		c.ProxyHeaders = true // the loopback peer is a trusted proxy, so x-laya-client names the client
	})
	var wg sync.WaitGroup
	statuses := make([]int, 3)
	send := func(i int, client string) {
		defer wg.Done()
		statuses[i] = do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, map[string]string{"X-Laya-Client": client}).status
	}
	wg.Add(1)
	go send(0, "a")
	<-f.entered // request 0 is in the pass
	wg.Add(2)
	go send(1, "a")
	go send(2, "b")
	waitFor(t, "two queued", func() bool { return ts.batcher.depth() == 2 })
	r := do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, map[string]string{"X-Laya-Client": "a"})
	if r.status != 429 || detail(t, r) != "client concurrency limit exceeded" || r.header.Get("Retry-After") != "1" {
		t.Errorf("client over its cap: %d %s %v", r.status, r.body, r.header)
	}
	r = do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, map[string]string{"X-Laya-Client": "c"})
	if r.status != 503 || detail(t, r) != "request queue is full" || r.header.Get("Retry-After") != "1" {
		t.Errorf("queue full: %d %s %v", r.status, r.body, r.header)
	}
	if r := do(t, nil, "GET", ts.url+"/ready", "", nil); !strings.Contains(r.body, `"queue_depth":2`) {
		t.Errorf("/ready: %s", r.body)
	}
	fams := scrape(t, ts.url)
	for reason, want := range map[string]float64{"queue_full": 1, "client_limit": 1} {
		if m := labelled(fams["laya_rejections_total"], map[string]string{"reason": reason}); m == nil || m.Counter.GetValue() != want {
			t.Errorf("laya_rejections_total{reason=%s} = %v, want %v", reason, m, want)
		}
	}
	if g := fams["laya_queue_depth"].Metric[0].Gauge.GetValue(); g != 2 {
		t.Errorf("laya_queue_depth %v, want 2", g)
	}
	if g := fams["laya_queue_oldest_seconds"].Metric[0].Gauge.GetValue(); g <= 0 || g > 60 {
		t.Errorf("laya_queue_oldest_seconds %v with two requests waiting", g)
	}
	if g := fams["laya_active_requests"].Metric[0].Gauge.GetValue(); g != 1 {
		t.Errorf("laya_active_requests %v, want 1 (the held pass)", g)
	}
	if g := fams["laya_inflight_total"].Metric[0].Gauge.GetValue(); g != 3 {
		t.Errorf("laya_inflight_total %v, want 3", g)
	}
	if g := fams["laya_clients_active"].Metric[0].Gauge.GetValue(); g != 2 {
		t.Errorf("laya_clients_active %v, want 2", g)
	}
	close(f.gate)
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("request %d: %d, want 200 once the pass ended", i, s)
		}
	}
}

// TestTimeoutAndFailures: a pass past LAYA_REQUEST_TIMEOUT_S answers 504; a batch that
// fails is retried request by request (batches_total{result=fallback}); a request that
// fails alone gets upstream's fixed 500.
func TestTimeoutAndFailures(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) { c.RequestTimeout = 300 * time.Millisecond })
	r := post(t, ts.url+"/v1/systemone", smallRequest)
	if r.status != 504 || detail(t, r) != "inference timed out" {
		t.Errorf("timeout: %d %s", r.status, r.body)
	}
	close(f.gate)

	f2 := newFake(t)
	f2.fail = func(n int) error {
		if n > 1 {
			return errBoom
		}
		return nil
	}
	ts2 := startServer(t, f2, func(c *Config) { c.BatchWindow = time.Second })
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := post(t, ts2.url+"/v1/systemone", smallRequest); r.status != 200 {
				t.Errorf("fallback: %d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	fams := scrape(t, ts2.url)
	if m := labelled(fams["laya_batches_total"], map[string]string{"result": "fallback"}); m == nil || m.Counter.GetValue() < 1 {
		t.Errorf("batches_total{result=fallback} = %v, want ≥ 1 (passes %v)", m, f2.passes)
	}

	f3 := newFake(t)
	f3.fail = func(int) error { return fmt.Errorf("weights at /secret/path: %w", errBoom) }
	ts3 := startServer(t, f3, nil)
	r = post(t, ts3.url+"/v1/systemone", smallRequest)
	if r.status != 500 || detail(t, r) != "inference failed" {
		t.Errorf("failure: %d %s", r.status, r.body)
	}
	fams = scrape(t, ts3.url)
	if m := labelled(fams["laya_requests_total"], map[string]string{"status": "error"}); m == nil || m.Counter.GetValue() != 1 {
		t.Errorf("requests_total{status=error} = %v", m)
	}
}
