package laya

import (
	"context"
	"errors"
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
	})
}
