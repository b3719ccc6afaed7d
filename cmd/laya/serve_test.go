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
)

func TestServeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--model or --router is required"},
		{[]string{"--model", predictModel, "--router"}, "not both"},
		{[]string{"--model", predictModel, "--model-dir", "english=x"}, "--model-dir needs --router"},
		{[]string{"--router", "--model-dir", "klingon=x"}, "unknown"},
		{[]string{"--model", predictModel, "--log-level", "loud"}, "--log-level"},
		{[]string{"--model", predictModel, "--log-format", "xml"}, "--log-format"},
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
	t.Setenv("LAYA_BATCH_MAX", "zero")
	if err := runServe(context.Background(), []string{"--model", predictModel}, nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "LAYA_BATCH_MAX must be an integer") {
		t.Errorf("bad LAYA_BATCH_MAX: %v", err)
	}
}

// TestServeSIGTERM runs the built binary, fills its queue with requests and sends
// SIGTERM: every request in flight and in the queue is answered byte-identically to
// the library, the process exits 0, and it took no request after the signal.
// Then the same with SIGINT (issue 12: it answered in-flight requests with an empty 200).
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
			if _, err := http.Get(url + "/health"); err == nil {
				t.Errorf("the server still accepts connections after %v", sig)
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
