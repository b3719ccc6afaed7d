//go:build !(darwin && arm64)

package laya

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Off Apple Silicon the default backend, "auto", runs on the cpu and says
// why in one warning line; metal-emu, linked into these tests, is never
// chosen. Naming a backend gives that backend and no warning.
func TestDefaultBackendAutoPicksCPU(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if agent.Backend() != "cpu" {
		t.Errorf("Backend() = %q, want cpu", agent.Backend())
	}
	if choice, ok := agent.AutoChoice(); !ok || choice.Name != "cpu" || !strings.Contains(choice.Passed, "metal needs macOS on Apple Silicon") {
		t.Errorf("AutoChoice() = %+v, %v; want cpu, passing over metal because it needs macOS on Apple Silicon", choice, ok)
	}
	i := slices.IndexFunc(agent.Warnings(), func(w string) bool { return strings.HasPrefix(w, "backend auto: cpu (") })
	if i < 0 || !strings.Contains(agent.Warnings()[i], "metal needs macOS on Apple Silicon") || strings.Contains(agent.Warnings()[i], "\n") {
		t.Errorf("Warnings() = %q, want one line saying auto chose cpu because metal needs macOS on Apple Silicon", agent.Warnings())
	}

	named, err := Load(ctx, checkpointDir("tiny-en"), WithBackend("cpu"))
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	for _, w := range named.Warnings() {
		if strings.HasPrefix(w, "backend") {
			t.Errorf("WithBackend(cpu): warning %q", w)
		}
	}
	if _, err := Load(ctx, checkpointDir("tiny-en"), WithBackend("metal")); err == nil || !strings.Contains(err.Error(), "metal") {
		t.Errorf(`WithBackend("metal") off a Mac: err = %v, want an error naming metal`, err)
	}
}
