package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Reading bodies. A body being read holds one of MaxBodyReads slots, which bounds the
// memory of concurrent near-limit bodies (upstream #330). So that one client cannot
// take them all and starve everyone else by sending headers and stalling:
//
//   - one client IP (the peer, or the hop trusted proxies vouch for; never a header
//     the caller picks) holds at most ClientMaxBodyReads of them, and past it gets
//     503 "server busy" while other addresses are still read;
//   - a body must arrive at MinBodyRate bytes a second on average once
//     BodyRateGrace has passed (408 otherwise), so a stalled read gives its slot
//     back within seconds, not only at BodyTimeout.

// utf8BOM is accepted in front of a JSON body, as Python's json.loads accepts it in
// bytes (upstream parses the raw body with it).
var utf8BOM = []byte("\xef\xbb\xbf")

// readBody reads the body within the size limit, the body timeout and the minimum
// transfer rate (413, 408), holding a read slot of the server's and of the client's
// while it does (503 past either).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	lim := s.cfg.Limits.BodyBytes
	if r.ContentLength > lim {
		return nil, errorf(413, "request body too large")
	}
	ip := peerIP(r, s.proxies)
	if !s.clientReads.acquire(ip, s.cfg.ClientMaxBodyReads) {
		return nil, s.busy(w)
	}
	defer s.clientReads.release(ip)
	select {
	case s.reads <- struct{}{}:
		defer func() { <-s.reads }()
	default:
		return nil, s.busy(w)
	}
	rr := &rateReader{r: http.MaxBytesReader(w, r.Body, lim), ctl: http.NewResponseController(w),
		start: time.Now(), grace: s.cfg.BodyRateGrace, rate: s.cfg.MinBodyRate}
	rr.hard = rr.start.Add(s.cfg.BodyTimeout)
	body, err := io.ReadAll(rr)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, errorf(413, "request body too large")
	case err != nil:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if rr.slow {
				return nil, errorf(408, "request body arrived slower than %d bytes/s", s.cfg.MinBodyRate)
			}
			return nil, errorf(408, "request body not received within %v", s.cfg.BodyTimeout)
		}
		return nil, errorf(400, "reading the request body: %v", err)
	}
	return bytes.TrimPrefix(body, utf8BOM), nil
}

// busy refuses a body unread, and closes its connection after the answer: the
// server would otherwise wait for the unread body before the next request, and a
// stalled client would keep the connection that long.
func (s *Server) busy(w http.ResponseWriter) *apiError {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
	return s.reject(503, "busy", "server busy, try again later", 0)
}

// rateReader moves the connection's read deadline along with the bytes received: by
// the time t, rate·(t − start − grace) bytes must have arrived, and all of them by
// hard.
type rateReader struct {
	r           io.Reader
	ctl         *http.ResponseController
	start, hard time.Time
	grace       time.Duration
	rate        int64 // bytes a second; 0 = no minimum
	n           int64
	slow        bool // the deadline set last was the rate's, not hard
}

func (rr *rateReader) Read(p []byte) (int, error) {
	deadline := rr.hard
	rr.slow = false
	if rr.rate > 0 {
		earned := time.Duration(float64(rr.n) / float64(rr.rate) * float64(time.Second))
		if d := rr.start.Add(rr.grace + earned); d.Before(deadline) {
			deadline, rr.slow = d, true
		}
	}
	if err := rr.ctl.SetReadDeadline(deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, fmt.Errorf("serve: set read deadline: %w", err)
	}
	n, err := rr.r.Read(p)
	rr.n += int64(n)
	return n, err
}
