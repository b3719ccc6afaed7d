package main

import (
	"fmt"
	"io"

	"github.com/laya-metal/laya/backend"
)

// printBackendNote writes the agent's backend line, if "auto" passed over a
// better backend, to stderr: one line saying what runs and why, so a Mac user
// whose GPU was refused learns it without asking.
func printBackendNote(stderr io.Writer, agent autoChooser) {
	if choice, ok := agent.AutoChoice(); ok && choice.Fallback() {
		fmt.Fprintln(stderr, "laya: backend "+choice.String())
	}
}

// autoChooser is the part of *laya.Agent printBackendNote reads.
type autoChooser interface {
	AutoChoice() (backend.AutoChoice, bool)
}

// resolveBackend turns --backend auto into the backend it chooses here (the
// choice is made once per process, so the models loaded after it use the
// same one), with the device string /health reports: the name, and why a
// better backend was passed over. Other names pass through.
func resolveBackend(name string, stderr io.Writer) (resolved, device string, err error) {
	if name != backend.Auto {
		return name, name, nil
	}
	be, choice, err := backend.OpenAuto()
	if err != nil {
		return "", "", err
	}
	be.Close()
	if !choice.Fallback() {
		return choice.Name, choice.Name, nil
	}
	fmt.Fprintln(stderr, "laya: backend "+choice.String())
	return choice.Name, fmt.Sprintf("%s (auto; %s)", choice.Name, choice.Passed), nil
}

// greedyByDefault reports whether laya serve batches greedily on the
// backend registered as name unless LAYA_BATCH_GREEDY says otherwise: on a
// GPU's (backend.Accelerator), whose pass of one request takes a few
// milliseconds, waiting the whole window for company would multiply a lone
// request's latency.
func greedyByDefault(name string) bool { return backend.HasTrait(name, backend.Accelerator) }

// inferWorkersByDefault is laya serve's LAYA_INFER_WORKERS on the backend
// registered as name when the variable is unset: two dispatchers on a
// backend whose passes run side by side to advantage
// (backend.PassesSideBySide: cuda, each pass on a CUDA stream of its own,
// so that a full pass's host work, its rows, tokens, recording and the
// answers of the one before, overlaps the GPU's work on the other); the
// greedy dispatcher starts a second pass only once its batch is full
// (serve's gatherWhileBusy). One elsewhere: a CPU's passes already use
// every core, and no other GPU backend has been measured with two.
func inferWorkersByDefault(name string) int {
	if backend.HasTrait(name, backend.PassesSideBySide) {
		return 2
	}
	return 1
}
