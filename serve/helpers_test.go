package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/router"
)

const realEN = "../testdata/oracle/checkpoints/real-en"

// goldenCase is one upstream oracle request with its answer_json.
type goldenCase struct {
	Name       string          `json:"name"`
	Request    json.RawMessage `json:"request"`
	AnswerJSON string          `json:"answer_json"`
}

func goldenCases(t testing.TB) []goldenCase {
	t.Helper()
	data, err := os.ReadFile("../testdata/oracle/goldens/real-en/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Cases []goldenCase }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f.Cases
}

// testServer is a Server running on a loopback listener.
type testServer struct {
	*Server
	url    string
	cancel context.CancelFunc
	done   chan error
}

// startServer runs a server over models with cfg adjusted by tweak, and stops it when
// the test ends.
func startServer(t testing.TB, models Models, tweak func(*Config)) *testServer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Warmup = false
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := New(cfg, models)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: s, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- s.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		ts.waitRun(t, 30*time.Second)
	})
	deadline := time.Now().Add(20 * time.Second)
	for !s.ready.Load() && s.preloadErr.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("server not ready after 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ts
}

// waitRun waits up to within for Run to return and reports an error from it. The
// result is put back on ts.done, so a test's own wait and the cleanup's both see it.
// It reports false (after t.Errorf) when Run is still running.
func (ts *testServer) waitRun(t testing.TB, within time.Duration) bool {
	t.Helper()
	select {
	case err := <-ts.done:
		ts.done <- err
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		return true
	case <-time.After(within):
		t.Errorf("Run did not return within %v", within)
		return false
	}
}

func realModel(t testing.TB) Models {
	t.Helper()
	return SingleModel(realEN)
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t testing.TB, client *http.Client, method, url, body string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return response{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b)}
}

func post(t testing.TB, url, body string) response { return do(t, nil, "POST", url, body, nil) }

// detail decodes an error body {"detail": ...}.
func detail(t testing.TB, r response) string {
	t.Helper()
	var e struct{ Detail any }
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Errorf("error body %q is not JSON: %v", r.body, err)
	}
	s, ok := e.Detail.(string)
	if !ok {
		b, _ := json.Marshal(e.Detail)
		s = string(b)
	}
	return s
}

// scrape parses /metrics with Prometheus' own text parser.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapeWith(t, url, nil)
}

// scrapeKey scrapes a server that holds the key "k".
func scrapeKey(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	return scrapeWith(t, url, map[string]string{"Authorization": "Bearer k"})
}

func scrapeWith(t testing.TB, url string, header map[string]string) map[string]*dto.MetricFamily {
	t.Helper()
	r := do(t, nil, "GET", url+"/metrics", "", header)
	if r.status != 200 {
		t.Fatalf("/metrics: %d %s", r.status, r.body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader([]byte(r.body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, r.body)
	}
	return fams
}

// labelled returns the metric of family f with the given label values.
func labelled(f *dto.MetricFamily, labels map[string]string) *dto.Metric {
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		for _, lp := range m.Label {
			if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
				continue next
			}
		}
		return m
	}
	return nil
}

// fakeModels is a controllable model for queue, limit and failure tests. Its answers
// come from a real agent unless fail says otherwise.
type fakeModels struct {
	agent    *laya.Agent
	gate     chan struct{} // when set, a pass waits for a value (or close)
	entered  chan int      // receives the size of each pass as it starts
	fail     func(n int) error
	loadWait chan struct{}

	mu     sync.Mutex
	passes []int
}

func newFake(t testing.TB) *fakeModels {
	a, err := laya.Load(context.Background(), realEN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return &fakeModels{agent: a, entered: make(chan int, 1000)}
}

func (f *fakeModels) load(ctx context.Context, _ []string) error {
	if f.loadWait != nil {
		select {
		case <-f.loadWait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (f *fakeModels) route(_ laya.State, qs laya.Questions, _ router.RouteOptions) (router.Decision, error) {
	return router.Decision{Model: "fake", Repo: realEN, Reason: "test"}, nil
}

func (f *fakeModels) predictor(context.Context, string) (batchPredictor, func(), error) {
	return f, noRelease, nil
}
func (f *fakeModels) checkpoint(name string) (string, error) {
	return router.NormalizeModelName(name)
}
func (f *fakeModels) loaded() []string { return []string{"fake"} }
func (f *fakeModels) close() error     { return nil }

func (f *fakeModels) PredictBatch(ctx context.Context, reqs []laya.Request) ([]laya.BatchAnswer, error) {
	f.mu.Lock()
	f.passes = append(f.passes, len(reqs))
	f.mu.Unlock()
	f.entered <- len(reqs)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.fail != nil {
		if err := f.fail(len(reqs)); err != nil {
			return nil, err
		}
	}
	return f.agent.PredictBatch(ctx, reqs)
}

var errBoom = errors.New("boom")

const smallRequest = `{"state": "I was billed twice, please refund me", "questions": {"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"}}}`

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// httpPost posts without failing the test on a connection error.
func httpPost(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
