package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
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
	if h.Questions != 3 || h.InputTokens < 3*4 || h.Backend != "cpu" {
		t.Errorf("header %+v", h)
	}
	for _, l := range lines[1:] {
		var r pacedRun
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.MS <= 0 {
			t.Errorf("timing line %q: %v", l, err)
		}
	}
}

func TestPacedRefusesSeveralWorkloads(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--model", "../../testdata/oracle/checkpoints/tiny-en", "--questions", "1,2", "--paced"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--paced") {
		t.Fatalf("err = %v, want a --paced error", err)
	}
}
