package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/laya-metal/laya"
)

// Server is laya serve's HTTP server: an http.Handler plus the micro-batching
// dispatcher, the model lifecycle and graceful shutdown.
type Server struct {
	cfg     Config
	models  Models
	log     *slog.Logger
	batcher *batcher
	metrics *metrics
	mux     *http.ServeMux
	state   stateStore    // per-client slots and breakers: in-process or Redis
	reads   chan struct{} // a slot per body being read
	// clientReads counts the bodies each client IP is sending (ClientMaxBodyReads).
	clientReads clientLimiter
	proxies     *trustedProxies // nil: X-Forwarded-For is ignored

	inflight   atomic.Int64 // requests admitted past validation, until answered
	handling   atomic.Int64 // ServeHTTP calls running
	ready      atomic.Bool
	draining   atomic.Bool
	ops        drainState
	preloadErr atomic.Pointer[string]
	// loadFailed carries the preload error of a single checkpoint to Run: a server
	// with nothing it could ever answer stops instead of answering 503 forever.
	loadFailed chan error
	startOnce  sync.Once
	httpMu     sync.Mutex
	http       *http.Server
}

// New builds a server over models; Start (or Run) loads them and starts dispatching.
func New(cfg Config, models Models) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if models == nil {
		return nil, fmt.Errorf("%w: no models", ErrConfig)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, models: models, log: logger, loadFailed: make(chan error, 1)}
	if cfg.ProxyHeaders {
		t, err := parseTrusted(cfg.ForwardedAllowIPs)
		if err != nil {
			return nil, err
		}
		s.proxies = t
	}
	s.reads = make(chan struct{}, cfg.MaxBodyReads)
	s.metrics = newMetrics(s)
	local := newLocalState(&s.cfg, s.inflight.Load)
	s.state = local
	if cfg.StateURL != "" {
		rs, err := newRedisState(&s.cfg, local, s.metrics.reg, logger)
		if err != nil {
			return nil, err
		}
		s.state = rs
	}
	s.batcher = newBatcher(&s.cfg, models, s.metrics, func(msg string, args ...any) { logger.Warn(msg, args...) })
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/systemone", s.post(s.handleSystemone))
	s.mux.HandleFunc("/v1/systemone/batch", s.post(s.handleBatch))
	s.mux.HandleFunc("/v1/predict", s.post(s.handlePredict))
	s.mux.HandleFunc("/health", s.get(s.handleHealth))
	s.mux.HandleFunc("/healthz", s.get(s.handleHealth))
	s.mux.HandleFunc("/ready", s.get(s.handleReady))
	s.mux.HandleFunc("/drain", s.post(s.handleDrain))
	s.mux.HandleFunc("/undrain", s.post(s.handleUndrain))
	s.registerOpenAI()
	metricsHandler := promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	s.mux.HandleFunc("/metrics", s.get(func(w http.ResponseWriter, r *http.Request) {
		if !s.cfg.Metrics {
			writeError(w, &apiError{status: 404, detail: "Not Found"})
			return
		}
		if !s.authorized(r) {
			writeError(w, &apiError{status: 401, detail: "invalid or missing bearer token"})
			return
		}
		metricsHandler.ServeHTTP(w, r)
	}))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: 404, detail: "Not Found"})
	})
	return s, nil
}

// Start loads the models in the background (with one warm-up pass each when configured)
// and starts the dispatcher. /health answers at once; /ready turns 200 once the models
// are resident. Calling it again does nothing.
func (s *Server) Start(ctx context.Context) {
	s.startOnce.Do(func() {
		s.batcher.start(s.cfg.InferWorkers)
		s.startIdleUnload()
		if s.cfg.Lazy {
			s.ready.Store(true)
			return
		}
		go func() {
			if err := s.models.load(ctx, s.cfg.Preload); err != nil {
				// One line: a router's error joins one line per checkpoint that failed.
				msg := strings.ReplaceAll(err.Error(), "\n", "; ")
				public := hidePaths(msg)
				s.preloadErr.Store(&public)
				if _, one := s.models.(*single); one {
					s.loadFailed <- err // buffered, and sent once
					return
				}
				// A router keeps running: its other checkpoints may still load, and
				// /ready names what failed.
				s.log.Error("preload failed; /ready and /health stay 503", "error", msg)
				return
			}
			if s.cfg.Warmup {
				s.warmup(ctx)
			}
			s.ready.Store(true)
			s.log.Info("ready", "loaded", s.models.loaded())
		}()
	})
}

// warmup runs one small request on every resident checkpoint.
func (s *Server) warmup(ctx context.Context) {
	qs := laya.Questions{{ID: "__warmup__", Definition: laya.NoulQuestion("A warmup pass.")}}
	for _, key := range s.models.loaded() {
		p, release, err := s.models.predictor(ctx, key)
		if err == nil {
			req := laya.Request{State: laya.Text("warmup"), Questions: qs}
			start := time.Now()
			if _, err = p.PredictBatch(ctx, []laya.Request{req}); err == nil {
				// A seed for splitting the first real passes (see passRates).
				s.batcher.rates.observe(key, jobCost(req), time.Since(start), false)
			}
			release()
		}
		if err != nil {
			s.log.Warn("warm-up failed", "model", key, "error", err.Error())
			s.batcher.noteDeviceLost(key, err)
		}
	}
}

// Ready reports whether the models are loaded, the server is not draining and its
// device was not lost (backend.ErrDeviceLost).
func (s *Server) Ready() bool {
	return s.ready.Load() && !s.draining.Load() && s.batcher.deviceLost.Load() == nil
}

// Drain stops intake: new requests get 503 and /ready turns 503, while in-flight and
// queued requests still finish (what POST /drain does, before SIGTERM).
func (s *Server) Drain() { s.draining.Store(true) }

// Run serves on ln until ctx ends, then shuts down gracefully within ShutdownGrace:
// no new connections or requests, every in-flight and queued request answered, then
// the models closed. It returns nil after a clean shutdown. A single checkpoint
// (SingleModel) that fails to preload stops the server, and Run returns the load
// error; a router that fails to preload keeps serving /ready (503, naming the failure).
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	s.Start(context.WithoutCancel(ctx))
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		// ReadTimeout bounds headers and body together; the handler also sets a body
		// deadline of its own once the headers are in.
		ReadTimeout: s.cfg.HeaderTimeout + s.cfg.BodyTimeout,
		IdleTimeout: s.cfg.IdleTimeout,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.httpMu.Lock()
	s.http = hs
	s.httpMu.Unlock()
	if s.cfg.ClientMaxConns > 0 {
		ln = &connLimiter{Listener: ln, max: s.cfg.ClientMaxConns,
			exempt:  s.proxies.trusts,
			refused: func() { s.metrics.rejections.WithLabelValues("client_conns").Inc() }}
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var loadErr error
	select {
	case err := <-served:
		s.closeModels()
		return err
	case <-ctx.Done():
	case loadErr = <-s.loadFailed:
	}
	grace, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	if loadErr != nil {
		// Nothing was admitted (the server never became ready): stop without the
		// shutdown log, so the load error is the one thing said.
		s.stop(grace)
		<-served
		return loadErr
	}
	err := s.Shutdown(grace)
	<-served
	return err
}

// Shutdown drains: it refuses new requests, waits for in-flight and queued requests
// until ctx ends (then cancels what still runs; those callers get 503), and closes the
// models.
func (s *Server) Shutdown(ctx context.Context) error {
	s.log.Info("shutting down", "queue_depth", s.batcher.depth(), "in_flight", s.inflight.Load())
	return s.stop(ctx)
}

// stop is Shutdown without its log line.
func (s *Server) stop(ctx context.Context) error {
	s.beginStop()
	s.httpMu.Lock()
	hs := s.http
	s.httpMu.Unlock()
	var errs []error
	if hs != nil {
		// Until what was admitted is answered, the listener stays open: a new
		// connection gets the contract's 503 "server is shutting down" (and
		// Connection: close) instead of a refusal a client cannot tell from a crash.
		hs.SetKeepAlivesEnabled(false)
		s.waitAdmitted(ctx)
		// Shutdown closes the listeners and idle connections and waits for handlers;
		// handlers wait for their queued requests, which the dispatcher keeps serving.
		done := make(chan error, 1)
		go func() { done <- hs.Shutdown(ctx) }()
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			s.batcher.hardStop()
			errs = append(errs, <-done)
		}
	}
	if err := s.batcher.shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		errs = append(errs, err)
	}
	if hs != nil && ctx.Err() != nil {
		// The grace is spent and the passes were cancelled: give their handlers a
		// moment to answer 503 before the connections are cut.
		for deadline := time.Now().Add(2 * time.Second); s.handling.Load() > 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		hs.Close()
	}
	errs = append(errs, s.closeModels(), s.state.close())
	err := errors.Join(errs...)
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("shutdown grace spent; requests still running were cancelled")
		return nil // the grace is the budget: exceeding it is not a failure to stop
	}
	return err
}

// waitAdmitted waits until no admitted request is in flight or queued, or ctx ends.
func (s *Server) waitAdmitted(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.inflight.Load() > 0 || s.batcher.depth() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) closeModels() error { return s.models.close() }

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handling.Add(1)
	defer s.handling.Add(-1)
	start := time.Now()
	rid := r.Header.Get("X-Request-Id")
	if !validRequestID(rid) {
		var b [8]byte
		rand.Read(b[:])
		rid = hex.EncodeToString(b[:])
	}
	w.Header().Set("X-Request-Id", rid)
	rec := &recorder{ResponseWriter: w, status: 200, start: start}
	// The whole exchange must end within the request budget plus the write timeout;
	// handlers move the deadline closer once the answer is ready.
	http.NewResponseController(w).SetWriteDeadline(start.Add(s.cfg.RequestTimeout + s.cfg.WriteTimeout + s.cfg.BodyTimeout))
	s.mux.ServeHTTP(rec, r)
	attrs := []any{
		"request_id", rid, "method", r.Method, "path", r.URL.Path, "status", rec.status,
		"total_ms", ms(time.Since(start)), "bytes", rec.bytes, "client", s.clientKey(r),
	}
	attrs = append(attrs, rec.attrs...)
	s.log.Info("request", attrs...)
}

// recorder keeps the status and size for the access log.
type recorder struct {
	http.ResponseWriter
	start  time.Time
	status int
	bytes  int
	attrs  []any
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func logAttrs(w http.ResponseWriter, kv ...any) {
	if rec, ok := w.(*recorder); ok {
		rec.attrs = append(rec.attrs, kv...)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *Server) post(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, &apiError{status: 405, detail: "Method Not Allowed"})
			return
		}
		h(w, r)
	}
}

func (s *Server) get(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, &apiError{status: 405, detail: "Method Not Allowed"})
			return
		}
		h(w, r)
	}
}

// authorized checks the bearer token in constant time (any header bytes answer 401,
// never 500: laya/serve.py compares bytes for the same reason).
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.APIKey == "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+s.cfg.APIKey)) == 1
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
	// Flushed here, not after the handler returns: a shutdown that closes the
	// connections once every handler has returned must not cut an answer off.
	http.NewResponseController(w).Flush()
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.status == 503 || e.status == 429 {
		w.Header().Set("Retry-After", strconv.Itoa(max(e.retryAfter, 1)))
	}
	// Not json.Marshal: it would escape <, > and & in a detail that quotes the request.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{"detail": e.detail})
	writeJSON(w, e.status, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// --- admission ---------------------------------------------------------------

// clientLimiter counts what each client holds at once (requests in flight, bodies
// being read, connections), under a cap given per call. The zero value is ready.
type clientLimiter struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes one of key's slots, unless key holds limit already (limit ≤ 0:
// unlimited).
func (c *clientLimiter) acquire(key string, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limit > 0 && c.n[key] >= limit {
		return false
	}
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return true
}

func (c *clientLimiter) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key]--; c.n[key] <= 0 {
		delete(c.n, key)
	}
}

func (c *clientLimiter) active() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.n)
}

// reject counts a shed request under laya_rejections_total{reason} and makes its
// error (retryAfter 0 answers Retry-After: 1).
func (s *Server) reject(status int, reason, detail string, retryAfter int) *apiError {
	s.metrics.rejections.WithLabelValues(reason).Inc()
	return &apiError{status: status, detail: detail, reason: reason, retryAfter: retryAfter}
}

// admit is the gate a decision request passes once its body is read and valid:
// draining (503), then the client's cap (429). release ends the admission.
func (s *Server) admit(r *http.Request) (release func(), e *apiError) {
	if s.draining.Load() {
		return nil, s.reject(503, "draining", errShuttingDown.Error(), 0)
	}
	if s.batcher.deviceLost.Load() != nil {
		return nil, errorf(503, "%s", deviceLostDetail)
	}
	if !s.ready.Load() {
		if p := s.preloadErr.Load(); p != nil {
			return nil, errorf(503, "the model failed to load")
		}
		return nil, errorf(503, "the model is still loading")
	}
	key := s.clientKey(r)
	releaseSlot, ok := s.state.acquire(r.Context(), key, s.cfg.ClientMaxInflight)
	if !ok {
		return nil, s.reject(429, "client_limit", "client concurrency limit exceeded", 0)
	}
	s.inflight.Add(1)
	return func() {
		s.inflight.Add(-1)
		releaseSlot()
	}, nil
}
