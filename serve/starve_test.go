package serve

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/laya-metal/laya/router"
)

// from is an HTTP client whose connections come from the loopback address ip
// (127.0.0.2, …), so that one test can play several client addresses.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// dialFrom opens a raw connection from the loopback address ip.
func dialFrom(t *testing.T, ip, url string) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSlowloris: connections from one address that send headers and stall their
// bodies take at most that address's share of the read slots, and lose them once
// they fall under the minimum rate; another address is answered at once throughout.
// (Before: 8 such connections held all 8 slots, every other caller got 503 for the
// whole body timeout.)
func TestSlowloris(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) {
		c.MaxBodyReads, c.ClientMaxBodyReads = 8, 2
		c.BodyTimeout, c.MinBodyRate, c.BodyRateGrace = 30*time.Second, 1024, 300*time.Millisecond
	})
	var stalled []net.Conn
	for range 8 {
		c := dialFrom(t, "127.0.0.2", ts.url)
		fmt.Fprintf(c, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{", len(smallRequest))
		stalled = append(stalled, c)
	}
	waitFor(t, "the attacker's reads", func() bool { return len(ts.reads) == 2 })
	for i := range 3 {
		if r := do(t, from("127.0.0.1"), "POST", ts.url+"/v1/systemone", smallRequest, nil); r.status != 200 {
			t.Errorf("victim request %d beside 8 stalled bodies: %d %s", i, r.status, r.body)
		}
	}
	start := time.Now()
	for i, c := range stalled {
		if !closedWithin(c, 5*time.Second) {
			t.Errorf("stalled body %d still open", i)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stalled bodies held their connections %v; the minimum rate should cut them within a second or two", d)
	}
	waitFor(t, "the read slots back", func() bool { return len(ts.reads) == 0 })
}

// TestPredictLimits: /v1/predict gets the contract's limits, as the other routes do
// (before: 30,000 questions were accepted), and instruction and option texts have a
// limit too.
func TestPredictLimits(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) { c.Limits.TextChars = 1000 })
	var many strings.Builder
	for i := range 65 {
		fmt.Fprintf(&many, `%s"q%d": {"type": "noul", "instructions": "x"}`, map[bool]string{true: "", false: ", "}[i == 0], i)
	}
	long := strings.Repeat("a", 1001)
	for _, tt := range []struct{ name, body, want string }{
		{"questions", `{"state": "s", "questions": {` + many.String() + `}}`, "too many questions (65 > 64)"},
		{"state", `{"state": "` + strings.Repeat("b", 50001) + `", "questions": {"q": {"type": "noul", "instructions": "x"}}}`, "state too large (50001 > 50000 chars)"},
		{"instructions", `{"state": "s", "questions": {"q": {"type": "noul", "instructions": "` + long + `"}}}`, "instructions of 'q' too long (1001 > 1000 chars)"},
		{"option", `{"state": "s", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": {"a": "` + long + `", "b": "y"}}}}`, "criterion of 'q' too long (1001 > 1000 chars)"},
		{"level", `{"state": "s", "questions": {"q": {"type": "score", "instructions": "x", "criteria": ["` + long + `", "y"]}}}`, "criterion of 'q' too long (1001 > 1000 chars)"},
	} {
		for _, path := range []string{"/v1/predict", "/v1/systemone"} {
			r := post(t, ts.url+path, tt.body)
			if r.status != 413 || detail(t, r) != tt.want {
				t.Errorf("%s %s: %d %s, want 413 %q", path, tt.name, r.status, r.body, tt.want)
			}
		}
	}
}

// TestClientIdentity: x-laya-client is believed only from a trusted proxy or an
// authenticated caller; otherwise the client is its address, so a new header per
// request does not escape the cap. Behind the key, token holders at different
// addresses are different clients. (Before: the header from anyone; one bucket for
// every token holder.)
func TestClientIdentity(t *testing.T) {
	for _, tt := range []struct {
		name     string
		tweak    func(*Config)
		auth     string
		h1, h2   string
		ip1, ip2 string
		want     int
	}{
		{"untrusted header", nil, "", "a", "b", "127.0.0.1", "127.0.0.1", 429},
		{"trusted proxy header", func(c *Config) { c.ProxyHeaders = true }, "", "a", "b", "127.0.0.1", "127.0.0.1", 200},
		{"authenticated header", func(c *Config) { c.APIKey = "k" }, "Bearer k", "a", "b", "127.0.0.1", "127.0.0.1", 200},
		{"one victim's name", func(c *Config) { c.APIKey = "k" }, "Bearer k", "a", "a", "127.0.0.1", "127.0.0.3", 429},
		{"token holders at two addresses", func(c *Config) { c.APIKey = "k" }, "Bearer k", "", "", "127.0.0.1", "127.0.0.3", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.gate = make(chan struct{})
			ts := startServer(t, f, func(c *Config) {
				c.ClientMaxInflight, c.BatchWindow = 1, 0
				if tt.tweak != nil {
					tt.tweak(c)
				}
			})
			hdr := func(client string) map[string]string {
				h := map[string]string{}
				if client != "" {
					h["X-Laya-Client"] = client
				}
				if tt.auth != "" {
					h["Authorization"] = tt.auth
				}
				return h
			}
			first := make(chan int, 1)
			go func() { first <- do(t, from(tt.ip1), "POST", ts.url+"/v1/systemone", smallRequest, hdr(tt.h1)).status }()
			<-f.entered
			second := make(chan int, 1)
			go func() { second <- do(t, from(tt.ip2), "POST", ts.url+"/v1/systemone", smallRequest, hdr(tt.h2)).status }()
			if tt.want == 200 {
				waitFor(t, "the second request queued", func() bool { return ts.batcher.depth() == 1 })
				close(f.gate)
			}
			// A refusal comes while the first request still holds its slot.
			if s := <-second; s != tt.want {
				t.Errorf("second client: %d, want %d", s, tt.want)
			}
			if tt.want != 200 {
				close(f.gate)
			}
			if s := <-first; s != 200 {
				t.Errorf("first client: %d", s)
			}
		})
	}
}

// TestOperations: /drain needs the key, or a loopback peer without one; /undrain
// and a drain timeout bring intake back; /ready tells strangers only ready or not;
// checkpoints are named, never located.
func TestOperations(t *testing.T) {
	ts := startServer(t, realModel(t), nil)
	if r := do(t, from("127.0.0.2"), "POST", ts.url+"/drain", "", nil); r.status != 200 {
		t.Errorf("/drain from loopback: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", ts.url+"/ready", "", nil); r.status != 503 {
		t.Errorf("/ready drained: %d", r.status)
	}
	if r := post(t, ts.url+"/undrain", ""); r.status != 200 || !strings.Contains(r.body, `"status":"ready"`) {
		t.Errorf("/undrain: %d %s", r.status, r.body)
	}
	if r := post(t, ts.url+"/v1/systemone", smallRequest); r.status != 200 || !strings.Contains(r.body, `"repo":"real-en"`) {
		t.Errorf("after /undrain: %d %s", r.status, r.body)
	}
	if r := post(t, ts.url+"/drain?timeout_s=0.3", ""); r.status != 200 {
		t.Errorf("/drain?timeout_s: %d %s", r.status, r.body)
	}
	if ts.Ready() {
		t.Error("ready right after /drain?timeout_s=0.3")
	}
	waitFor(t, "the drain to time out", func() bool { return ts.Ready() })
	if r := post(t, ts.url+"/drain?timeout_s=x", ""); r.status != 422 {
		t.Errorf("/drain?timeout_s=x: %d %s", r.status, r.body)
	}

	keyed := startServer(t, realModel(t), func(c *Config) { c.APIKey = "k" })
	auth := map[string]string{"Authorization": "Bearer k"}
	if r := do(t, nil, "POST", keyed.url+"/drain", "", nil); r.status != 401 {
		t.Errorf("/drain without the key: %d", r.status)
	}
	if r := do(t, nil, "GET", keyed.url+"/ready", "", nil); r.status != 200 || r.body != `{"status":"ready"}` {
		t.Errorf("/ready without the key: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", keyed.url+"/ready", "", auth); r.status != 200 || !strings.Contains(r.body, `"loaded":["real-en"]`) {
		t.Errorf("/ready with the key: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "POST", keyed.url+"/drain", "", auth); r.status != 200 {
		t.Errorf("/drain with the key: %d", r.status)
	}
	if r := do(t, nil, "GET", keyed.url+"/ready", "", nil); r.status != 503 || r.body != `{"detail":{"ready":false}}` {
		t.Errorf("/ready drained, without the key: %d %s", r.status, r.body)
	}
}

// TestDrainFromElsewhere: without a key, /drain and /undrain answer 403 to a peer
// that is not loopback. (Loopback is all a test can dial, so the peer is faked.)
func TestDrainFromElsewhere(t *testing.T) {
	s, err := New(DefaultConfig(), newFake(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/drain", "/undrain"} {
		req, _ := http.NewRequest("POST", path, nil)
		req.RemoteAddr = "203.0.113.9:4000"
		rec := &statusRecorder{header: http.Header{}}
		s.ServeHTTP(rec, req)
		if rec.status != 403 || s.draining.Load() {
			t.Errorf("%s from 203.0.113.9: %d (draining %v)", path, rec.status, s.draining.Load())
		}
	}
}

type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(code int)        { r.status = code }

// TestShutdownAnswersNewConnections: during the shutdown grace a new connection gets
// the contract's 503 "server is shutting down", not a refused connection.
func TestShutdownAnswersNewConnections(t *testing.T) {
	f := newFake(t)
	f.gate = make(chan struct{})
	ts := startServer(t, f, func(c *Config) { c.BatchWindow = 0 })
	first := make(chan int, 1)
	go func() { first <- post(t, ts.url+"/v1/systemone", smallRequest).status }()
	<-f.entered
	ts.cancel()
	waitFor(t, "shutdown to begin", func() bool { return ts.draining.Load() })
	r := do(t, from("127.0.0.1"), "POST", ts.url+"/v1/systemone", smallRequest, nil)
	if r.status != 503 || detail(t, r) != "server is shutting down" || r.header.Get("Retry-After") != "1" {
		t.Errorf("new connection during the grace: %d %s", r.status, r.body)
	}
	if r := post(t, ts.url+"/undrain", ""); r.status != 409 {
		t.Errorf("/undrain during shutdown: %d %s", r.status, r.body)
	}
	close(f.gate)
	if s := <-first; s != 200 {
		t.Errorf("in-flight request: %d", s)
	}
}

// TestSmallGuards: a BOM-prefixed body is read as Python reads it; an X-Request-Id
// that is too long or carries spaces or control characters is replaced, not echoed.
func TestSmallGuards(t *testing.T) {
	ts := startServer(t, realModel(t), nil)
	if r := post(t, ts.url+"/v1/systemone", "\ufeff"+smallRequest); r.status != 200 {
		t.Errorf("BOM-prefixed body: %d %s", r.status, r.body)
	}
	for id, echoed := range map[string]bool{
		"req-42_a.b:c/d+e=f@g": true, strings.Repeat("x", 128): true,
		strings.Repeat("x", 129): false, "a b": false, "a\"b": false, "<script>": false, "é": false,
	} {
		r := do(t, nil, "GET", ts.url+"/health", "", map[string]string{"X-Request-Id": id})
		if got := r.header.Get("X-Request-Id"); (got == id) != echoed || got == "" {
			t.Errorf("X-Request-Id %q: answered %q, want echoed=%v", id, got, echoed)
		}
	}
}

// TestMaxLoadedIsHard: preloading more --model-dir checkpoints than --max-loaded
// leaves --max-loaded resident.
func TestMaxLoadedIsHard(t *testing.T) {
	r, err := router.New(router.WithMaxLoaded(1), router.WithModels(map[string]string{
		"english": realEN, "multilingual": "../testdata/oracle/checkpoints/tiny-ml"}))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, RouterModels(r), func(c *Config) { c.Preload = []string{"multilingual", "english"} })
	if loaded := ts.models.loaded(); len(loaded) != 1 || loaded[0] != "english" {
		t.Errorf("resident after preloading two with --max-loaded 1: %v, want [english]", loaded)
	}
}
