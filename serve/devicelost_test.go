package serve

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/laya-metal/laya/backend"
)

// A pass that fails because the backend lost its device (backend.ErrDeviceLost:
// a GPU context CUDA gives up on) turns /health and /ready to 503, naming the
// failure for key holders only, and refuses new requests with 503: liveness must
// fail, since only a restart brings the device back. Other pass errors leave the
// server healthy.
func TestDeviceLostFailsHealth(t *testing.T) {
	f := newFake(t)
	lost := false
	f.fail = func(int) error {
		if lost {
			return fmt.Errorf("laya: forward: %w: cuEventQuery failed with 700 (CUDA_ERROR_ILLEGAL_ADDRESS)", backend.ErrDeviceLost)
		}
		return errBoom
	}
	ts := startServer(t, f, func(c *Config) { c.APIKey = "k" })
	key := map[string]string{"Authorization": "Bearer k"}
	if r := do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, key); r.status == 200 {
		t.Fatalf("a failing pass answered 200: %s", r.body)
	}
	if r := do(t, nil, "GET", ts.url+"/health", "", key); r.status != 200 {
		t.Fatalf("/health after an ordinary failure: %d %s", r.status, r.body)
	}
	lost = true
	if r := do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, key); r.status == 200 {
		t.Fatalf("a pass on a lost device answered 200: %s", r.body)
	}
	for _, c := range []struct {
		path string
		key  map[string]string
		want string
	}{
		{"/health", key, `"device_error":"laya: forward: backend: device lost`},
		{"/health", nil, `{"detail":{"status":"error"}}`},
		{"/ready", key, `"device_error":"laya: forward: backend: device lost`},
		{"/ready", nil, `"ready":false`},
	} {
		r := do(t, nil, "GET", ts.url+c.path, "", c.key)
		if r.status != 503 || !strings.Contains(r.body, c.want) {
			t.Errorf("%s (key %v): %d %s, want 503 with %s", c.path, c.key != nil, r.status, r.body, c.want)
		}
		if c.key == nil && strings.Contains(r.body, "ILLEGAL_ADDRESS") {
			t.Errorf("%s without a key tells the error: %s", c.path, r.body)
		}
	}
	r := do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, key)
	if r.status != 503 || !strings.Contains(r.body, "device is lost") {
		t.Errorf("a request after the loss: %d %s, want 503 saying the device is lost", r.status, r.body)
	}
	if f := scrapeWith(t, ts.url, key)["laya_device_lost"]; f == nil || len(f.Metric) != 1 || f.Metric[0].GetGauge().GetValue() != 1 {
		t.Errorf("laya_device_lost after the loss: %v, want 1", f)
	}
}

// A device lost in the warm-up pass is reported as one lost in a request's.
func TestDeviceLostInWarmup(t *testing.T) {
	f := newFake(t)
	f.fail = func(int) error { return fmt.Errorf("laya: forward: %w", backend.ErrDeviceLost) }
	ts := startServer(t, f, func(c *Config) { c.Warmup = true })
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := do(t, nil, "GET", ts.url+"/health", "", nil)
		if r.status == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health after a warm-up on a lost device: %d %s, want 503", r.status, r.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
