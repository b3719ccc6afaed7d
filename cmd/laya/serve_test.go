package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
)

func TestServeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// The other flag mistakes are in TestUsageErrors.
		{[]string{"--router", "--model-dir", "klingon model=x"}, "model name"},
	} {
		err := runServe(context.Background(), tc.args, nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	t.Setenv("LAYA_HOST", "0.0.0.0")
	t.Setenv("LAYA_PORT", "9999")
	if got := envAddr("127.0.0.1:8642"); got != "0.0.0.0:9999" {
		t.Errorf("LAYA_HOST/LAYA_PORT: %s", got)
	}
	// An IPv6 host, bracketed or not, is one listen address.
	for _, host := range []string{"::", "[::]"} {
		t.Setenv("LAYA_HOST", host)
		if got := envAddr("127.0.0.1:8642"); got != "[::]:9999" {
			t.Errorf("LAYA_HOST=%s: %s, want [::]:9999", host, got)
		}
	}
	t.Setenv("LAYA_BATCH_MAX", "zero")
	if err := runServe(context.Background(), []string{"--model", predictModel}, nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "LAYA_BATCH_MAX must be an integer") {
		t.Errorf("bad LAYA_BATCH_MAX: %v", err)
	}
}

// TestServeSIGTERM runs the built binary, fills its queue with requests and sends
// SIGTERM: every request in flight and in the queue is answered byte-identically to
// the library, the process exits 0, and it took no request after the signal.
// Then the same with SIGINT, which must drain the same way (not answer in-flight
// requests with an empty 200).
func TestServeSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; not in -short")
	}
	bin := filepath.Join(t.TempDir(), "laya")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	request, _ := goldenPredictCase(t, "many_questions")
	agent, err := laya.Load(context.Background(), predictModel)
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.PredictJSON(context.Background(), request)
	agent.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := res.String() + "\n"

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "serve", "--model", predictModel, "--addr", "127.0.0.1:0")
			cmd.Env = append(os.Environ(), "LAYA_BATCH_MAX=1", "LAYA_BATCH_WINDOW_MS=0", "LAYA_WARMUP=0", "LAYA_SHUTDOWN_GRACE_S=60")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := bufio.NewScanner(stderr)
			var addr string
			var logs strings.Builder
			for addr == "" && lines.Scan() {
				var rec struct{ Msg, Addr string }
				json.Unmarshal(lines.Bytes(), &rec)
				if rec.Msg == "listening" {
					addr = rec.Addr
				}
			}
			if addr == "" {
				t.Fatal("no listening line")
			}
			logDone := make(chan struct{})
			go func() {
				for lines.Scan() {
					logs.WriteString(lines.Text() + "\n")
				}
				close(logDone)
			}()
			url := "http://" + addr
			waitReady(t, url)
			const n = 12
			var wg sync.WaitGroup
			bodies := make([]string, n)
			var finished atomic.Int64
			statuses := make([]int, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Post(url+"/v1/predict", "application/json", strings.NewReader(string(request)))
					if err != nil {
						t.Errorf("request %d: %v", i, err)
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					statuses[i], bodies[i] = resp.StatusCode, string(b)
					finished.Add(1)
				}()
			}
			// Signal once every request is in the server (answered, in a pass or
			// queued) and some are still waiting in the queue.
			deadline := time.Now().Add(20 * time.Second)
			for {
				inflight, depth := admitted(url), queueDepth(url)
				if inflight+int(finished.Load()) == n && depth >= 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the queue never filled")
				}
				time.Sleep(2 * time.Millisecond)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for i := range n {
				if statuses[i] != 200 || bodies[i] != want {
					t.Errorf("request %d after %v: %d %q", i, sig, statuses[i], bodies[i])
				}
			}
			// Until the last admitted request is answered, a new connection is
			// answered 503 (not refused); then the listener closes.
			for closing := time.Now(); ; time.Sleep(5 * time.Millisecond) {
				resp, err := http.Get(url + "/ready")
				if err != nil {
					break
				}
				resp.Body.Close()
				if resp.StatusCode != 503 {
					t.Errorf("/ready after %v: %d, want 503", sig, resp.StatusCode)
				}
				if time.Since(closing) > 5*time.Second {
					t.Errorf("the server still accepts connections 5 s after its last request was answered (%v)", sig)
					break
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit after %v: %v, want 0", sig, err)
			}
			<-logDone
			if !strings.Contains(logs.String(), `"msg":"shutting down"`) {
				t.Errorf("no shutdown log line:\n%s", logs.String())
			}
		})
	}
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("server not ready after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func queueDepth(url string) int {
	resp, err := http.Get(url + "/ready")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var r struct {
		QueueDepth int `json:"queue_depth"`
	}
	json.NewDecoder(resp.Body).Decode(&r)
	return r.QueueDepth
}

// admitted reads laya_inflight_total from /metrics: requests past validation and not
// yet answered.
func admitted(url string) int {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "laya_inflight_total "); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	return -1
}

// lockedBuffer is a stderr that the server's logger and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveInBackground runs laya serve with args until the test ends or it returns.
func serveInBackground(t *testing.T, args ...string) (ctx context.Context, stop context.CancelFunc, stderr *lockedBuffer, done chan error) {
	t.Setenv("LAYA_WARMUP", "0")
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	ctx, stop = context.WithCancel(context.Background())
	stderr, done = &lockedBuffer{}, make(chan error, 1)
	go func() { done <- runServe(ctx, append(args, "--addr", "127.0.0.1:0"), nil, io.Discard, stderr) }()
	return ctx, stop, stderr, done
}

// listeningLine waits for serveInBackground's listening record and returns it;
// the test fails if laya serve exits first or none comes within a minute (a
// bound on a hang, not a timing assertion).
func listeningLine(t *testing.T, stderr *lockedBuffer, done chan error) []byte {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec struct{ Msg string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				return []byte(line)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("laya serve exited at start-up: %v\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A single checkpoint that cannot load ends laya serve at start-up with the load
// error (main exits 1 with it), instead of serving 503 for ever.
func TestServeModelTypoExits(t *testing.T) {
	_, stop, stderr, done := serveInBackground(t, "--model", "./typo")
	defer stop()
	select {
	case err := <-done:
		want := "serve: load model ./typo: laya: not a Laya checkpoint: ./typo does not exist"
		if err == nil || err.Error() != want {
			t.Errorf("laya serve --model ./typo: %v, want %q", err, want)
		}
	case <-time.After(60 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatalf("laya serve --model ./typo still running; stderr:\n%s", stderr)
	}
}

// A router whose named checkpoint cannot load starts anyway: /ready answers 503 and
// names the model and the cause, and a signal still stops it cleanly.
func TestServeRouterMissingModelDir(t *testing.T) {
	_, stop, stderr, done := serveInBackground(t, "--router", "--model-dir", "english=./does-not-exist")
	defer stop()
	var rec struct{ Addr string }
	json.Unmarshal(listeningLine(t, stderr, done), &rec)
	addr := rec.Addr
	deadline := time.Now().Add(60 * time.Second)
	var body string
	for !strings.Contains(body, "preload_error\":\"") {
		resp, err := http.Get("http://" + addr + "/ready")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if resp.StatusCode != 503 {
			t.Fatalf("/ready: %d %s", resp.StatusCode, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready never named the failed load: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if want := "router: load model english (./does-not-exist): laya: not a Laya checkpoint: ./does-not-exist does not exist"; !strings.Contains(body, want) {
		t.Errorf("/ready: %s\nwant the reason %q", body, want)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("laya serve --router after the signal: %v", err)
	}
}

// The listening line says how the server batches: on cpu one dispatcher and the
// window unless LAYA_* says otherwise; inferWorkersByDefault gives a backend
// registered with backend.PassesSideBySide (cuda) two.
func TestServeListeningBatching(t *testing.T) {
	for _, c := range []struct {
		workers string
		want    int
	}{{"", 1}, {"3", 3}} {
		t.Run("LAYA_INFER_WORKERS="+c.workers, func(t *testing.T) {
			t.Setenv("LAYA_INFER_WORKERS", c.workers)
			_, stop, stderr, done := serveInBackground(t, "--model", predictModel, "--backend", "cpu")
			defer stop()
			type listening struct {
				Msg, Backend string
				BatchGreedy  bool `json:"batch_greedy"`
				InferWorkers int  `json:"infer_workers"`
				BatchMax     int  `json:"batch_max"`
			}
			var rec listening
			if err := json.Unmarshal(listeningLine(t, stderr, done), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Backend != "cpu" || rec.BatchGreedy || rec.InferWorkers != c.want || rec.BatchMax != 16 {
				t.Errorf("listening line %+v, want backend cpu, batch_greedy false, infer_workers %d, batch_max 16", rec, c.want)
			}
		})
	}
	registerSideBySide.Do(func() {
		open := func() (backend.Backend, error) { return cpu.New(), nil }
		backend.Register("test-gpu", open, backend.Accelerator)
		backend.Register("test-gpu-side-by-side", open, backend.Accelerator, backend.PassesSideBySide)
	})
	for name, want := range map[string]int{"test-gpu-side-by-side": 2, "test-gpu": 1, "cpu": 1, "metal-emu": 1} {
		if got := inferWorkersByDefault(name); got != want {
			t.Errorf("inferWorkersByDefault(%q) = %d, want %d", name, got, want)
		}
	}
}

// registerSideBySide registers TestServeListeningBatching's backends once,
// however often it runs (-count). The cuda package's own test checks that it
// registers with backend.PassesSideBySide.
var registerSideBySide sync.Once
