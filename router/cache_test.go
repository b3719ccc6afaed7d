package router

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/hub"
)

func TestRouterLRU(t *testing.T) {
	ctx := context.Background()
	fl := newFakeLoader()
	r := mustRouter(t, WithLoader(fl.load))
	for _, n := range []string{"english", "multi", "english", "typed"} {
		if _, err := r.Load(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := r.Loaded(), []string{"english", "typed-decisions"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Loaded = %v, want %v", got, want)
	}
	if !fl.models["multilingual"].closed.Load() {
		t.Error("evicted multilingual model was not closed")
	}
	if fl.models["english"].closed.Load() {
		t.Error("resident english model was closed")
	}
	if _, err := r.Load(ctx, "multilingual"); err != nil {
		t.Fatal(err)
	}
	if fl.loads["multilingual"] != 2 || fl.loads["english"] != 1 {
		t.Errorf("loads = %v, want multilingual twice and english once", fl.loads)
	}

	// Attach raises the cap instead of evicting.
	own := &fakeModel{name: "mine"}
	if err := r.Attach("english", own); err != nil {
		t.Fatal(err)
	}
	if err := r.Attach("laya-multilingual", &fakeModel{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Attach("typed", &fakeModel{}); err != nil {
		t.Fatal(err)
	}
	if r.MaxLoaded() != 3 || len(r.Loaded()) != 3 {
		t.Errorf("after attaching three: max %d loaded %v", r.MaxLoaded(), r.Loaded())
	}
	if m, _ := r.Load(ctx, "en"); m != laya.Predictor(own) {
		t.Error("Load after Attach did not return the attached model")
	}
	if err := r.Unload("english"); err != nil {
		t.Fatal(err)
	}
	if !own.closed.Load() {
		t.Error("Unload did not close the model")
	}
	if err := r.Unload(); err != nil || len(r.Loaded()) != 0 {
		t.Errorf("Unload() left %v (err %v)", r.Loaded(), err)
	}
	if err := r.Unload("nope"); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("Unload(nope) = %v", err)
	}
}

func TestRouterPreload(t *testing.T) {
	ctx := context.Background()
	fl := newFakeLoader()
	r := mustRouter(t, WithLoader(fl.load), WithMaxLoaded(1))
	if err := r.Preload(ctx, "english", "multilingual"); err != nil {
		t.Fatal(err)
	}
	if r.MaxLoaded() != 2 || len(r.Loaded()) != 2 {
		t.Errorf("Preload of 2 with cap 1: max %d loaded %v", r.MaxLoaded(), r.Loaded())
	}
	if err := r.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.Loaded()) != 3 || fl.loads["english"] != 1 {
		t.Errorf("Preload() loaded %v with loads %v", r.Loaded(), fl.loads)
	}
	if err := r.Preload(ctx, "bogus"); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("Preload(bogus) = %v", err)
	}
}

// A model that fails to preload does not keep the others out, and the error names it.
func TestRouterPreloadPartialFailure(t *testing.T) {
	fl := newFakeLoader()
	fl.fail["english"] = errors.New("disk full")
	r := mustRouter(t, WithLoader(fl.load))
	err := r.Preload(context.Background(), "english", "multilingual", "typed-decisions")
	var le *LoadError
	if !errors.As(err, &le) || le.Model != ModelEnglish || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Preload = %v, want english's *LoadError", err)
	}
	if got := r.Loaded(); !reflect.DeepEqual(got, []string{ModelMultilingual, ModelTypedDecisions}) {
		t.Errorf("loaded %v, want the two models that could load", got)
	}
}

func TestRouterLoadFailure(t *testing.T) {
	fl := newFakeLoader()
	fl.fail["multilingual"] = errors.New("disk full")
	r := mustRouter(t, WithLoader(fl.load))
	_, err := r.Predict(context.Background(), laya.Text("Где мой заказ?"), laya.Questions{{ID: "q", Definition: laya.NoulQuestion("ok?")}}, RouteOptions{})
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "multilingual") {
		t.Fatalf("err = %v, want the load error naming the model", err)
	}
	if len(r.Loaded()) != 0 {
		t.Errorf("a failed load stays resident: %v", r.Loaded())
	}
	delete(fl.fail, "multilingual")
	if _, err := r.Load(context.Background(), "multilingual"); err != nil {
		t.Errorf("retry after a failed load: %v", err)
	}
}

// A model evicted while a request runs on it is closed only after the request ends.
func TestRouterEvictionWaitsForInference(t *testing.T) {
	ctx := context.Background()
	fl := newFakeLoader()
	r := mustRouter(t, WithLoader(fl.load), WithMaxLoaded(1))
	busy := &fakeModel{block: make(chan struct{})}
	if err := r.Attach("english", busy); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := r.Predict(ctx, laya.Text("please refund the order"), laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}, RouteOptions{Model: "english"})
		done <- err
	}()
	for busy.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := r.Load(ctx, "multilingual"); err != nil { // evicts english (cap 1)
		t.Fatal(err)
	}
	if busy.closed.Load() {
		t.Fatal("model closed while a request was running on it")
	}
	close(busy.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !busy.closed.Load() {
		t.Error("evicted model not closed after its last request")
	}
}

// A model held by Acquire survives its eviction until released (the second
// release does nothing), and a model acquired by alias is the same entry.
func TestRouterAcquireHoldsTheModel(t *testing.T) {
	ctx := context.Background()
	r := mustRouter(t, WithLoader(newFakeLoader().load), WithMaxLoaded(1))
	held := &fakeModel{name: "english"}
	if err := r.Attach("english", held); err != nil {
		t.Fatal(err)
	}
	m, release, err := r.Acquire(ctx, "english")
	if err != nil {
		t.Fatal(err)
	}
	if m != laya.Predictor(held) {
		t.Fatalf("Acquire returned %v, want the attached model", m)
	}
	if _, err := r.Load(ctx, "multilingual"); err != nil { // evicts english (cap 1)
		t.Fatal(err)
	}
	if held.closed.Load() {
		t.Fatal("an acquired model was closed before its release")
	}
	if _, err := m.Predict(ctx, laya.Text("x"), laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}); err != nil {
		t.Fatalf("predict on the held model after its eviction: %v", err)
	}
	release()
	if !held.closed.Load() {
		t.Error("the evicted model was not closed at its release")
	}
	release() // idempotent: must not drive the count below zero
	if _, _, err := r.Acquire(ctx, "no-such-model"); err == nil {
		t.Error("Acquire of an unknown model: no error")
	}
}

// A request waiting for a model that another request is loading must not fail
// because the loading request's context ended: it loads the model itself.
func TestRouterSharedLoadCancelled(t *testing.T) {
	var loads atomic.Int32
	firstLoading := make(chan struct{})
	loader := func(ctx context.Context, name, ref string) (laya.Predictor, error) {
		if loads.Add(1) == 1 {
			close(firstLoading)
			<-ctx.Done() // a slow download its caller gives up on
			return nil, ctx.Err()
		}
		return &fakeModel{name: name}, nil
	}
	r := mustRouter(t, WithLoader(loader))
	qs := laya.Questions{{ID: "q", Definition: laya.NoulQuestion("Is it urgent?")}}
	state := laya.Text("please refund the order")

	firstCtx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := r.Predict(firstCtx, state, qs, RouteOptions{Model: "english"})
		first <- err
	}()
	<-firstLoading
	second := make(chan error, 1)
	go func() {
		_, err := r.Predict(context.Background(), state, qs, RouteOptions{Model: "english"})
		second <- err
	}()
	// Let the second request join the first one's load before it is cancelled.
	for {
		r.mu.Lock()
		refs := r.entries["english"].refs
		r.mu.Unlock()
		if refs == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v, want context.Canceled", err)
	}
	if err := <-second; err != nil {
		t.Errorf("waiting request failed with the other request's cancellation: %v", err)
	}
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2 (the cancelled one and the waiter's own)", n)
	}
}

// A loader that returns a model together with an error leaves nothing open.
func TestRouterLoaderErrorClosesModel(t *testing.T) {
	half := &fakeModel{}
	r := mustRouter(t, WithLoader(func(ctx context.Context, name, ref string) (laya.Predictor, error) {
		return half, errors.New("tokenizer missing")
	}))
	if _, err := r.Load(context.Background(), "english"); err == nil {
		t.Fatal("Load succeeded, want the loader's error")
	}
	if !half.closed.Load() {
		t.Error("the model the failed loader returned was not closed")
	}
}

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
