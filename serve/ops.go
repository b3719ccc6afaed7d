package serve

import (
	"net/http"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/laya-metal/laya/pyjson"
)

// Operations routes. /drain and /undrain change what the server accepts, so they
// need the bearer key when LAYA_API_KEY is set and a loopback peer when it is not
// (a preStop hook runs in the pod; a stranger on the network does not).

// drainState is the operator's drain: on until /undrain or its timeout, and never
// undone once shutdown has begun.
type drainState struct {
	mu       sync.Mutex
	timer    *time.Timer
	stopping bool
}

// opsAllowed reports whether r may drain or undrain the server, or the error to
// answer.
func (s *Server) opsAllowed(r *http.Request) *apiError {
	if s.cfg.APIKey != "" {
		if !s.authorized(r) {
			return errorf(401, "invalid or missing bearer token")
		}
		return nil
	}
	if a, err := netip.ParseAddr(remoteHost(r)); err != nil || !a.Unmap().IsLoopback() {
		return errorf(403, "%s is allowed from loopback only when LAYA_API_KEY is unset", r.URL.Path)
	}
	return nil
}

// handleDrain is POST /drain[?timeout_s=N]: stop intake (503, /ready 503) while
// in-flight and queued requests finish; with timeout_s, intake resumes by itself
// after N seconds unless the server is shutting down by then.
func (s *Server) handleDrain(w http.ResponseWriter, r *http.Request) {
	if e := s.opsAllowed(r); e != nil {
		writeError(w, e)
		return
	}
	var timeout time.Duration
	if raw := r.URL.Query().Get("timeout_s"); raw != "" {
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil || v <= 0 || v > 86400 {
			writeError(w, errorf(422, "'timeout_s' must be a number of seconds between 0 and 86400, got %q", raw))
			return
		}
		timeout = time.Duration(v * float64(time.Second))
	}
	s.ops.mu.Lock()
	if s.ops.timer != nil {
		s.ops.timer.Stop()
		s.ops.timer = nil
	}
	s.Drain()
	if timeout > 0 {
		s.ops.timer = time.AfterFunc(timeout, func() { s.undrain("drain timeout") })
	}
	s.ops.mu.Unlock()
	s.log.Info("draining on POST /drain", "timeout_s", timeout.Seconds())
	members := []pyjson.Member{member("status", pyjson.String("draining")), member("loaded", names(s.models.loaded()))}
	if timeout > 0 {
		members = append(members, member("timeout_s", pyjson.Float(timeout.Seconds())))
	}
	writeJSON(w, 200, compact(pyjson.Object(members...)))
}

// handleUndrain is POST /undrain: intake resumes (409 once shutdown has begun).
func (s *Server) handleUndrain(w http.ResponseWriter, r *http.Request) {
	if e := s.opsAllowed(r); e != nil {
		writeError(w, e)
		return
	}
	if !s.undrain("POST /undrain") {
		writeError(w, errorf(409, "server is shutting down"))
		return
	}
	writeJSON(w, 200, compact(pyjson.Object(member("status", pyjson.String("ready")), member("loaded", names(s.models.loaded())))))
}

// undrain ends an operator's drain; it reports false during shutdown.
func (s *Server) undrain(why string) bool {
	s.ops.mu.Lock()
	defer s.ops.mu.Unlock()
	if s.ops.stopping {
		return false
	}
	if s.ops.timer != nil {
		s.ops.timer.Stop()
		s.ops.timer = nil
	}
	if s.draining.Swap(false) {
		s.log.Info("intake resumed", "by", why)
	}
	return true
}

// beginStop marks the drain of shutdown, which nothing undoes.
func (s *Server) beginStop() {
	s.ops.mu.Lock()
	s.ops.stopping = true
	if s.ops.timer != nil {
		s.ops.timer.Stop()
		s.ops.timer = nil
	}
	s.ops.mu.Unlock()
	s.Drain()
}

// validRequestID accepts an X-Request-Id worth echoing: 1 to 128 characters of
// letters, digits and -_.:/+=@ (no spaces, quotes or control characters for a log
// or a header to carry on); any other is replaced by a generated one.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '+' || c == '=' || c == '@':
		default:
			return false
		}
	}
	return true
}

// absPath matches an absolute file path inside a message (not a URL's //host).
var absPath = regexp.MustCompile(`(^|[\s'"=(\[])(/[^\s'"/:)\]]+(?:/[^\s'"/:)\]]*)*)`)

// hidePaths replaces the absolute paths in a message shown to clients (a load error,
// a routing repo) by their last element, the checkpoint's name: where the server keeps
// its files is no business of its callers. The log keeps them whole.
func hidePaths(msg string) string {
	return absPath.ReplaceAllStringFunc(msg, func(m string) string {
		sub := absPath.FindStringSubmatch(m)
		return sub[1] + filepath.Base(sub[2])
	})
}
