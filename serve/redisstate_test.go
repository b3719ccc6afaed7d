package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server of the test's own on a free loopback port.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
	rdb  *redis.Client
}

// startRedis runs Debian's redis-server (.ci/run installs it), or skips the test
// when the binary is absent.
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (apt-get install redis-server); the shared-state tests need a real Redis")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	rs := &redisServer{addr: fmt.Sprintf("127.0.0.1:%d", port)}
	rs.start(t, bin)
	rs.rdb = redis.NewClient(&redis.Options{Addr: rs.addr})
	t.Cleanup(func() {
		rs.rdb.Close()
		rs.stop()
	})
	return rs
}

func (rs *redisServer) start(t *testing.T, bin string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(rs.addr)
	rs.cmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := rs.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "redis-server to listen", func() bool {
		c, err := net.Dial("tcp", rs.addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func (rs *redisServer) stop() {
	if rs.cmd != nil && rs.cmd.Process != nil {
		rs.cmd.Process.Kill()
		rs.cmd.Wait()
	}
}

func (rs *redisServer) url() string { return "LAYA_STATE_URL=redis://" + rs.addr + "/0" }

func (rs *redisServer) count(t *testing.T, key string) int {
	v, err := rs.rdb.Get(context.Background(), key).Result()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(v)
	return n
}

// as posts smallRequest as tenant to url (every replica here holds the key "k", so
// the header names the client).
func as(t *testing.T, url, tenant string) response {
	return do(t, nil, "POST", url+"/v1/systemone", smallRequest, map[string]string{"Authorization": "Bearer k", "X-Laya-Client": tenant})
}

// sendAsync posts as tenant in the background; wait collects the statuses.
func sendAsync(t *testing.T, url, tenant string, n int) (wait func() []int) {
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = as(t, url, tenant).status
		}()
	}
	return func() []int { wg.Wait(); return statuses }
}

// TestRedisSharedCap: a client's in-flight cap holds across two replicas sharing one
// Redis, in upstream's keys; other clients are not touched.
func TestRedisSharedCap(t *testing.T) {
	rs := startRedis(t)
	env := []string{rs.url(), "LAYA_API_KEY=k", "LAYA_CLIENT_MAX_INFLIGHT=2", "LAYA_TEST_DELAY_MS=1500", "LAYA_BATCH_WINDOW_MS=0"}
	a, b := startReplica(t, env...), startReplica(t, env...)
	wait := sendAsync(t, a.url, "t1", 2)
	waitFor(t, "t1's two slots in Redis", func() bool { return rs.count(t, "laya:adm:client:t1") == 2 })
	if n := rs.count(t, "laya:inflight"); n != 2 {
		t.Errorf("laya:inflight = %d, want 2", n)
	}
	if r := as(t, b.url, "t1"); r.status != 429 || detail(t, r) != "client concurrency limit exceeded" {
		t.Errorf("t1 at the other replica: %d %s, want 429", r.status, r.body)
	}
	if r := as(t, b.url, "t2"); r.status != 200 {
		t.Errorf("t2 at the other replica: %d %s", r.status, r.body)
	}
	for i, s := range wait() {
		if s != 200 {
			t.Errorf("t1 request %d: %d", i, s)
		}
	}
	waitFor(t, "the slots back", func() bool {
		return rs.count(t, "laya:adm:client:t1") == 0 && rs.count(t, "laya:inflight") == 0
	})
	if r := as(t, b.url, "t1"); r.status != 200 {
		t.Errorf("t1 after its requests ended: %d %s", r.status, r.body)
	}
}

// TestRedisSharedBreaker: a breaker one replica opens is open at the other; with
// LAYA_SHARED_BREAKER=0 it stays the replica's own.
func TestRedisSharedBreaker(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			rs := startRedis(t)
			env := []string{rs.url(), "LAYA_API_KEY=k", "LAYA_BREAKER_THRESHOLD=2", "LAYA_BREAKER_COOLDOWN_S=30",
				"LAYA_SHARED_BREAKER=" + map[bool]string{true: "1", false: "0"}[shared]}
			broken := startReplica(t, append(env, "LAYA_TEST_FAIL=1")...)
			healthy := startReplica(t, env...)
			for i := range 2 {
				if r := as(t, broken.url, "t1"); r.status != 500 {
					t.Fatalf("failure %d: %d %s", i, r.status, r.body)
				}
			}
			r := as(t, healthy.url, "t1")
			switch {
			case shared && (r.status != 503 || detail(t, r) != "inference circuit breaker is open"):
				t.Errorf("t1 at the healthy replica: %d %s, want the shared breaker's 503", r.status, r.body)
			case !shared && r.status != 200:
				t.Errorf("t1 at the healthy replica with LAYA_SHARED_BREAKER=0: %d %s, want 200", r.status, r.body)
			}
			if r := as(t, healthy.url, "t2"); r.status != 200 {
				t.Errorf("t2: %d %s", r.status, r.body)
			}
			open, _ := rs.rdb.ZCard(context.Background(), "laya:brk:open").Result()
			if want := map[bool]int64{true: 1, false: 0}[shared]; open != want {
				t.Errorf("laya:brk:open holds %d clients, want %d", open, want)
			}
			if shared {
				// Upstream's hash: failures, open_until (epoch ms), probe, probe_successes, seen.
				h, _ := rs.rdb.HGetAll(context.Background(), "laya:brk:client:t1").Result()
				until, _ := strconv.ParseInt(h["open_until"], 10, 64)
				if h["failures"] != "2" || h["probe"] != "0" || h["probe_successes"] != "0" || h["seen"] == "" ||
					until < time.Now().Add(25*time.Second).UnixMilli() {
					t.Errorf("laya:brk:client:t1 = %v, want upstream's fields, open for the 30 s cooldown", h)
				}
			}
		})
	}
}

// TestRedisReplicaDies: slots a replica held when it was killed expire within the
// admission TTL (request timeout + 5 s), and the client is served again.
func TestRedisReplicaDies(t *testing.T) {
	rs := startRedis(t)
	env := []string{rs.url(), "LAYA_API_KEY=k", "LAYA_CLIENT_MAX_INFLIGHT=2", "LAYA_REQUEST_TIMEOUT_S=1", "LAYA_BATCH_WINDOW_MS=0"}
	doomed := startReplica(t, append(env, "LAYA_TEST_DELAY_MS=900")...)
	other := startReplica(t, env...)
	// The killed replica's callers see their connections cut: no test failure.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", doomed.url+"/v1/systemone", strings.NewReader(smallRequest))
			req.Header.Set("Authorization", "Bearer k")
			req.Header.Set("X-Laya-Client", "t1")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "t1's two slots in Redis", func() bool { return rs.count(t, "laya:adm:client:t1") == 2 })
	doomed.cmd.Process.Signal(syscall.SIGKILL)
	wg.Wait()
	killed := time.Now()
	if r := as(t, other.url, "t1"); r.status != 429 {
		t.Errorf("t1 right after the kill: %d, want 429 (the dead replica's slots)", r.status)
	}
	for as(t, other.url, "t1").status != 200 {
		if time.Since(killed) > 8*time.Second {
			t.Fatalf("t1 still refused %v after its replica died; the TTL is 6 s", time.Since(killed))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("t1 served again %v after its replica was killed", time.Since(killed).Round(100*time.Millisecond))
}

// TestRedisOutage: Redis stopped under load. With "local" the replica keeps capping
// each client itself; with "open" it lets them through; either way every request is
// answered (200 or the cap's 429), nothing fails, and laya_state_degraded says so.
func TestRedisOutage(t *testing.T) {
	for _, policy := range []string{"local", "open"} {
		t.Run(policy, func(t *testing.T) {
			rs := startRedis(t)
			r := startReplica(t, rs.url(), "LAYA_API_KEY=k", "LAYA_CLIENT_MAX_INFLIGHT=1", "LAYA_TEST_DELAY_MS=300",
				"LAYA_BATCH_WINDOW_MS=0", "LAYA_STATE_FAILURE_POLICY="+policy)
			load := sendAsync(t, r.url, "steady", 1)
			var mu sync.Mutex
			var statuses []int
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(i) * 150 * time.Millisecond)
					s := as(t, r.url, fmt.Sprintf("c%d", i)).status
					mu.Lock()
					statuses = append(statuses, s)
					mu.Unlock()
				}()
			}
			time.Sleep(200 * time.Millisecond)
			rs.stop() // mid-load
			wg.Wait()
			load()
			for _, s := range statuses {
				if s != 200 {
					t.Errorf("a client alone during the outage: %d, want 200", s)
				}
			}
			both := sendAsync(t, r.url, "pair", 2)()
			ok := 0
			for _, s := range both {
				if s == 200 {
					ok++
				} else if s != 429 {
					t.Errorf("during the outage: %d, want 200 or 429", s)
				}
			}
			if want := map[string]int{"local": 1, "open": 2}[policy]; ok != want {
				t.Errorf("two concurrent requests of a client capped at 1, Redis down, policy %s: %d answered, want %d", policy, ok, want)
			}
			fams := scrapeKey(t, r.url)
			if g := fams["laya_state_degraded"]; g == nil || g.Metric[0].Gauge.GetValue() != 1 {
				t.Errorf("laya_state_degraded %v, want 1", g)
			}
			if m := labelled(fams["laya_shared_state_errors_total"], map[string]string{"op": "acquire"}); m == nil || m.Counter.GetValue() < 1 {
				t.Errorf("laya_shared_state_errors_total{op=acquire} %v", m)
			}
		})
	}
}
