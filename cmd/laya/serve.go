package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/router"
	"github.com/laya-metal/laya/serve"
)

func init() {
	register("serve", command{
		summary: "answer decisions over HTTP (upstream laya-serve's /v1/systemone), micro-batched",
		run:     runServe,
	})
}

const serveUsage = `Usage: laya serve (--model DIR|ORG/NAME | --router) [--addr 127.0.0.1:8642] [flags]

Serves upstream laya-serve's HTTP API until SIGTERM or SIGINT, then stops taking
requests, answers every in-flight and queued one (within LAYA_SHUTDOWN_GRACE_S)
and exits 0.

  POST /v1/systemone        {"state", "questions", optional model, task, lang,
                            lang_guess, max_len, head_max_len, min_confidence,
                            state_token_counts} -> {model, answers, usage, routing}
  POST /v1/systemone/batch  {"states": [...], "questions"} -> {"results": [...]}
  POST /v1/predict          {"state", "questions"} -> the JSON laya predict prints
  POST /v1/chat/completions, /v1/responses, /v1/moderations; GET /v1/models
                            OpenAI's structured-output wire format (json_schema, tools)
  GET  /health  /ready      liveness; readiness (503 while loading or draining)
  POST /drain               stop intake before SIGTERM (?timeout_s=N: for N s)
  POST /undrain             resume intake
  GET  /metrics             Prometheus

--model serves one checkpoint, and exits with the load error if it cannot load
it; --router routes each request to the english, multilingual or
typed-decisions checkpoint as upstream's Router does, keeping at most
--max-loaded resident (one that cannot load fails the requests routed to it,
and /ready names it when it was preloaded). Concurrent requests for one checkpoint share
forward passes (LAYA_BATCH_WINDOW_MS, LAYA_BATCH_MAX). Errors are upstream's:
{"detail": ...} with 400/401/413/422/429/503 (+Retry-After)/504/500.
--model-dir NAME=DIR points a built-in at DIR, or adds a checkpoint of your
own under any other NAME, which requests pick with "model": "NAME" and
/v1/models lists.

Environment (upstream's names and defaults):
%s
Examples:
  $ laya serve --model testdata/oracle/checkpoints/real-en &
  $ curl -s localhost:8642/v1/systemone -d @testdata/requests/email.json
  $ LAYA_BATCH_WINDOW_MS=0 laya serve --model testdata/oracle/checkpoints/real-en --addr 127.0.0.1:9000
  $ laya serve --router --model-dir english=testdata/oracle/checkpoints/real-en \
        --model-dir multilingual=testdata/oracle/checkpoints/tiny-ml
  $ laya serve --router --model-dir support-bot=testdata/oracle/checkpoints/tiny-en

Flags:
`

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var env strings.Builder
	for _, v := range serve.EnvVars {
		fmt.Fprintf(&env, "  %-26s %s\n", v[0], v[1])
	}
	fs := newFlags("serve", fmt.Sprintf(serveUsage, env.String()), stderr)
	cfg := serve.DefaultConfig()
	model := fs.String("model", "", "serve one Laya checkpoint: `DIR` or Hub id")
	useRouter := fs.Bool("router", false, "route between the english, multilingual and typed-decisions checkpoints")
	var dirs modelDirs
	fs.Var(&dirs, "model-dir", "with --router: `NAME=DIR` or NAME=ORG/NAME[/SUB][@REV] for one checkpoint, a built-in or your own (repeatable)")
	maxLoaded := fs.Int("max-loaded", 3, "with --router: checkpoints kept resident (least recently used evicted)")
	autoTask := fs.Bool("auto-task", os.Getenv("LAYA_AUTO_TASK") == "1", "with --router: route typed-decisions workflows automatically (LAYA_AUTO_TASK)")
	addr := fs.String("addr", envAddr(cfg.Addr), "listen `address` (host:port; LAYA_HOST, LAYA_PORT)")
	backend := fs.String("backend", "auto", "compute `backend`: "+backendList())
	batchSize := fs.Int("batch-size", 0, "question rows per forward batch (default LAYA_BATCH_MAX)")
	logLevel := fs.String("log-level", envOr("LAYA_LOG_LEVEL", "info"), "log `level`: debug, info, warn, error (LAYA_LOG_LEVEL)")
	logFormat := fs.String("log-format", envOr("LAYA_LOG_FORMAT", "json"), "log `format`: json (one object per line) or text (LAYA_LOG_FORMAT)")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *maxLoaded < 1 {
		return usagef("--max-loaded %d: want at least 1", *maxLoaded)
	}
	if err := cfg.FromEnv(os.Getenv); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	switch strings.ToLower(*logFormat) {
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	default:
		return usagef("--log-format %q: want json or text", *logFormat)
	}
	switch {
	case *useRouter && *model != "":
		return usagef("give --model or --router, not both")
	case !*useRouter && len(dirs.m) > 0:
		return usagef("--model-dir needs --router")
	case !*useRouter && *model == "":
		return usagef("--model DIR or --router is required")
	}
	cfg.Addr = *addr
	resolved, device, err := resolveBackend(*backend, stderr)
	if err != nil {
		return err
	}
	*backend, cfg.Device = resolved, device
	if envOr("LAYA_BATCH_GREEDY", "") == "" && greedyByDefault(resolved) { // unset or blank, as FromEnv reads it
		cfg.BatchGreedy = true
	}
	if envOr("LAYA_INFER_WORKERS", "") == "" {
		cfg.InferWorkers = inferWorkersByDefault(resolved)
	}
	if *batchSize == 0 {
		// One forward holds up to LAYA_BATCH_MAX rows, the knob upstream sizes
		// device memory with; not the backend's larger batch (cuda's 64 rows):
		// a pass's size varies with the traffic, and every size of a larger
		// forward is a shape of its own for cuda to tune and capture; measured in
		// short runs on an H100, where those first runs weigh most, it did not
		// serve better (docs/cuda-perf-log.md).
		*batchSize = cfg.BatchMax
	}
	loadOpts := []laya.Option{laya.WithBackend(*backend), laya.WithBatchSize(*batchSize),
		laya.WithHub(progressClient(stderr))}

	var models serve.Models
	if *useRouter {
		opts := []router.Option{router.WithMaxLoaded(*maxLoaded), router.WithLoadOptions(loadOpts...),
			router.WithModels(dirs.m)}
		if *autoTask {
			opts = append(opts, router.WithAutoTaskDetection())
		}
		if d := os.Getenv("LAYA_DEFAULT_MODEL"); d != "" {
			opts = append(opts, router.WithDefaultModel(d))
		}
		if len(cfg.Preload) == 0 {
			// Preload what was named on the command line: the others are Hub
			// checkpoints, loaded (and downloaded) only when a request needs one.
			for name := range dirs.m {
				cfg.Preload = append(cfg.Preload, name)
			}
		}
		r, err := router.New(opts...)
		if err != nil {
			return err
		}
		models = serve.RouterModels(r)
	} else {
		models = serve.SingleModel(*model, loadOpts...)
	}
	srv, err := serve.New(cfg, models)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	// Both signals drain: SIGTERM is what orchestrators send, SIGINT what a terminal does.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		// A second signal during the drain exits at once, as a second Ctrl-C should.
		<-ctx.Done()
		again := make(chan os.Signal, 1)
		signal.Notify(again, syscall.SIGTERM, os.Interrupt)
		<-again
		fmt.Fprintln(stderr, "laya serve: second signal; exiting without finishing the drain")
		os.Exit(1)
	}()
	// The batching an operator would otherwise have to infer from the backend's
	// defaults: GPU backends start passes greedily, and those whose passes run side
	// by side (cuda) have two dispatchers.
	cfg.Logger.Info("listening", "addr", ln.Addr().String(), "backend", *backend, "batch_max", cfg.BatchMax,
		"batch_greedy", cfg.BatchGreedy, "infer_workers", cfg.InferWorkers)
	return srv.Run(ctx, ln)
}

// modelDirs is the --model-dir NAME=REF flag.
type modelDirs struct{ m map[string]string }

func (d *modelDirs) String() string { return fmt.Sprint(d.m) }

func (d *modelDirs) Set(v string) error {
	name, ref, ok := strings.Cut(v, "=")
	if !ok || name == "" || ref == "" {
		return fmt.Errorf("want NAME=DIR, got %q", v)
	}
	// Any name: a built-in (or alias) points that model elsewhere, another
	// adds a model of your own (router.WithModel checks the name).
	if _, err := router.New(router.WithModel(name, ref)); err != nil {
		return err
	}
	if d.m == nil {
		d.m = map[string]string{}
	}
	d.m[name] = ref
	return nil
}

// envOr is the variable's value, or def when it is unset or blank.
func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

// envAddr is upstream's LAYA_HOST and LAYA_PORT as a listen address, over def.
// An IPv6 host may come bracketed ([::]) or bare (::).
func envAddr(def string) string {
	host, port, err := net.SplitHostPort(def)
	if err != nil {
		return def
	}
	return net.JoinHostPort(strings.Trim(envOr("LAYA_HOST", host), "[]"), envOr("LAYA_PORT", port))
}
