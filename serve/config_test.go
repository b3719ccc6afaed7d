package serve

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"LAYA_BATCH_WINDOW_MS": "0", "LAYA_BATCH_MAX": "4", "LAYA_QUEUE_MAX": "9", "LAYA_REQUEST_TIMEOUT_S": "1.5",
		"LAYA_SHUTDOWN_GRACE_S": "0", "LAYA_CLIENT_MAX_INFLIGHT": "3", "LAYA_API_KEY": "k", "LAYA_JEV_STRICT": "yes",
		"LAYA_METRICS": "off", "LAYA_WARMUP": "false", "LAYA_MODELS": " english, multilingual ,", "LAYA_MAX_STATE_CHARS": "7",
		"LAYA_IDLE_TIMEOUT_S": "2", "LAYA_INFER_WORKERS": "2", "LAYA_MAX_BODY_READS": "5",
	}
	c := DefaultConfig()
	if err := c.FromEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.BatchWindow != 0 || c.BatchMax != 4 || c.QueueMax != 9 || c.RequestTimeout != 1500*time.Millisecond ||
		c.ShutdownGrace != 0 || c.ClientMaxInflight != 3 || c.APIKey != "k" || !c.JevStrict || c.Metrics || c.Warmup ||
		strings.Join(c.Preload, ",") != "english,multilingual" || c.Limits.StateChars != 7 || c.IdleTimeout != 2*time.Second ||
		c.InferWorkers != 2 || c.MaxBodyReads != 5 || c.Limits.Questions != 64 {
		t.Errorf("FromEnv: %+v", c)
	}
	if err := c.check(); err != nil {
		t.Errorf("check: %v", err)
	}
	for name, bad := range map[string]string{
		"LAYA_BATCH_MAX": "0", "LAYA_QUEUE_MAX": "many", "LAYA_REQUEST_TIMEOUT_S": "-1", "LAYA_METRICS": "enabled",
		"LAYA_BATCH_WINDOW_MS": "-5", "LAYA_SHUTDOWN_GRACE_S": "soon",
	} {
		c := DefaultConfig()
		err := c.FromEnv(func(k string) string {
			if k == name {
				return bad
			}
			return ""
		})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s=%s: %v, want ErrConfig naming the variable and value", name, bad, err)
		}
	}
	if _, err := New(Config{}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("New(Config{}): %v", err)
	}
}

// TestConfigSharedState reads the settings of replicas, slow clients, pass cost and
// idle unload as upstream spells them (LAYA_BREAKER_ENTRY_TTL_S: auto, 0 or seconds).
func TestConfigSharedState(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want func(Config) bool
	}{
		{map[string]string{"LAYA_STATE_URL": "redis://r:6379/0", "LAYA_SHARED_BREAKER": "0", "LAYA_STATE_FAILURE_POLICY": "OPEN"},
			func(c Config) bool {
				return c.StateURL == "redis://r:6379/0" && !c.SharedBreaker && c.StateFailurePolicy == "open"
			}},
		{map[string]string{"LAYA_BREAKER_ENTRY_TTL_S": "auto"}, func(c Config) bool { return c.BreakerEntryTTL == 0 }},
		{map[string]string{"LAYA_BREAKER_ENTRY_TTL_S": "0"}, func(c Config) bool { return c.BreakerEntryTTL < 0 }},
		{map[string]string{"LAYA_BREAKER_ENTRY_TTL_S": "90"}, func(c Config) bool { return c.BreakerEntryTTL == 90*time.Second }},
		{map[string]string{"LAYA_IDLE_UNLOAD_SECONDS": "600", "LAYA_BATCH_MAX_TOKENS": "4096", "LAYA_MAX_TEXT_CHARS": "100"},
			func(c Config) bool {
				return c.IdleUnload == 10*time.Minute && c.BatchMaxTokens == 4096 && c.Limits.TextChars == 100
			}},
		{map[string]string{"LAYA_CLIENT_MAX_BODY_READS": "2", "LAYA_MIN_BODY_RATE": "0", "LAYA_BODY_RATE_GRACE_S": "0.5"},
			func(c Config) bool {
				return c.ClientMaxBodyReads == 2 && c.MinBodyRate == 0 && c.BodyRateGrace == 500*time.Millisecond
			}},
	} {
		c := DefaultConfig()
		if err := c.FromEnv(func(k string) string { return tt.env[k] }); err != nil || !tt.want(c) || c.check() != nil {
			t.Errorf("%v: %v, %+v", tt.env, err, c)
		}
	}
	d := DefaultConfig()
	if d.StateURL != "" || !d.SharedBreaker || d.StateFailurePolicy != "local" || d.IdleUnload != 0 {
		t.Errorf("defaults: state %q, shared breaker %v, policy %q, idle unload %v; want upstream's unset, 1, local, 0",
			d.StateURL, d.SharedBreaker, d.StateFailurePolicy, d.IdleUnload)
	}
	for name, bad := range map[string]string{"LAYA_STATE_FAILURE_POLICY": "closed", "LAYA_BREAKER_ENTRY_TTL_S": "-1",
		"LAYA_CLIENT_MAX_BODY_READS": "0", "LAYA_MIN_BODY_RATE": "-1", "LAYA_IDLE_UNLOAD_SECONDS": "x"} {
		c := DefaultConfig()
		if err := c.FromEnv(func(k string) string { return map[string]string{name: bad}[k] }); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, bad, err)
		}
	}
	c := DefaultConfig()
	c.StateURL = "http://not-redis"
	if _, err := New(c, &fakeModels{}); !errors.Is(err, ErrState) {
		t.Errorf("LAYA_STATE_URL http://: %v, want ErrState", err)
	}
}
