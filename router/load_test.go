package router

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/hub"
)

// A model that cannot load is an error for the request that needed it, never a
// panic, and the router keeps answering: the default loader's failure (a missing
// directory, an offline Hub with an empty cache) and a custom loader that returns a
// typed nil model with its error.
func TestRouterFailedLoadIsAnError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	offline := laya.WithHub(&hub.Client{Endpoint: "http://127.0.0.1:1", CacheDir: t.TempDir(), Offline: true})
	var typedNil *laya.Agent
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("Is this a question?")}}
	for _, tc := range []struct {
		name   string
		opts   []Option
		route  RouteOptions
		model  string
		target error // the cause the error wraps, when there is a sentinel for it
		cause  string
	}{
		{"missing dir", []Option{WithModels(map[string]string{"english": missing})},
			RouteOptions{Model: "english"}, ModelEnglish, nil, "does-not-exist"},
		{"offline hub", []Option{WithLoadOptions(offline)},
			RouteOptions{Model: "multilingual"}, ModelMultilingual, hub.ErrOffline, "offline"},
		{"typed nil from a loader", []Option{WithLoader(func(context.Context, string, string) (laya.Predictor, error) {
			return typedNil, errors.New("no weights")
		})}, RouteOptions{}, ModelEnglish, nil, "no weights"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRouter(t, tc.opts...)
			for range 2 { // the second request retries the load: a failure is not cached
				res, err := r.Predict(context.Background(), laya.Text("Where is my parcel?"), qs, tc.route)
				if err == nil || res != nil {
					t.Fatalf("Predict = %v, %v; want the load error", res, err)
				}
				var le *LoadError
				if !errors.As(err, &le) || le.Model != tc.model {
					t.Errorf("error %v is not a *LoadError for %s", err, tc.model)
				}
				if !strings.Contains(err.Error(), tc.model) || !strings.Contains(err.Error(), tc.cause) {
					t.Errorf("error %q does not name the model %s and the cause %q", err, tc.model, tc.cause)
				}
				if tc.target != nil && !errors.Is(err, tc.target) {
					t.Errorf("error %v does not wrap %v", err, tc.target)
				}
			}
			if _, err := r.Load(context.Background(), tc.model); err == nil {
				t.Error("Load succeeded after the failed loads")
			}
			if err := r.Preload(context.Background(), tc.model); err == nil {
				t.Error("Preload succeeded after the failed loads")
			}
			if loaded := r.Loaded(); len(loaded) != 0 {
				t.Errorf("a failed load stays resident: %v", loaded)
			}
			if err := r.Unload(); err != nil {
				t.Errorf("Unload after failed loads: %v", err)
			}
		})
	}
}
