package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// --paced answers each cue with one timing, after a header naming the
// request's token count, and stops at "quit" without reading further.
func TestPacedAnswersEachCue(t *testing.T) {
	old := stdin
	defer func() { stdin = old }()
	stdin = strings.NewReader("go\n\ngo\nquit\ngo\n")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--model", "../../testdata/oracle/checkpoints/tiny-en", "--questions", "3",
		"--warmup", "2", "--paced"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want a header and 3 timings:\n%s", len(lines), stdout.String())
	}
	var h pacedHeader
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
		t.Fatal(err)
	}
	if h.Questions != 3 || h.Backend != "cpu" || h.InputTokens != measuredTokens(t, 3) {
		t.Errorf("header %+v; want 3 questions on cpu and the token count of the timed runs' request", h)
	}
	for _, l := range lines[1:] {
		var r pacedRun
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.MS <= 0 {
			t.Errorf("timing line %q: %v", l, err)
		}
	}
}

// measuredTokens is the input token count the ordinary timed runs report
// for the request of n questions on tiny-en.
func measuredTokens(t *testing.T, n int) int {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--model", "../../testdata/oracle/checkpoints/tiny-en", "--questions", strconv.Itoa(n),
		"--warmup", "0", "--runs", "1", "--format", "json"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep struct {
		Results []result `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Results) != 1 {
		t.Fatalf("json report: %v\n%s", err, stdout.String())
	}
	return rep.Results[0].InputTokens
}

// A cancelled context ends --paced while it waits for a cue that never
// comes (SIGINT must not wait for the driver).
func TestPacedEndsOnCancelWhileWaiting(t *testing.T) {
	old := stdin
	defer func() { stdin = old }()
	r, w := io.Pipe()
	defer w.Close()
	stdin = r
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	header := make(chan struct{})
	out := writerFunc(func(p []byte) (int, error) {
		select {
		case <-header:
		default:
			close(header)
		}
		return len(p), nil
	})
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--model", "../../testdata/oracle/checkpoints/tiny-en", "--questions", "1", "--warmup", "1", "--paced"}, out, &stderr)
	}()
	select {
	case <-header:
	case err := <-done:
		t.Fatalf("ended before its header: %v\n%s", err, stderr.String())
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--paced still waiting for a cue 10 s after its context was cancelled")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestPacedRefusesSeveralWorkloads(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--model", "../../testdata/oracle/checkpoints/tiny-en", "--questions", "1,2", "--paced"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--paced") {
		t.Fatalf("err = %v, want a --paced error", err)
	}
}
