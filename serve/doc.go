// Package serve is laya serve: upstream laya-serve's HTTP API (NandhaKishorM/laya
// docs/http-api.md, docs/serving.md, laya/serve.py, laya/serving.py) over a Laya
// checkpoint or the Laya router, as a long-lived production server.
//
// # Use
//
//	models := serve.SingleModel("testdata/oracle/checkpoints/real-en")
//	// or: serve.RouterModels(router) for english / multilingual / typed-decisions
//	cfg := serve.DefaultConfig()             // upstream's defaults, 127.0.0.1:8642
//	if err := cfg.FromEnv(os.Getenv); err != nil { ... } // LAYA_* (EnvVars)
//	srv, err := serve.New(cfg, models)
//	ln, _ := net.Listen("tcp", cfg.Addr)
//	err = srv.Run(ctx, ln)                   // until ctx ends; then drains and returns nil
//
// A Server is an http.Handler too (after Start), for embedding under another mux;
// Run adds the listener, the connection timeouts and graceful shutdown.
//
// # Routes
//
//   - POST /v1/systemone: {"state", "questions"} plus the optional model, task, lang,
//     lang_guess, max_len, head_max_len, min_confidence and state_token_counts →
//     {"model", "answers", "usage", "routing"}, written as upstream's server writes it
//     (Starlette: json.dumps with compact separators). answers are the library's values; usage adds truncated and truncated_questions
//     always, state_tokens and state_tokens_dropped on request; min_confidence (a
//     number, or {bucket: number} such as {"choice:3-5": 0.6, "default": 0.5}, a key
//     that names no bucket refused) adds abstention ("passed", "abstained",
//     "unevaluated"), abstention_threshold and low_confidence to every answer. Config.JevStrict strips the answer to the Jev
//     contract.
//   - POST /v1/systemone/batch: {"states": [...], "questions", ...} →
//     {"results": [...], "total_usage": {...}}; each state is routed and queued alone.
//   - POST /v1/predict: {"state", "questions"} → the library's JSON plus a newline, as
//     laya predict prints it (with "routing" under the router).
//   - GET /health, also as /healthz (liveness; 503 once a preload failed), GET /ready
//     (200 with queue_depth, or 503 while loading or draining), POST /drain (stop intake
//     before SIGTERM), GET /metrics (Prometheus, upstream's metric names and buckets).
//
// A checkpoint that cannot load never stops a router: a failed preload leaves /ready and
// /health at 503 with the cause in preload_error, and a request routed to a checkpoint
// that fails to load (a missing directory, the Hub unreachable) gets 503 with the load
// error as its detail while the other checkpoints keep answering; the next request for
// it loads it again. A single checkpoint (SingleModel) that fails to preload has nothing
// to serve: Run stops and returns the load error.
//
// Errors are upstream's: {"detail": ...} with 400 (malformed body, missing or null
// state, unpaired surrogate escapes), 401 (bearer token), 413 (Limits), 422 (invalid
// question or control field), 429 (client cap), 503 + Retry-After (1 s; "request queue is
// full", "server is shutting down", "server busy, try again later" past MaxBodyReads,
// "inference circuit breaker is open", loading, a checkpoint that failed to load), 504 ("inference timed out") and 500
// ("inference failed", the cause only in the log).
//
// # Batching and admission
//
// A request is read (within BodyTimeout and Limits.BodyBytes, at most MaxBodyReads at
// once) and validated before it takes anything else: a client that stalls holds only
// its read, and only until BodyTimeout. It is then admitted (draining →
// 503, the client's in-flight cap → 429), queued (QueueMax → 503) and answered by the
// dispatcher, which takes the first queued request, waits up to BatchWindow for up to
// BatchMax, groups them by checkpoint and answers each group with one
// laya.Agent.PredictBatch: the question rows of every request, sorted by length, in
// padded batches. Answers are byte-identical to single requests; a pass that fails is
// retried request by request. RequestTimeout covers queue wait and inference.
//
// # Shutdown
//
// Run's context ending (SIGTERM or SIGINT in laya serve) starts a drain: the listener
// closes, new requests get 503, and every in-flight and queued request is answered
// within ShutdownGrace; past it, passes still running are cancelled and their callers
// get 503. Run then closes the models and returns nil. (Upstream fails queued requests
// with 503 at SIGTERM; here they are answered, since a deploy should not fail requests
// the server already accepted.)
//
// # Logs and metrics
//
// Config.Logger (log/slog; laya serve uses a JSON handler) gets one "request" record per
// request: request_id (X-Request-Id echoed or generated), method, path, status,
// total_ms, queue_wait_ms, infer_ms, batch_size, model, client. Metrics:
// laya_requests_total{model,status} (status ok, error, timeout, rejected, rate_limited,
// invalid for requests refused by validation, cancelled for clients that left), laya_rejections_total{reason} (upstream's reasons, and busy for MaxBodyReads),
// laya_request_latency_seconds, laya_queue_wait_seconds, laya_queue_oldest_seconds,
// laya_inference_seconds, laya_batch_size, laya_batches_total{result},
// laya_queue_depth, laya_active_requests, laya_inflight_total, laya_clients_active,
// laya_circuits_open, laya_circuits_tracked, laya_models_loaded. Upstream's shared
// (Redis) state is not implemented, so its metrics are absent.
//
// # Circuit breaker
//
// With BreakerThreshold > 0, that many inference failures in a row (500s) open the
// client's circuit: its requests get 503 "inference circuit breaker is open" with the
// cooldown left in Retry-After; after BreakerCooldown one probe at a time runs, and
// BreakerProbeSuccesses successes in a row close it. Per client, as upstream keys it.
// Behind a proxy, ProxyHeaders takes the client IP from X-Forwarded-For as set by the
// proxies in ForwardedAllowIPs (read right to left, so a client cannot pick it).
package serve
