package serve

import (
	"testing"
	"time"

	"github.com/laya-metal/laya/router"
)

// TestIdleUnload: a checkpoint nobody asked for within LAYA_IDLE_UNLOAD_SECONDS is
// unloaded, /ready stays 200, and the next request loads it again and is answered as
// before.
func TestIdleUnload(t *testing.T) {
	r, err := router.New(router.WithModels(map[string]string{"english": realEN}))
	if err != nil {
		t.Fatal(err)
	}
	for name, models := range map[string]Models{"single": realModel(t), "router": RouterModels(r)} {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, models, func(c *Config) {
				c.IdleUnload = 300 * time.Millisecond
				c.Preload = []string{"english"}
			})
			first := post(t, ts.url+"/v1/systemone", smallRequest)
			if first.status != 200 || len(ts.models.loaded()) != 1 {
				t.Fatalf("first request: %d, loaded %v", first.status, ts.models.loaded())
			}
			waitFor(t, "the idle checkpoint unloaded", func() bool { return len(ts.models.loaded()) == 0 })
			if r := do(t, nil, "GET", ts.url+"/ready", "", nil); r.status != 200 {
				t.Errorf("/ready after the unload: %d %s", r.status, r.body)
			}
			again := post(t, ts.url+"/v1/systemone", smallRequest)
			if again.status != 200 || again.body != first.body {
				t.Errorf("after the reload: %d %s, want the first answer %s", again.status, again.body, first.body)
			}
			if loaded := ts.models.loaded(); len(loaded) != 1 {
				t.Errorf("loaded after the reload: %v", loaded)
			}
		})
	}
}
