package laya

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/weights"
)

// closeCounter is a backend whose Close is counted.
type closeCounter struct {
	backend.Backend
	closes atomic.Int32
}

func (c *closeCounter) Close() error { c.closes.Add(1); return c.Backend.Close() }

// WithBackendInstance runs on the caller's backend, answers as a backend
// opened by name does, and leaves closing it to the caller; a backend the
// agent opened by name is closed by Agent.Close.
func TestWithBackendInstance(t *testing.T) {
	ctx := context.Background()
	req := []byte(`{"state": "I was charged twice.", "questions": {"refund": {"type": "noul", "instructions": "Refund?"},
		"dept": {"type": "choice", "instructions": "Which team?", "criteria": ["billing", "technical"]}}}`)
	byName, err := Load(ctx, checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := byName.PredictJSON(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	byName.Close()

	be := &closeCounter{Backend: cpu.New()}
	for round := 0; round < 2; round++ { // one backend shared by two agents in turn
		agent, err := Load(ctx, checkpointDir("tiny-en"), WithBackendInstance(be))
		if err != nil {
			t.Fatal(err)
		}
		got, err := agent.PredictJSON(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("round %d: on the caller's backend %s, by name %s", round, got, want)
		}
		if err := agent.Close(); err != nil {
			t.Fatal(err)
		}
		if n := be.closes.Load(); n != 0 {
			t.Fatalf("round %d: Agent.Close closed the caller's backend (%d Close calls)", round, n)
		}
	}
	be.Close()

	// A load that fails after the backend was given must not close it either.
	be2 := &closeCounter{Backend: cpu.New()}
	if _, err := Load(ctx, "testdata", WithBackendInstance(be2)); err == nil {
		t.Fatal("Load(testdata) succeeded")
	}
	if n := be2.closes.Load(); n != 0 {
		t.Errorf("a failed Load closed the caller's backend")
	}
}

// newNetwork closes a backend it opened when the model does not fit it, and
// leaves a borrowed one open.
func TestNewNetworkClosesOnlyItsBackend(t *testing.T) {
	ckpt, err := weights.LoadCheckpoint(checkpointDir("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	be := &closeCounter{Backend: cpu.New()}
	// A pad id outside the vocabulary fails before any upload; a bad batch
	// size too: neither may close the borrowed backend.
	if _, err := newNetwork(ckpt, networkOptions{Instance: be, PadID: -1}); err == nil {
		t.Fatal("pad id -1 accepted")
	}
	n, err := newNetwork(ckpt, networkOptions{Instance: be, PadID: ckpt.Encoder.PadTokenID})
	if err != nil {
		t.Fatal(err)
	}
	if n.close(); be.closes.Load() != 0 {
		t.Error("network.close closed a borrowed backend")
	}
	owned, err := newNetwork(ckpt, networkOptions{PadID: ckpt.Encoder.PadTokenID})
	if err != nil {
		t.Fatal(err)
	}
	if !owned.ownsBe {
		t.Error("a backend opened by name is not owned by the network")
	}
	owned.close()
}

// forgetRecorder records the mappings a borrowed backend is told to forget.
type forgetRecorder struct {
	backend.Backend
	forgot [][]byte
}

func (f *forgetRecorder) ForgetMapping(m []byte) { f.forgot = append(f.forgot, m) }

// Agent.Close tells a borrowed backend to forget the checkpoint's mapping
// before unmapping it (the next checkpoint may be mapped at its address);
// a backend the agent opened is closed instead.
func TestCloseForgetsMappingOnBorrowedBackend(t *testing.T) {
	be := &forgetRecorder{Backend: cpu.New()}
	defer be.Close()
	agent, err := Load(context.Background(), checkpointDir("tiny-en"), WithBackendInstance(be))
	if err != nil {
		t.Fatal(err)
	}
	mapping := agent.ckpt.Weights.Mapping()
	if mapping == nil {
		t.Fatal("tiny-en is not mapped")
	}
	if err := agent.Close(); err != nil {
		t.Fatal(err)
	}
	if len(be.forgot) != 1 || &be.forgot[0][0] != &mapping[0] || len(be.forgot[0]) != len(mapping) {
		t.Errorf("Close told the backend to forget %d mappings, want the checkpoint's one", len(be.forgot))
	}
}
