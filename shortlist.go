package laya

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/laya-metal/laya/pyjson"
)

// Embedding shortlist for high-cardinality choice questions, after laya-mlx's
// laya_mlx/shortlist.py (tncki/laya-mlx@457bb780; laya-spec §4.6). Choice
// options share one head_max_len budget, so many labels leave few tokens
// each; ranking them by embedding similarity first and asking the model about
// the top k keeps every option readable (the coarse-to-fine pattern of
// upstream issue #102).

// DefaultShortlistK is laya-mlx's DEFAULT_SHORTLIST_K.
const DefaultShortlistK = 20

// ErrInvalidShortlist reports a bad k or an embedder whose output does not
// have one vector per text.
var ErrInvalidShortlist = errors.New("laya: invalid shortlist request")

// Embedder maps texts to vectors, one per text, all of one dimension.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedderFunc adapts a function to Embedder.
type EmbedderFunc func(ctx context.Context, texts []string) ([][]float32, error)

// Embed calls f.
func (f EmbedderFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f(ctx, texts)
}

// ShortlistEntry records what happened to one choice question.
type ShortlistEntry struct {
	QuestionID  string
	Labels      []Value   // kept labels in rank order (all labels, in order, when passed through)
	Scores      []float64 // cosine similarity of each kept label; nil when passed through
	K, N        int       // the cut and the number of labels the question had
	Passthrough bool      // N <= K: nothing was dropped and the embedder was not called
}

// ShortlistResult is the model's answer plus the shortlist record; its JSON
// is the result's with "shortlist" added last, as laya-mlx returns it.
type ShortlistResult struct {
	*Result
	Shortlist []ShortlistEntry
}

// Value returns the result JSON with the "shortlist" member.
func (r *ShortlistResult) Value() Value {
	entries := make([]pyjson.Member, len(r.Shortlist))
	for i, e := range r.Shortlist {
		scores := pyjson.Null()
		if !e.Passthrough {
			items := make([]Value, len(e.Scores))
			for j, s := range e.Scores {
				items[j] = pyjson.Float(s)
			}
			scores = pyjson.Array(items...)
		}
		entries[i] = pyjson.Member{Key: e.QuestionID, Value: pyjson.Object(
			pyjson.Member{Key: "labels", Value: pyjson.Array(e.Labels...)},
			pyjson.Member{Key: "scores", Value: scores},
			pyjson.Member{Key: "k", Value: pyjson.Int(int64(e.K))},
			pyjson.Member{Key: "n", Value: pyjson.Int(int64(e.N))},
			pyjson.Member{Key: "passthrough", Value: pyjson.Bool(e.Passthrough)},
		)}
	}
	v := r.Result.Value()
	return pyjson.Object(append(append([]pyjson.Member(nil), v.Members()...), pyjson.Member{Key: "shortlist", Value: pyjson.Object(entries...)})...)
}

// MarshalJSON writes Value in Python's json.dumps form.
func (r *ShortlistResult) MarshalJSON() ([]byte, error) { return r.Value().MarshalJSON() }

// String is the JSON text.
func (r *ShortlistResult) String() string { return r.Value().String() }

// PredictShortlist keeps the k labels of every choice question with more
// than k labels that are most similar to the request, then answers all
// questions in one Predict call. The embedder is called once per shortlisted
// question with the query first ("instructions\nstate", or the state alone)
// and then each option as the model reads it. Ties keep the earlier label; a
// zero vector scores 0. Other questions pass through unchanged, and the
// caller's questions are not modified. Probabilities of a shortlisted
// question are over the kept labels only.
func PredictShortlist(ctx context.Context, model Predictor, state State, questions Questions, embed Embedder, k int) (*ShortlistResult, error) {
	if k < 1 {
		return nil, fmt.Errorf("%w: k must be a positive integer, got %d; use e.g. %d", ErrInvalidShortlist, k, DefaultShortlistK)
	}
	if model == nil || embed == nil {
		return nil, fmt.Errorf("%w: PredictShortlist needs a model and an embedder", ErrInvalidShortlist)
	}
	reduced := make(Questions, len(questions))
	var meta []ShortlistEntry
	for i, q := range questions {
		reduced[i] = q
		typ, _ := q.Definition.Get("type")
		if q.Definition.Kind() != pyjson.ObjectKind || typ.Kind() != pyjson.StringKind || typ.Str() != "choice" {
			continue
		}
		if err := checkQuestion(q.ID, q.Definition); err != nil {
			return nil, err
		}
		internal := toInternal(q.ID, q.Definition)
		entry := ShortlistEntry{QuestionID: q.ID, K: k, N: len(internal.labels)}
		if k >= entry.N {
			entry.Labels, entry.Passthrough = internal.labels, true
			meta = append(meta, entry)
			continue
		}
		ins, _ := q.Definition.Get("instructions")
		texts := append([]string{shortlistQuery(state, ins)}, internal.options...)
		vectors, err := embed.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("laya: shortlist question %s: embedder: %w", pyjson.StrRepr(q.ID), err)
		}
		if err := checkEmbeddings(vectors, len(texts)); err != nil {
			return nil, fmt.Errorf("question %s: %w", pyjson.StrRepr(q.ID), err)
		}
		sims := cosineScores(vectors[0], vectors[1:])
		order := make([]int, len(sims))
		for j := range order {
			order[j] = j
		}
		sort.SliceStable(order, func(a, b int) bool { return sims[order[a]] > sims[order[b]] })
		order = order[:k]
		for _, j := range order {
			entry.Labels = append(entry.Labels, internal.labels[j])
			entry.Scores = append(entry.Scores, sims[j])
		}
		meta = append(meta, entry)
		reduced[i] = Question{ID: q.ID, Definition: subsetCriteria(q.Definition, order)}
	}
	res, err := model.Predict(ctx, state, reduced)
	if err != nil {
		return nil, err
	}
	return &ShortlistResult{Result: res, Shortlist: meta}, nil
}

// shortlistQuery is laya-mlx's _query_text: instructions (json.dumps when not
// a string), a newline, and the serialized state; the state alone when the
// instructions are missing or empty.
func shortlistQuery(state State, ins Value) string {
	body := state.Serialize()
	switch {
	case ins.Kind() == pyjson.NullKind, ins.Kind() == pyjson.StringKind && ins.Str() == "":
		return body
	case ins.Kind() == pyjson.StringKind:
		return ins.Str() + "\n" + body
	}
	return pyjson.Dumps(ins) + "\n" + body
}

func checkEmbeddings(vectors [][]float32, n int) error {
	if len(vectors) != n {
		return fmt.Errorf("%w: the embedder returned %d vectors for %d texts; it must return one vector per text, query first",
			ErrInvalidShortlist, len(vectors), n)
	}
	dim := len(vectors[0])
	if dim < 1 {
		return fmt.Errorf("%w: the embedder returned empty vectors; it must return (%d, dim) with dim >= 1", ErrInvalidShortlist, n)
	}
	for i, v := range vectors {
		if len(v) != dim {
			return fmt.Errorf("%w: embedder vector %d has %d dimensions but vector 0 has %d; all must have one size",
				ErrInvalidShortlist, i, len(v), dim)
		}
	}
	return nil
}

// cosineScores computes cosine similarity in float64 with non-finite
// components read as 0 and zero vectors scoring 0, clipped to [-1, 1].
func cosineScores(query []float32, docs [][]float32) []float64 {
	finite := func(x float32) float64 {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0
		}
		return f
	}
	var qn float64
	for _, x := range query {
		qn += finite(x) * finite(x)
	}
	qn = math.Sqrt(qn)
	sims := make([]float64, len(docs))
	if qn == 0 {
		return sims
	}
	for i, d := range docs {
		var dot, dn float64
		for j, x := range d {
			dot += finite(x) * finite(query[j])
			dn += finite(x) * finite(x)
		}
		if denom := math.Sqrt(dn) * qn; denom > 0 {
			sims[i] = max(-1, min(1, dot/denom))
		}
	}
	return sims
}

// subsetCriteria keeps the labels at positions order (in that order): dict
// criteria keep their descriptions, list criteria become the kept labels.
func subsetCriteria(def Value, order []int) Value {
	var members []pyjson.Member
	for _, m := range def.Members() {
		if m.Key != "criteria" {
			members = append(members, m)
			continue
		}
		if m.Value.Kind() == pyjson.ArrayKind {
			// Positions index the de-duplicated labels, as toInternal lists them.
			labels := toInternal("", def).labels
			items := make([]Value, len(order))
			for i, j := range order {
				items[i] = labels[j]
			}
			members = append(members, pyjson.Member{Key: "criteria", Value: pyjson.Array(items...)})
			continue
		}
		crit := m.Value.Members()
		kept := make([]pyjson.Member, len(order))
		for i, j := range order {
			kept[i] = crit[j]
		}
		members = append(members, pyjson.Member{Key: "criteria", Value: pyjson.Object(kept...)})
	}
	return pyjson.Object(members...)
}

// AgentEmbedder returns the embedder of laya-mlx's embed_fn_from_agent: each
// text is tokenized with the checkpoint's special tokens ([CLS] … [SEP]), cut
// to maxLength tokens keeping the final [SEP], run through the agent's own
// encoder, and mean-pooled over its tokens (never over padding). maxLength
// ≤ 0 means 512 (also capped at the encoder's max_position_embeddings);
// batchSize ≤ 0 means 32.
func AgentEmbedder(a *Agent, maxLength, batchSize int) Embedder {
	if maxLength <= 0 {
		maxLength = 512
	}
	if batchSize <= 0 {
		batchSize = 32
	}
	return EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		net, done, err := a.acquire()
		if err != nil {
			return nil, err
		}
		defer done()
		limit := min(maxLength, net.maxLen)
		rows := make([][]int, len(texts))
		for i, text := range texts {
			ids := a.tok.EncodeWithSpecial(text)
			if len(ids) > limit {
				// Hugging Face truncation cuts the text, not the template's
				// closing token.
				ids = append(ids[:limit-1:limit-1], ids[len(ids)-1])
			}
			rows[i] = ids
		}
		return net.embed(ctx, rows, batchSize)
	})
}
