package serve

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestBreakerStates(t *testing.T) {
	b := newBreaker(2, 2, 10*time.Second)
	now := time.Unix(1000, 0)
	b.now = func() time.Time { return now }
	allow := func(key string) (bool, bool) { ok, probe, _ := b.allow(key); return ok, probe }
	fail := func(key string, probe bool) { b.done(key, probe, true, true) }
	succeed := func(key string, probe bool) { b.done(key, probe, true, false) }

	fail("a", false)
	if ok, _ := allow("a"); !ok {
		t.Fatal("open after one failure of two")
	}
	succeed("a", false) // a success resets the count
	fail("a", false)
	if ok, _ := allow("a"); !ok {
		t.Fatal("the count did not reset on success")
	}
	fail("a", false)
	if ok, _, retry := b.allow("a"); ok || retry != 10 {
		t.Fatalf("after two failures: ok %v retry %d, want refused for 10 s", ok, retry)
	}
	if ok, _ := allow("b"); !ok {
		t.Fatal("another client is refused")
	}
	if open, tracked := b.counts(); open != 1 || tracked != 1 {
		t.Fatalf("counts %d %d", open, tracked)
	}
	now = now.Add(10 * time.Second)
	ok, probe := allow("a")
	if !ok || !probe {
		t.Fatal("no half-open probe after the cooldown")
	}
	if ok, _ := allow("a"); ok {
		t.Fatal("a second probe while one is in flight")
	}
	fail("a", true) // a failed probe reopens
	if ok, _ := allow("a"); ok {
		t.Fatal("open again after a failed probe")
	}
	now = now.Add(10 * time.Second)
	for i := range 2 {
		ok, probe := allow("a")
		if !ok || !probe {
			t.Fatalf("probe %d refused", i)
		}
		succeed("a", true)
	}
	if open, tracked := b.counts(); open != 0 || tracked != 0 {
		t.Fatalf("after two probe successes: open %d tracked %d, want closed and forgotten", open, tracked)
	}
	// A probe that ends without a verdict (a timeout) frees the slot only.
	fail("c", false)
	fail("c", false)
	now = now.Add(10 * time.Second)
	allow("c")
	b.done("c", true, false, false)
	if ok, probe := allow("c"); !ok || !probe {
		t.Fatal("the probe slot was not freed")
	}
	if newBreaker(0, 2, time.Second).enabled() {
		t.Fatal("threshold 0 must disable it")
	}
}

// TestBreakerHTTP: inference failures open only that client's breaker (503 +
// Retry-After, laya_circuits_open), and probes close it once inference works again.
func TestBreakerHTTP(t *testing.T) {
	f := newFake(t)
	var broken atomic.Bool
	broken.Store(true)
	f.fail = func(int) error {
		if broken.Load() {
			return errBoom
		}
		return nil
	}
	ts := startServer(t, f, func(c *Config) {
		c.BreakerThreshold, c.BreakerCooldown, c.BreakerProbeSuccesses = 2, time.Second, 2
		c.ProxyHeaders = true // the loopback peer is a trusted proxy, so x-laya-client names the client
	})
	as := func(client string) response {
		return do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, map[string]string{"X-Laya-Client": client})
	}
	for i := range 2 {
		if r := as("a"); r.status != 500 {
			t.Fatalf("failure %d: %d %s", i, r.status, r.body)
		}
	}
	r := as("a")
	if r.status != 503 || detail(t, r) != "inference circuit breaker is open" || r.header.Get("Retry-After") != "1" {
		t.Errorf("open breaker: %d %s %v", r.status, r.body, r.header)
	}
	if r := as("b"); r.status != 500 {
		t.Errorf("another client reached the model: %d, want its own 500", r.status)
	}
	fams := scrape(t, ts.url)
	if g := fams["laya_circuits_open"].Metric[0].Gauge.GetValue(); g != 1 {
		t.Errorf("laya_circuits_open %v, want 1", g)
	}
	if m := labelled(fams["laya_rejections_total"], map[string]string{"reason": "circuit_open"}); m == nil || m.Counter.GetValue() != 1 {
		t.Errorf("rejections{circuit_open} %v", m)
	}
	broken.Store(false)
	time.Sleep(1100 * time.Millisecond)
	for i := range 3 {
		if r := as("a"); r.status != 200 {
			t.Errorf("after the cooldown, request %d: %d %s", i, r.status, r.body)
		}
	}
	if g := scrape(t, ts.url)["laya_circuits_open"].Metric[0].Gauge.GetValue(); g != 0 {
		t.Errorf("laya_circuits_open %v after the probes, want 0", g)
	}
}
