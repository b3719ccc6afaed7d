package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Logs as go test, the Objective-C runtime, Metal and laya-bench write
// them (the shapes the report reads; the values are made up).
const (
	deviceLog = `=== RUN   TestDeviceInfo
    device_firstrun_darwin_test.go:24: metal-device name="Apple M2" family=apple8 msl=3.1 math=safe fp-functions=precise page=16384 tg-memory=32768 max-buffer=12884901888 unified-memory=true working-set=17179869184
--- PASS: TestDeviceInfo (0.21s)
=== RUN   TestDeviceDispatchAllocations
    device_firstrun_darwin_test.go:180: allocations: Dispatch 1, Barrier(buf) 0, Barrier() 0
    device_firstrun_darwin_test.go:182: allocations per call: Dispatch 1, Barrier(buf) 0, Barrier() 0; want 0
--- FAIL: TestDeviceDispatchAllocations (0.05s)
FAIL
FAIL	github.com/laya-metal/laya/metal	1.234s
`
	panicLog = `=== RUN   TestForwardGoldensGPU
panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x2 addr=0x0 pc=0x1029a3c]

goroutine 7 [running]:
github.com/laya-metal/laya/metal.(*systemDevice).NewBuffer(...)
	/Users/x/laya-metal/metal/buffer_darwin.go:60 +0x2c
FAIL	github.com/laya-metal/laya/backend/gpu	0.310s
`
	validationLog = `2026-12-01 10:00:00.000 metal.test[123:456] Metal API Validation Enabled
objc[123]: MISSING POOLS: (0x16f) Object 0x600 of class __NSCFString autoreleased with no pool in place - just leaking - break on objc_autoreleaseNoPool() to debug
objc[123]: MISSING POOLS: (0x16f) Object 0x601 of class NSError autoreleased with no pool in place - just leaking - break on objc_autoreleaseNoPool() to debug
ok  	github.com/laya-metal/laya/metal	2.0s
`
	benchLog = `| checkpoint | backend | questions | p50 ms | gpu ms |
|---|---|---|---|---|
| real-en | metal | 5 | 3.10 | 1.20 |

GPU time per operation, real-en metal Q=5 (each op synced alone: inflated, for ranking; sum 2.00 ms/request):
          op| per request| GPU ms/request| share|
 linear+gelu|        28.0|          0.900|  45.0%|
   attention|        14.0|          0.500|  25.0%|

`
	rssLog = `    firstrun_darwin_test.go:61: rss-after-load checkpoint=real-en weights-file=3354772 in-place=3200000 copied=10000 fallback=0 max-rss-before=20000000 max-rss-after=24000000 growth=4000000
    firstrun_darwin_test.go:63: mapped weights: 3200000 bytes in place, 10000 copied by design, 0 copied as a fallback
`
)

func writeFixture(t *testing.T, steps string, logs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"steps.tsv": steps,
		"env.txt":   "macos: 15.1 (24B83)\nchip: Apple M2\nrosetta: 0\ngo: go1.26.0 darwin/arm64\n",
	}
	for k, v := range logs {
		files[k] = v
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func report(t *testing.T, dir string) string {
	t.Helper()
	var b bytes.Buffer
	if err := writeReport(&b, dir); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// reportHas fails the test for each of wants the report lacks.
func reportHas(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q\n--- report:\n%s", want, got)
		}
	}
}

func TestReportFailure(t *testing.T) {
	dir := writeFixture(t, "darwin vet\tPASS\t12.5\tvet.log\t\n"+
		"GPU device tests\tFAIL\t8.0\tdevice.log\t\n"+
		"model on the GPU\tFAIL\t3.0\tmodel.log\tpanic\n"+
		"emulator tests\tSKIP\t0\t\tno clang\n"+
		"validation pass\tPASS\t20\tvalidation.log\t\n"+
		"GPU benchmark\tPASS\t30\tbench.log\t\n"+
		"RSS after load\tPASS\t2\trss.log\t\n",
		map[string]string{"vet.log": "", "device.log": deviceLog, "model.log": panicLog, "validation.log": validationLog,
			"bench.log": benchLog, "rss.log": rssLog})
	got := report(t, dir)
	reportHas(t, got,
		"macos:           15.1 (24B83)",
		"[FAIL] GPU device tests",
		"log: device.log  tests: 1 passed, 0 skipped",
		"[SKIP] emulator tests",
		"(no clang)",
		"== device\nmetal-device name=\"Apple M2\" family=apple8",
		"rss-after-load checkpoint=real-en",
		"mapped weights: 3200000 bytes in place",
		"warnings: 2 (missing autorelease pools: 2, Metal validation: 0)",
		"objc[123]: MISSING POOLS",
		"| real-en | metal | 5 | 3.10 | 1.20 |",
		"GPU time per operation, real-en metal Q=5",
		" linear+gelu|        28.0|",
		"== failure: GPU device tests (device.log)",
		"  --- FAIL: TestDeviceDispatchAllocations (0.05s)",
		"device_firstrun_darwin_test.go:182: allocations per call",
		"== failure: model on the GPU (model.log)",
		"  panic: runtime error: invalid memory address",
		"  [signal SIGSEGV: segmentation violation",
		"  | \t/Users/x/laya-metal/metal/buffer_darwin.go:60 +0x2c",
		"VERDICT: FAIL on Apple M2, macOS 15.1 (24B83): GPU device tests; model on the GPU",
	)
	if strings.Contains(got, "== failure: darwin vet") {
		t.Error("a passing step is reported as a failure")
	}
	if !strings.HasSuffix(strings.TrimSpace(got), "GPU device tests; model on the GPU") {
		t.Error("the verdict is not the last line")
	}
}

func TestVerdicts(t *testing.T) {
	env := map[string]string{"chip": "Apple M4", "macos": "15.2"}
	pass := []step{{Name: "a", Status: "PASS"}}
	skip := append(pass, step{Name: "GPU device tests (cgo)", Status: "SKIP"})
	tests := []struct {
		steps []step
		v     validation
		want  string
	}{
		{pass, validation{}, "VERDICT: PASS on Apple M4, macOS 15.2: the Metal backend works"},
		{skip, validation{}, "VERDICT: PASS on Apple M4, macOS 15.2 (skipped: GPU device tests (cgo))"},
		{pass, validation{Metal: 3}, "VERDICT: PASS WITH WARNINGS on Apple M4, macOS 15.2: 0 missing-pool and 3 Metal validation warnings"},
		{append(skip, step{Name: "b", Status: "FAIL"}), validation{MissingPools: 1}, "VERDICT: FAIL on Apple M4, macOS 15.2: b"},
	}
	for _, tt := range tests {
		if got := verdict(tt.steps, tt.v, env); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

func TestCountValidation(t *testing.T) {
	log := validationLog + `-[MTLDebugComputeCommandEncoder setBuffer:offset:atIndex:]:1234: failed assertion ` + "`offset must be < [buffer length]'\n"
	v := countValidation([]byte(log))
	if v.MissingPools != 2 || v.Metal != 1 || len(v.Samples) != 3 {
		t.Errorf("%+v; want 2 missing pools, 1 Metal warning (the enabled banner is not one)", v)
	}
}

func TestParseStepsRejectsBadStatus(t *testing.T) {
	if _, err := parseSteps(strings.NewReader("x\tOK\t1\t\t\n")); err == nil || !strings.Contains(err.Error(), `status "OK"`) {
		t.Errorf("err = %v", err)
	}
	steps, err := parseSteps(strings.NewReader("only name\tPASS\n\n"))
	if err != nil || len(steps) != 1 || steps[0].Log != "" {
		t.Errorf("short line: %+v, %v", steps, err)
	}
}

func TestHeadTail(t *testing.T) {
	log := []byte("a\nb\nc\n")
	if got := strings.Join(head(log, 2), ","); got != "a,b" {
		t.Errorf("head = %s", got)
	}
	if got := strings.Join(tail(log, 2), ","); got != "b,c" {
		t.Errorf("tail = %s", got)
	}
	if head(nil, 3) != nil || tail(nil, 3) != nil {
		t.Error("an empty log has no lines")
	}
}

func TestFailureLinesCap(t *testing.T) {
	var b strings.Builder
	for range 50 {
		b.WriteString("--- FAIL: TestX (0.00s)\nnoise\n")
	}
	lines, more := failureLines([]byte(b.String()), 40)
	if len(lines) != 40 || more != 10 {
		t.Errorf("%d lines, %d more; want 40 and 10", len(lines), more)
	}
}
