package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// dial opens a raw loopback connection to the server.
func dial(t *testing.T, url string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closes c (EOF or reset, after any response
// it writes first) within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

// TestStalledClients: clients that send headers (or part of them, or part of a body)
// and stall hold no slot: other requests are answered at once, and the stalled
// connections are closed after the header and body timeouts (without them, 4 such
// clients would hold every in-flight slot indefinitely).
func TestStalledClients(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) {
		c.HeaderTimeout, c.BodyTimeout = 300*time.Millisecond, 400*time.Millisecond
		c.QueueMax, c.ClientMaxInflight = 4, 2
		// Every connection here comes from 127.0.0.1: the per-address read cap is
		// TestSlowloris's.
		c.ClientMaxBodyReads, c.MinBodyRate = 64, 0
	})
	var stalled []net.Conn
	for i := range 12 {
		c := dial(t, ts.url)
		switch i % 3 {
		case 0: // headers, no body
			fmt.Fprintf(c, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(smallRequest))
		case 1: // half a body
			fmt.Fprintf(c, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(smallRequest), smallRequest[:20])
		case 2: // half the headers
			fmt.Fprintf(c, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\n")
		}
		stalled = append(stalled, c)
	}
	time.Sleep(50 * time.Millisecond)
	for i := range 6 {
		start := time.Now()
		if r := post(t, ts.url+"/v1/systemone", smallRequest); r.status != 200 {
			t.Errorf("request %d beside stalled clients: %d %s", i, r.status, r.body)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("request %d took %v beside stalled clients", i, d)
		}
	}
	for i, c := range stalled {
		if !closedWithin(c, 5*time.Second) {
			t.Errorf("stalled connection %d still open after the timeouts", i)
		}
	}
	if n := ts.inflight.Load(); n != 0 {
		t.Errorf("%d requests in flight after the stalled clients left", n)
	}
}

// TestSlowClient: a body that trickles in within the body timeout is answered; one
// slower than the timeout is cut off with 408 or a closed connection, not left holding
// anything.
func TestSlowClient(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) { c.BodyTimeout = 1500 * time.Millisecond })
	send := func(chunk int, pause time.Duration) (string, error) {
		c := dial(t, ts.url)
		fmt.Fprintf(c, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(smallRequest))
		for i := 0; i < len(smallRequest); i += chunk {
			if _, err := io.WriteString(c, smallRequest[i:min(i+chunk, len(smallRequest))]); err != nil {
				return "", err
			}
			time.Sleep(pause)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		return resp.Status, nil
	}
	if status, err := send(len(smallRequest)/5+1, 100*time.Millisecond); err != nil || status != "200 OK" {
		t.Errorf("slow body within the timeout: %q %v", status, err)
	}
	status, err := send(4, 150*time.Millisecond) // ~40 chunks: 6 s
	if err == nil && !strings.HasPrefix(status, "408") {
		t.Errorf("body slower than the timeout: %q, want 408 or a closed connection", status)
	}
}

// TestIdleConnections: keep-alive connections are closed after the idle timeout (without
// one, 1,000 idle connections were still held after 90 s).
func TestIdleConnections(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	var conns []net.Conn
	for range 50 {
		c := dial(t, ts.url)
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("health: %v %v", resp, err)
		}
		resp.Body.Close()
		conns = append(conns, c)
	}
	// Not closed while the timeout runs...
	time.Sleep(100 * time.Millisecond)
	var wg sync.WaitGroup
	closed := make([]bool, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			closed[i] = closedWithin(c, 3*time.Second)
		}()
	}
	wg.Wait()
	for i, ok := range closed {
		if !ok {
			t.Errorf("idle connection %d still open 3 s after the 300 ms idle timeout", i)
		}
	}
}

// TestBodyReadCap: bodies read at once are capped (memory, upstream #330): past the
// cap a request gets 503 at once, and the slots come back when the stalled readers
// time out.
func TestBodyReadCap(t *testing.T) {
	ts := startServer(t, realModel(t), func(c *Config) { c.MaxBodyReads, c.BodyTimeout = 2, 500*time.Millisecond })
	var stalled []net.Conn
	for range 2 {
		c := dial(t, ts.url)
		fmt.Fprintf(c, "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{", len(smallRequest))
		stalled = append(stalled, c)
	}
	waitFor(t, "both stalled bodies to hold a read", func() bool { return len(ts.reads) == 2 })
	r := post(t, ts.url+"/v1/systemone", smallRequest)
	if r.status != 503 || detail(t, r) != "server busy, try again later" || r.header.Get("Retry-After") != "1" {
		t.Errorf("third body while two are read: %d %s", r.status, r.body)
	}
	for _, c := range stalled {
		closedWithin(c, 5*time.Second)
	}
	if r := post(t, ts.url+"/v1/systemone", smallRequest); r.status != 200 {
		t.Errorf("after the stalled readers timed out: %d %s", r.status, r.body)
	}
}
