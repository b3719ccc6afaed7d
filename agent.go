package laya

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/hub"
	"github.com/laya-metal/laya/tokenizer"
	"github.com/laya-metal/laya/weights"
)

// ErrNotCheckpoint reports a path that is not a Laya checkpoint directory.
var ErrNotCheckpoint = errors.New("laya: not a Laya checkpoint")

// ErrClosed reports use of an Agent after Close.
var ErrClosed = errors.New("laya: agent is closed")

// Option configures Load.
type Option func(*loadConfig) error

type loadConfig struct {
	batchSize int
	backend   string
	instance  backend.Backend
	hub       *hub.Client // nil: hub.NewClient()
}

// WithBatchSize sets how many question rows run in one forward batch. By default the
// backend chooses (backend.BatchSizer): on the cuda backend up to 64 rows, fewer where they
// would pass 8,192 tokens; elsewhere 16. Batching changes speed and memory, never answers
// beyond float rounding. WithBatchSize(0) leaves it to the backend, as not passing it does.
func WithBatchSize(n int) Option {
	return func(c *loadConfig) error {
		if n < 0 {
			return fmt.Errorf("laya: batch size %d, want ≥ 1 (0: the backend's)", n)
		}
		c.batchSize = n
		return nil
	}
}

// WithBackend picks the compute backend by name. The default, "auto", is "metal" on
// Apple Silicon when the GPU opens and passes its self-test, else "cpu", with the reason
// in Warnings. A named backend is that backend or an error: WithBackend("metal") never
// falls back to the CPU.
func WithBackend(name string) Option {
	return func(c *loadConfig) error {
		if name == "" {
			return errors.New("laya: empty backend name")
		}
		c.backend = name
		return nil
	}
}

// WithBackendInstance runs the agent on a backend the caller opened (a
// device it shares between agents, one it reads device time from, an
// implementation it did not register) instead of one opened by name.
// The caller keeps ownership: Agent.Close does not close be, so the
// checkpoint's weights uploaded to it are released only when be is closed,
// which must come after Agent.Close.
func WithBackendInstance(be backend.Backend) Option {
	return func(c *loadConfig) error {
		if be == nil {
			return errors.New("laya: WithBackendInstance(nil); pass an opened backend")
		}
		c.instance = be
		return nil
	}
}

// Agent answers questions with one loaded Laya checkpoint. It is safe for concurrent use
// if its backend is (the cpu and metal backends are); Close may be called while requests
// run, and waits for them.
type Agent struct {
	dir      string
	ckpt     *weights.Checkpoint
	warnings []string
	backend  string      // the backend's name (Backend)
	setup    DeviceSetup // what Load prepared on the device
	tok      *tokenizer.Tokenizer
	builder  sequenceBuilder
	temps    heads.Temperatures
	// langTemps are the checkpoint's per-language overrides, by LangKey.
	langTemps map[string]heads.Temperatures
	net       *network
	auto      *backend.AutoChoice // what "auto" chose (AutoChoice); nil for a named backend

	// mu guards closed. inflight counts the calls using net (see acquire): Close
	// waits for them, since releasing the backend, or unmapping weights a GPU
	// backend reads in place, under a running forward pass is a use after free.
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

// Predictor answers questions about a state: *Agent is one. PredictShortlist
// and package router run requests on any Predictor, so tests and servers can
// stand in their own.
type Predictor interface {
	Predict(ctx context.Context, state State, questions Questions) (*Result, error)
}

// Load opens a Laya checkpoint: rl_agent_config.json, model.safetensors, encoder/config.json
// and tokenizer/ under one directory. pathOrRepo is that directory, or a Hub id such as
// "convaiinnovations/laya/multilingual@main" (see WithHub): files come from the Hugging
// Face cache, and are downloaded into it only when missing.
func Load(ctx context.Context, pathOrRepo string, opts ...Option) (*Agent, error) {
	cfg := loadConfig{backend: backend.Auto}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := resolveCheckpoint(ctx, pathOrRepo, cfg)
	if err != nil {
		return nil, err
	}
	ckpt, err := weights.LoadCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("laya: %w", err)
	}
	tok, sp, err := tokenizer.LoadDir(filepath.Join(dir, "tokenizer"))
	if err != nil {
		ckpt.Close()
		return nil, fmt.Errorf("laya: %s: %w", dir, err)
	}
	if err := ctx.Err(); err != nil {
		ckpt.Close()
		return nil, err
	}
	net, err := newNetwork(ckpt, networkOptions{Backend: cfg.backend, Instance: cfg.instance, BatchSize: cfg.batchSize, PadID: sp.PAD})
	if err != nil {
		ckpt.Close()
		return nil, err
	}
	a := &Agent{dir: dir, ckpt: ckpt, warnings: ckpt.Agent.Warnings, tok: tok, net: net, backend: net.be.Name(), auto: net.auto}
	if prebuildPipelines != nil {
		n, took, err := prebuildPipelines(ctx, net.be, ckpt, net.batchSize)
		if err != nil {
			net.close()
			ckpt.Close()
			return nil, fmt.Errorf("laya: %s: preparing the %s backend: %w", dir, net.be.Name(), err)
		}
		a.setup = DeviceSetup{Pipelines: n, Took: took}
	}
	if net.auto != nil && net.auto.Fallback() {
		a.warnings = append(slices.Clip(a.warnings), "backend "+net.auto.String())
	}
	a.builder = sequenceBuilder{
		enc:        tok,
		short:      newEncodeCache(tok),
		prefixes:   newPrefixCache(),
		sp:         specialTokens{CLS: sp.CLS, SEP: sp.SEP, MASK: sp.MASK, MaskToken: sp.MaskToken},
		maxLen:     ckpt.Agent.MaxLen,
		headMaxLen: ckpt.Agent.HeadMaxLen,
	}
	a.temps = heads.Temperatures{ByType: ckpt.Agent.Temperature, ByOptions: ckpt.Agent.TemperatureByOptions}
	for lang, lt := range ckpt.Agent.LangTemperatures {
		if a.langTemps == nil {
			a.langTemps = map[string]heads.Temperatures{}
		}
		a.langTemps[lang] = heads.Temperatures{ByType: lt.Temperature, ByOptions: lt.TemperatureByOptions}
	}
	return a, nil
}

// resolveCheckpoint turns what the caller passed to Load into a local checkpoint
// directory: a local path as it is, a Hub id (org/name[/subfolder][@revision]) through
// the Hugging Face cache, downloading only on first use.
func resolveCheckpoint(ctx context.Context, ref string, cfg loadConfig) (string, error) {
	if isHubReference(ref) {
		dir, err := resolveHub(ctx, ref, cfg.hub)
		if err != nil {
			// A mistyped local path has the org/name shape too: say both readings.
			return "", fmt.Errorf("%w (no local directory %q exists either; write ./%s for a local path)", err, ref, ref)
		}
		return dir, nil
	}
	info, err := os.Stat(ref)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: %s does not exist", ErrNotCheckpoint, ref)
	case err != nil:
		return "", fmt.Errorf("laya: %w", err)
	case !info.IsDir():
		return "", fmt.Errorf("%w: %s is a file; give the checkpoint directory", ErrNotCheckpoint, ref)
	}
	if _, err := os.Stat(filepath.Join(ref, "rl_agent_config.json")); err != nil {
		return "", fmt.Errorf("%w: %s has no rl_agent_config.json", ErrNotCheckpoint, ref)
	}
	return ref, nil
}

// Dir returns the checkpoint directory the agent was loaded from.
func (a *Agent) Dir() string { return a.dir }

// DeviceSetup is what Load prepared on a GPU backend before the first request.
type DeviceSetup struct {
	// Pipelines is how many kernel pipelines (kernel and function-constant variants)
	// were built: those the checkpoint's forward passes dispatch.
	Pipelines int
	// Took is the time that took, planning included.
	Took time.Duration
}

// prebuildPipelines builds the pipelines a GPU backend will dispatch for ckpt (set on
// darwin/arm64, where package gpu is linked); nil elsewhere.
var prebuildPipelines func(ctx context.Context, be backend.Backend, ckpt *weights.Checkpoint, batchSize int) (int, time.Duration, error)

// DeviceSetup reports what Load prepared on the device: zero on the cpu backend.
func (a *Agent) DeviceSetup() DeviceSetup { return a.setup }

// Backend returns the name of the backend the agent runs on: the one
// "auto" chose, or the one named by WithBackend or WithBackendInstance.
func (a *Agent) Backend() string { return a.backend }

// AutoChoice says what the default backend, "auto", chose and which better
// backend it passed over and why (AutoChoice.Fallback); ok is false when the
// backend was named (WithBackend, WithBackendInstance). Warnings holds the
// same note as text, for people; this is for programs.
func (a *Agent) AutoChoice() (choice backend.AutoChoice, ok bool) {
	if a.auto == nil {
		return backend.AutoChoice{}, false
	}
	return *a.auto, true
}

// Warnings returns the load warnings upstream would print (temperatures it clamped)
// and, when the backend was "auto" and a better one was passed over, one line saying
// which backend runs and why ("backend auto: cpu (metal refused: …)").
func (a *Agent) Warnings() []string {
	return append([]string(nil), a.warnings...)
}

// acquire returns the network for one call and the function that ends the call;
// ErrClosed once Close has begun.
func (a *Agent) acquire() (*network, func(), error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.net == nil {
		return nil, nil, ErrClosed
	}
	a.inflight.Add(1)
	return a.net, a.inflight.Done, nil
}

// Close releases the backend's memory and the checkpoint's mapped weights. Calls that
// are running finish first (cancel their contexts to end them sooner); calls made
// after Close return ErrClosed. Closing again does nothing.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	a.inflight.Wait()
	var errs []error
	if a.net != nil {
		errs = append(errs, a.net.close())
	}
	if a.ckpt != nil {
		errs = append(errs, a.ckpt.Close())
	}
	return errors.Join(errs...)
}
