package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A compile error of the Metal compiler, as OpenSystem returns it inside a
// test's multi-line t.Fatalf (indented, no .go:N: prefix on its lines).
const compileErrorLog = `=== RUN   TestDeviceKernels
    device_kernels_darwin_test.go:27: OpenSystemDefault: metal: shader compile failed: kernels/gemm.metal:
        kernels/gemm.metal:231:5: error: cannot initialize a variable of type 'threadgroup float4 *' with an rvalue of type 'threadgroup half4 *'
            *(threadgroup TW4*)(wb + (e / (kBK / 4)) * kLdW) = wr[q];
            ^
        kernels/attention.metal:208:12: warning: unused variable 'dh'
--- FAIL: TestDeviceKernels (0.40s)
FAIL
FAIL	github.com/laya-metal/laya/metal	0.912s
`

// The compiler's diagnostics reach the report, in their own section and in
// the failure's lines, and a failing emulator step gets its own verdict
// without sinking the GPU's.
func TestReportCompilerErrorsAndSeparateVerdicts(t *testing.T) {
	dir := writeFixture(t, "GPU device tests\tFAIL\t3\tdevice.log\t\n"+
		"emulator tests\tFAIL\t40\temu.log\t\n",
		map[string]string{"device.log": compileErrorLog, "emu.log": panicLog})
	got := report(t, dir)
	reportHas(t, got,
		"== Metal compiler diagnostics (from every log)\n  kernels/gemm.metal:231:5: error: cannot initialize a variable",
		"  kernels/attention.metal:208:12: warning: unused variable 'dh'",
		"== failure: GPU device tests (device.log)\n",
		"        kernels/gemm.metal:231:5: error: cannot initialize",
		"EMULATOR VERDICT: FAIL: emulator tests (the GPU verdict below does not depend on it)",
		"VERDICT: FAIL on Apple M2, macOS 15.1 (24B83): GPU device tests",
	)
	if strings.Contains(got, "GPU device tests; emulator tests") {
		t.Error("the emulator failure sank the GPU verdict")
	}

	// The GPU passing and the emulator failing: the GPU verdict is PASS.
	dir = writeFixture(t, "GPU device tests\tPASS\t3\tdevice.log\t\n"+"emulator tests\tFAIL\t40\temu.log\t\n",
		map[string]string{"device.log": "ok\n", "emu.log": panicLog})
	if got := report(t, dir); !strings.HasSuffix(strings.TrimSpace(got), "VERDICT: PASS on Apple M2, macOS 15.1 (24B83): the Metal backend works") {
		t.Errorf("GPU passed, emulator failed:\n%s", got)
	}
}

// The self-test's timing, the parity lines, the soak and the pools rerun
// are reported.
func TestReportRoundTwoSections(t *testing.T) {
	dir := writeFixture(t, "GPU device tests\tPASS\t3\tdevice.log\t\n"+
		"validation pass\tPASS\t20\tvalidation.log\t\n"+
		"pools in Dispatch\tPASS\t9\tpools.log\t\n"+
		"predict parity\tPASS\t30\tparity.log\t\n"+
		"serve soak\tPASS\t300\tsoak.log\t\n",
		map[string]string{
			"device.log":     "    selftest_darwin_test.go:20: self-test device=\"Apple M2\" canaries=22 elapsed=41ms worst=0.31\n",
			"validation.log": validationLog,
			"pools.log":      "ok  \tgithub.com/laya-metal/laya/metal\t2.0s\n",
			"parity.log":     "parity email.json: ok: 14 numbers, largest difference 0.0001 (tolerance 2e-04)\n",
			"soak.log":       "soak rss requests=0 rss_kb=100\nsoak requests=10000 errors=0 seconds=95.0 rss_first_kb=100 rss_max_kb=180 rss_last_kb=170 second_half_growth_kb=2\n",
		})
	got := report(t, dir)
	reportHas(t, got,
		"== self-test at open (measured on this Mac)\nself-test device=\"Apple M2\" canaries=22 elapsed=41ms",
		"missing-pool warnings without them: 2; with them: 0",
		"make SystemOptions.EncodePools the default",
		"parity email.json: ok: 14 numbers",
		"soak requests=10000 errors=0",
		"EMULATOR VERDICT: NOT RUN",
		"VERDICT: PASS WITH WARNINGS",
	)
}

func TestParity(t *testing.T) {
	cpu := `{"model": "m", "answers": {"d": {"type": "choice", "choice": "sales", "probabilities": {"billing": 0.223, "sales": 0.6169}}}, "usage": {"input_tokens": 287}}`
	for _, tt := range []struct {
		name, gpu, wantErr string
	}{
		{"equal", cpu, ""},
		{"within the tolerance", strings.Replace(cpu, "0.6169", "0.6170", 1), ""},
		{"other choice", strings.Replace(cpu, `"sales", "prob`, `"billing", "prob`, 1), `$.answers.d.choice: "sales" against "billing"`},
		{"probability off", strings.Replace(cpu, "0.223", "0.2236", 1), "$.answers.d.probabilities.billing: 0.223 against 0.2236"},
		{"token count", strings.Replace(cpu, "287", "288", 1), "$.usage.input_tokens"},
		{"missing answer", `{"model": "m", "answers": {}, "usage": {"input_tokens": 287}}`, `$.answers: key "d" only in the first`},
	} {
		_, _, err := parity([]byte(cpu), []byte(tt.gpu))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestSoak(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !bytes.Equal(b, []byte(`{"x":1}`)) {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if served.Add(1) == 7 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	kb := 1000
	res, err := soak(context.Background(), srv.Client(), srv.URL, []byte(`{"x":1}`), 200, func() (int, error) { kb += 10; return kb, nil })
	if err != nil {
		t.Fatal(err)
	}
	out := res.String()
	if res.errors != 1 || !strings.Contains(res.firstErr, "503") || len(res.samples) != 21 ||
		!strings.Contains(out, "soak requests=200 errors=1 ") || !strings.Contains(out, "rss_first_kb=1010 rss_max_kb=1210 rss_last_kb=1210") {
		t.Errorf("%+v\n%s", res, out)
	}
}
