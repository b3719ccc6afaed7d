package serve

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"
)

// One address holding ClientMaxConns connections open at the header stage (where
// no body-read slot is taken yet) gets its next connection answered 503 and
// closed; a slot comes back when one of its connections closes; a trusted proxy,
// behind which every client shares one address, is not capped.
func TestClientMaxConns(t *testing.T) {
	// status sends a request on c and reads the status line (0: none, the peer closed).
	status := func(t *testing.T, c net.Conn) int {
		t.Helper()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return 0
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ts := startServer(t, SingleModel(realEN), func(c *Config) { c.ClientMaxConns = 3 })
	stalled := []net.Conn{dial(t, ts.url), dial(t, ts.url), dial(t, ts.url)}
	for _, c := range stalled {
		c.Write([]byte("GET /health HTTP/1.1\r\n")) // headers begun, never finished
	}
	time.Sleep(100 * time.Millisecond) // the server has accepted all three
	if got := status(t, dial(t, ts.url)); got != 503 {
		t.Errorf("a 4th connection from the address: status %d, want 503", got)
	}
	stalled[0].Close()
	var got int
	for range 50 { // the slot comes back once the server sees the close
		if got = status(t, dial(t, ts.url)); got == 200 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got != 200 {
		t.Errorf("after one connection closed: status %d, want 200", got)
	}

	proxied := startServer(t, SingleModel(realEN), func(c *Config) {
		c.ClientMaxConns, c.ProxyHeaders, c.ForwardedAllowIPs = 1, true, "127.0.0.1"
	})
	dial(t, proxied.url).Write([]byte("GET /health HTTP/1.1\r\n"))
	time.Sleep(50 * time.Millisecond)
	if got := status(t, dial(t, proxied.url)); got != 200 {
		t.Errorf("a trusted proxy's 2nd connection: status %d, want 200", got)
	}
}
