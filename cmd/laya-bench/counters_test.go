package main

import (
	"context"
	"io"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/cli"
)

// countingCPU is the cpu backend counting the streams it opened, as a
// backend.Counter.
type countingCPU struct {
	*cpu.Backend
	streams int
}

func (c *countingCPU) NewStream() backend.Stream {
	c.streams++
	return c.Backend.NewStream()
}

func (c *countingCPU) Counters() map[string]int { return map[string]int{"streams": c.streams} }

// A backend's counters go with each result as their change over the timed
// requests only (not the first call's or the warm-up's).
func TestCounters(t *testing.T) {
	be := &countingCPU{Backend: cpu.New()}
	defer be.Close()
	ctx := context.Background()
	agent, err := laya.Load(ctx, "../../testdata/oracle/checkpoints/tiny-en", laya.WithBackendInstance(be))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	o, err := parseOptions([]string{"--model", "x", "--questions", "2", "--runs", "3", "--warmup", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	results, err := measureAll(ctx, agent, be, o, "tiny-en", cli.NewProgress(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	// Two questions are one batch: one stream a request.
	if got := results[0].Counters["streams"]; got != 3 {
		t.Errorf("counters %v over 3 timed requests, want streams 3", results[0].Counters)
	}
}
