package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Shared state in Redis, in upstream's layout (laya/redis_state.py), so that Go and
// Python replicas can share one Redis:
//
//	laya:adm:<client>  per-client in-flight count (INCR/DECR; its expiry, set when
//	                   the count goes from 0 to 1, is request timeout + 5 s, so
//	                   slots a dead replica held are gone within it)
//	laya:inflight      in-flight count over every client and replica
//	laya:brk:<client>  the client's breaker: hash of failures, open_until (epoch ms),
//	                   probe, probe_successes, seen
//	laya:brk:open      sorted set: clients whose breaker is open, by expiry
//	laya:brk:tracked   sorted set: clients with breaker state, by expiry
//
// Client keys are upstream's "client:<x-laya-client[:200]>" and "ip:<address>";
// upstream's third, "key:<bearer token>", is never written (clientid.go), so a Go
// replica does not put credentials into Redis. Every transition is one Lua script,
// so N replicas enforce one budget. Scripts run against Redis' clock (TIME), so the
// replicas' clocks need not agree.

const (
	redisAdmPrefix  = "laya:adm:"
	redisInflight   = "laya:inflight"
	redisBrkPrefix  = "laya:brk:"
	redisBrkOpen    = "laya:brk:open"
	redisBrkTracked = "laya:brk:tracked"
	// redisSafetyTTL keeps breaker state from outliving everyone when its TTL is off.
	redisSafetyTTL = 24 * time.Hour
)

// KEYS: client counter, global counter. ARGV: ttl ms, limit. 1 = admitted.
var luaAcquire = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if n > tonumber(ARGV[2]) then
  redis.call('DECR', KEYS[1])
  return 0
end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1`)

// KEYS: client counter, global counter. ARGV: ttl ms. A counter that expired (its
// replica died, or the slot outlived the TTL) is not driven below zero.
var luaRelease = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local n = redis.call('DECR', KEYS[1])
if n <= 0 then redis.call('DEL', KEYS[1]) end
local g = redis.call('DECR', KEYS[2])
if g < 0 then redis.call('SET', KEYS[2], 0) end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1`)

const luaNow = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// KEYS: breaker hash, tracked set. ARGV: threshold, cooldown ms, ttl ms, client.
// Returns {allowed, retry-after seconds, probe}.
var luaBreakerAllow = redis.NewScript(luaNow + `
local open_until = tonumber(redis.call('HGET', KEYS[1], 'open_until') or '0')
if open_until == 0 then return {1, 0, 0} end
if now < open_until then
  return {0, math.max(1, math.ceil((open_until - now) / 1000)), 0}
end
if tonumber(redis.call('HGET', KEYS[1], 'probe') or '0') == 1 then return {0, 1, 0} end
redis.call('HSET', KEYS[1], 'probe', 1, 'seen', now)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[4])
return {1, 0, 1}`)

// KEYS: breaker hash, open set, tracked set. ARGV: probe successes, ttl ms, client.
var luaBreakerSuccess = redis.NewScript(luaNow + `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'open_until') or '0') > 0 then
  local ok = tonumber(redis.call('HGET', KEYS[1], 'probe_successes') or '0') + 1
  if ok < tonumber(ARGV[1]) then
    redis.call('HSET', KEYS[1], 'probe', 0, 'probe_successes', ok, 'seen', now)
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[3])
    return 0
  end
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[3])
return 1`)

// KEYS: breaker hash, open set, tracked set. ARGV: threshold, cooldown ms, ttl ms,
// client. A failed probe, or the threshold reached, opens the circuit.
var luaBreakerFailure = redis.NewScript(luaNow + `
local failures = tonumber(redis.call('HGET', KEYS[1], 'failures') or '0') + 1
local probe = tonumber(redis.call('HGET', KEYS[1], 'probe') or '0')
if probe == 1 or failures >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'failures', failures, 'open_until', now + tonumber(ARGV[2]),
             'probe', 0, 'probe_successes', 0, 'seen', now)
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[4])
else
  redis.call('HSET', KEYS[1], 'failures', failures, 'seen', now)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[4])
return 1`)

// KEYS: breaker hash. A probe that ended without a verdict (a timeout, a client that
// left) lets the next one through; upstream has no such step, and the field it
// clears is its own.
var luaBreakerFree = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'probe', 0) end
return 1`)

// KEYS: open set, tracked set, global counter. Returns {open, tracked, inflight}.
var luaSnapshot = redis.NewScript(luaNow + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
return {redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), tonumber(redis.call('GET', KEYS[3]) or '0')}`)

// redisState is the shared store. A failed call follows the failure policy: "local"
// decides with the in-process store (the limits hold per replica), "open" lets the
// request through. After a failure Redis is left alone for a second, so that an
// outage costs one timeout a second rather than one per request.
type redisState struct {
	client   *redis.Client
	local    *localState // the shadow: the breaker when not shared, the fallback
	cfg      *Config
	log      *slog.Logger
	errs     *prometheus.CounterVec
	degraded atomic.Bool
	downTil  atomic.Int64 // unix ns until which Redis is not tried

	snapMu   sync.Mutex
	snapAt   time.Time
	snapLast stateSnapshot
}

// ErrState reports a LAYA_STATE_URL the server cannot use.
var ErrState = errors.New("serve: shared state")

func newRedisState(cfg *Config, local *localState, reg *prometheus.Registry, log *slog.Logger) (*redisState, error) {
	opts, err := redis.ParseURL(cfg.StateURL)
	if err != nil {
		return nil, fmt.Errorf("%w: LAYA_STATE_URL: %w", ErrState, err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = stateTimeout, stateTimeout, stateTimeout
	opts.MaxRetries = -1 // a retry would double the wait; the policy answers instead
	opts.PoolTimeout = stateTimeout
	s := &redisState{client: redis.NewClient(opts), local: local, cfg: cfg, log: log,
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "laya_shared_state_errors_total",
			Help: "Shared-state backend errors (see state_failure_policy)"}, []string{"op"})}
	degraded := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "laya_state_degraded",
		Help: "1 when the last shared-state op fell back"}, func() float64 {
		if s.degraded.Load() {
			return 1
		}
		return 0
	})
	backend := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "laya_state_backend",
		Help: "Active state backend (value is 1)"}, []string{"mode"})
	backend.WithLabelValues("redis").Set(1)
	reg.MustRegister(s.errs, degraded, backend)
	return s, nil
}

func (s *redisState) admissionTTL() int64 {
	return max(1000, (s.cfg.RequestTimeout + 5*time.Second).Milliseconds())
}

func (s *redisState) breakerTTL() int64 {
	switch ttl := s.cfg.BreakerEntryTTL; {
	case ttl < 0:
		return redisSafetyTTL.Milliseconds()
	case ttl == 0:
		return max(s.cfg.BreakerCooldown, 60*time.Second).Milliseconds()
	default:
		return ttl.Milliseconds()
	}
}

// call runs one script within stateTimeout, recording the outcome.
func (s *redisState) call(ctx context.Context, op string, script *redis.Script, keys []string, args ...any) (any, error) {
	if time.Now().UnixNano() < s.downTil.Load() {
		s.errs.WithLabelValues(op).Inc()
		return nil, fmt.Errorf("%w: %s: Redis unreachable a moment ago", ErrState, op)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateTimeout)
	defer cancel()
	v, err := script.Run(ctx, s.client, keys, args...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		s.errs.WithLabelValues(op).Inc()
		s.downTil.Store(time.Now().Add(time.Second).UnixNano())
		if !s.degraded.Swap(true) {
			s.log.Warn("shared state unreachable; limits follow the failure policy", "op", op,
				"policy", s.cfg.StateFailurePolicy, "error", err.Error())
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrState, op, err)
	}
	if s.degraded.Swap(false) {
		s.log.Info("shared state reachable again", "op", op)
	}
	return v, nil
}

func (s *redisState) acquire(ctx context.Context, key string, limit int) (func(), bool) {
	if limit <= 0 {
		return s.local.acquire(ctx, key, 0)
	}
	keys := []string{redisAdmPrefix + key, redisInflight}
	v, err := s.call(ctx, "acquire", luaAcquire, keys, s.admissionTTL(), limit)
	if err != nil {
		if s.cfg.StateFailurePolicy == "open" {
			return s.local.acquire(ctx, key, 0)
		}
		return s.local.acquire(ctx, key, limit)
	}
	if n, _ := v.(int64); n != 1 {
		return nil, false
	}
	// Counted locally too, without a cap, for laya_clients_active.
	localRelease, _ := s.local.acquire(ctx, key, 0)
	var once sync.Once
	return func() {
		once.Do(func() {
			localRelease()
			// A release that fails leaves the slot to the counter's expiry.
			s.call(context.Background(), "release", luaRelease, keys, s.admissionTTL())
		})
	}, true
}

func (s *redisState) shared() bool { return s.cfg.SharedBreaker && s.cfg.BreakerThreshold > 0 }

func (s *redisState) breakerAllow(ctx context.Context, key string) (bool, bool, int) {
	if !s.shared() {
		return s.local.breakerAllow(ctx, key)
	}
	v, err := s.call(ctx, "breaker_allow", luaBreakerAllow, []string{redisBrkPrefix + key, redisBrkTracked},
		s.cfg.BreakerThreshold, s.cfg.BreakerCooldown.Milliseconds(), s.breakerTTL(), key)
	if err != nil {
		if s.cfg.StateFailurePolicy == "open" {
			return true, false, 0
		}
		return s.local.breakerAllow(ctx, key)
	}
	r, _ := v.([]any)
	if len(r) != 3 {
		return true, false, 0
	}
	allowed, _ := r[0].(int64)
	retry, _ := r[1].(int64)
	probe, _ := r[2].(int64)
	return allowed == 1, probe == 1, int(retry)
}

func (s *redisState) breakerDone(key string, probe, counted, failed bool) {
	if !s.shared() {
		s.local.breakerDone(key, probe, counted, failed)
		return
	}
	if s.cfg.StateFailurePolicy == "local" {
		s.local.breakerDone(key, probe, counted, failed) // the shadow stays warm
	}
	ctx := context.Background()
	keys := []string{redisBrkPrefix + key, redisBrkOpen, redisBrkTracked}
	switch {
	case !counted:
		if probe {
			s.call(ctx, "breaker_free", luaBreakerFree, keys[:1])
		}
	case failed:
		s.call(ctx, "breaker_failure", luaBreakerFailure, keys,
			s.cfg.BreakerThreshold, s.cfg.BreakerCooldown.Milliseconds(), s.breakerTTL(), key)
	default:
		s.call(ctx, "breaker_success", luaBreakerSuccess, keys, s.cfg.BreakerProbeSuccesses, s.breakerTTL(), key)
	}
}

// snapshot is the cluster-wide view, read at most once a second (the gauges of one
// scrape share it).
func (s *redisState) snapshot() stateSnapshot {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if time.Since(s.snapAt) < time.Second {
		return s.snapLast
	}
	local := s.local.snapshot()
	v, err := s.call(context.Background(), "snapshot", luaSnapshot, []string{redisBrkOpen, redisBrkTracked, redisInflight})
	r, _ := v.([]any)
	if err != nil || len(r) != 3 {
		return local
	}
	open, _ := r[0].(int64)
	tracked, _ := r[1].(int64)
	inflight, _ := r[2].(int64)
	s.snapAt = time.Now()
	if s.cfg.ClientMaxInflight <= 0 {
		inflight = local.inflight // uncapped requests take no Redis slot
	}
	s.snapLast = stateSnapshot{clientsActive: local.clientsActive, circuitsOpen: int(open), circuitsTracked: int(tracked), inflight: inflight}
	return s.snapLast
}

func (s *redisState) close() error { return s.client.Close() }
