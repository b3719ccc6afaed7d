package router

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

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
	key := canonicalName(name)
	switch key {
	case ModelEnglish, ModelMultilingual, ModelTypedDecisions:
		return key, nil
	}
	return "", fmt.Errorf("%w %q; choose one of [english multilingual typed-decisions] (or an alias: %s)",
		ErrUnknownModel, name, aliasList())
}

// canonicalName is name in the model table's spelling: trimmed, lower-cased, an
// alias replaced by its model.
func canonicalName(name string) string {
	key := strings.ToLower(strings.TrimSpace(name))
	if canon, ok := modelAliases[key]; ok {
		return canon
	}
	return key
}

// aliasList is the aliases, sorted, as an unknown-model error lists them.
func aliasList() string {
	return strings.Join(slices.Sorted(maps.Keys(modelAliases)), ", ")
}

// ErrBuiltinModel reports an attempt to unregister one of the three built-in
// models (register it again to point it at another checkpoint).
var ErrBuiltinModel = errors.New("router: built-in model")

// modelKey is the table key of a name given to WithModel, WithModels or
// Register: a built-in name or alias selects that model; any other name is a
// model of the caller's own, lower-cased, of letters, digits, '.', '_' and '-'.
func modelKey(name string) (string, error) {
	key := canonicalName(name) // an alias's model passes the rule below
	if key == "" || len(key) > 64 || strings.IndexFunc(key, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}) >= 0 {
		return "", fmt.Errorf("router: model name %q: want 1 to 64 letters, digits, '.', '_' or '-'", name)
	}
	return key, nil
}

// NormalizeModel maps a model name or alias (any case) to the canonical name
// of a model this router knows: a built-in, or one added with WithModel,
// WithModels or Register. It fails with ErrUnknownModel listing the choices.
func (r *Router) NormalizeModel(name string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.normalizeLocked(name)
}

// normalizeLocked is NormalizeModel; callers hold mu.
func (r *Router) normalizeLocked(name string) (string, error) {
	key := canonicalName(name)
	if _, ok := r.models[key]; ok {
		return key, nil
	}
	return "", fmt.Errorf("%w %q; choose one of %v (or an alias: %s)",
		ErrUnknownModel, name, slices.Sorted(maps.Keys(r.models)), aliasList())
}

// WithModel adds a model of the caller's own under name, or points a built-in
// name at another checkpoint (upstream #937). source is what laya.Load takes:
// a Hub id ("org/name", "org/name/sub@rev") or a local checkpoint directory.
// The model is loaded on first use, evicted and unloaded like the built-ins,
// and listed by Models. Automatic routing never chooses it: a request names
// it with RouteOptions.Model (or Task).
func WithModel(name, source string) Option {
	return func(r *Router) error {
		key, err := modelKey(name)
		if err != nil {
			return err
		}
		if strings.TrimSpace(source) == "" {
			return fmt.Errorf("router: WithModel(%q, \"\"): give a Hub id or a checkpoint directory", name)
		}
		r.models[key] = source
		return nil
	}
}

// Register is WithModel on a running router. Registering a name again with
// another source unloads the model loaded from the old one (once the requests
// using it finish), so the next request loads the new source.
func (r *Router) Register(name, source string) error {
	key, err := modelKey(name)
	if err != nil {
		return err
	}
	if strings.TrimSpace(source) == "" {
		return fmt.Errorf("router: Register(%q, \"\"): give a Hub id or a checkpoint directory", name)
	}
	r.mu.Lock()
	old, had := r.models[key]
	r.models[key] = source
	var c io.Closer
	if had && old != source {
		c = r.drop(key)
		r.removeOrder(key)
	}
	r.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return nil
}

// Unregister removes a model added with WithModel or Register, unloading it
// once the requests using it finish. The built-in models cannot be removed
// (ErrBuiltinModel), nor the router's default model.
func (r *Router) Unregister(name string) error {
	r.mu.Lock()
	key, err := r.normalizeLocked(name)
	switch {
	case err != nil:
	case key == ModelEnglish || key == ModelMultilingual || key == ModelTypedDecisions:
		err = fmt.Errorf("%w %q cannot be unregistered; Register it with another source instead", ErrBuiltinModel, key)
	case key == r.defaultModel:
		err = fmt.Errorf("router: %q is the default model (WithDefaultModel); it cannot be unregistered", key)
	}
	if err != nil {
		r.mu.Unlock()
		return err
	}
	delete(r.models, key)
	c := r.drop(key)
	r.removeOrder(key)
	r.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return nil
}
