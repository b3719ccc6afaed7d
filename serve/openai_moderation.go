package serve

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/preset"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

func moderationThresholdFromEnv(getenv func(string) string, dst *float64) error {
	raw := strings.TrimSpace(getenv("LAYA_MODERATION_THRESHOLD"))
	if raw == "" {
		return nil
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
		return fmt.Errorf("%w: LAYA_MODERATION_THRESHOLD must be a number from 0 to 1, got %q", ErrConfig, raw)
	}
	*dst = v
	return nil
}

// handleModerations is POST /v1/moderations: the moderation preset over each input, in
// OpenAI's results shape (upstream moderation_payload). Its categories are the preset's
// questions; a score (severity) is put on 0..1 by its level count before it meets the
// threshold, as upstream does.
func (s *Server) handleModerations(w http.ResponseWriter, r *http.Request) {
	raw, ok := s.readAuthorized(w, r)
	if !ok {
		return
	}
	body, e := parseObject(raw)
	if e != nil {
		s.fail(w, "", e)
		return
	}
	input, _ := body.Get("input")
	var texts []string
	switch input.Kind() {
	case pyjson.StringKind:
		texts = []string{input.Str()}
	case pyjson.ArrayKind:
		for _, it := range input.Items() {
			if it.Kind() != pyjson.StringKind {
				texts = nil
				break
			}
			texts = append(texts, it.Str())
		}
	}
	if len(texts) == 0 {
		s.fail(w, "", badRequest("'input' must be a string or a list of strings"))
		return
	}
	if len(texts) > s.cfg.Limits.BatchStates {
		s.fail(w, "", errorf(413, "too many inputs (%d > %d)", len(texts), s.cfg.Limits.BatchStates))
		return
	}
	model := ""
	if m, ok := body.Get("model"); ok && m.Kind() == pyjson.StringKind {
		model = m.Str()
	}
	qs := preset.ModerationQuestions()
	ds := make([]decision, len(texts))
	for i, text := range texts {
		// The preset's questions read the field `post`.
		state, e := parseState(pyjson.Object(member("post", pyjson.String(text))), true, s.cfg.Limits)
		if e != nil {
			s.fail(w, "", e)
			return
		}
		if ds[i], e = s.routeDecision(state, qs, router.RouteOptions{Model: resolveModel(model)}); e != nil {
			s.fail(w, "", e)
			return
		}
	}
	results, e := s.runAdmitted(w, r, ds)
	if e != nil {
		s.fail(w, ds[0].routing.Model, e)
		return
	}
	rows := make([]pyjson.Value, len(results))
	for i, res := range results {
		rows[i] = moderationRow(res.answer.Result, s.cfg.ModerationThreshold)
	}
	name := model
	if name == "" {
		name = "laya"
	}
	s.answer(w, results, compact(pyjson.Object(
		member("id", pyjson.String(newID("modr-"))),
		member("model", pyjson.String(name)),
		member("results", pyjson.Array(rows...)),
	)))
}

func moderationRow(res *laya.Result, threshold float64) pyjson.Value {
	var cats, scores []pyjson.Member
	flagged := false
	for _, id := range res.QuestionIDs() {
		var value float64
		if n, err := res.Noul(id); err == nil {
			value = n.Noul
		} else if sc, err := res.Score(id); err == nil {
			value = sc.Score
			if levels := len(sc.Probabilities); levels > 1 {
				value /= float64(levels - 1)
			}
		} else {
			continue
		}
		hit := value >= threshold
		flagged = flagged || hit
		cats = append(cats, member(id, pyjson.Bool(hit)))
		scores = append(scores, member(id, pyjson.Float(heads.Round4(value))))
	}
	return pyjson.Object(
		member("flagged", pyjson.Bool(flagged)),
		member("categories", pyjson.Object(cats...)),
		member("category_scores", pyjson.Object(scores...)),
	)
}

// modelIDs are the names /v1/models lists: the router's model table, or the one
// checkpoint's name.
func (s *Server) modelIDs() []string {
	switch m := s.models.(type) {
	case *routed:
		names := make([]string, 0)
		for name := range m.r.Models() {
			names = append(names, name)
		}
		sort.Strings(names)
		return names
	case *single:
		return []string{m.name}
	}
	return s.models.loaded()
}

func modelObject(id string) pyjson.Value {
	return pyjson.Object(member("id", pyjson.String(id)), member("object", pyjson.String("model")),
		member("created", pyjson.Int(0)), member("owned_by", pyjson.String("laya")))
}

// handleModels is GET /v1/models and GET /v1/models/{id}.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, errorf(401, "invalid or missing bearer token"))
		return
	}
	ids := s.modelIDs()
	if id, one := strings.CutPrefix(r.URL.Path, "/v1/models/"); one {
		for _, name := range ids {
			if name == id {
				writeJSON(w, http.StatusOK, compact(modelObject(name)))
				return
			}
		}
		writeError(w, errorf(404, "model %s not found", pyjson.StrRepr(id)))
		return
	}
	data := make([]pyjson.Value, len(ids))
	for i, id := range ids {
		data[i] = modelObject(id)
	}
	writeJSON(w, http.StatusOK, compact(pyjson.Object(member("object", pyjson.String("list")), member("data", pyjson.Array(data...)))))
}
