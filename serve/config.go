package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// ErrConfig reports an unusable setting; the message names the variable and its value.
var ErrConfig = errors.New("serve: invalid setting")

// Limits are the request guardrails, checked before anything is tokenized. The defaults
// are upstream laya-serve's (laya/serve.py): each is a 413 naming the limit.
type Limits struct {
	BodyBytes     int64 // request body, enforced while streaming
	StateChars    int   // characters of the state as the model reads it (json.dumps for JSON)
	Questions     int   // questions per request
	ChoiceOptions int   // options of one choice question
	ScoreLevels   int   // levels of one score question
	TotalOptions  int   // options across all questions
	BatchStates   int   // states of one /v1/systemone/batch request
	TextChars     int   // characters of one instructions, criterion or level text
	// TokenBudget caps a request's max_len and head_max_len (a 422 above it).
	TokenBudget int
}

// Config is the server's configuration. Start from DefaultConfig; FromEnv reads the
// LAYA_* variables over it.
type Config struct {
	// Addr is the listen address of Run's caller (the laya serve command).
	Addr string
	// BatchWindow is how long the dispatcher waits for more requests after the first
	// before a forward pass; 0 sends each request at once (no batching).
	BatchWindow time.Duration
	// BatchGreedy starts a pass at once with the requests already queued (up to
	// BatchMax), never waiting out BatchWindow: batches form from what arrives during
	// the pass before. For backends whose passes are short next to the window (GPUs),
	// where a lone request would otherwise wait the whole window for company.
	BatchGreedy bool
	// BatchMax caps the requests answered by one forward pass.
	BatchMax int
	// QueueMax bounds the requests waiting for a pass; more get 503 + Retry-After.
	QueueMax int
	// RequestTimeout is a request's budget for queue wait plus inference (504 past it).
	RequestTimeout time.Duration
	// ShutdownGrace is how long Shutdown lets in-flight and queued requests finish.
	ShutdownGrace time.Duration
	// InferWorkers is the number of dispatchers, each running one pass at a time
	// (upstream LAYA_INFER_WORKERS). With BatchGreedy, a dispatcher that finds
	// another's pass running starts its own only once its batch is full, or when
	// that pass ends: a second pass overlaps the first's device work with its
	// host work instead of splitting a light load into small passes. laya serve
	// runs 2 on the cuda backend, 1 elsewhere.
	InferWorkers int
	// MaxBodyReads caps the request bodies being read at once (503 past it), which
	// bounds the memory concurrent near-limit bodies take (upstream #330). A stalled
	// client holds a read for at most BodyTimeout, and nothing after it.
	MaxBodyReads int
	// ClientMaxBodyReads caps the bodies one client IP reads at once (503 past it), so
	// that stalled connections from one address cannot hold every read slot.
	ClientMaxBodyReads int
	// ClientMaxConns caps the connections one peer address holds open (past it a
	// new connection gets 503 and is closed; trusted proxies are exempt); 0 disables.
	ClientMaxConns int
	// MinBodyRate is the average transfer rate (bytes a second) a body must keep once
	// BodyRateGrace has passed (408 below it); 0 leaves only BodyTimeout.
	MinBodyRate   int64
	BodyRateGrace time.Duration
	// BatchMaxTokens caps the cost of one forward pass: the estimated tokens of its
	// question rows (tokens × rows), so a pass of long states is smaller than a pass of
	// short ones and its memory is bounded. A request costing more than the cap runs
	// in a pass of its own.
	BatchMaxTokens int
	// ClientMaxInflight caps one client's requests in flight (429); 0 disables. The
	// client is the x-laya-client header from a caller holding APIKey or a trusted
	// proxy, else the client IP (clientid.go).
	ClientMaxInflight int
	// BreakerThreshold consecutive inference failures open a client's circuit (503
	// "inference circuit breaker is open" until BreakerCooldown has passed, then
	// BreakerProbeSuccesses probes in a row close it); 0 disables it.
	BreakerThreshold, BreakerProbeSuccesses int
	BreakerCooldown                         time.Duration
	// ProxyHeaders trusts X-Forwarded-For from the peers in ForwardedAllowIPs (IPs,
	// networks, "*") for the client IP; enable it only behind a proxy you control.
	ProxyHeaders      bool
	ForwardedAllowIPs string
	// APIKey, when set, is the bearer token every route but /health requires (401).
	APIKey string
	// JevStrict strips answers to the TypeSafe Jev contract (LAYA_JEV_STRICT).
	JevStrict bool
	// ModerationThreshold flags a /v1/moderations category at or above it
	// (LAYA_MODERATION_THRESHOLD).
	ModerationThreshold float64
	// Metrics enables /metrics (404 when off).
	Metrics bool
	// Warmup runs one request per loaded checkpoint before /ready turns 200.
	Warmup bool
	// Lazy skips the preload (upstream LAYA_PRELOAD=0): the server is ready at once and
	// each checkpoint loads on the first request that needs it.
	Lazy bool
	// Preload names the router checkpoints loaded at start (all known when empty, up to
	// the residency cap).
	Preload []string
	Limits  Limits
	// HeaderTimeout bounds reading a request's headers, BodyTimeout its body,
	// WriteTimeout writing the answer, IdleTimeout a keep-alive connection's wait for
	// its next request.
	HeaderTimeout, BodyTimeout, WriteTimeout, IdleTimeout time.Duration
	// StateURL (redis://…) shares the per-client cap, the in-flight count and (with
	// SharedBreaker) the circuit breaker with every replica using the same Redis,
	// in upstream's key layout (laya/redis_state.py). Empty keeps them in-process.
	StateURL      string
	SharedBreaker bool
	// StateFailurePolicy is what a request meets while Redis is unreachable: "local"
	// enforces the limits per replica, "open" lets requests through unlimited.
	StateFailurePolicy string
	// BreakerEntryTTL is how long a client's breaker entry in Redis outlives its last
	// event: 0 is max(BreakerCooldown, 60 s) (upstream's "auto"), below 0 is upstream's
	// "0" (no TTL; Redis still drops it after 24 h).
	BreakerEntryTTL time.Duration
	// IdleUnload gives a checkpoint's memory back after that long without a request;
	// the next request loads it again (upstream LAYA_IDLE_UNLOAD_SECONDS). 0 keeps them.
	IdleUnload time.Duration
	// Device is what /health reports as the compute device (the backend name).
	Device string
	// Logger receives access logs (one JSON object per request) and errors; nil
	// discards them.
	Logger *slog.Logger
}

// DefaultConfig is upstream laya-serve's defaults (docs/serving.md, laya/serving.py),
// listening on loopback only.
func DefaultConfig() Config {
	return Config{
		Addr:                  "127.0.0.1:8642",
		BatchWindow:           10 * time.Millisecond,
		BatchMax:              16,
		QueueMax:              64,
		MaxBodyReads:          64,
		ClientMaxBodyReads:    8,
		ClientMaxConns:        256,
		MinBodyRate:           1024,
		BodyRateGrace:         2 * time.Second,
		BatchMaxTokens:        65536,
		SharedBreaker:         true,
		StateFailurePolicy:    "local",
		BreakerCooldown:       30 * time.Second,
		BreakerProbeSuccesses: 2,
		ForwardedAllowIPs:     "127.0.0.1",
		InferWorkers:          1,
		RequestTimeout:        120 * time.Second,
		ShutdownGrace:         30 * time.Second,
		Metrics:               true,
		Warmup:                true,
		ModerationThreshold:   0.5,
		Limits: Limits{
			BodyBytes:     2 << 20,
			StateChars:    50000,
			Questions:     64,
			ChoiceOptions: 100,
			ScoreLevels:   32,
			TotalOptions:  512,
			BatchStates:   64,
			TextChars:     8192,
			TokenBudget:   8192,
		},
		HeaderTimeout: 10 * time.Second,
		BodyTimeout:   30 * time.Second,
		WriteTimeout:  30 * time.Second,
		IdleTimeout:   60 * time.Second,
		Device:        "cpu",
	}
}

// EnvVars lists the variables FromEnv reads, with what each sets.
var EnvVars = [][2]string{
	{"LAYA_BATCH_WINDOW_MS", "batch window in ms; 0 = no batching (10)"},
	{"LAYA_BATCH_GREEDY", "1: a pass takes what is queued at once, no window; laya serve: on for GPU backends (0)"},
	{"LAYA_BATCH_MAX", "requests per pass; laya serve: rows per forward too (16)"},
	{"LAYA_QUEUE_MAX", "requests waiting; more get 503 (64)"},
	{"LAYA_REQUEST_TIMEOUT_S", "queue wait + inference budget; past it 504 (120)"},
	{"LAYA_SHUTDOWN_GRACE_S", "drain budget on SIGTERM/SIGINT (30)"},
	{"LAYA_INFER_WORKERS", "dispatchers, each one pass at a time; laya serve: 2 on cuda (1)"},
	{"LAYA_MAX_BODY_READS", "request bodies read at once; more get 503 (64)"},
	{"LAYA_CLIENT_MAX_BODY_READS", "request bodies one client IP reads at once; more get 503 (8)"},
	{"LAYA_CLIENT_MAX_CONNS", "connections one peer address holds open; more get 503; 0 = off (256)"},
	{"LAYA_MIN_BODY_RATE", "bytes/s a body must average after the grace; slower gets 408; 0 = off (1024)"},
	{"LAYA_BODY_RATE_GRACE_S", "seconds before the minimum body rate applies (2)"},
	{"LAYA_BATCH_MAX_TOKENS", "estimated tokens x rows of one forward pass (65536)"},
	{"LAYA_CLIENT_MAX_INFLIGHT", "per-client requests in flight; over it 429; 0 = off (0)"},
	{"LAYA_BREAKER_THRESHOLD", "consecutive inference failures opening a client's breaker; 0 = off (0)"},
	{"LAYA_BREAKER_COOLDOWN_S", "seconds a breaker stays open before probes (30)"},
	{"LAYA_BREAKER_PROBE_SUCCESSES", "probe successes in a row that close it (2)"},
	{"LAYA_STATE_URL", "redis://host:port/db sharing client caps and breakers across replicas (unset)"},
	{"LAYA_SHARED_BREAKER", "with LAYA_STATE_URL, share the breaker too (1)"},
	{"LAYA_STATE_FAILURE_POLICY", "Redis unreachable: local (per-replica limits) or open (none) (local)"},
	{"LAYA_BREAKER_ENTRY_TTL_S", "breaker entry lifetime; auto = max(cooldown, 60) (auto)"},
	{"LAYA_IDLE_UNLOAD_SECONDS", "unload a checkpoint idle that long, reload on demand; 0 = never (0)"},
	{"LAYA_PROXY_HEADERS", "trust X-Forwarded-For from LAYA_FORWARDED_ALLOW_IPS (0)"},
	{"LAYA_FORWARDED_ALLOW_IPS", "proxies trusted: IPs, networks or * (127.0.0.1)"},
	{"LAYA_API_KEY", "require Authorization: Bearer <key> (unset)"},
	{"LAYA_JEV_STRICT", "answer with the strict Jev contract only (0)"},
	{"LAYA_MODERATION_THRESHOLD", "flag a /v1/moderations category at or above it, 0..1 (0.5)"},
	{"LAYA_METRICS", "serve /metrics (1)"},
	{"LAYA_WARMUP", "one warm-up pass per checkpoint before ready (1)"},
	{"LAYA_PRELOAD", "load the checkpoints at start; 0 = on first use (1)"},
	{"LAYA_MODELS", "router checkpoints to preload, comma-separated (all)"},
	{"LAYA_MAX_BODY_BYTES", "request body limit (2097152)"},
	{"LAYA_MAX_STATE_CHARS", "state limit in characters (50000)"},
	{"LAYA_MAX_QUESTIONS", "questions per request (64)"},
	{"LAYA_MAX_CHOICE_OPTIONS", "options per choice question (100)"},
	{"LAYA_MAX_SCORE_LEVELS", "levels per score question (32)"},
	{"LAYA_MAX_TOTAL_OPTIONS", "options across questions (512)"},
	{"LAYA_MAX_TEXT_CHARS", "characters of one instructions/criterion/level text (8192)"},
	{"LAYA_MAX_BATCH_STATES", "states per /v1/systemone/batch (64)"},
	{"LAYA_MAX_TOKEN_BUDGET", "cap on a request's max_len/head_max_len (8192)"},
	{"LAYA_HEADER_TIMEOUT_S", "time to read request headers (10)"},
	{"LAYA_BODY_TIMEOUT_S", "time to read a request body (30)"},
	{"LAYA_WRITE_TIMEOUT_S", "time to write an answer (30)"},
	{"LAYA_IDLE_TIMEOUT_S", "keep-alive idle limit (60)"},
}

// FromEnv reads the LAYA_* variables (see EnvVars) over c. A blank or unset variable
// keeps c's value; an unusable one is an ErrConfig naming it, as upstream fails fast
// rather than defaulting silently.
func (c *Config) FromEnv(getenv func(string) string) error {
	var errs []error
	num := func(name string, min int, set func(int)) {
		raw := strings.TrimSpace(getenv(name))
		if raw == "" {
			return
		}
		v, err := strconv.Atoi(raw)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: %s must be an integer, got %q", ErrConfig, name, raw))
		case v < min:
			errs = append(errs, fmt.Errorf("%w: %s must be >= %d, got %d", ErrConfig, name, min, v))
		default:
			set(v)
		}
	}
	seconds := func(name string, min float64, set func(time.Duration)) {
		raw := strings.TrimSpace(getenv(name))
		if raw == "" {
			return
		}
		v, err := strconv.ParseFloat(raw, 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: %s must be a number, got %q", ErrConfig, name, raw))
		case v < min || v > 1e9:
			errs = append(errs, fmt.Errorf("%w: %s must be between %g and 1e9 seconds, got %g", ErrConfig, name, min, v))
		default:
			set(time.Duration(v * float64(time.Second)))
		}
	}
	boolean := func(name string, set func(bool)) {
		raw := strings.ToLower(strings.TrimSpace(getenv(name)))
		switch raw {
		case "":
		case "1", "true", "yes", "on":
			set(true)
		case "0", "false", "no", "off":
			set(false)
		default:
			errs = append(errs, fmt.Errorf("%w: %s must be a boolean (1/0, true/false, yes/no, on/off), got %q", ErrConfig, name, raw))
		}
	}
	num("LAYA_BATCH_WINDOW_MS", 0, func(v int) { c.BatchWindow = time.Duration(v) * time.Millisecond })
	boolean("LAYA_BATCH_GREEDY", func(b bool) { c.BatchGreedy = b })
	num("LAYA_BATCH_MAX", 1, func(v int) { c.BatchMax = v })
	num("LAYA_QUEUE_MAX", 1, func(v int) { c.QueueMax = v })
	seconds("LAYA_REQUEST_TIMEOUT_S", 0.001, func(d time.Duration) { c.RequestTimeout = d })
	seconds("LAYA_SHUTDOWN_GRACE_S", 0, func(d time.Duration) { c.ShutdownGrace = d })
	num("LAYA_INFER_WORKERS", 1, func(v int) { c.InferWorkers = v })
	num("LAYA_MAX_BODY_READS", 1, func(v int) { c.MaxBodyReads = v })
	num("LAYA_CLIENT_MAX_BODY_READS", 1, func(v int) { c.ClientMaxBodyReads = v })
	num("LAYA_CLIENT_MAX_CONNS", 0, func(v int) { c.ClientMaxConns = v })
	num("LAYA_MIN_BODY_RATE", 0, func(v int) { c.MinBodyRate = int64(v) })
	seconds("LAYA_BODY_RATE_GRACE_S", 0, func(d time.Duration) { c.BodyRateGrace = d })
	num("LAYA_BATCH_MAX_TOKENS", 1, func(v int) { c.BatchMaxTokens = v })
	num("LAYA_CLIENT_MAX_INFLIGHT", 0, func(v int) { c.ClientMaxInflight = v })
	num("LAYA_BREAKER_THRESHOLD", 0, func(v int) { c.BreakerThreshold = v })
	seconds("LAYA_BREAKER_COOLDOWN_S", 0, func(d time.Duration) { c.BreakerCooldown = d })
	num("LAYA_BREAKER_PROBE_SUCCESSES", 1, func(v int) { c.BreakerProbeSuccesses = v })
	if u := strings.TrimSpace(getenv("LAYA_STATE_URL")); u != "" {
		c.StateURL = u
	}
	boolean("LAYA_SHARED_BREAKER", func(b bool) { c.SharedBreaker = b })
	if p := strings.ToLower(strings.TrimSpace(getenv("LAYA_STATE_FAILURE_POLICY"))); p != "" {
		if p != "local" && p != "open" {
			errs = append(errs, fmt.Errorf("%w: LAYA_STATE_FAILURE_POLICY must be 'local' or 'open', got %q", ErrConfig, p))
		} else {
			c.StateFailurePolicy = p
		}
	}
	if raw := strings.ToLower(strings.TrimSpace(getenv("LAYA_BREAKER_ENTRY_TTL_S"))); raw == "auto" {
		c.BreakerEntryTTL = 0
	} else {
		seconds("LAYA_BREAKER_ENTRY_TTL_S", 0, func(d time.Duration) {
			if c.BreakerEntryTTL = d; d == 0 {
				c.BreakerEntryTTL = -1 // upstream's 0: no TTL but Redis' 24 h safety expiry
			}
		})
	}
	seconds("LAYA_IDLE_UNLOAD_SECONDS", 0, func(d time.Duration) { c.IdleUnload = d })
	boolean("LAYA_PROXY_HEADERS", func(b bool) { c.ProxyHeaders = b })
	if ips := strings.TrimSpace(getenv("LAYA_FORWARDED_ALLOW_IPS")); ips != "" {
		c.ForwardedAllowIPs = ips
		if _, err := parseTrusted(ips); err != nil {
			errs = append(errs, err)
		}
	}
	if key := getenv("LAYA_API_KEY"); key != "" {
		c.APIKey = key
	}
	boolean("LAYA_JEV_STRICT", func(b bool) { c.JevStrict = b })
	errs = append(errs, moderationThresholdFromEnv(getenv, &c.ModerationThreshold))
	boolean("LAYA_METRICS", func(b bool) { c.Metrics = b })
	boolean("LAYA_WARMUP", func(b bool) { c.Warmup = b })
	boolean("LAYA_PRELOAD", func(b bool) { c.Lazy = !b })
	if models := strings.TrimSpace(getenv("LAYA_MODELS")); models != "" {
		c.Preload = nil
		for _, m := range strings.Split(models, ",") {
			if m = strings.TrimSpace(m); m != "" {
				c.Preload = append(c.Preload, m)
			}
		}
	}
	num("LAYA_MAX_BODY_BYTES", 1, func(v int) { c.Limits.BodyBytes = int64(v) })
	num("LAYA_MAX_STATE_CHARS", 1, func(v int) { c.Limits.StateChars = v })
	num("LAYA_MAX_QUESTIONS", 1, func(v int) { c.Limits.Questions = v })
	num("LAYA_MAX_CHOICE_OPTIONS", 1, func(v int) { c.Limits.ChoiceOptions = v })
	num("LAYA_MAX_SCORE_LEVELS", 1, func(v int) { c.Limits.ScoreLevels = v })
	num("LAYA_MAX_TOTAL_OPTIONS", 1, func(v int) { c.Limits.TotalOptions = v })
	num("LAYA_MAX_TEXT_CHARS", 1, func(v int) { c.Limits.TextChars = v })
	num("LAYA_MAX_BATCH_STATES", 1, func(v int) { c.Limits.BatchStates = v })
	num("LAYA_MAX_TOKEN_BUDGET", 1, func(v int) { c.Limits.TokenBudget = v })
	seconds("LAYA_HEADER_TIMEOUT_S", 0.001, func(d time.Duration) { c.HeaderTimeout = d })
	seconds("LAYA_BODY_TIMEOUT_S", 0.001, func(d time.Duration) { c.BodyTimeout = d })
	seconds("LAYA_WRITE_TIMEOUT_S", 0.001, func(d time.Duration) { c.WriteTimeout = d })
	seconds("LAYA_IDLE_TIMEOUT_S", 0.001, func(d time.Duration) { c.IdleTimeout = d })
	return errors.Join(errs...)
}

// check reports settings New cannot run with.
func (c *Config) check() error {
	switch {
	case c.BatchWindow < 0:
		return fmt.Errorf("%w: batch window %v, want ≥ 0", ErrConfig, c.BatchWindow)
	case c.BatchMax < 1 || c.QueueMax < 1 || c.MaxBodyReads < 1 || c.ClientMaxBodyReads < 1 || c.InferWorkers < 1 || c.BatchMaxTokens < 1:
		return fmt.Errorf("%w: batch max %d, queue max %d, max body reads %d, client max body reads %d, infer workers %d and batch max tokens %d, want ≥ 1",
			ErrConfig, c.BatchMax, c.QueueMax, c.MaxBodyReads, c.ClientMaxBodyReads, c.InferWorkers, c.BatchMaxTokens)
	case c.MinBodyRate < 0 || c.BodyRateGrace < 0 || c.IdleUnload < 0 || c.ClientMaxConns < 0:
		return fmt.Errorf("%w: minimum body rate, its grace, idle unload and client max conns must be ≥ 0", ErrConfig)
	case c.StateFailurePolicy != "local" && c.StateFailurePolicy != "open":
		return fmt.Errorf("%w: state failure policy %q, want local or open", ErrConfig, c.StateFailurePolicy)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("%w: request timeout %v, want > 0", ErrConfig, c.RequestTimeout)
	case c.ClientMaxInflight < 0:
		return fmt.Errorf("%w: client max in-flight %d, want ≥ 0", ErrConfig, c.ClientMaxInflight)
	case c.Limits.BodyBytes < 1 || c.Limits.StateChars < 1 || c.Limits.Questions < 1 || c.Limits.ChoiceOptions < 1 ||
		c.Limits.ScoreLevels < 1 || c.Limits.TotalOptions < 1 || c.Limits.BatchStates < 1 || c.Limits.TokenBudget < 1 ||
		c.Limits.TextChars < 1:
		return fmt.Errorf("%w: every limit must be ≥ 1, got %+v", ErrConfig, c.Limits)
	case c.HeaderTimeout <= 0 || c.BodyTimeout <= 0 || c.WriteTimeout <= 0 || c.IdleTimeout <= 0:
		return fmt.Errorf("%w: header, body, write and idle timeouts must be > 0", ErrConfig)
	}
	return nil
}
