package serve

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/hub"
	"github.com/laya-metal/laya/router"
)

// A single checkpoint that cannot load stops the server: Run returns the load error
// instead of serving 503 for ever.
func TestSingleModelLoadFailureStopsRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	cfg := DefaultConfig()
	cfg.Warmup = false
	s, err := New(cfg, SingleModel(missing))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatal("Run still serving a checkpoint that cannot load")
	}
	if !errors.Is(err, errLoad) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Run = %v, want the load error naming %s", err, missing)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener is still open after Run returned")
	}
}

// A router whose preloaded checkpoint cannot load keeps running, and /ready (503)
// names the model and the cause.
func TestRouterPreloadFailureKeepsServing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	r, err := router.New(router.WithModels(map[string]string{"english": missing}))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, RouterModels(r), func(c *Config) { c.Preload = []string{"english"} })
	ready := do(t, nil, "GET", ts.url+"/ready", "", nil)
	if ready.status != 503 || !strings.Contains(ready.body, `"preload_error":"router: load model english (does-not-exist)`) ||
		!strings.Contains(ready.body, "does not exist") || strings.Contains(ready.body, filepath.Dir(missing)) {
		t.Errorf("/ready: %d %s; want 503 naming the model and the cause, and not the checkpoint's path", ready.status, ready.body)
	}
	if h := do(t, nil, "GET", ts.url+"/health", "", nil); h.status != 503 || !strings.Contains(h.body, "preload_error") {
		t.Errorf("/health: %d %s", h.status, h.body)
	}
	select {
	case err := <-ts.done:
		ts.done <- err
		t.Fatalf("Run returned %v after a router's preload failed", err)
	default:
	}
}

// A request routed to a checkpoint that cannot load (the Hub offline, nothing cached)
// is answered with that error; the server stays up and answers the next requests.
func TestRouterRequestLoadFailure(t *testing.T) {
	offline := &hub.Client{Endpoint: "http://127.0.0.1:1", CacheDir: t.TempDir(), Offline: true}
	r, err := router.New(router.WithModels(map[string]string{"english": realEN}),
		router.WithLoadOptions(laya.WithHub(offline)))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, RouterModels(r), func(c *Config) { c.Preload = []string{"english"} })
	if !ts.Ready() {
		t.Fatalf("not ready: %v", ts.preloadErr.Load())
	}
	qs := `{"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"}}`
	body := func(model string) string {
		return `{"state": "I was charged twice and want my money back", "questions": ` + qs + `, "model": "` + model + `"}`
	}
	for i := range 2 {
		got := post(t, ts.url+"/v1/systemone", body("multilingual"))
		d := detail(t, got)
		if got.status != 503 || !strings.Contains(d, "load model multilingual") || !strings.Contains(d, "offline") {
			t.Errorf("request %d for the checkpoint that cannot load: %d %s", i, got.status, got.body)
		}
		if ok := post(t, ts.url+"/v1/systemone", body("english")); ok.status != 200 || !strings.Contains(ok.body, `"refund"`) {
			t.Errorf("request %d for the loaded checkpoint after the failure: %d %s", i, ok.status, ok.body)
		}
	}
	if got := post(t, ts.url+"/v1/predict", `{"state": "Где мой заказ?", "questions": `+qs+`}`); got.status != 503 {
		t.Errorf("/v1/predict routed to the checkpoint that cannot load: %d %s", got.status, got.body)
	}
}
