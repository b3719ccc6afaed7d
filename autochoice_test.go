package laya

import (
	"context"
	"slices"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// AutoChoice is what "auto" chose, for programs: the backend that runs, and
// the same note Warnings gives people when a better backend was passed
// over. A named backend, or the caller's own, made no choice.
func TestAgentAutoChoice(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	choice, ok := agent.AutoChoice()
	if !ok || choice.Name != agent.Backend() {
		t.Errorf("default backend: AutoChoice() = %+v, %v; want the choice of %q", choice, ok, agent.Backend())
	}
	if note := "backend " + choice.String(); slices.Contains(agent.Warnings(), note) != choice.Fallback() {
		t.Errorf("AutoChoice() = %+v (fallback %v), Warnings() = %q: the note %q belongs there exactly when auto fell back",
			choice, choice.Fallback(), agent.Warnings(), note)
	}

	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for _, c := range []struct {
		name string
		opt  Option
	}{{"WithBackend(cpu)", WithBackend("cpu")}, {"WithBackendInstance", WithBackendInstance(be)}} {
		named, err := Load(ctx, checkpointDir("tiny-en"), c.opt)
		if err != nil {
			t.Fatal(err)
		}
		if choice, ok := named.AutoChoice(); ok || choice != (backend.AutoChoice{}) {
			t.Errorf("%s: AutoChoice() = %+v, %v; want none", c.name, choice, ok)
		}
		named.Close()
	}
}
