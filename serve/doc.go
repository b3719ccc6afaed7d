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
//   - POST /v1/chat/completions, POST /v1/responses, POST /v1/moderations, GET /v1/models:
//     OpenAI's wire format for structured output (upstream docs/openai.md). A
//     response_format (text.format) json_schema is planned by structured.PlanSchema and
//     answered as JSON text; tools (at most MaxTools functions) add a choice over the
//     tool names to the same pass, unless tool_choice names one. Moderations run the
//     moderation preset per input, flagged at Config.ModerationThreshold. 400 for what a
//     decision model cannot do (no schema or tools, json_object, stream, n > 1), 422 for
//     a schema outside the subset, naming its path.
//   - GET /health, also as /healthz (liveness; 503 once a preload failed), GET /ready
//     (200 with queue_depth, or 503 while loading or draining; without the key only
//     ready or not), POST /drain[?timeout_s=N] (stop intake before SIGTERM, until
//     POST /undrain or N seconds; both need the key, or a loopback peer when no key is
//     set), GET /metrics (Prometheus, upstream's metric names and buckets).
//
// Checkpoints are shown by name, never by path: routing.repo of a local directory is
// its last element, and load errors shown to clients have their paths cut the same
// way (the log keeps them whole).
//
// A checkpoint that cannot load never stops a router: a failed preload leaves /ready and
// /health at 503 with the cause in preload_error, and a request routed to a checkpoint
// that fails to load (a missing directory, the Hub unreachable) gets 503 with the load
// error as its detail while the other checkpoints keep answering; the next request for
// it loads it again. A single checkpoint (SingleModel) that fails to preload has nothing
// to serve: Run stops and returns the load error.
//
// A backend that loses its device for the rest of the process (backend.ErrDeviceLost: a
// GPU context after a kernel fault) turns /health and /ready to 503 from the pass that
// met it on, with the cause in device_error for key holders, and new requests get 503:
// liveness fails so that the process is restarted, the one way to recover.
//
// Errors are upstream's: {"detail": ...} with 400 (malformed body, missing or null
// state, unpaired surrogate escapes), 401 (bearer token), 413 (Limits), 422 (invalid
// question or control field), 429 (client cap), 503 + Retry-After (1 s; "request queue is
// full", "server is shutting down", "server busy, try again later" past MaxBodyReads,
// "inference circuit breaker is open", loading, a checkpoint that failed to load), 504 ("inference timed out") and 500
// ("inference failed", the cause only in the log).
//
// # Limits on every route
//
// Every decision route reads its body through one method, Server.readJSON
// (limits.go), and so gets the same gates: the bearer key, draining, the read caps
// below, a JSON object (a UTF-8 BOM accepted, as Python's json.loads accepts it in
// bytes), then the route's check: its shape (400) and Limits on its "state" or
// "states" and "questions" (413 naming the limit: questions, options, levels, total
// options, state characters, states, and Limits.TextChars per instructions, option
// or level text), in the order upstream checks them: a body wrong in shape is a 400
// even when it is also over a limit. The OpenAI routes take the same gates up to the
// body (Server.readGated) and check their limits on what they turn it into. A route
// added later reads its body with one of the two and checks its limits.
//
// # Reading bodies
//
// A body being read holds one of MaxBodyReads slots (memory), and one client address
// (the peer, or the hop trusted proxies vouch for) at most ClientMaxBodyReads of them;
// past either the request gets 503 "server busy, try again later" and its connection
// is closed. A body must arrive at MinBodyRate bytes a second on average once
// BodyRateGrace has passed (408), and within BodyTimeout in all: connections that
// stall or trickle give their slots back within seconds, and one address cannot
// starve the others (slowclient.go). Before its headers are in, a connection holds
// no slot but a descriptor, for at most HeaderTimeout; one peer address holds at
// most ClientMaxConns connections open (trusted proxies exempt), and a connection
// past that is answered 503 and closed (connlimit.go).
//
// # Client identity
//
// The per-client cap and breaker key a request by x-laya-client only when the caller
// may name a tenant: it holds APIKey, or it is a trusted proxy (ProxyHeaders and
// ForwardedAllowIPs). Otherwise the key is the client IP. So a caller can neither
// escape its cap with a new name per request nor get another client refused by
// sending its name, and holders of the one APIKey at different addresses are
// different clients (clientid.go). Keys are upstream's "client:<name[:200]>" and
// "ip:<address>"; the bearer credential is never a key.
//
// # Batching and admission
//
// A request is read and validated before it takes anything else. It is then admitted
// (draining → 503, the client's in-flight cap → 429), queued (QueueMax → 503; a batch
// of more states than QueueMax → 413, since it could never fit) and answered by the
// dispatcher, which takes the first queued request, waits up to BatchWindow for up to
// BatchMax requests or BatchMaxTokens of cost (estimated tokens × rows), groups them
// by checkpoint and answers each group with laya.Agent.PredictBatch: the question
// rows of every request, sorted by length, in padded batches. The dispatcher learns
// each checkpoint's seconds per unit of cost and plans a group's passes earliest
// deadline first, each ending (by the estimate, plus a quarter) before the earliest
// deadline in it; a request that cannot finish even alone is answered 504 at once
// (cost.go). Answers are byte-identical to single requests; a pass that fails is
// retried request by request. RequestTimeout covers queue wait and inference.
// InferWorkers dispatchers share the queue; with BatchGreedy one that finds
// another's pass running starts its own only with a full batch, or once that pass
// ends, so that two passes overlap (the second's host work beside the first's device
// work) only under load (laya serve runs two on the cuda backend).
//
// # Replicas
//
// With Config.StateURL (LAYA_STATE_URL, redis://…) the per-client in-flight slots,
// the global in-flight count and, with SharedBreaker, the breaker live in Redis in
// upstream's layout (laya/redis_state.py: laya:adm:<client>, laya:inflight,
// laya:brk:<client>, laya:brk:open, laya:brk:tracked), one Lua script per
// transition, so every replica enforces one budget and Go and Python replicas can
// share one Redis. A slot counter expires RequestTimeout + 5 s after it was taken, so
// a dead replica's slots come back within that. When Redis does not answer within
// 300 ms, StateFailurePolicy "local" decides with the replica's own limiter and
// breaker and "open" lets the request through (laya_shared_state_errors_total,
// laya_state_degraded); Redis is then left alone for a second.
//
// # Idle unload
//
// With IdleUnload (LAYA_IDLE_UNLOAD_SECONDS) a checkpoint no pass has used for that
// long is closed; the next request that needs it loads it again, and /ready stays 200.
//
// # Shutdown
//
// Run's context ending (SIGTERM or SIGINT in laya serve) starts a drain: new requests
// get 503 "server is shutting down" (new connections too: the listener stays open,
// without keep-alive, until what was admitted is answered), and every in-flight and
// queued request is answered within ShutdownGrace; past it, passes still running are cancelled and their callers
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
// laya_circuits_open, laya_circuits_tracked, laya_models_loaded, laya_device_lost; with StateURL also
// laya_shared_state_errors_total{op}, laya_state_degraded and laya_state_backend{mode}.
//
// # Circuit breaker
//
// With BreakerThreshold > 0, that many inference failures in a row (500s) open the
// client's circuit: its requests get 503 "inference circuit breaker is open" with the
// cooldown left in Retry-After; after BreakerCooldown one probe at a time runs, and
// BreakerProbeSuccesses successes in a row close it. Per client (see Client identity).
// Behind a proxy, ProxyHeaders takes the client IP from X-Forwarded-For as set by the
// proxies in ForwardedAllowIPs (read right to left, so a client cannot pick it).
package serve
