package serve

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/router"
)

// Models is what a Server answers with: one checkpoint (SingleModel) or the router over
// the three Laya checkpoints (RouterModels).
type Models interface {
	// load makes the models resident (preload); the server is ready once it returns nil.
	load(ctx context.Context, names []string) error
	// route picks the checkpoint of a request and says why.
	route(state laya.State, qs laya.Questions, opts router.RouteOptions) (router.Decision, error)
	// predictor returns the checkpoint key's model, loading it if needed, held for
	// the caller until release is called (a router then cannot close it under a
	// pass by evicting it).
	predictor(ctx context.Context, key string) (_ batchPredictor, release func(), _ error)
	// checkpoint maps a model or task name onto the checkpoint it names, or fails
	// with router.ErrUnknownModel listing the names this server knows.
	checkpoint(name string) (string, error)
	// loaded names the resident checkpoints.
	loaded() []string
	close() error
}

// batchPredictor answers several requests with shared forward passes; *laya.Agent is one.
type batchPredictor interface {
	PredictBatch(ctx context.Context, reqs []laya.Request) ([]laya.BatchAnswer, error)
}

// errNotLoaded reports a request that arrived before the model finished loading.
var errNotLoaded = errors.New("serve: the model is still loading")

// errLoad marks a checkpoint that failed to load (a router's fails with a
// *router.LoadError instead).
var errLoad = errors.New("serve: load model")

// isLoadError reports whether err is a checkpoint that failed to load: the request
// that needed it fails on its own, and the next one loads it again.
func isLoadError(err error) bool {
	var le *router.LoadError
	return errors.Is(err, errLoad) || errors.As(err, &le)
}

// single is one checkpoint loaded by Load.
type single struct {
	ref  string
	opts []laya.Option
	name string

	mu      sync.Mutex
	agent   *laya.Agent
	inUse   int        // passes holding agent
	lastUse time.Time  // when the last pass let go of it (or it loaded)
	loadMu  sync.Mutex // serialises lazy loads
	given   bool       // the caller's agent (AgentModel): never unloaded

	repos repoNames
}

// SingleModel serves one checkpoint (a directory or Hub id, loaded with opts). Its
// routing block names it, with the reason that it is the server's only checkpoint.
func SingleModel(ref string, opts ...laya.Option) Models {
	name := strings.TrimSuffix(filepath.Base(filepath.Clean(ref)), "/")
	return &single{ref: ref, opts: opts, name: name}
}

// AgentModel serves an Agent that is already loaded, under name.
func AgentModel(name string, agent *laya.Agent) Models {
	return &single{ref: agent.Dir(), name: name, agent: agent, given: true}
}

func (s *single) load(ctx context.Context, _ []string) error {
	s.mu.Lock()
	loaded := s.agent != nil
	s.mu.Unlock()
	if loaded {
		return nil
	}
	// Not under mu: /health and /ready read loaded() while a download runs.
	a, err := laya.Load(ctx, s.ref, s.opts...)
	if err != nil {
		return fmt.Errorf("%w %s: %w", errLoad, s.ref, err)
	}
	s.mu.Lock()
	s.agent, s.lastUse = a, time.Now()
	s.mu.Unlock()
	return nil
}

func (s *single) route(_ laya.State, qs laya.Questions, _ router.RouteOptions) (router.Decision, error) {
	return router.Decision{
		Model:    s.name,
		Repo:     s.repos.public(s.ref),
		Reason:   "the server's only checkpoint (--model)",
		Workflow: router.MatchTypedDecisionsWorkflow(qs),
	}, nil
}

// checkpoint accepts the router's built-in names, as a router would: the server's one
// checkpoint answers whichever a request names.
func (s *single) checkpoint(name string) (string, error) { return router.NormalizeModelName(name) }

// noRelease is the release of a model nothing evicts.
func noRelease() {}

func (s *single) predictor(ctx context.Context, _ string) (batchPredictor, func(), error) {
	if a, release := s.hold(); a != nil {
		return a, release, nil
	}
	// Lazy (LAYA_PRELOAD=0, or unloaded while idle): the first pass loads it. Only
	// the dispatchers call this, and a load they share is one load.
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if err := s.load(ctx, nil); err != nil {
		return nil, nil, err
	}
	if a, release := s.hold(); a != nil {
		return a, release, nil
	}
	return nil, nil, fmt.Errorf("%w %s: unloaded while loading", errLoad, s.ref)
}

// hold takes the resident agent for one pass, or returns nil.
func (s *single) hold() (*laya.Agent, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent == nil {
		return nil, nil
	}
	s.inUse++
	var once sync.Once
	return s.agent, func() {
		once.Do(func() {
			s.mu.Lock()
			s.inUse--
			s.lastUse = time.Now()
			s.mu.Unlock()
		})
	}
}

// unloadIdle closes the agent when no pass has used it for idle.
func (s *single) unloadIdle(idle time.Duration) []string {
	s.mu.Lock()
	a := s.agent
	if a == nil || s.given || s.inUse > 0 || time.Since(s.lastUse) < idle {
		s.mu.Unlock()
		return nil
	}
	s.agent = nil
	s.mu.Unlock()
	a.Close()
	return []string{s.name}
}

func (s *single) loaded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent == nil {
		return []string{}
	}
	return []string{s.name}
}

func (s *single) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent == nil {
		return nil
	}
	return s.agent.Close()
}

// routed is a router.Router: requests are routed as the library routes them, the chosen
// checkpoint is loaded on first use, and the least recently used one is evicted past the
// router's residency cap.
type routed struct {
	r *router.Router

	mu      sync.Mutex
	lastUse map[string]time.Time

	repos repoNames
}

// RouterModels serves through r (see router.New: WithModels, WithMaxLoaded,
// WithLoadOptions). Every answer carries its routing decision.
func RouterModels(r *router.Router) Models { return &routed{r: r} }

func (m *routed) load(ctx context.Context, names []string) error {
	if len(names) == 0 {
		for name := range m.r.Models() {
			names = append(names, name)
		}
	}
	// The residency cap decides how many stay; load the automatic routes first.
	order := map[string]int{router.ModelEnglish: 0, router.ModelMultilingual: 1, router.ModelTypedDecisions: 2}
	sortByRank(names, order)
	// --max-loaded is a hard cap: Router.Preload would raise it to hold every name.
	names = names[:min(len(names), m.r.MaxLoaded())]
	return m.r.Preload(ctx, names...)
}

func (m *routed) route(state laya.State, qs laya.Questions, opts router.RouteOptions) (router.Decision, error) {
	if opts.Model != "" {
		if _, err := m.r.NormalizeModel(opts.Model); err != nil {
			opts.Model = "" // an id such as "jev-1": the router chooses
		}
	}
	d, err := m.r.Route(state, qs, opts)
	d.Repo = m.repos.public(d.Repo)
	return d, err
}

func (m *routed) checkpoint(name string) (string, error) { return m.r.NormalizeModel(name) }

func (m *routed) predictor(ctx context.Context, key string) (batchPredictor, func(), error) {
	// Acquire, not Load: the router holds the model until release, so a request
	// for another checkpoint past the residency cap cannot evict and close it under
	// this pass (it is closed after the pass instead).
	p, acquired, err := m.r.Acquire(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		m.mu.Lock()
		if m.lastUse == nil {
			m.lastUse = map[string]time.Time{}
		}
		m.lastUse[key] = time.Now()
		m.mu.Unlock()
		acquired()
	}
	if bp, ok := p.(batchPredictor); ok {
		return bp, release, nil
	}
	return oneByOne{p}, release, nil
}

func (m *routed) loaded() []string { return m.r.Loaded() }

// unloadIdle unloads the checkpoints no pass has used for idle (one preloaded and
// never used counts from when it was first seen here); the router closes a model a
// pass still holds after that pass.
func (m *routed) unloadIdle(idle time.Duration) []string {
	now := time.Now()
	var idleKeys []string
	m.mu.Lock()
	if m.lastUse == nil {
		m.lastUse = map[string]time.Time{}
	}
	for _, key := range m.r.Loaded() {
		last, ok := m.lastUse[key]
		if !ok {
			m.lastUse[key] = now
			continue
		}
		if now.Sub(last) >= idle {
			idleKeys = append(idleKeys, key)
			delete(m.lastUse, key)
		}
	}
	m.mu.Unlock()
	if len(idleKeys) > 0 {
		m.r.Unload(idleKeys...)
	}
	return idleKeys
}

func (m *routed) close() error { return m.r.Unload(m.r.Loaded()...) }

// oneByOne adapts a Predictor without PredictBatch (a custom loader's).
type oneByOne struct{ p laya.Predictor }

func (o oneByOne) PredictBatch(ctx context.Context, reqs []laya.Request) ([]laya.BatchAnswer, error) {
	out := make([]laya.BatchAnswer, len(reqs))
	for i, r := range reqs {
		res, err := o.p.Predict(ctx, r.State, r.Questions)
		if err != nil && ctx.Err() != nil {
			return nil, err
		}
		out[i] = laya.BatchAnswer{Result: res, Err: err}
	}
	return out, nil
}

func sortByRank(names []string, rank map[string]int) {
	r := func(n string) int {
		if v, ok := rank[n]; ok {
			return v
		}
		return len(rank)
	}
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && (r(names[j]) < r(names[j-1]) || r(names[j]) == r(names[j-1]) && names[j] < names[j-1]); j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
}

// requestLang is the language a routed request is calibrated for, as laya-mlx's
// router.predict forwards it (and router.Router.Predict does): the caller's explicit
// language, else the non-English language detection named.
func requestLang(lang string, d router.Decision) string {
	if strings.TrimSpace(lang) != "" {
		return lang
	}
	if d.Detection != nil && d.Detection.Language != "en" {
		return d.Detection.Language
	}
	return ""
}
