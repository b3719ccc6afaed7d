package emu

import (
	"errors"
	"regexp"
	"strconv"
	"testing"

	"github.com/laya-metal/laya/metal/emu/internal/rt"
)

// TestDispatchStatusesMatchABI holds the Go side's dispatch statuses to the
// values mslemu_abi.h gives them, so that the runtime and the host cannot
// drift apart: errors are classified by these numbers.
func TestDispatchStatusesMatchABI(t *testing.T) {
	header, err := rt.Files.ReadFile("src/mslemu_abi.h")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{}
	for _, m := range regexp.MustCompile(`MSLEMU_STATUS_([A-Z_]+) = (\d+)`).FindAllSubmatch(header, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		found[string(m[1])] = n
	}
	for name, want := range map[string]int{
		"DIAGNOSTIC":         dispatchStatusDiagnostic,
		"CANCELED":           dispatchStatusCanceled,
		"THREADGROUP_MEMORY": dispatchStatusThreadgroupMemory,
	} {
		if got, ok := found[name]; !ok || got != want {
			t.Errorf("MSLEMU_STATUS_%s = %d (declared %v) in mslemu_abi.h; the Go constant is %d", name, got, ok, want)
		}
	}
}

// TestASanRunnerStatus reads the ASan runner's diagnostic line as
// mslemu_runner.cpp writes it: the status, then the message.
func TestASanRunnerStatus(t *testing.T) {
	for _, c := range []struct {
		stderr, message string
		tgMemory        bool
	}{
		{"MSLEMU-RUNNING: k\nMSLEMU-ERROR: 1 kernel k: a.metal:3: barrier divergence\n", "kernel k: a.metal:3: barrier divergence", false},
		{"MSLEMU-RUNNING: k\nMSLEMU-ERROR: 3 kernel k: a.metal:9: threadgroup memory of 40000 bytes exceeds the 32768-byte limit\n",
			"kernel k: a.metal:9: threadgroup memory of 40000 bytes exceeds the 32768-byte limit", true},
		// Worded like the limit but with the diagnostic status: the status decides.
		{"MSLEMU-RUNNING: k\nMSLEMU-ERROR: 1 kernel k: exceeds the 32768-byte limit\n", "kernel k: exceeds the 32768-byte limit", false},
	} {
		err := asanError(c.stderr, errors.New("exit status 3"))
		var ke *KernelError
		if !errors.As(err, &ke) || ke.Message != c.message || ke.Kernel != "k" {
			t.Errorf("%q: %#v, want a KernelError of kernel k with message %q", c.stderr, err, c.message)
			continue
		}
		if got := errors.Is(err, ErrThreadgroupMemory); got != c.tgMemory {
			t.Errorf("%q: errors.Is(err, ErrThreadgroupMemory) = %v, want %v", c.stderr, got, c.tgMemory)
		}
	}
}
