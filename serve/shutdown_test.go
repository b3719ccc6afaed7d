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

// TestGreedyWorkersWaitForFullBatch: with BatchGreedy and two dispatchers, the
// second starts a pass beside a running one only once its batch is full; a
// partial batch waits and goes when the running pass ends.
func TestGreedyWorkersWaitForFullBatch(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) {
		c.BatchGreedy, c.BatchWindow, c.BatchMax, c.InferWorkers = true, time.Hour, 4, 2
	})
	done := make(chan int, 16)
	postN := func(n int) {
		for range n {
			go func() { done <- post(t, ts.url+"/v1/systemone", smallRequest).status }()
		}
	}
	next := func(what string) int {
		t.Helper()
		select {
		case n := <-f.entered:
			return n
		case <-time.After(30 * time.Second):
			t.Fatalf("no pass after 30 s: %s", what)
			return 0
		}
	}
	postN(1)
	if n := next("the first request"); n != 1 {
		t.Fatalf("first pass of %d requests, want 1", n)
	}
	// Three more while the first pass holds the device: the other dispatcher
	// takes them and waits for a fourth.
	postN(3)
	waitFor(t, "three taken", func() bool { return ts.batcher.depth() == 0 && ts.batcher.dispatching.Load() == 1 })
	postN(1)
	if n := next("a full batch beside the running pass"); n != 4 {
		t.Fatalf("second pass of %d requests, want 4: a pass beside a running one must be full", n)
	}
	// Two more while both passes run: they queue. One pass ends; its
	// dispatcher takes them and, the other pass still running, waits; the
	// other ends and the two go.
	postN(2)
	waitFor(t, "two queued", func() bool { return ts.batcher.depth() == 2 })
	f.gate <- struct{}{}
	waitFor(t, "two taken", func() bool { return ts.batcher.depth() == 0 && ts.batcher.dispatching.Load() == 1 })
	time.Sleep(100 * time.Millisecond)
	if len(f.entered) != 0 {
		t.Fatalf("a pass of %d started beside the running one: want the two to wait for it", <-f.entered)
	}
	f.gate <- struct{}{}
	if n := next("the partial batch once the device is free"); n != 2 {
		t.Fatalf("third pass of %d requests, want 2", n)
	}
	close(f.gate)
	for range 7 {
		if s := <-done; s != 200 {
			t.Errorf("status %d", s)
		}
	}
}
