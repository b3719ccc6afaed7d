package backend

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// The registry follows database/sql's drivers: a backend package registers
// itself in its init function, the program chooses which backends it links
// by importing their packages, and a duplicate name is a programming error
// (two packages claiming one name), reported at start-up by a panic rather
// than by one silently replacing the other.

// Opener opens a backend.
type Opener func() (Backend, error)

var (
	registryMu sync.RWMutex
	openers    = map[string]Opener{}
	traits     = map[string]Trait{}
)

// Trait is what a backend declares of itself when it registers, for
// callers that choose a policy before opening one.
type Trait uint8

const (
	// Accelerator marks a backend that runs on a GPU: a pass costs about
	// the same for a few rows as for one, and one row takes milliseconds,
	// so a server gives each pass what is queued rather than waiting for
	// company (laya serve's LAYA_BATCH_GREEDY default).
	Accelerator Trait = 1 << iota
	// PassesSideBySide marks a backend on which two passes of a server's
	// batches, run at once, finish more requests a second than one after
	// the other (the cuda backend: each pass on a CUDA stream of its own,
	// so that one's host work overlaps the other's GPU work; measured, and
	// only there). laya serve runs two dispatchers on it
	// (LAYA_INFER_WORKERS's default).
	PassesSideBySide
)

// HasTrait reports whether the backend registered under name declared t.
func HasTrait(name string, t Trait) bool {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return traits[name]&t != 0
}

// unavailable names the backends this module has but a program may not link,
// with what they need: Open's error says why instead of only "unknown".
var unavailable = map[string]string{
	"metal":     "needs macOS on Apple Silicon (darwin/arm64)",
	"metal-emu": "needs clang ≥ 16 and a blank import of github.com/laya-metal/laya/backend/metalemu",
	"metal-cuda": "needs Linux with an NVIDIA GPU, its CUDA driver and NVRTC, and a blank import of " +
		"github.com/laya-metal/laya/backend/metalcuda",
	"cuda": "needs Linux with an NVIDIA GPU (compute capability 8.0 or newer), its driver, NVRTC and cuBLAS, and a blank " +
		"import of github.com/laya-metal/laya/backend/cuda (laya: build with -tags cuda; laya-bench has it)",
}

// Register makes a backend available to Open under name, with the traits it
// declares. It is meant to be called from a backend package's init
// function. It panics if open is nil or name is empty or already
// registered.
func Register(name string, open Opener, ts ...Trait) {
	if name == "" || open == nil {
		panic("backend: Register with an empty name or a nil opener")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := openers[name]; dup {
		panic("backend: Register called twice for backend " + name)
	}
	openers[name] = open
	for _, t := range ts {
		traits[name] |= t
	}
}

// Open opens the backend registered under name. For a name nobody
// registered it returns an error wrapping ErrUnknownBackend that lists the
// backends registered in this program and the module's backends that are
// not, with what each needs.
func Open(name string) (Backend, error) {
	registryMu.RLock()
	open, ok := openers[name]
	registryMu.RUnlock()
	if !ok {
		return nil, unknownBackend(name)
	}
	return open()
}

func unknownBackend(name string) error {
	var b strings.Builder
	if why, known := unavailable[name]; known {
		fmt.Fprintf(&b, "%q: not in this program; it %s", name, why)
	} else {
		fmt.Fprintf(&b, "%q", name)
	}
	registered := Names()
	fmt.Fprintf(&b, "; registered: %s", strings.Join(registered, ", "))
	var others []string
	for _, n := range slices.Sorted(maps.Keys(unavailable)) {
		if n == name || slices.Contains(registered, n) {
			continue
		}
		others = append(others, fmt.Sprintf("%s (%s)", n, unavailable[n]))
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "; not available here: %s", strings.Join(others, ", "))
	}
	return fmt.Errorf("%w %s", ErrUnknownBackend, b.String())
}

// Names lists the registered backends, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Sorted(maps.Keys(openers))
}
