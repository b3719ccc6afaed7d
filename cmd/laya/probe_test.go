package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProbe runs the help's examples against a stand-in server: the method, path
// and bearer token arrive as given, a 2xx is success and anything else a failure.
func TestProbe(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/ready" {
			w.WriteHeader(503)
		}
		io.WriteString(w, `{"status":"ok"}`)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	t.Setenv("LAYA_PORT", u.Port())
	t.Setenv("LAYA_API_KEY", "k")
	examples := helpExamples(t, probeUsage)
	if len(examples) != 3 {
		t.Fatalf("probe -h shows %d examples, want 3", len(examples))
	}
	for i, args := range examples {
		for j, a := range args {
			args[j] = strings.ReplaceAll(a, "http://127.0.0.1:8642", srv.URL)
		}
		start := time.Now()
		err := runProbe(context.Background(), args[1:], nil, io.Discard, io.Discard)
		if ready := i == 1; (err != nil) != ready {
			t.Errorf("laya %s: %v (the stand-in answers /ready with 503)", strings.Join(args, " "), err)
		}
		if i == 2 && time.Since(start) < 5*time.Second {
			t.Errorf("--wait 5s returned after %v", time.Since(start))
		}
	}
	want := []string{"GET /health Bearer k", "GET /ready Bearer k", "POST /drain Bearer k"}
	if strings.Join(seen, ";") != strings.Join(want, ";") {
		t.Errorf("requests %q, want %q", seen, want)
	}
	if err := runProbe(context.Background(), []string{"--timeout", "0s"}, nil, io.Discard, io.Discard); err == nil {
		t.Error("--timeout 0s accepted")
	}
}

// TestProbeFollowsEnv: without --url, laya probe asks where laya serve listens by
// LAYA_HOST and LAYA_PORT (the image's HEALTHCHECK relies on it), a wildcard host
// on loopback.
func TestProbeFollowsEnv(t *testing.T) {
	for _, tc := range []struct{ host, port, want string }{
		{"", "", "127.0.0.1:8642"},
		{"0.0.0.0", "9000", "127.0.0.1:9000"},
		{"::", "9000", "[::1]:9000"},
		{"[::]", "9000", "[::1]:9000"},
		{"10.1.2.3", " 9001 ", "10.1.2.3:9001"},
		{"fd00::5", "9000", "[fd00::5]:9000"},
	} {
		t.Setenv("LAYA_HOST", tc.host)
		t.Setenv("LAYA_PORT", tc.port)
		if got := probeAddr(); got != tc.want {
			t.Errorf("LAYA_HOST=%q LAYA_PORT=%q: probes %s, want %s", tc.host, tc.port, got, tc.want)
		}
	}
	// A server bound to another loopback address than 127.0.0.1 answers the probe
	// only when LAYA_HOST is read.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"status":"ok"}`)
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	t.Setenv("LAYA_HOST", host)
	t.Setenv("LAYA_PORT", port)
	if err := runProbe(context.Background(), nil, nil, io.Discard, io.Discard); err != nil {
		t.Errorf("laya probe with LAYA_HOST=%s LAYA_PORT=%s: %v", host, port, err)
	}
}
