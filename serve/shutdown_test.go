package serve

import (
	"sync"
	"testing"
	"time"
)

// TestShutdownFinishesQueued cancels Run while one request is in a pass and three are
// queued: new requests are refused, all four are answered 200, and Run returns nil.
func TestShutdownFinishesQueued(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) { c.BatchMax, c.BatchWindow, c.ShutdownGrace = 1, 0, 20*time.Second })
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = post(t, ts.url+"/v1/systemone", smallRequest).status
		}()
		if i == 0 {
			<-f.entered
		}
	}
	waitFor(t, "three queued", func() bool { return ts.batcher.depth() == 3 })
	ts.cancel()
	waitFor(t, "draining", func() bool { return ts.draining.Load() })
	time.Sleep(50 * time.Millisecond)
	if r, err := httpPost(ts.url+"/v1/systemone", smallRequest); err == nil && r != 503 {
		t.Errorf("request after shutdown began: %d, want refused or 503", r)
	}
	close(f.gate)
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("request %d: %d, want 200", i, s)
		}
	}
	if !ts.waitRun(t, 10*time.Second) {
		t.FailNow()
	}
}

// TestShutdownGrace: a pass that outlives the grace is cancelled and its caller gets
// 503; Run still returns nil, promptly.
func TestShutdownGrace(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{}) // never opened
	ts := startServer(t, f, func(c *Config) { c.ShutdownGrace = 300 * time.Millisecond })
	status := make(chan int, 1)
	go func() { status <- post(t, ts.url+"/v1/systemone", smallRequest).status }()
	<-f.entered
	start := time.Now()
	ts.cancel()
	if !ts.waitRun(t, 10*time.Second) {
		t.FailNow()
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v with a 300 ms grace", d)
	}
	select {
	case s := <-status:
		if s != 503 && s != 0 {
			t.Errorf("request cut by the grace: %d, want 503 (or a closed connection)", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("request cut by the grace never answered")
	}
}

// TestInferWorkers: with LAYA_INFER_WORKERS=2 two passes run at once.
func TestInferWorkers(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) { c.InferWorkers, c.BatchMax, c.BatchWindow = 2, 1, 0 })
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := post(t, ts.url+"/v1/systemone", smallRequest); r.status != 200 {
				t.Errorf("%d %s", r.status, r.body)
			}
		}()
	}
	for range 2 {
		select {
		case <-f.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("two passes did not start together with two workers")
		}
	}
	close(f.gate)
	wg.Wait()
}
