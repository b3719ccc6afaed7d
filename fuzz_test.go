package laya

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

var (
	fuzzAgentOnce sync.Once
	fuzzAgent     *Agent
	fuzzAgentErr  error
)

// FuzzPredictJSON feeds arbitrary request bytes through the whole pipeline
// (parsing, validation, serialisation, tokenization, forward, decoding) of the
// tiny-en checkpoint: no input may panic, a rejected request must say why
// through one of the package's sentinels, and an accepted one must marshal.
func FuzzPredictJSON(f *testing.F) {
	for _, seed := range []string{
		`{"state": "x", "questions": {"q": {"type": "noul", "instructions": "Is it?"}}}`,
		`{"state": {"a": [1, 2.5e-7, null, true]}, "questions": {"c": {"type": "choice", "instructions": {"x": 1}, "criteria": ["a", "b", "[MASK]"]}}}`,
		`{"state": [{"role": "user", "content": "hi"}], "questions": {"s": {"type": "score", "instructions": "", "criteria": [{"level": 0}, "high"]}}}`,
		`{"state": "", "questions": {}}`,
		`{"state": "x", "questions": {"n": {"type": "noul", "instructions": "x", "labels": {"false": "no", "true": "yes"}, "criteria": {"TRUE": "y"}}}}`,
		`{"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": {}}}}`,
		`{"state": "` + strings.Repeat("long state ", 200) + `", "questions": {"q": {"type": "noul", "instructions": "x"}}}`,
		`{"state": "x", "questions": {"c": {"type": "choice", "instructions": "x", "criteria": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", 1, 1.0, true]}}}`,
		`[]`, `{"state": 1e400}`, `{"state": "\ud800", "questions": {"q": 3}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, request []byte) {
		fuzzAgentOnce.Do(func() { fuzzAgent, fuzzAgentErr = Load(context.Background(), checkpointDir("tiny-en")) })
		if fuzzAgentErr != nil {
			t.Fatal(fuzzAgentErr)
		}
		res, err := fuzzAgent.PredictJSON(context.Background(), request)
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) && !errors.Is(err, ErrInvalidQuestion) && !errors.Is(err, ErrInvalidJSON) && !errors.Is(err, ErrNonFinite) {
				t.Fatalf("%q: error without a sentinel: %v", request, err)
			}
			return
		}
		if _, err := res.MarshalJSON(); err != nil {
			t.Fatalf("%q: marshal: %v", request, err)
		}
		// What Predict accepts, the long and tournament calls accept too.
		req, _ := ParseRequest(request)
		long, err := fuzzAgent.PredictLong(context.Background(), req, LongOptions{MaxWindows: 3})
		if err == nil {
			_, err = long.MarshalJSON()
		}
		if err != nil && !errors.Is(err, ErrNonFinite) {
			t.Fatalf("%q: PredictLong: %v", request, err)
		}
		tour, err := fuzzAgent.PredictTournament(context.Background(), req)
		if err == nil {
			_, err = tour.MarshalJSON()
		}
		if err != nil && !errors.Is(err, ErrNonFinite) {
			t.Fatalf("%q: PredictTournament: %v", request, err)
		}
	})
}
