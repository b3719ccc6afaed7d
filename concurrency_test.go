package laya

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestPredictConcurrent runs every real-en golden request from several
// goroutines at once on one Agent, each in its own order, and requires every
// answer to equal the one the same agent gave sequentially. Under -race it
// checks that the backends' shared state (weights, rope tables, pipelines,
// the tokenizer's word cache) is safe for concurrent streams, as Agent's
// documentation promises.
func TestPredictConcurrent(t *testing.T) {
	cases := loadRequestCases(t, "real-en")
	backends := []struct {
		name     string
		cases    int // how many of the cases each goroutine runs (the emulator is slow)
		routines int
	}{
		{"cpu", len(cases), 4},
		{"metal-emu", 2, 2},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			if be.name == "metal-emu" {
				if testing.Short() {
					t.Skip("metal-emu is slow; not in -short")
				}
				if _, err := exec.LookPath("clang-19"); err != nil {
					if _, err := exec.LookPath("clang"); err != nil {
						t.Skip("metal-emu needs clang")
					}
				}
			}
			ctx := context.Background()
			// A small batch size puts several batches, and so several streams
			// one after another, into each request.
			agent, err := Load(ctx, checkpointDir("real-en"), WithBackend(be.name), WithBatchSize(2))
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close()

			requests := make([][]byte, min(be.cases, len(cases)))
			want := make([]string, len(requests))
			for i := range requests {
				requests[i] = []byte(cases[i].request.String())
				res, err := agent.PredictJSON(ctx, requests[i])
				if err != nil {
					t.Fatalf("%s: %v", cases[i].name, err)
				}
				want[i] = res.String()
			}

			errs := make(chan error, be.routines*len(requests))
			var wg sync.WaitGroup
			for g := range be.routines {
				wg.Go(func() {
					for k := range requests {
						i := (k + g) % len(requests) // each goroutine starts elsewhere
						res, err := agent.PredictJSON(ctx, requests[i])
						if err != nil {
							errs <- fmt.Errorf("goroutine %d, %s: %w", g, cases[i].name, err)
							continue
						}
						if got := res.String(); got != want[i] {
							errs <- fmt.Errorf("goroutine %d, %s:\n got %s\nwant %s", g, cases[i].name, got, want[i])
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestCloseWhileRequestsRun closes an Agent while goroutines keep predicting:
// every call must return the right answer or ErrClosed (never a panic, a
// race, or a forward pass on released weights), Close must wait for the
// calls in flight, and closing again must do nothing.
func TestCloseWhileRequestsRun(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("real-en"), WithBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	cases := loadRequestCases(t, "real-en")
	request := []byte(cases[0].request.String())
	want, err := agent.PredictJSON(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	embedder := AgentEmbedder(agent, 0, 0)

	const routines = 4
	started := make(chan struct{}, routines)
	errs := make(chan error, 1000)
	var wg sync.WaitGroup
	for g := range routines {
		wg.Go(func() {
			for i := 0; ; i++ {
				var err error
				if g == 0 {
					_, err = embedder.Embed(ctx, []string{"a text to embed", "another"})
				} else {
					var res *Result
					res, err = agent.PredictJSON(ctx, request)
					if err == nil && res.String() != want.String() {
						err = fmt.Errorf("got %s, want %s", res, want)
					}
				}
				if i == 0 {
					started <- struct{}{}
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", g, err)
					return
				}
			}
		})
	}
	for range routines {
		<-started
	}
	if err := agent.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := agent.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := agent.PredictJSON(ctx, request); !errors.Is(err, ErrClosed) {
		t.Errorf("Predict after Close: %v, want ErrClosed", err)
	}
}

// TestCloseReleasesResources loads, uses and closes agents repeatedly and
// requires the process's file descriptors and memory mappings to come back to
// where they were: Close must unmap the checkpoint and free the backend's
// buffers (the emulator's are mmap'd), whatever ran before it.
func TestCloseReleasesResources(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("needs /proc")
	}
	count := func(dir string) int {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	mappings := func() (all, weights int) {
		data, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if line == "" {
				continue
			}
			all++
			if strings.HasSuffix(line, "model.safetensors") {
				weights++
			}
		}
		return all, weights
	}
	ctx := context.Background()
	request := []byte(loadRequestCases(t, "real-en")[0].request.String())
	backends := []string{"cpu"}
	if _, err := exec.LookPath("clang-19"); err == nil && !testing.Short() {
		backends = append(backends, "metal-emu")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			cycle := func() {
				agent, err := Load(ctx, checkpointDir("real-en"), WithBackend(be))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := agent.PredictJSON(ctx, request); err != nil {
					t.Fatal(err)
				}
				if _, err := AgentEmbedder(agent, 0, 0).Embed(ctx, []string{"one", "two"}); err != nil {
					t.Fatal(err)
				}
				if err := agent.Close(); err != nil {
					t.Fatal(err)
				}
			}
			cycle() // warm up: the emulator's library, pools and caches stay loaded
			fds := count("/proc/self/fd")
			maps, _ := mappings()
			const cycles = 3
			for range cycles {
				cycle()
			}
			if got := count("/proc/self/fd"); got > fds {
				t.Errorf("%d open files after %d load/close cycles, %d before", got, cycles, fds)
			}
			gotMaps, weightMaps := mappings()
			if weightMaps != 0 {
				t.Errorf("model.safetensors still mapped %d times after Close", weightMaps)
			}
			// The Go runtime and the emulator's fiber stack pool may map a
			// little more; a leak of the backend's buffers maps dozens per cycle.
			if gotMaps > maps+cycles*2 {
				t.Errorf("%d memory mappings after %d load/close cycles, %d before", gotMaps, cycles, maps)
			}
		})
	}
}
