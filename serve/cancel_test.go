package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestClientDisconnectCancels: a client that leaves while its request is in a pass
// cancels the pass (it is the pass's only request), and one that leaves while queued
// never reaches a pass.
func TestClientDisconnectCancels(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) { c.BatchMax, c.BatchWindow = 1, 0 })
	send := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/systemone", strings.NewReader(smallRequest))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	inPass, cancelPass := context.WithCancel(context.Background())
	go send(inPass)
	<-f.entered
	queued, cancelQueued := context.WithCancel(context.Background())
	go send(queued)
	waitFor(t, "one queued", func() bool { return ts.batcher.depth() == 1 })
	cancelQueued()
	waitFor(t, "the queued request's handler to see its client leave", func() bool { return ts.inflight.Load() == 1 })
	cancelPass() // the pass's context ends: the fake returns without the gate opening
	waitFor(t, "both requests done", func() bool { return ts.inflight.Load() == 0 && ts.batcher.active.Load() == 0 })
	f.mu.Lock()
	passes := len(f.passes)
	f.mu.Unlock()
	if passes != 1 {
		t.Errorf("%d passes, want 1: the queued request whose client left must not run", passes)
	}
	if m := labelled(scrape(t, ts.url)["laya_requests_total"], map[string]string{"status": "cancelled"}); m == nil || m.Counter.GetValue() != 2 {
		t.Errorf("requests_total{status=cancelled} = %v, want 2", m)
	}
}

// TestBatchQueueAllOrNone: a batch call needs a queue slot per state; when the queue
// cannot take them all it is refused whole, and nothing of it runs.
func TestBatchQueueAllOrNone(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) { c.QueueMax, c.BatchMax, c.BatchWindow = 3, 1, 0 })
	done := make(chan int, 2)
	go func() { done <- post(t, ts.url+"/v1/systemone", smallRequest).status }()
	<-f.entered
	go func() { done <- post(t, ts.url+"/v1/systemone", smallRequest).status }()
	waitFor(t, "one queued", func() bool { return ts.batcher.depth() == 1 })
	r := post(t, ts.url+"/v1/systemone/batch", `{"states": ["a", "b", "c"], "questions": {"q": {"type": "noul", "instructions": "x"}}}`)
	if r.status != 503 || detail(t, r) != "request queue is full" {
		t.Errorf("3 states into a queue of 3 holding 1: %d %s", r.status, r.body)
	}
	if d := ts.batcher.depth(); d != 1 {
		t.Errorf("queue depth %d after the refused batch, want 1", d)
	}
	// More states than the queue holds can never be queued: not a retryable 503.
	r = post(t, ts.url+"/v1/systemone/batch", `{"states": ["a", "b", "c", "d"], "questions": {"q": {"type": "noul", "instructions": "x"}}}`)
	if r.status != 413 || r.header.Get("Retry-After") != "" || !strings.Contains(detail(t, r), "LAYA_QUEUE_MAX") {
		t.Errorf("4 states into a queue of 3: %d %s %v", r.status, r.body, r.header)
	}
	close(f.gate)
	for range 2 {
		if s := <-done; s != 200 {
			t.Errorf("single request: %d", s)
		}
	}
	if r := post(t, ts.url+"/v1/systemone/batch", `{"states": ["a", "b", "c"], "questions": {"q": {"type": "noul", "instructions": "x"}}}`); r.status != 200 {
		t.Errorf("3 states: %d %s", r.status, r.body)
	}
}

// TestBatchGreedy: with BatchGreedy a lone request never waits out the window, and
// the requests that queue during a pass make the next pass together.
func TestBatchGreedy(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) { c.BatchGreedy, c.BatchWindow, c.BatchMax = true, time.Hour, 16 })
	done := make(chan int, 4)
	go func() { done <- post(t, ts.url+"/v1/systemone", smallRequest).status }()
	select {
	case n := <-f.entered:
		if n != 1 {
			t.Fatalf("first pass of %d requests, want 1", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no pass after 30 s: the lone request waited for the hour-long window")
	}
	for range 3 {
		go func() { done <- post(t, ts.url+"/v1/systemone", smallRequest).status }()
	}
	waitFor(t, "three queued", func() bool { return ts.batcher.depth() == 3 })
	close(f.gate)
	if n := <-f.entered; n != 3 {
		t.Errorf("second pass of %d requests, want the 3 queued during the first", n)
	}
	for range 4 {
		if s := <-done; s != 200 {
			t.Errorf("status %d", s)
		}
	}
}
