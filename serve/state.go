package serve

import (
	"context"
	"sync"
	"time"
)

// stateStore holds what admission and the breaker decide with: in the process
// (localState), or shared by every replica through Redis (redisState, LAYA_STATE_URL).
type stateStore interface {
	// acquire takes one of key's in-flight slots (limit ≤ 0: unlimited); release
	// gives it back and is safe to call from a request that timed out or panicked.
	acquire(ctx context.Context, key string, limit int) (release func(), ok bool)
	// breakerAllow says whether key may run, whether it is a half-open probe, and
	// otherwise the seconds to wait.
	breakerAllow(ctx context.Context, key string) (ok, probe bool, retryAfter int)
	// breakerDone records an allowed request's outcome (see breaker.done).
	breakerDone(key string, probe, counted, failed bool)
	snapshot() stateSnapshot
	close() error
}

// stateSnapshot feeds the gauges: clients with requests in flight (this replica),
// open and tracked circuits and requests in flight (every replica under Redis).
type stateSnapshot struct {
	clientsActive, circuitsOpen, circuitsTracked int
	inflight                                     int64
}

// localState is the in-process store: the per-client limiter and the breaker.
type localState struct {
	clients  clientLimiter
	breaker  *breaker
	inflight func() int64
}

func newLocalState(cfg *Config, inflight func() int64) *localState {
	return &localState{
		breaker:  newBreaker(cfg.BreakerThreshold, cfg.BreakerProbeSuccesses, cfg.BreakerCooldown),
		inflight: inflight,
	}
}

func (l *localState) acquire(_ context.Context, key string, limit int) (func(), bool) {
	if !l.clients.acquire(key, limit) {
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { l.clients.release(key) }) }, true
}

func (l *localState) breakerAllow(_ context.Context, key string) (bool, bool, int) {
	return l.breaker.allow(key)
}

func (l *localState) breakerDone(key string, probe, counted, failed bool) {
	l.breaker.done(key, probe, counted, failed)
}

func (l *localState) snapshot() stateSnapshot {
	open, tracked := l.breaker.counts()
	return stateSnapshot{clientsActive: l.clients.active(), circuitsOpen: open, circuitsTracked: tracked, inflight: l.inflight()}
}

func (l *localState) close() error { return nil }

// stateTimeout bounds one call to the shared store: a request must not wait on an
// unreachable Redis for longer than this before the failure policy decides.
const stateTimeout = 300 * time.Millisecond
