package router

import (
	"errors"
	"fmt"
	"sort"
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
