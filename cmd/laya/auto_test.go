//go:build !(darwin && arm64)

package main

import (
	"bytes"
	"strings"
	"testing"
)

// laya serve's /health device: a named backend as it is; auto as the
// backend it chose with why a better one was passed over, also said once
// on stderr.
func TestResolveBackend(t *testing.T) {
	for _, tt := range []struct {
		flag, resolved, device, stderr string
	}{
		{"cpu", "cpu", "cpu", ""},
		{"auto", "cpu", "cpu (auto; metal needs macOS on Apple Silicon (darwin/arm64))",
			"laya: backend auto: cpu (metal needs macOS on Apple Silicon (darwin/arm64))\n"},
	} {
		var stderr bytes.Buffer
		resolved, device, err := resolveBackend(tt.flag, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		if resolved != tt.resolved || device != tt.device || stderr.String() != tt.stderr {
			t.Errorf("resolveBackend(%q) = %q, %q, stderr %q; want %q, %q, %q", tt.flag, resolved, device, stderr.String(),
				tt.resolved, tt.device, tt.stderr)
		}
	}
	if !strings.Contains(backendList(), "auto") {
		t.Errorf("backendList() = %q, want auto listed", backendList())
	}
}
