package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/laya-metal/laya"
)

// Loader builds the predictor for a model; ref is the model's entry in
// the router's model table.
type Loader func(ctx context.Context, name, ref string) (laya.Predictor, error)

// Option configures New.
type Option func(*Router) error

// WithModels overrides model references by name or alias, e.g.
// WithModels(MLXModels()) or {"english": "/models/laya-en"}; a name that is no
// built-in adds a model of the caller's own, as WithModel does.
func WithModels(models map[string]string) Option {
	return func(r *Router) error {
		for name, ref := range models {
			if err := WithModel(name, ref)(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// WithStandaloneRepos uses StandaloneModels instead of the bundle repository.
// Apply it before WithModels.
func WithStandaloneRepos() Option {
	return func(r *Router) error {
		r.models = StandaloneModels()
		return nil
	}
}

// WithMaxLoaded caps how many models stay resident (default 2, at least 1);
// the least recently used is evicted. Automatic routing only chooses between
// english and multilingual, so 2 avoids reloading on every script switch.
func WithMaxLoaded(n int) Option {
	return func(r *Router) error {
		r.maxLoaded = max(1, n)
		return nil
	}
}

// WithDefaultModel sets the model for states whose language nothing
// identifies (default english): a built-in, or a model added by an option
// before or after this one.
func WithDefaultModel(name string) Option {
	return func(r *Router) error {
		r.defaultModel = name
		return nil
	}
}

// WithAutoTaskDetection routes requests whose question ids are exactly a
// typed-decisions workflow to typed-decisions.
func WithAutoTaskDetection() Option {
	return func(r *Router) error {
		r.autoTask = true
		return nil
	}
}

// WithLangGuess installs a language hint for every request, consulted
// after an explicit Lang and a per-request LangGuess.
func WithLangGuess(g LangGuess) Option {
	return func(r *Router) error {
		r.langGuess = g
		return nil
	}
}

// WithLoader replaces how models are built (default: Load with the options
// of WithLoadOptions). Tests and servers with their own cache use it.
func WithLoader(l Loader) Option {
	return func(r *Router) error {
		if l == nil {
			return errors.New("router: WithLoader(nil); pass a loader function")
		}
		r.loader = l
		return nil
	}
}

// WithLoadOptions passes options to laya.Load for every model the default
// loader builds: a backend, a batch size, and laya.WithHub for how Hub
// references resolve (token, cache, offline, progress).
func WithLoadOptions(opts ...laya.Option) Option {
	return func(r *Router) error {
		r.loadOpts = append(r.loadOpts, opts...)
		return nil
	}
}

// Router loads Laya checkpoints lazily and sends each request to the right
// one. It is safe for concurrent use: a mutex guards the model table and LRU
// order, inference runs outside it, and concurrent first requests for one
// model share a single load. An evicted model that implements io.Closer is
// closed once no request is using it any more.
type Router struct {
	mu           sync.Mutex
	models       map[string]string
	maxLoaded    int
	defaultModel string
	autoTask     bool
	langGuess    LangGuess
	loader       Loader
	loadOpts     []laya.Option
	entries      map[string]*routerEntry
	order        []string // least recently used first
}

// New returns a router over DefaultModels with max 2 resident models.
func New(opts ...Option) (*Router, error) {
	r := &Router{
		models:       DefaultModels(),
		maxLoaded:    2,
		defaultModel: ModelEnglish,
		entries:      map[string]*routerEntry{},
	}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	key, err := r.normalizeLocked(r.defaultModel)
	if err != nil {
		return nil, fmt.Errorf("router: default model: %w", err)
	}
	r.defaultModel = key
	if r.loader == nil {
		r.loader = func(ctx context.Context, name, ref string) (laya.Predictor, error) {
			a, err := laya.Load(ctx, ref, r.loadOpts...)
			if err != nil {
				// Not a nil *Agent in the interface: it would compare non-nil.
				return nil, err
			}
			return a, nil
		}
	}
	return r, nil
}

// Models returns the model table: canonical name → reference, the built-ins
// and the models added with WithModel, WithModels or Register.
func (r *Router) Models() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.models))
	for k, v := range r.models {
		out[k] = v
	}
	return out
}

// MaxLoaded returns the current residency cap (Attach and Preload raise it).
func (r *Router) MaxLoaded() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxLoaded
}

// Predict routes the request, loads the chosen model if needed and answers
// every question on it in one pass.
func (r *Router) Predict(ctx context.Context, state laya.State, questions laya.Questions, opts RouteOptions) (*Result, error) {
	return r.run(ctx, state, questions, opts, func(model laya.Predictor, req laya.Request) (*laya.Result, error) {
		if lp, ok := model.(langPredictor); ok {
			return lp.PredictRequest(ctx, req)
		}
		return model.Predict(ctx, state, questions)
	})
}

// ErrUnsupported reports a model that cannot answer the way asked (a custom
// loader's predictor without PredictLong or PredictTournament).
var ErrUnsupported = errors.New("router: the model does not support this")

// PredictLong is Predict with laya.Agent.PredictLong on the chosen model: a
// state longer than a row is read in windows. Detection reads the state's
// first 4000 characters, as it does for Predict.
func (r *Router) PredictLong(ctx context.Context, state laya.State, questions laya.Questions, opts RouteOptions, long laya.LongOptions) (*Result, error) {
	return r.run(ctx, state, questions, opts, func(model laya.Predictor, req laya.Request) (*laya.Result, error) {
		lp, ok := model.(interface {
			PredictLong(context.Context, laya.Request, laya.LongOptions) (*laya.Result, error)
		})
		if !ok {
			return nil, fmt.Errorf("%w: %T has no PredictLong", ErrUnsupported, model)
		}
		return lp.PredictLong(ctx, req, long)
	})
}

// PredictTournament is Predict with laya.Agent.PredictTournament on the chosen
// model: a choice of more than 16 labels is played in groups.
func (r *Router) PredictTournament(ctx context.Context, state laya.State, questions laya.Questions, opts RouteOptions) (*Result, error) {
	return r.run(ctx, state, questions, opts, func(model laya.Predictor, req laya.Request) (*laya.Result, error) {
		tp, ok := model.(interface {
			PredictTournament(context.Context, laya.Request) (*laya.Result, error)
		})
		if !ok {
			return nil, fmt.Errorf("%w: %T has no PredictTournament", ErrUnsupported, model)
		}
		return tp.PredictTournament(ctx, req)
	})
}

// run routes a request, holds the chosen model while answer runs on it, and
// attaches the decision to the result.
func (r *Router) run(ctx context.Context, state laya.State, questions laya.Questions, opts RouteOptions,
	answer func(laya.Predictor, laya.Request) (*laya.Result, error)) (*Result, error) {
	decision, err := r.Route(state, questions, opts)
	if err != nil {
		return nil, err
	}
	model, release, err := r.acquire(ctx, decision.Model)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := answer(model, laya.Request{State: state, Questions: questions, Lang: requestLang(opts, decision)})
	if err != nil {
		return nil, err
	}
	return &Result{Result: res, Routing: decision}, nil
}

// langPredictor is a laya.Predictor that calibrates per language (an *Agent).
type langPredictor interface {
	PredictRequest(ctx context.Context, req laya.Request) (*laya.Result, error)
}

// requestLang is the language a routed request is calibrated for, as laya-mlx's
// router.predict forwards it: the caller's explicit language, else the non-English
// language detection named. A detected "en" selects nothing: only an explicit "en" can
// pick an English override.
func requestLang(opts RouteOptions, decision Decision) string {
	if strings.TrimSpace(opts.Lang) != "" {
		return opts.Lang
	}
	if d := decision.Detection; d != nil && d.Language != "en" {
		return d.Language
	}
	return ""
}
