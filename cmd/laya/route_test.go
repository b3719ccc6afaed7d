package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRouteCommand(t *testing.T) {
	dir := t.TempDir()
	stateFile := filepath.Join(dir, "state.json")
	os.WriteFile(stateFile, []byte(`{"subject": "Conta", "body": "Olá, não consigo acessar minha conta e preciso de ajuda urgente."}`), 0o644)
	typed := `{"urgency": {"type": "noul", "instructions": "u"}, "severity": {"type": "noul", "instructions": "s"}, "disposition": {"type": "noul", "instructions": "d"}, "true_positive": {"type": "noul", "instructions": "t"}, "credential_compromise": {"type": "noul", "instructions": "c"}}`
	tests := []struct {
		name    string
		args    []string
		stdin   string
		want    []string
		wantErr string
	}{
		{name: "english text", args: []string{"--state", "I was charged twice for my order, please refund it."},
			want: []string{`"model": "english"`, `"repo": "convaiinnovations/laya"`, `"reason": "English Latin text"`, `"workflow": null`}},
		{name: "json file", args: []string{"--state", "@" + stateFile},
			want: []string{`"model": "multilingual"`, `looks like 'pt'`, `"language": "pt"`}},
		{name: "stdin", args: []string{"--state", "-"}, stdin: "我的订单还没有到",
			want: []string{`"model": "multilingual"`, `"script": "han"`}},
		{name: "explicit model, mlx repos", args: []string{"--state", "x", "--model", "typed", "--repos", "mlx"},
			want: []string{`"model": "typed-decisions"`, `"repo": "aac6fef/laya-typed-decisions-mlx"`, `"detection": null`}},
		{name: "workflow", args: []string{"--state", "hello", "--questions", typed, "--auto-task"},
			want: []string{`"model": "typed-decisions"`, `"workflow": "security_incidents"`}},
		{name: "lang", args: []string{"--state", "hello there", "--lang", "de_DE.UTF-8"},
			want: []string{`"model": "multilingual"`, `explicit lang='de_DE.UTF-8'`}},
		{name: "unknown model", args: []string{"--state", "x", "--model", "gpt"}, wantErr: "unknown model"},
		{name: "no state", args: nil, wantErr: "--state is required"},
		// An empty state is a state: upstream's analyse("") finds no letters.
		{name: "empty state", args: []string{"--state", ""},
			want: []string{`"model": "english"`, `"reason": "no letters detected in state; using default (english)"`, `"script": "unknown"`}},
		{name: "empty state, default multilingual", args: []string{"--state", "", "--default", "ml"},
			want: []string{`"model": "multilingual"`, `using default (multilingual)`}},
		// Inline JSON is a structured state: its keys are not read. As text, the
		// English key words would outvote the Portuguese value (en 4, pt 3).
		{name: "inline JSON, keys ignored", args: []string{"--state", `{"subject of the message from the customer": "Bom dia, preciso de ajuda com a minha conta"}`},
			want: []string{`"model": "multilingual"`, `looks like 'pt'`}},
		{name: "inline text that is not JSON", args: []string{"--state", "[URGENT] I was charged twice for my order, please refund it."},
			want: []string{`"model": "english"`, `"reason": "English Latin text"`}},
		{name: "state and batch", args: []string{"--batch", "--state", "x"}, wantErr: "drop --state"},
		{name: "extra argument", args: []string{"--state", "x", "y"}, wantErr: `unexpected argument "y"`},
		{name: "bad preset", args: []string{"--state", "x", "--preset", "nope"}, wantErr: "--preset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runRoute(context.Background(), tt.args, strings.NewReader(tt.stdin), &out, &errOut)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %s lacks %s", out.String(), w)
				}
			}
			if !strings.HasSuffix(out.String(), "}\n") {
				t.Errorf("output does not end in one JSON object and a newline: %q", out.String())
			}
		})
	}
}
