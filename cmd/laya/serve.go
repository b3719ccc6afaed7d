package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/laya-metal/laya"
)

func init() {
	register("serve", command{
		summary: "answer requests over HTTP (POST /v1/predict) with one loaded checkpoint",
		run:     runServe,
	})
}

const serveUsage = `Usage: laya serve --model DIR|ORG/NAME [--addr :8642] [--max-inflight N] [--backend cpu]

Loads the checkpoint once and answers HTTP requests until interrupted:

  POST /v1/predict    body {"state": ..., "questions": {...}} (as laya predict --request)
  POST /v1/systemone  the same body and answer, under upstream laya-serve's path
  GET  /healthz       200 while the process runs
  GET  /ready         200 once the model is loaded

A request's answer is upstream Laya's JSON, byte for byte. A bad request gets
400 with {"error": "..."} naming the question and field; more than
--max-inflight requests at once get 503 (retry later) rather than a growing
queue; a client that disconnects cancels its request.

Example:
  $ laya serve --model testdata/oracle/checkpoints/real-en &
  $ curl -s localhost:8642/v1/predict -d @testdata/requests/email.json

Flags:
`

// maxRequestBytes bounds a request body: states are truncated to the model's
// context anyway, and a bound keeps one client from exhausting memory.
const maxRequestBytes = 8 << 20

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("serve", serveUsage, stderr)
	model := fs.String("model", "", "Laya checkpoint `DIR` or Hub id")
	addr := fs.String("addr", ":8642", "listen `address`")
	backend := fs.String("backend", "cpu", "compute `backend`")
	batchSize := fs.Int("batch-size", 16, "question rows per forward batch")
	maxInflight := fs.Int("max-inflight", 4, "requests computed at once; more get 503")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *model == "" {
		return errors.New("--model is required (see laya serve -h)")
	}
	if *maxInflight < 1 {
		return fmt.Errorf("--max-inflight %d, want ≥ 1", *maxInflight)
	}
	agent, err := laya.Load(ctx, *model, laya.WithBackend(*backend), laya.WithBatchSize(*batchSize),
		laya.WithHub(progressClient(stderr)))
	if err != nil {
		return err
	}
	defer agent.Close()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger := log.New(stderr, "laya serve: ", log.LstdFlags)
	srv := &http.Server{
		Handler:           newServeHandler(agent, *maxInflight, logger),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	logger.Printf("%s loaded; listening on %s", agent.Dir(), ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Finish what is in flight, then stop.
		shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	}
}

// predictor is what the handler needs of an Agent.
type predictor interface {
	PredictJSON(ctx context.Context, request []byte) (*laya.Result, error)
}

func newServeHandler(agent predictor, maxInflight int, logger *log.Logger) http.Handler {
	slots := make(chan struct{}, maxInflight)
	predict := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST with a JSON body")
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "busy: too many requests in flight, retry later")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("reading the body: %v", err))
			return
		}
		start := time.Now()
		res, err := agent.PredictJSON(r.Context(), body)
		switch {
		case errors.Is(err, laya.ErrInvalidRequest), errors.Is(err, laya.ErrInvalidQuestion), errors.Is(err, laya.ErrInvalidJSON):
			writeError(w, http.StatusBadRequest, err.Error())
			return
		case errors.Is(err, context.Canceled):
			return // the client left
		case err != nil:
			logger.Printf("%s %s: %v", r.Method, r.URL.Path, err)
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Server-Timing", fmt.Sprintf("predict;dur=%.2f", float64(time.Since(start).Microseconds())/1000))
		io.WriteString(w, res.String()+"\n")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/predict", predict)
	mux.HandleFunc("/v1/systemone", predict)
	ok := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /ready", ok) // the model is loaded before the listener opens
	return mux
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
