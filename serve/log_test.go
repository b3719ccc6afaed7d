package serve

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLog: one JSON record per request with the fields upstream logs, and the
// caller's X-Request-Id echoed in the log and the response.
func TestAccessLog(t *testing.T) {
	var buf syncBuffer
	ts := startServer(t, realModel(t), func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
	r := do(t, nil, "POST", ts.url+"/v1/systemone", smallRequest, map[string]string{"X-Request-Id": "abc-123"})
	if r.status != 200 || r.header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	if r := post(t, ts.url+"/v1/systemone", `{}`); r.header.Get("X-Request-Id") == "" {
		t.Error("no generated X-Request-Id")
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] != "request" || rec["request_id"] != "abc-123" {
			continue
		}
		found = true
		for _, k := range []string{"method", "path", "status", "total_ms", "queue_wait_ms", "infer_ms", "batch_size", "model", "client"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("access log record has no %s: %s", k, line)
			}
		}
		if rec["status"] != 200.0 || rec["path"] != "/v1/systemone" || rec["model"] != "real-en" {
			t.Errorf("access log record %s", line)
		}
	}
	if !found {
		t.Errorf("no access log record for request abc-123:\n%s", buf.String())
	}
}
