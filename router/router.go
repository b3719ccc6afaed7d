package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/lang"
	"github.com/laya-metal/laya/pyjson"
)

// The router sends each request to the Laya checkpoint suited to it, after
// laya-mlx's laya_mlx/router.py (tncki/laya-mlx@457bb780; laya-spec §4.4).
// The English checkpoint collapses on text it cannot read (near-random on
// Hindi or Korean, with high confidence), so script is the primary signal and
// Latin-script language the secondary one. typed-decisions is fine-tuned on
// four synthetic workflows and is never chosen unless asked for.

// Canonical model names.
const (
	ModelEnglish        = "english"
	ModelMultilingual   = "multilingual"
	ModelTypedDecisions = "typed-decisions"
)

// BundleRepo bundles all three checkpoints; only the chosen subfolder is downloaded.
const BundleRepo = "convaiinnovations/laya"

// ErrUnknownModel reports a model name that is neither a model nor an alias.
var ErrUnknownModel = errors.New("router: unknown model")

// DefaultModels are the three checkpoints in the bundle repository, as
// references Load accepts (repo or repo/subfolder).
func DefaultModels() map[string]string {
	return map[string]string{
		ModelEnglish:        BundleRepo,
		ModelMultilingual:   BundleRepo + "/multilingual",
		ModelTypedDecisions: BundleRepo + "/typed-decisions",
	}
}

// StandaloneModels are the same checkpoints in their own repositories.
func StandaloneModels() map[string]string {
	return map[string]string{
		ModelEnglish:        "convaiinnovations/laya",
		ModelMultilingual:   "convaiinnovations/laya-multilingual",
		ModelTypedDecisions: "convaiinnovations/laya-typed-decisions",
	}
}

// MLXModels are laya-mlx's FP16 conversions (MLX parameter names, which Load reads too).
func MLXModels() map[string]string {
	return map[string]string{
		ModelEnglish:        "aac6fef/laya-mlx",
		ModelMultilingual:   "aac6fef/laya-multilingual-mlx",
		ModelTypedDecisions: "aac6fef/laya-typed-decisions-mlx",
	}
}

var modelAliases = map[string]string{
	"en":                   ModelEnglish,
	"laya":                 ModelEnglish,
	"default":              ModelEnglish,
	"multi":                ModelMultilingual,
	"ml":                   ModelMultilingual,
	"laya-multilingual":    ModelMultilingual,
	"typed":                ModelTypedDecisions,
	"typed_decisions":      ModelTypedDecisions,
	"laya-typed-decisions": ModelTypedDecisions,
	"decisions":            ModelTypedDecisions,
}

// NormalizeModelName maps a model name or alias (any case) to its canonical
// name, or fails with ErrUnknownModel listing the choices.
func NormalizeModelName(name string) (string, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if canon, ok := modelAliases[key]; ok {
		key = canon
	}
	switch key {
	case ModelEnglish, ModelMultilingual, ModelTypedDecisions:
		return key, nil
	}
	aliases := make([]string, 0, len(modelAliases))
	for a := range modelAliases {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	return "", fmt.Errorf("%w %q; choose one of [english multilingual typed-decisions] (or an alias: %s)",
		ErrUnknownModel, name, strings.Join(aliases, ", "))
}

// typedDecisionWorkflows are the question-id sets of the four workflows
// typed-decisions was fine-tuned on. Matching needs the exact set, so an
// unrelated schema that happens to contain "urgency" is never captured.
var typedDecisionWorkflows = []struct {
	name string
	ids  []string
}{
	{"agent_trace_observability", []string{"action", "needs_review", "outcome", "risk", "urgency"}},
	{"customer_service", []string{"action", "category", "churn_risk", "needs_human", "urgency"}},
	{"invoice_processing", []string{"discrepancy_severity", "disposition", "duplicate", "matches_order", "urgency"}},
	{"security_incidents", []string{"credential_compromise", "disposition", "severity", "true_positive", "urgency"}},
}

// MatchTypedDecisionsWorkflow names the typed-decisions workflow whose exact
// question-id set these questions have, or returns "".
func MatchTypedDecisionsWorkflow(questions laya.Questions) string {
	ids := map[string]bool{}
	for _, q := range questions {
		ids[q.ID] = true
	}
	for _, wf := range typedDecisionWorkflows {
		if len(ids) != len(wf.ids) {
			continue
		}
		all := true
		for _, id := range wf.ids {
			all = all && ids[id]
		}
		if all {
			return wf.name
		}
	}
	return ""
}

// englishFromCode reads a language code as a caller has it to hand ("en",
// "EN", "en-US", "en_US", "en_US.UTF-8"): 1 English, 0 not English, -1 no
// usable code (blank), which lets a hint abstain.
func englishFromCode(code string) int {
	c := strings.ToLower(strings.TrimSpace(code))
	c, _, _ = strings.Cut(c, ".")
	primary, _, _ := strings.Cut(strings.ReplaceAll(c, "_", "-"), "-")
	switch primary {
	case "":
		return -1
	case "en", "eng", "english":
		return 1
	}
	return 0
}

// LangGuess returns a language code for a state, or "" to abstain. It is the
// seam for a real language-identification model.
type LangGuess func(laya.State) string

// RouteOptions are the per-request routing inputs, in precedence order:
// Model > Task > detected workflow (opt-in) > Lang > LangGuess >
// the Router's LangGuess > detection > default.
type RouteOptions struct {
	Model     string    // a model name or alias
	Task      string    // "typed_decisions"/"typed-decisions", or a model name
	Lang      string    // a language code; blank falls through
	LangGuess LangGuess // a per-request hint; "" falls through
}

// Decision says which model a request goes to and why.
type Decision struct {
	Model     string         // canonical model name
	Repo      string         // the reference that model is loaded from
	Reason    string         // laya-mlx's wording
	Detection *lang.Analysis // set when built-in detection decided
	Workflow  string         // the matched typed-decisions workflow, or ""
}

// Value is the decision as laya-mlx writes result["routing"].
func (d Decision) Value() laya.Value {
	detection, workflow := pyjson.Null(), pyjson.Null()
	if d.Detection != nil {
		detection = analysisValue(*d.Detection)
	}
	if d.Workflow != "" {
		workflow = pyjson.String(d.Workflow)
	}
	return pyjson.Object(
		pyjson.Member{Key: "model", Value: pyjson.String(d.Model)},
		pyjson.Member{Key: "repo", Value: pyjson.String(d.Repo)},
		pyjson.Member{Key: "reason", Value: pyjson.String(d.Reason)},
		pyjson.Member{Key: "detection", Value: detection},
		pyjson.Member{Key: "workflow", Value: workflow},
	)
}

// MarshalJSON writes Value in Python's json.dumps form.
func (d Decision) MarshalJSON() ([]byte, error) { return d.Value().MarshalJSON() }

func analysisValue(a lang.Analysis) laya.Value {
	profile := make([]pyjson.Member, len(a.Profile))
	for i, s := range a.Profile {
		profile[i] = pyjson.Member{Key: s.Script, Value: pyjson.Float(s.Fraction)}
	}
	language := pyjson.Null()
	if a.Language != "" {
		language = pyjson.String(a.Language)
	}
	return pyjson.Object(
		pyjson.Member{Key: "script", Value: pyjson.String(a.Script)},
		pyjson.Member{Key: "script_profile", Value: pyjson.Object(profile...)},
		pyjson.Member{Key: "language", Value: language},
		pyjson.Member{Key: "is_english", Value: pyjson.Bool(a.IsEnglish)},
		pyjson.Member{Key: "language_undecided", Value: pyjson.Bool(a.LanguageUndecided)},
		pyjson.Member{Key: "diacritic_rate", Value: pyjson.Float(a.DiacriticRate)},
		pyjson.Member{Key: "non_latin_fraction", Value: pyjson.Float(a.NonLatinFraction)},
	)
}

// Loader builds the predictor for a model; ref is the model's entry in
// the router's model table.
type Loader func(ctx context.Context, name, ref string) (laya.Predictor, error)

// Option configures New.
type Option func(*Router) error

// WithModels overrides model references by name or alias, e.g.
// WithModels(MLXModels()) or {"english": "/models/laya-en"}.
func WithModels(models map[string]string) Option {
	return func(r *Router) error {
		for name, ref := range models {
			key, err := NormalizeModelName(name)
			if err != nil {
				return err
			}
			r.models[key] = ref
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
// identifies (default english).
func WithDefaultModel(name string) Option {
	return func(r *Router) error {
		key, err := NormalizeModelName(name)
		r.defaultModel = key
		return err
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

type routerEntry struct {
	ready   chan struct{} // closed when the load finished
	model   laya.Predictor
	err     error
	refs    int  // requests using model
	evicted bool // close model when refs drops to 0
	// loaderGone: the load failed because the context of the request that ran
	// it ended. Requests that were waiting for it load again with their own.
	loaderGone bool
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

// Models returns the model table: canonical name → reference.
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

// Loaded returns the resident models, least recently used first.
func (r *Router) Loaded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order...)
}

// touch marks key most recently used. Callers hold mu.
func (r *Router) touch(key string) {
	r.removeOrder(key)
	r.order = append(r.order, key)
}

func (r *Router) removeOrder(key string) {
	for i, k := range r.order {
		if k == key {
			r.order = append(r.order[:i], r.order[i+1:]...)
			return
		}
	}
}

// evict drops least recently used models beyond maxLoaded. Callers hold mu.
func (r *Router) evict() []io.Closer {
	var closers []io.Closer
	for len(r.order) > r.maxLoaded {
		victim := r.order[0]
		r.order = r.order[1:]
		if c := r.drop(victim); c != nil {
			closers = append(closers, c)
		}
	}
	return closers
}

// drop removes key from the table and returns its model to close now, if it
// is loaded and unused. Callers hold mu.
func (r *Router) drop(key string) io.Closer {
	e := r.entries[key]
	delete(r.entries, key)
	if e == nil {
		return nil
	}
	e.evicted = true
	select {
	case <-e.ready:
		if c, ok := e.model.(io.Closer); ok && e.refs == 0 {
			return c
		}
	default: // still loading: the loader's caller releases it
	}
	return nil
}

// sameModel reports whether a loaded entry holds model (compared only when
// the dynamic type allows ==, so an uncomparable predictor never panics).
func sameModel(e *routerEntry, model laya.Predictor) bool {
	select {
	case <-e.ready:
	default:
		return false
	}
	if e.model == nil || reflect.TypeOf(e.model) != reflect.TypeOf(model) || !reflect.TypeOf(model).Comparable() {
		return false
	}
	return e.model == model
}

// isNil reports whether p holds no model: a nil interface, or a nil pointer
// (or other nil-able value) in one.
func isNil(p laya.Predictor) bool {
	if p == nil {
		return true
	}
	switch v := reflect.ValueOf(p); v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// LoadError reports a model that failed to load. The request that needed it
// fails with it, and the next request for the model loads it again.
type LoadError struct {
	Model string // canonical model name
	Ref   string // the reference it was loaded from
	Err   error  // the cause
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("router: load model %s (%s): %v", e.Model, e.Ref, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

func closeAll(cs []io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}

// acquire returns the model for name, loading it if needed, and a release
// function the caller must call when done with it.
func (r *Router) acquire(ctx context.Context, name string) (laya.Predictor, func(), error) {
	key, err := NormalizeModelName(name)
	if err != nil {
		return nil, nil, err
	}
	for {
		model, release, retry, err := r.tryAcquire(ctx, key)
		if !retry {
			return model, release, err
		}
	}
}

// tryAcquire is one attempt of acquire; retry reports a shared load that failed
// only because another request's context ended, which ctx may redo.
func (r *Router) tryAcquire(ctx context.Context, key string) (_ laya.Predictor, _ func(), retry bool, _ error) {
	r.mu.Lock()
	e, ok := r.entries[key]
	if ok {
		r.touch(key)
		e.refs++
		r.mu.Unlock()
	} else {
		e = &routerEntry{ready: make(chan struct{}), refs: 1}
		r.entries[key] = e
		r.touch(key)
		ref := r.models[key]
		closers := r.evict()
		r.mu.Unlock()
		closeAll(closers)
		e.model, e.err = r.loader(ctx, key, ref)
		if isNil(e.model) {
			// A typed nil (a nil *Agent returned as a Predictor) is no model either.
			e.model = nil
			if e.err == nil {
				e.err = errors.New("the loader returned no model")
			}
		}
		if e.err != nil {
			// A loader that failed half way and returned a model anyway: nobody
			// else will ever close it.
			if c, ok := e.model.(io.Closer); ok {
				c.Close()
			}
			e.model = nil
			e.loaderGone = ctx.Err() != nil
			e.err = &LoadError{Model: key, Ref: ref, Err: e.err}
			r.mu.Lock()
			if r.entries[key] == e {
				delete(r.entries, key)
				r.removeOrder(key)
			}
			r.mu.Unlock()
		}
		close(e.ready)
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		r.release(e)
		return nil, nil, false, ctx.Err()
	}
	if e.err != nil {
		r.release(e)
		return nil, nil, e.loaderGone && ctx.Err() == nil, e.err
	}
	return e.model, sync.OnceFunc(func() { r.release(e) }), false, nil
}

func (r *Router) release(e *routerEntry) {
	r.mu.Lock()
	e.refs--
	var c io.Closer
	if e.evicted && e.refs == 0 && e.err == nil {
		select {
		case <-e.ready:
			c, _ = e.model.(io.Closer)
		default:
		}
	}
	r.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// Acquire returns the model for name (or alias), building it on first use, and
// holds it for the caller until release is called (once is enough; later calls do
// nothing): a load of another model past the residency cap may evict it meanwhile,
// but closes it only after the last holder released it. It is what Router.Predict
// does around each request, for callers that run the model themselves (laya serve's
// batched passes). Every successful Acquire must be released, or an evicted model
// is never closed.
func (r *Router) Acquire(ctx context.Context, name string) (model laya.Predictor, release func(), err error) {
	return r.acquire(ctx, name)
}

// Load returns the model for name (or alias), building it on first use. It is meant
// for warming up: the router does not hold the model for the caller, so a later load
// of another model may evict and close it (an Agent then answers ErrClosed). Use
// Router.Predict or Router.Acquire to answer requests.
func (r *Router) Load(ctx context.Context, name string) (laya.Predictor, error) {
	m, release, err := r.acquire(ctx, name)
	if err != nil {
		return nil, err
	}
	release()
	return m, nil
}

// Attach registers an already-built model under name instead of loading a
// second copy, raising the residency cap so it evicts nothing.
func (r *Router) Attach(name string, model laya.Predictor) error {
	key, err := NormalizeModelName(name)
	if err != nil {
		return err
	}
	if isNil(model) {
		return fmt.Errorf("router: Attach(%q, nil); pass a loaded model", name)
	}
	e := &routerEntry{ready: make(chan struct{}), model: model}
	close(e.ready)
	r.mu.Lock()
	var old io.Closer
	if prev := r.entries[key]; prev == nil || !sameModel(prev, model) {
		old = r.drop(key)
	} else {
		e = prev // attaching the resident model again changes nothing
	}
	r.entries[key] = e
	r.touch(key)
	r.maxLoaded = max(r.maxLoaded, len(r.entries))
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Preload builds models up front so no request pays a load; with no names it
// loads every model. The residency cap is raised to hold them together with
// the models already resident.
func (r *Router) Preload(ctx context.Context, names ...string) error {
	r.mu.Lock()
	if len(names) == 0 {
		for k := range r.models {
			names = append(names, k)
		}
		sort.Strings(names)
	}
	r.mu.Unlock()
	keys := make([]string, len(names))
	for i, n := range names {
		k, err := NormalizeModelName(n)
		if err != nil {
			return err
		}
		keys[i] = k
	}
	r.mu.Lock()
	union := map[string]bool{}
	for _, k := range keys {
		union[k] = true
	}
	for k := range r.entries {
		union[k] = true
	}
	r.maxLoaded = max(r.maxLoaded, len(union))
	r.mu.Unlock()
	for _, k := range keys {
		if _, err := r.Load(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// Unload frees the named models, or all of them with no names.
func (r *Router) Unload(names ...string) error {
	r.mu.Lock()
	var closers []io.Closer
	if len(names) == 0 {
		for k := range r.entries {
			if c := r.drop(k); c != nil {
				closers = append(closers, c)
			}
		}
		r.order = nil
	}
	for _, n := range names {
		key, err := NormalizeModelName(n)
		if err != nil {
			r.mu.Unlock()
			closeAll(closers)
			return err
		}
		if c := r.drop(key); c != nil {
			closers = append(closers, c)
		}
		r.removeOrder(key)
	}
	r.mu.Unlock()
	closeAll(closers)
	return nil
}

func (r *Router) decision(key, reason string, det *lang.Analysis, workflow string) Decision {
	r.mu.Lock()
	repo := r.models[key]
	r.mu.Unlock()
	return Decision{Model: key, Repo: repo, Reason: reason, Detection: det, Workflow: workflow}
}

// Route decides which model answers a request, without loading or running
// anything. The only error is an unknown model name in opts.
func (r *Router) Route(state laya.State, questions laya.Questions, opts RouteOptions) (Decision, error) {
	if opts.Model != "" {
		key, err := NormalizeModelName(opts.Model)
		if err != nil {
			return Decision{}, err
		}
		return r.decision(key, "explicit model="+pyjson.StrRepr(opts.Model), nil, ""), nil
	}
	if opts.Task != "" {
		task := opts.Task
		if strings.ReplaceAll(strings.ToLower(task), "-", "_") == "typed_decisions" {
			task = ModelTypedDecisions
		}
		key, err := NormalizeModelName(task)
		if err != nil {
			return Decision{}, fmt.Errorf("task %q: %w", opts.Task, err)
		}
		return r.decision(key, "explicit task="+pyjson.StrRepr(opts.Task), nil, ""), nil
	}
	workflow := MatchTypedDecisionsWorkflow(questions)
	if workflow != "" && r.autoTask {
		return r.decision(ModelTypedDecisions, "question ids match the "+pyjson.StrRepr(workflow)+" typed-decisions workflow", nil, workflow), nil
	}
	// A blank lang names nothing and falls through, as an abstaining hint does.
	if en := englishFromCode(opts.Lang); en >= 0 {
		return r.decision(englishOrMulti(en), "explicit lang="+pyjson.StrRepr(opts.Lang), nil, workflow), nil
	}
	for _, hint := range []struct {
		source string
		guess  LangGuess
	}{{"lang_guess", opts.LangGuess}, {"Router(lang_guess=...)", r.langGuess}} {
		if hint.guess == nil {
			continue
		}
		if en := englishFromCode(hint.guess(state)); en >= 0 {
			what := "non-English"
			if en == 1 {
				what = "English"
			}
			return r.decision(englishOrMulti(en), hint.source+": the caller identified this as "+what+" text", nil, workflow), nil
		}
	}
	det := lang.Analyze(state.Value())
	var key, reason string
	switch {
	case det.Script == lang.Unknown:
		key = r.defaultModel
		reason = fmt.Sprintf("no letters detected in state; using default (%s)", key)
	case det.Script != lang.Latin:
		key = ModelMultilingual
		reason = fmt.Sprintf("non-Latin script (%s, %.0f%% of letters); the English checkpoint cannot read it", det.Script, 100*det.NonLatinFraction)
	case !det.IsEnglish && det.Language != "":
		key = ModelMultilingual
		reason = "Latin script but language looks like " + pyjson.StrRepr(det.Language) + ", not English"
	case !det.IsEnglish:
		// No stopword list covers it: routed on the non-English letters alone.
		key = ModelMultilingual
		reason = fmt.Sprintf("Latin script, language not identified but %.0f%% non-English letters; not safe for the English checkpoint", 100*det.DiacriticRate)
	case det.LanguageUndecided:
		// Too short, or content words only: no evidence of English either.
		key = r.defaultModel
		reason = fmt.Sprintf("Latin script, language not identified and no non-English letters; using default (%s)", key)
	default:
		key, reason = ModelEnglish, "English Latin text"
	}
	return r.decision(key, reason, &det, workflow), nil
}

func englishOrMulti(en int) string {
	if en == 1 {
		return ModelEnglish
	}
	return ModelMultilingual
}

// Result is a model's answer together with the routing decision; its
// JSON is the result's with "routing" added last, as laya-mlx returns it.
type Result struct {
	*laya.Result
	Routing Decision
}

// Value returns the result JSON with the "routing" member.
func (r *Result) Value() laya.Value {
	v := r.Result.Value()
	return pyjson.Object(append(append([]pyjson.Member(nil), v.Members()...), pyjson.Member{Key: "routing", Value: r.Routing.Value()})...)
}

// MarshalJSON writes Value in Python's json.dumps form.
func (r *Result) MarshalJSON() ([]byte, error) { return r.Value().MarshalJSON() }

// String is the JSON text.
func (r *Result) String() string { return r.Value().String() }

// Predict routes the request, loads the chosen model if needed and answers
// every question on it in one pass.
func (r *Router) Predict(ctx context.Context, state laya.State, questions laya.Questions, opts RouteOptions) (*Result, error) {
	decision, err := r.Route(state, questions, opts)
	if err != nil {
		return nil, err
	}
	model, release, err := r.acquire(ctx, decision.Model)
	if err != nil {
		return nil, err
	}
	defer release()
	var res *laya.Result
	if lp, ok := model.(langPredictor); ok {
		res, err = lp.PredictWith(ctx, state, questions, laya.PredictOptions{Lang: requestLang(opts, decision)})
	} else {
		res, err = model.Predict(ctx, state, questions)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Result: res, Routing: decision}, nil
}

// langPredictor is a laya.Predictor that calibrates per language (an *Agent).
type langPredictor interface {
	PredictWith(ctx context.Context, state laya.State, questions laya.Questions, opts laya.PredictOptions) (*laya.Result, error)
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
