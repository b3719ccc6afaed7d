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
