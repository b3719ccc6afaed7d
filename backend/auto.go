package backend

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Auto is the name of the backend that stands for the best one that works
// here: the first of autoCandidates registered in this program that opens.
// It is registered like any backend, so Open(Auto) and every --backend
// flag take it; OpenAuto also says what it chose and why.
const Auto = "auto"

// autoCandidates are the backends Auto tries, best first; cpu, last,
// always opens. A backend belongs here only if opening it fails rather
// than letting it compute wrong: "metal" runs its self-test at open
// (backend/gpu.Open). The emulated and translated devices ("metal-emu",
// "metal-cuda") are tools for testing kernels and never serve by default;
// a native GPU backend joins, before "cpu", once its own open refuses a
// device its self-test fails on.
var autoCandidates = []string{"metal", "cpu"}

// AutoChoice is what Auto resolved to.
type AutoChoice struct {
	// Name is the backend chosen.
	Name string
	// Passed says, for each better candidate passed over, why: one line,
	// empty when the first candidate opened.
	Passed string
}

// Fallback reports whether a better candidate was passed over.
func (c AutoChoice) Fallback() bool { return c.Passed != "" }

// String is one line: "auto: cpu (metal: …)" or "auto: metal".
func (c AutoChoice) String() string {
	if c.Passed == "" {
		return Auto + ": " + c.Name
	}
	return Auto + ": " + c.Name + " (" + c.Passed + ")"
}

var (
	autoMu     sync.Mutex
	autoChosen *AutoChoice // the process's choice, once made
)

func init() {
	Register(Auto, func() (Backend, error) {
		be, _, err := OpenAuto()
		return be, err
	})
}

// OpenAuto opens the first candidate that is registered and opens, and
// says what it chose and why it passed over the ones before. The choice is
// made once per process: later calls open the chosen backend directly, so
// a GPU that failed its self-test is not tried (and timed) again for every
// model loaded.
func OpenAuto() (Backend, AutoChoice, error) {
	autoMu.Lock()
	defer autoMu.Unlock()
	if autoChosen != nil {
		be, err := Open(autoChosen.Name)
		if err != nil {
			return nil, *autoChosen, fmt.Errorf("backend: %s: %w", *autoChosen, err)
		}
		return be, *autoChosen, nil
	}
	var passed []string
	var errs []error
	for _, name := range autoCandidates {
		be, err := Open(name)
		if err == nil {
			autoChosen = &AutoChoice{Name: name, Passed: strings.Join(passed, "; ")}
			return be, *autoChosen, nil
		}
		errs = append(errs, err)
		passed = append(passed, autoReason(name, err))
	}
	return nil, AutoChoice{}, fmt.Errorf("backend: auto: no backend opened: %w", errors.Join(errs...))
}

// autoReason is why candidate name was passed over, in one line.
func autoReason(name string, err error) string {
	if errors.Is(err, ErrUnknownBackend) {
		if why, ok := unavailable[name]; ok {
			return fmt.Sprintf("%s %s", name, why)
		}
		return name + " is not in this program"
	}
	return fmt.Sprintf("%s refused: %s", name, strings.Join(strings.Fields(err.Error()), " "))
}
