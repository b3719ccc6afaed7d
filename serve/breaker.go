package serve

import (
	"math"
	"sync"
	"time"
)

// breaker is upstream's per-client circuit breaker (docs/serving.md "Circuit
// breaker"): Threshold consecutive inference failures open that client's circuit, whose
// requests then fail fast with 503 until Cooldown has passed; then one probe at a time is
// let through, and ProbeSuccesses successes in a row close it (one failure reopens it).
// Keyed per client so one client's poison payload does not fail the others.
type breaker struct {
	threshold, probes int
	cooldown          time.Duration
	now               func() time.Time

	mu sync.Mutex
	m  map[string]*circuit
}

type circuit struct {
	failures  int       // consecutive, while closed
	openUntil time.Time // zero: closed
	probing   bool      // a half-open probe is in flight
	successes int       // probe successes in a row
}

// maxCircuits bounds the tracked clients; closed circuits are dropped first.
const maxCircuits = 10000

func newBreaker(threshold, probes int, cooldown time.Duration) *breaker {
	return &breaker{threshold: threshold, probes: max(probes, 1), cooldown: cooldown, now: time.Now, m: map[string]*circuit{}}
}

func (b *breaker) enabled() bool { return b != nil && b.threshold > 0 }

// allow says whether key's request may run, whether it is a half-open probe, and
// otherwise how many seconds to wait.
func (b *breaker) allow(key string) (ok, probe bool, retryAfter int) {
	if !b.enabled() {
		return true, false, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.m[key]
	if c == nil || c.openUntil.IsZero() {
		return true, false, 0
	}
	if now := b.now(); now.Before(c.openUntil) {
		return false, false, max(1, int(math.Ceil(c.openUntil.Sub(now).Seconds())))
	}
	if c.probing {
		return false, false, 1
	}
	c.probing = true
	return true, true, 0
}

// done records the outcome of an allowed request: failed is an inference failure;
// counted false (a timeout, a client that left, an invalid request) only frees a probe.
func (b *breaker) done(key string, probe, counted, failed bool) {
	if !b.enabled() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.m[key]
	if probe && c != nil {
		c.probing = false
	}
	if !counted {
		return
	}
	switch {
	case failed && c == nil:
		if len(b.m) >= maxCircuits {
			b.sweep()
		}
		c = &circuit{}
		b.m[key] = c
		fallthrough
	case failed && c.openUntil.IsZero():
		c.failures++
		if c.failures >= b.threshold {
			c.openUntil, c.successes = b.now().Add(b.cooldown), 0
		}
	case failed:
		// A failed probe (or a request that raced the opening): open again.
		c.openUntil, c.successes = b.now().Add(b.cooldown), 0
	case c == nil:
	case c.openUntil.IsZero():
		delete(b.m, key) // a success resets the count
	case probe:
		if c.successes++; c.successes >= b.probes {
			delete(b.m, key)
		}
	}
}

// sweep drops closed circuits, then any, to make room. Callers hold mu.
func (b *breaker) sweep() {
	for k, c := range b.m {
		if c.openUntil.IsZero() {
			delete(b.m, k)
		}
	}
	for k := range b.m {
		if len(b.m) < maxCircuits {
			break
		}
		delete(b.m, k)
	}
}

// counts returns the open (or half-open) circuits and the tracked ones.
func (b *breaker) counts() (open, tracked int) {
	if !b.enabled() {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.m {
		if !c.openUntil.IsZero() {
			open++
		}
	}
	return open, len(b.m)
}
