package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"sync"

	"github.com/laya-metal/laya"
)

// The router's cache: the models it loaded, reference-counted by the requests
// using them, least recently used first in Router.order. A load is shared by
// every request that arrives while it runs; a failed load is not cached.

// routerEntry is one model in the cache, loading or loaded.
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
	key, err := r.NormalizeModel(name)
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
	key, err := r.NormalizeModel(name)
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
// the models already resident. A model that fails to load does not stop the
// others: the error joins the *LoadError of each one that failed.
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
		k, err := r.NormalizeModel(n)
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
	// One model that cannot load does not keep the others out: each is tried, and
	// the error names every failure.
	var errs []error
	for _, k := range keys {
		if _, err := r.Load(ctx, k); err != nil {
			if ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
		key, err := r.normalizeLocked(n)
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
