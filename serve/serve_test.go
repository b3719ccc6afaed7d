package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
)

// TestPredictGoldens: /v1/predict answers with the library's JSON byte for byte (the
// golden answer_json for the email case, the library's own answer for every case), and
// /v1/systemone carries the same answers inside upstream's HTTP envelope.
func TestPredictGoldens(t *testing.T) {
	ts := startServer(t, realModel(t), nil)
	agent, err := laya.Load(context.Background(), realEN)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for _, c := range goldenCases(t) {
		res, err := agent.PredictJSON(context.Background(), c.Request)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		want := res.String()
		if c.Name == "email" && want != c.AnswerJSON {
			t.Fatalf("email: the library's answer differs from upstream's golden")
		}
		r := post(t, ts.url+"/v1/predict", string(c.Request))
		if r.status != 200 || r.body != want+"\n" {
			t.Errorf("%s: /v1/predict %d %s\nwant %s", c.Name, r.status, r.body, want)
		}
		r = post(t, ts.url+"/v1/systemone", string(c.Request))
		if r.status != 200 {
			t.Errorf("%s: /v1/systemone %d %s", c.Name, r.status, r.body)
			continue
		}
		got, err := pyjson.Parse([]byte(r.body))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var keys []string
		for _, m := range got.Members() {
			keys = append(keys, m.Key)
		}
		if strings.Join(keys, ",") != "model,answers,usage,routing" {
			t.Errorf("%s: top-level keys %v", c.Name, keys)
		}
		answers, _ := got.Get("answers")
		wantAnswers, _ := res.Value().Get("answers")
		if answers.String() != wantAnswers.String() {
			t.Errorf("%s: answers differ:\n got %s\nwant %s", c.Name, answers, wantAnswers)
		}
		// The wire form is Starlette's JSONResponse: json.dumps with (",", ":") separators.
		if prefix := `{"model":"laya-rl-agent","answers":` + string(compact(wantAnswers)) + `,"usage":{"input_tokens":`; !strings.HasPrefix(r.body, prefix) {
			t.Errorf("%s: body\n%s\ndoes not start with\n%s", c.Name, r.body, prefix)
		}
		usage, _ := got.Get("usage")
		for _, k := range []string{"input_tokens", "output_tokens", "truncated", "truncated_questions"} {
			if _, ok := usage.Get(k); !ok {
				t.Errorf("%s: usage has no %s: %s", c.Name, k, usage)
			}
		}
		if r.header.Get("X-Inference-Time-Ms") == "" || !strings.HasPrefix(r.header.Get("Server-Timing"), "inference;dur=") {
			t.Errorf("%s: timing headers %v", c.Name, r.header)
		}
	}
}

// TestUsageAndAbstention checks the HTTP additions against the library's own numbers:
// truncation facts, state token counts on request, the abstention gate, strict mode.
func TestUsageAndAbstention(t *testing.T) {
	ts := startServer(t, realModel(t), nil)
	long := strings.Repeat("I was charged twice and I want a refund. ", 100)
	body := func(extra string) string {
		return `{"state": "` + long + `", "questions": {"refund": {"type": "noul", "instructions": "Refund?"}, "team": {"type": "choice", "instructions": "Which team?", "criteria": ["billing", "tech"]}}` + extra + `}`
	}
	r := post(t, ts.url+"/v1/systemone", body(`, "state_token_counts": true, "min_confidence": 0.6`))
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var got struct {
		Answers map[string]map[string]any
		Usage   map[string]any
		Routing map[string]any
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Usage["truncated"] != true || fmt.Sprint(got.Usage["truncated_questions"]) != "[refund team]" {
		t.Errorf("usage %v: want truncated for both questions", got.Usage)
	}
	if st, _ := got.Usage["state_tokens"].(float64); st < 160 {
		t.Errorf("state_tokens %v, want the whole state's count (> max_len 160)", got.Usage["state_tokens"])
	}
	if d, _ := got.Usage["state_tokens_dropped"].(float64); d <= 0 {
		t.Errorf("state_tokens_dropped %v, want > 0", got.Usage["state_tokens_dropped"])
	}
	for id, a := range got.Answers {
		conf := a["answer_confidence"].(float64)
		low := conf < 0.6
		wantState := map[bool]string{true: "abstained", false: "passed"}[low]
		if a["abstention"] != wantState || a["low_confidence"] != low || a["abstention_threshold"] != 0.6 {
			t.Errorf("%s: confidence %v: abstention %v %v %v", id, conf, a["abstention"], a["low_confidence"], a["abstention_threshold"])
		}
	}
	if got.Routing["model"] != "real-en" {
		t.Errorf("routing %v", got.Routing)
	}

	r = post(t, ts.url+"/v1/systemone", `{"state": "refund", "questions": {"q": {"type": "noul", "instructions": "Refund?"}}}`)
	if !strings.Contains(r.body, `"truncated":false,"truncated_questions":[]}`) || strings.Contains(r.body, "abstention") || strings.Contains(r.body, "state_tokens") {
		t.Errorf("short ungated request: %s", r.body)
	}

	// max_len over HTTP is honoured (upstream #549): a smaller window keeps fewer tokens.
	small := post(t, ts.url+"/v1/systemone", body(`, "max_len": 64`))
	var s struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	json.Unmarshal([]byte(small.body), &s)
	if small.status != 200 || s.Usage.InputTokens != 2*64 {
		t.Errorf("max_len 64: %d input_tokens %d, want 128 (%s)", small.status, s.Usage.InputTokens, small.body)
	}

	strict := startServer(t, realModel(t), func(c *Config) { c.JevStrict = true })
	r = post(t, strict.url+"/v1/systemone", body(`, "min_confidence": 0.5`))
	want := []string{`"usage":{"input_tokens":`, `"type":"noul","noul":`}
	for _, w := range want {
		if !strings.Contains(r.body, w) {
			t.Errorf("strict: %s lacks %s", r.body, w)
		}
	}
	for _, no := range []string{"routing", "truncated", "action", "answer_confidence", "abstention"} {
		if strings.Contains(r.body, no) {
			t.Errorf("strict answer has %q: %s", no, r.body)
		}
	}
}

// TestBatchRoute answers /v1/systemone/batch and requires each result to equal the
// single-request answer for that state.
func TestBatchRoute(t *testing.T) {
	ts := startServer(t, realModel(t), nil)
	qs := `{"refund": {"type": "noul", "instructions": "Refund?"}, "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "high"]}}`
	states := []string{`"refund me now"`, `{"subject": "hi", "body": "all good"}`, `["hello", "I want my money back"]`}
	r := post(t, ts.url+"/v1/systemone/batch", `{"states": [`+strings.Join(states, ", ")+`], "questions": `+qs+`}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	v, err := pyjson.Parse([]byte(r.body))
	if err != nil {
		t.Fatal(err)
	}
	results, _ := v.Get("results")
	if len(results.Items()) != len(states) {
		t.Fatalf("%d results", len(results.Items()))
	}
	total := 0
	for i, st := range states {
		one := post(t, ts.url+"/v1/systemone", `{"state": `+st+`, "questions": `+qs+`}`)
		if got := string(compact(results.Items()[i])); got != one.body {
			t.Errorf("state %d:\n batch %s\nsingle %s", i, got, one.body)
		}
		var u struct {
			Usage struct {
				InputTokens int `json:"input_tokens"`
			}
		}
		json.Unmarshal([]byte(one.body), &u)
		total += u.Usage.InputTokens
	}
	if tu, _ := v.Get("total_usage"); !strings.Contains(tu.String(), fmt.Sprintf(`"input_tokens": %d`, total)) {
		t.Errorf("total_usage %s, want input_tokens %d", tu, total)
	}
}

// TestLoad sends the golden requests from 1, 8, 32 and 64 concurrent clients: every
// answer must be byte-identical to the answer for that request alone, and at
// concurrency ≥ 8 forward passes must answer more than one request on average. Also
// as laya serve runs on the cuda backend: greedy passes from two dispatchers, two
// passes at once under load.
func TestLoad(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"default", nil},
		{"greedy,two-dispatchers", func(c *Config) { c.BatchGreedy, c.InferWorkers = true, 2 }},
	} {
		t.Run(c.name, func(t *testing.T) { testLoad(t, c.cfg) })
	}
}

func testLoad(t *testing.T, cfg func(*Config)) {
	cases := goldenCases(t)
	ts := startServer(t, realModel(t), cfg)
	want := make([]string, len(cases))
	for i, c := range cases {
		r := post(t, ts.url+"/v1/systemone", string(c.Request))
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.Name, r.status, r.body)
		}
		want[i] = r.body
	}
	var prevSum float64
	var prevCount uint64
	for _, clients := range []int{1, 8, 32, 64} {
		perClient := max(2, 128/clients)
		if clients == 1 {
			perClient = 8
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wrong := 0
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range perClient {
					i := (c*7 + k) % len(cases)
					r := post(t, ts.url+"/v1/systemone", string(cases[i].Request))
					if r.status != 200 || r.body != want[i] {
						mu.Lock()
						wrong++
						if wrong <= 3 {
							t.Errorf("concurrency %d, %s: %d %s", clients, cases[i].Name, r.status, r.body)
						}
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		h := scrape(t, ts.url)["laya_batch_size"].Metric[0].Histogram
		sum, count := h.GetSampleSum()-prevSum, h.GetSampleCount()-prevCount
		prevSum, prevCount = h.GetSampleSum(), h.GetSampleCount()
		mean := sum / float64(count)
		t.Logf("concurrency %d: %d requests, %d wrong, %d passes, mean batch %.2f", clients, clients*perClient, wrong, count, mean)
		if clients >= 8 && mean <= 1 {
			t.Errorf("concurrency %d: mean batch size %.2f, want > 1", clients, mean)
		}
	}
}

// TestMetricsExposition parses /metrics and checks upstream's metric names, types and
// the counts of what the test did.
func TestMetricsExposition(t *testing.T) {
	ts := startServer(t, realModel(t), nil)
	for range 3 {
		post(t, ts.url+"/v1/systemone", smallRequest)
	}
	post(t, ts.url+"/v1/systemone", `{"state": "x"}`)
	fams := scrape(t, ts.url)
	types := map[string]string{
		"laya_requests_total": "COUNTER", "laya_rejections_total": "COUNTER", "laya_request_latency_seconds": "HISTOGRAM",
		"laya_queue_wait_seconds": "HISTOGRAM", "laya_queue_oldest_seconds": "GAUGE", "laya_inference_seconds": "HISTOGRAM",
		"laya_batch_size": "HISTOGRAM", "laya_batches_total": "COUNTER", "laya_queue_depth": "GAUGE",
		"laya_active_requests": "GAUGE", "laya_inflight_total": "GAUGE", "laya_clients_active": "GAUGE", "laya_models_loaded": "GAUGE",
	}
	for name, typ := range types {
		f, ok := fams[name]
		if !ok {
			if name != "laya_rejections_total" { // no rejection yet: a vector has no series
				t.Errorf("no %s", name)
			}
			continue
		}
		if f.GetType().String() != typ {
			t.Errorf("%s is a %s, want %s", name, f.GetType(), typ)
		}
	}
	if m := labelled(fams["laya_requests_total"], map[string]string{"model": "real-en", "status": "ok"}); m == nil || m.Counter.GetValue() != 3 {
		t.Errorf("laya_requests_total{model=real-en,status=ok} = %v, want 3", m)
	}
	if m := labelled(fams["laya_requests_total"], map[string]string{"status": "invalid"}); m == nil || m.Counter.GetValue() != 1 {
		t.Errorf("laya_requests_total{status=invalid} = %v, want 1", m)
	}
	if m := fams["laya_models_loaded"]; m.Metric[0].Gauge.GetValue() != 1 {
		t.Errorf("laya_models_loaded %v", m)
	}
	if h := fams["laya_request_latency_seconds"].Metric[0].Histogram; h.GetSampleCount() != 3 {
		t.Errorf("latency samples %d, want 3", h.GetSampleCount())
	}
	if h := fams["laya_batch_size"].Metric[0].Histogram; len(h.Bucket) < 7 || h.Bucket[0].GetUpperBound() != 1 || h.Bucket[6].GetUpperBound() != 64 {
		t.Errorf("laya_batch_size buckets %v, want upstream's 1..64", h.Bucket)
	}
}

// TestProbes covers /health, /ready and /drain through loading, serving and draining.
func TestProbes(t *testing.T) {
	f := newFake(t)
	f.loadWait = make(chan struct{})
	cfg := DefaultConfig()
	s, err := New(cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerNoWait(t, s)
	for _, path := range []string{"/health", "/healthz"} {
		if r := do(t, nil, "GET", ts+path, "", nil); r.status != 200 || !strings.Contains(r.body, `"status":"ok"`) {
			t.Errorf("%s while loading: %d %s", path, r.status, r.body)
		}
	}
	r := do(t, nil, "GET", ts+"/ready", "", nil)
	if r.status != 503 || !strings.Contains(r.body, `"ready":false`) || !strings.Contains(r.body, `"draining":false`) {
		t.Errorf("/ready while loading: %d %s", r.status, r.body)
	}
	if r := post(t, ts+"/v1/systemone", smallRequest); r.status != 503 || r.header.Get("Retry-After") != "1" {
		t.Errorf("request while loading: %d %s", r.status, r.body)
	}
	close(f.loadWait)
	waitFor(t, "ready", func() bool { return s.Ready() })
	r = do(t, nil, "GET", ts+"/ready", "", nil)
	if r.status != 200 || !strings.Contains(r.body, `"queue_depth":0`) || !strings.Contains(r.body, `"status":"ready"`) {
		t.Errorf("/ready: %d %s", r.status, r.body)
	}
	if r := post(t, ts+"/v1/systemone", smallRequest); r.status != 200 {
		t.Errorf("request when ready: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", ts+"/drain", "", nil); r.status != 405 {
		t.Errorf("GET /drain: %d", r.status)
	}
	if r := post(t, ts+"/drain", ""); r.status != 200 || !strings.Contains(r.body, `"status":"draining"`) {
		t.Errorf("/drain: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", ts+"/ready", "", nil); r.status != 503 || !strings.Contains(r.body, `"draining":true`) {
		t.Errorf("/ready draining: %d %s", r.status, r.body)
	}
	if r := post(t, ts+"/v1/systemone", smallRequest); r.status != 503 || detail(t, r) != "server is shutting down" {
		t.Errorf("request while draining: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", ts+"/health", "", nil); r.status != 200 {
		t.Errorf("/health while draining: %d", r.status)
	}
}

// startServerNoWait runs s on loopback without waiting for it to be ready.
func startServerNoWait(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestLazyLoad: with LAYA_PRELOAD=0 the server is ready with nothing resident, and the
// first request loads the checkpoint.
func TestLazyLoad(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) { c.Lazy = true })
	if r := do(t, nil, "GET", ts.url+"/health", "", nil); !strings.Contains(r.body, `"loaded":[]`) {
		t.Errorf("/health before the first request: %s", r.body)
	}
	if r := do(t, nil, "GET", ts.url+"/ready", "", nil); r.status != 200 {
		t.Errorf("/ready: %d %s", r.status, r.body)
	}
	if r := post(t, ts.url+"/v1/systemone", smallRequest); r.status != 200 {
		t.Errorf("first request: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", ts.url+"/health", "", nil); !strings.Contains(r.body, `"loaded":["real-en"]`) {
		t.Errorf("/health after the first request: %s", r.body)
	}
}
