package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/laya-metal/laya"
)

// TestServePredict answers the golden email request over HTTP and holds the
// body to upstream's answer_json byte for byte; bad requests get 400 naming
// the question.
func TestServePredict(t *testing.T) {
	request, answer := goldenPredictCase(t, "email")
	agent, err := laya.Load(context.Background(), predictModel)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	srv := httptest.NewServer(newServeHandler(agent, 2, log.New(io.Discard, "", 0)))
	defer srv.Close()

	for _, path := range []string{"/v1/predict", "/v1/systemone"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(string(request)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != answer+"\n" {
			t.Errorf("%s: %d %s\nwant 200 %s", path, resp.StatusCode, body, answer)
		}
	}
	for _, tc := range []struct {
		name, method, body string
		status             int
		want               string
	}{
		{"bad question", "POST", `{"state": "x", "questions": {"q": {"type": "multi", "instructions": "x"}}}`, 400, `question 'q': unknown type 'multi'`},
		{"not json", "POST", `{"state": `, 400, "invalid JSON"},
		{"get", "GET", "", 405, "use POST"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+"/v1/predict", strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %s, want %d containing %q", tc.name, resp.StatusCode, body, tc.status, tc.want)
		}
	}
}

// blockingAgent holds every request until released, to fill the in-flight slots.
type blockingAgent struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingAgent) PredictJSON(ctx context.Context, _ []byte) (*laya.Result, error) {
	b.entered <- struct{}{}
	<-b.release
	return &laya.Result{}, nil
}

// TestServeSheds503 checks that a request beyond --max-inflight is refused at
// once instead of queueing.
func TestServeSheds503(t *testing.T) {
	agent := &blockingAgent{entered: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewServer(newServeHandler(agent, 1, log.New(io.Discard, "", 0)))
	defer srv.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := http.Post(srv.URL+"/v1/predict", "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-agent.entered
	resp, err := http.Post(srv.URL+"/v1/predict", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second request: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(agent.release)
	wg.Wait()
	for _, path := range []string{"/healthz", "/ready"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: %v %v", path, resp.StatusCode, err)
		}
		resp.Body.Close()
	}
}
