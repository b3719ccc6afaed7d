package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// soakWorkers is how many requests are in flight at once: enough to fill
// the server's micro-batches, as a few clients would.
const soakWorkers = 4

// soakCommand is "soak URL N PID BODY": N POSTs of BODY to URL, the RSS of
// process PID (the server) sampled 20 times along the way. Autorelease
// pools missing in a path every request takes show as RSS that grows with
// the requests instead of levelling off.
func soakCommand(w io.Writer, args []string) error {
	url, body := args[0], args[3]
	n, err := strconv.Atoi(args[1])
	if err != nil || n <= 0 {
		return fmt.Errorf("soak: N %q: want a positive count", args[1])
	}
	pid, err := strconv.Atoi(args[2])
	if err != nil || pid <= 0 {
		return fmt.Errorf("soak: PID %q: want a process id", args[2])
	}
	data, err := os.ReadFile(body)
	if err != nil {
		return err
	}
	rss := func() (int, error) {
		out, err := exec.Command("ps", "-o", "rss=", "-p", strconv.Itoa(pid)).Output()
		if err != nil {
			return 0, fmt.Errorf("ps -p %d: %w", pid, err)
		}
		return strconv.Atoi(strings.TrimSpace(string(out)))
	}
	res, err := soak(context.Background(), http.DefaultClient, url, data, n, rss)
	fmt.Fprint(w, res)
	if err != nil {
		return err
	}
	if res.errors > 0 {
		return fmt.Errorf("soak: %d of %d requests failed (first: %s)", res.errors, n, res.firstErr)
	}
	return nil
}

type soakResult struct {
	requests, errors int
	firstErr         string
	took             time.Duration
	samples          []rssSample
}

type rssSample struct{ requests, kb int }

func (r soakResult) String() string {
	var b strings.Builder
	for _, s := range r.samples {
		fmt.Fprintf(&b, "soak rss requests=%d rss_kb=%d\n", s.requests, s.kb)
	}
	first, last, top := 0, 0, 0
	if len(r.samples) > 0 {
		first, last = r.samples[0].kb, r.samples[len(r.samples)-1].kb
		for _, s := range r.samples {
			top = max(top, s.kb)
		}
	}
	// Growth over the second half: the first half includes the warm-up
	// (arena, pipelines), after which a leak-free server levels off.
	half := first
	if len(r.samples) > 1 {
		half = r.samples[len(r.samples)/2].kb
	}
	fmt.Fprintf(&b, "soak requests=%d errors=%d seconds=%.1f rss_first_kb=%d rss_max_kb=%d rss_last_kb=%d second_half_growth_kb=%d\n",
		r.requests, r.errors, r.took.Seconds(), first, top, last, last-half)
	return b.String()
}

// soak sends n POSTs of body to url from soakWorkers goroutines and reads
// rss 20 times, evenly over the requests.
func soak(ctx context.Context, client *http.Client, url string, body []byte, n int, rss func() (int, error)) (soakResult, error) {
	var next, done, failed atomic.Int64
	var mu sync.Mutex
	res := soakResult{requests: n}
	every := max(n/20, 1)
	sample := func(k int) error {
		kb, err := rss()
		if err != nil {
			return err
		}
		mu.Lock()
		res.samples = append(res.samples, rssSample{k, kb})
		mu.Unlock()
		return nil
	}
	if err := sample(0); err != nil {
		return res, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	var sampleErr atomic.Value
	for range soakWorkers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := post(ctx, client, url, body); err != nil {
					if failed.Add(1) == 1 {
						mu.Lock()
						res.firstErr = err.Error()
						mu.Unlock()
					}
				}
				if k := done.Add(1); k%int64(every) == 0 {
					if err := sample(int(k)); err != nil {
						sampleErr.CompareAndSwap(nil, err)
					}
				}
			}
		})
	}
	wg.Wait()
	res.took = time.Since(start)
	sort.Slice(res.samples, func(i, j int) bool { return res.samples[i].requests < res.samples[j].requests })
	res.errors = int(failed.Load())
	if err, _ := sampleErr.Load().(error); err != nil {
		return res, err
	}
	return res, nil
}

func post(ctx context.Context, client *http.Client, url string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
