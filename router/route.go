package router

import (
	"fmt"
	"strings"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/lang"
	"github.com/laya-metal/laya/pyjson"
)

// The router sends each request to the Laya checkpoint suited to it, after
// upstream's laya/router.py (NandhaKishorM/laya@cc61b5fd; laya-spec §4.4).
// The English checkpoint collapses on text it cannot read (near-random on
// Hindi or Korean, with high confidence), so script is the primary signal and
// Latin-script language the secondary one. typed-decisions is fine-tuned on
// four synthetic workflows and is never chosen unless asked for.

// englishFromCode reads a language code as a caller has it to hand ("en",
// "EN", "en-US", "en_US", "en_US.UTF-8"): 1 English, 0 not English, -1 no
// usable code, which lets a hint abstain. Codes that are valid but name no
// language abstain too (upstream router.py): C, POSIX and C.UTF-8, what
// minimal images set $LANG to, and ISO 639-2's und (undetermined), zxx (no
// linguistic content) and mul (several languages).
func englishFromCode(code string) int {
	c := strings.ToLower(strings.TrimSpace(code))
	c, _, _ = strings.Cut(c, ".")
	primary, _, _ := strings.Cut(strings.ReplaceAll(c, "_", "-"), "-")
	switch primary {
	case "", "c", "posix", "und", "zxx", "mul":
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
		key, err := r.NormalizeModel(opts.Model)
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
		key, err := r.NormalizeModel(task)
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
	case !det.IsEnglish && det.MixedSegment != "":
		key = ModelMultilingual
		seg := []rune(det.MixedSegment) // at most 4000 characters
		seg = seg[:min(len(seg), 60)]
		reason = "Latin script, mostly English, but a line or field reads as " + pyjson.StrRepr(det.Language) +
			" (" + pyjson.StrRepr(string(seg)) + "); the English checkpoint cannot read it"
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
