package serve

import (
	"net"
	"strconv"
	"sync"
	"time"
)

// connLimiter caps the connections one peer address holds open at once. The
// body-read slots (slowclient.go) are taken only once a request's headers are
// in; before that a connection holds a goroutine and a file descriptor until
// HeaderTimeout, so a client opening connections faster than they time out
// could otherwise exhaust the process's descriptors and starve everyone.
// Trusted proxies (ProxyHeaders with ForwardedAllowIPs) are exempt: every
// client behind one shares its address.
type connLimiter struct {
	net.Listener
	max     int
	exempt  func(host string) bool
	refused func()
	open    clientLimiter
}

// tooManyConns is written to a connection over the cap before it is closed:
// the contract's error shape, so a client sees why instead of a reset.
var tooManyConns = func() []byte {
	body := `{"detail":"too many connections from this client"}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, splitErr := net.SplitHostPort(c.RemoteAddr().String())
		if splitErr != nil || l.exempt(host) {
			return c, nil
		}
		if !l.open.acquire(host, l.max) {
			l.refused()
			// A short deadline: a peer that does not read cannot hold Accept.
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			c.Write(tooManyConns)
			c.Close()
			continue
		}
		return &countedConn{Conn: c, release: func() { l.open.release(host) }}, nil
	}
}

// countedConn gives its peer's slot back once, however often it is closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
