package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
)

// fixedChoice is an agent whose auto choice is given.
type fixedChoice struct {
	choice backend.AutoChoice
	ok     bool
}

func (f fixedChoice) AutoChoice() (backend.AutoChoice, bool) { return f.choice, f.ok }

// The note comes from what auto chose, not from reading warning text: one
// line when auto passed a backend over, none when it took the best one or
// the backend was named.
func TestPrintBackendNote(t *testing.T) {
	for _, tt := range []struct {
		name  string
		agent autoChooser
		want  string
	}{
		{"named backend", fixedChoice{}, ""},
		{"auto took the first", fixedChoice{backend.AutoChoice{Name: "metal"}, true}, ""},
		{"auto fell back", fixedChoice{backend.AutoChoice{Name: "cpu", Passed: "metal refused: self-test failed"}, true},
			"laya: backend auto: cpu (metal refused: self-test failed)\n"},
	} {
		var stderr bytes.Buffer
		printBackendNote(&stderr, tt.agent)
		if stderr.String() != tt.want {
			t.Errorf("%s: stderr %q, want %q", tt.name, stderr.String(), tt.want)
		}
	}

	// A loaded agent: its note is its own choice's, on any platform.
	agent, err := laya.Load(context.Background(), predictModel)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	var stderr bytes.Buffer
	printBackendNote(&stderr, agent)
	want := ""
	if choice, _ := agent.AutoChoice(); choice.Fallback() {
		want = "laya: backend " + choice.String() + "\n"
	}
	if stderr.String() != want {
		t.Errorf("default backend: stderr %q, want %q", stderr.String(), want)
	}
}
