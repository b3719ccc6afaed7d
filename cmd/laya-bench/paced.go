package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	laya "github.com/laya-metal/laya"
)

// stdin is what --paced reads its cues from (tests replace it).
var stdin io.Reader = os.Stdin

// pacedHeader is --paced's first output line, written once the model is
// loaded and warmed up: the driver learns the request's token count (to
// build its own rows of the same length) and that timing may start.
type pacedHeader struct {
	Checkpoint  string  `json:"checkpoint"`
	Backend     string  `json:"backend"`
	Questions   int     `json:"questions"`
	InputTokens int     `json:"input_tokens"`
	LoadMS      float64 `json:"load_ms"`
	FirstMS     float64 `json:"first_call_ms"`
}

// pacedRun is one timed request's line.
type pacedRun struct {
	MS float64 `json:"ms"`
}

// runPaced serves timed requests on cue, for a driver that interleaves
// them with another system's runs (scripts/bench/bench-torch/paired.py alternates
// them with PyTorch forwards, pair by pair, so that both sides see the same
// drift of a shared host): after loading and --warmup requests it writes
// the header line, then for each line read from in it runs one request of
// n questions and writes its wall time, end to end as measure times it. It
// returns at the end of in, at a line "quit", or when ctx ends (also while
// it waits for a cue: SIGINT must not wait for the driver). Each reply is
// flushed before the next cue is read: the driver's clock never overlaps
// ours.
func runPaced(ctx context.Context, agent *laya.Agent, n int, o options, name string, load time.Duration, in io.Reader, out io.Writer) error {
	req := request(n, o.long)
	first, res, err := timeRequest(ctx, agent, req)
	if err != nil {
		return err
	}
	tokens := res.Usage.InputTokens
	for i := 1; i < o.warmup; i++ {
		if _, _, err := timeRequest(ctx, agent, req); err != nil {
			return err
		}
	}
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	if err := enc.Encode(pacedHeader{Checkpoint: name, Backend: o.backend, Questions: n,
		InputTokens: tokens, LoadMS: ms(load), FirstMS: ms(first)}); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The cues come through a goroutine so that a cancelled ctx ends the
	// wait; the reader is left blocked on in when we return (the process
	// is about to exit).
	cues := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case cues <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
		close(cues)
	}()
	for {
		var cue string
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case cue, ok = <-cues:
		}
		if !ok {
			return <-readErr
		}
		if cue == "quit" {
			return nil
		}
		d, _, err := timeRequest(ctx, agent, req)
		if err != nil {
			return err
		}
		if err := enc.Encode(pacedRun{MS: ms(d)}); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("--paced: writing a timing: %w", err)
		}
	}
}
