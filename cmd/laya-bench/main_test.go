package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/laya-metal/laya/backend/cpu"
)

func TestRequestIsValidJSONWithOrderedQuestions(t *testing.T) {
	for _, long := range []bool{false, true} {
		var req struct {
			State     json.RawMessage            `json:"state"`
			Questions map[string]json.RawMessage `json:"questions"`
		}
		if err := json.Unmarshal(request(7, long), &req); err != nil {
			t.Fatalf("long=%v: %v", long, err)
		}
		if len(req.Questions) != 7 {
			t.Errorf("long=%v: %d questions, want 7", long, len(req.Questions))
		}
	}
}

// --vary's requests differ only in the state body's trailing words.
func TestVariedRequests(t *testing.T) {
	seen := map[string]bool{}
	for extra := range 4 {
		var req struct {
			State struct{ Body string } `json:"state"`
		}
		if err := json.Unmarshal(variedRequest(3, false, extra), &req); err != nil {
			t.Fatalf("%d extra words: %v", extra, err)
		}
		if !strings.HasSuffix(req.State.Body, "plan."+strings.Repeat(" ok", extra)) || seen[req.State.Body] {
			t.Errorf("%d extra words: body %q", extra, req.State.Body)
		}
		seen[req.State.Body] = true
	}
	if !bytes.Equal(variedRequest(3, true, 0), request(3, true)) {
		t.Errorf("no extra words is not request's")
	}
}

// GPU time appears next to wall time on a backend that reports it, and
// --profile lists the operations; the CPU backend has neither and refuses
// --profile. --joins prints the CPU backend's worker time per call site,
// and only there; --kernel likewise its GEMM kernel's speed
// (TestKernelReport).
func TestDeviceTimeColumns(t *testing.T) {
	const model = "../../testdata/oracle/checkpoints/tiny-en"
	cases := []struct {
		name    string
		args    []string
		want    []string
		notWant []string
		wantErr string
	}{
		{"metal-emu", []string{"--backend", "metal-emu", "--profile"},
			[]string{"GPU P50 ms", "GPU mean ms", "GPU time per operation", "linear+geglu", "attention"}, []string{"| geglu "}, ""},
		{"cpu", []string{"--backend", "cpu"}, []string{"P50 ms"}, []string{"GPU"}, ""},
		{"cpu profile", []string{"--backend", "cpu", "--profile"}, nil, nil, "cannot time operations"},
		{"cpu joins", []string{"--backend", "cpu", "--joins"}, []string{"Worker time per parallel operation", "call site", "idle", "late ms"}, nil, ""},
		{"joins elsewhere", []string{"--backend", "metal-emu", "--joins"}, nil, nil, "only the cpu backend"},
		{"kernel elsewhere", []string{"--backend", "metal-emu", "--kernel"}, nil, nil, "only the cpu backend"},
		{"json", []string{"--backend", "metal-emu", "--format", "json", "--profile"},
			[]string{`"gpu_samples_ms"`, `"op": "layerNorm+linear+geglu"`, `"host_ms"`, `"forward_beyond_gpu"`}, nil, ""},
		{"json cpu", []string{"--backend", "cpu", "--format", "json"}, []string{`"host_ms"`, `"prepare"`}, []string{`"forward_beyond_gpu"`}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--model", model, "--questions", "2", "--runs", "1", "--warmup", "0"}, c.args...)
			err := run(context.Background(), args, &stdout, &stderr)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (stderr: %s)", err, stderr.String())
			}
			out := stdout.String()
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestKernelReport: --kernel prints the kernel's GFLOP of a request as the
// kernel timing counted them, where this build has the kernel; elsewhere
// it refuses with the reason.
func TestKernelReport(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"--model", "../../testdata/oracle/checkpoints/tiny-en", "--questions", "2", "--runs", "2", "--warmup", "0", "--kernel", "--format", "json"}
	err := run(context.Background(), args, &stdout, &stderr)
	if _, ok := cpu.HotKernelGFLOPs(0); !ok {
		if err == nil || !strings.Contains(err.Error(), "no outer-product GEMM kernel") {
			t.Fatalf("err = %v, want the missing kernel named", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%v (stderr: %s)", err, stderr.String())
	}
	var out struct{ Results []result }
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%v in %s", err, stdout.String())
	}
	rs := out.Results
	if len(rs) != 1 || rs[0].Kernel == nil {
		t.Fatalf("no kernel row in %s", stdout.String())
	}
	k := rs[0].Kernel
	if !(k.GFLOPPerRequest > 0) || !(k.BusyMS > 0) || !(k.Share > 0 && k.Share <= 1) || !(k.GFLOPs > 0) || len(k.HotGFLOPs) != 2 {
		t.Errorf("kernel row %+v", k)
	}
}
