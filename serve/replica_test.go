package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/laya-metal/laya"
)

// Replicas for the shared-state tests are this test binary run again with
// LAYA_TEST_REPLICA=1: a real process (one a test can SIGKILL with slots held)
// running serve.Server over the bundled checkpoint with the LAYA_* settings of its
// environment, as laya serve --model does. LAYA_TEST_DELAY_MS slows every pass and
// LAYA_TEST_FAIL=1 fails it, so that slots are held and breakers open on cue.
func TestMain(m *testing.M) {
	if os.Getenv("LAYA_TEST_REPLICA") == "1" {
		if err := runReplica(); err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runReplica() error {
	cfg := DefaultConfig()
	cfg.Warmup = false
	if err := cfg.FromEnv(os.Getenv); err != nil {
		return err
	}
	delay, _ := strconv.Atoi(os.Getenv("LAYA_TEST_DELAY_MS"))
	models := &cuedModels{Models: SingleModel(realEN), delay: time.Duration(delay) * time.Millisecond, fail: os.Getenv("LAYA_TEST_FAIL") == "1"}
	srv, err := New(cfg, models)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return srv.Run(ctx, ln)
}

// cuedModels delays or fails every pass of the checkpoint it wraps.
type cuedModels struct {
	Models
	delay time.Duration
	fail  bool
}

func (c *cuedModels) predictor(ctx context.Context, key string) (batchPredictor, func(), error) {
	p, release, err := c.Models.predictor(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	return cuedPredictor{p, c}, release, nil
}

type cuedPredictor struct {
	p batchPredictor
	c *cuedModels
}

func (p cuedPredictor) PredictBatch(ctx context.Context, reqs []laya.Request) ([]laya.BatchAnswer, error) {
	select {
	case <-time.After(p.c.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if p.c.fail {
		return nil, errors.New("cued failure")
	}
	return p.p.PredictBatch(ctx, reqs)
}

// replica is a running replica process.
type replica struct {
	url string
	cmd *exec.Cmd
}

// startReplica runs a replica with env (LAYA_* settings) and stops it when the test
// ends.
func startReplica(t *testing.T, env ...string) *replica {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "LAYA_TEST_REPLICA=1"), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := bufio.NewScanner(out)
	addr := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if a, ok := strings.CutPrefix(lines.Text(), "listening "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatal("replica exited before listening")
		}
		r := &replica{url: "http://" + a, cmd: cmd}
		waitFor(t, "the replica ready", func() bool {
			return do(t, nil, "GET", r.url+"/ready", "", map[string]string{"Authorization": "Bearer k"}).status == 200
		})
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("replica did not listen within 30 s")
	}
	return nil
}
