package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/laya-metal/laya/internal/cli"
)

const tinyModel = "../../testdata/oracle/checkpoints/tiny-en"

// Mistakes on the command line print one line and a pointer to the -h
// that explains them, and exit 2; no error is prefixed twice.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want, help string
	}{
		{[]string{"--nope"}, "laya-bench: unknown flag --nope (flags: ", "laya-bench"},
		{[]string{"--runs", "x"}, `laya-bench: --runs "x": want an integer (timed runs per workload)`, "laya-bench"},
		{[]string{"--questions", "0"}, `laya-bench: --questions: "0" is not a positive count`, "laya-bench"},
		{[]string{"--format", "xml", "--model", tinyModel}, `laya-bench: --format "xml": use md, json or gobench`, "laya-bench"},
		{[]string{}, "laya-bench: no checkpoint: give --model DIR or --synthetic english|multilingual|tiny", "laya-bench"},
		{[]string{"--synthetic", "huge"}, `laya-bench: --synthetic "huge": use english, multilingual or tiny`, "laya-bench"},
		{[]string{"--model", tinyModel, "--backend", "nope"}, `laya-bench: backend: unknown backend "nope"; registered: auto, cpu, cuda, metal-emu`, "laya-bench"},
		{[]string{"--model", tinyModel, "--joins", "--backend", "metal-emu"}, "laya-bench: --joins: only the cpu backend", "laya-bench"},
		{[]string{"--model", tinyModel, "extra"}, `laya-bench: unexpected argument "extra"`, "laya-bench"},
		{[]string{"--model", tinyModel, "--vary", "4", "--long"}, "laya-bench: --vary: not with --long", "laya-bench"},
		{[]string{"--compare", "only-one"}, "laya-bench: --compare: want two configurations A B, got 1 arguments", "laya-bench --compare"},
		{[]string{"--compare", "--runs", "1", "a", "b"}, "laya-bench: --compare: --runs must be ≥ 2", "laya-bench --compare"},
		{[]string{"--compare", "backend=nope,model=" + tinyModel, "backend=cpu,model=" + tinyModel}, `laya-bench: --compare backend=nope,model=` + tinyModel + `: laya: backend: unknown backend "nope"`, "laya-bench --compare"},
	} {
		var stdout, stderr bytes.Buffer
		code := cli.Report(&stderr, "laya-bench", run(context.Background(), tc.args, &stdout, &stderr))
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if code != 2 || len(lines) != 2 || !strings.HasPrefix(lines[0], tc.want) || lines[1] != "run '"+tc.help+" -h' for usage" {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant 2 and %s...\nrun '%s -h' for usage", tc.args, code, stderr.String(), tc.want, tc.help)
		}
		if strings.Contains(stderr.String(), "laya-bench: laya-bench") {
			t.Errorf("%q: doubled prefix: %s", tc.args, stderr.String())
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err != nil || !strings.HasPrefix(stdout.String(), "laya-bench ") {
			t.Errorf("%v: %v, %q", args, err, stdout.String())
		}
	}
}

// The md output is Markdown: every table has a header, a separator row and
// rows of the header's width, as a Markdown reader parses them; the cells
// hold what the json output holds.
func TestMarkdownOutput(t *testing.T) {
	args := []string{"--model", tinyModel, "--questions", "1,2", "--runs", "2", "--warmup", "0", "--joins"}
	var md, js, stderr bytes.Buffer
	if err := run(context.Background(), args, &md, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if err := run(context.Background(), append(args, "--format", "json"), &js, &stderr); err != nil {
		t.Fatal(err)
	}
	var rep struct{ Results []result }
	if err := json.Unmarshal(js.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	tables := parseMDTables(t, md.String())
	if len(tables) != 3 { // the results, then --joins' table per workload
		t.Fatalf("%d tables, want 3:\n%s", len(tables), md.String())
	}
	main := tables[0]
	if got := strings.Join(main[0], ","); got != "checkpoint,backend,Q,tokens,first ms,P50 ms,P95 ms,P99 ms,mean ± sd ms,q/s" {
		t.Errorf("header %s", got)
	}
	if len(main) != 3 {
		t.Fatalf("%d result rows, want 2", len(main)-1)
	}
	for i, row := range main[1:] {
		r := rep.Results[i]
		if row[0] != "tiny-en" || row[1] != "cpu" || row[2] != strconv.Itoa(r.Questions) || row[3] != strconv.Itoa(r.InputTokens) || r.InputTokens <= 0 {
			t.Errorf("row %q, want tiny-en, cpu, %d questions, %d tokens", row, r.Questions, r.InputTokens)
		}
	}
	if tables[1][0][0] != "call site" || len(tables[1]) < 2 {
		t.Errorf("joins table %q", tables[1])
	}
	// Progress is for a terminal: stderr here is a buffer and stays empty.
	if stderr.Len() > 0 {
		t.Errorf("stderr %q", stderr.String())
	}
}

func TestCompareMarkdown(t *testing.T) {
	var out, stderr bytes.Buffer
	args := []string{"--compare", "--questions", "1", "--runs", "2", "--warmup", "0", tinyModel, "backend=cpu,model=" + tinyModel}
	if err := run(context.Background(), args, &out, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	tables := parseMDTables(t, out.String())
	if len(tables) != 1 || len(tables[0]) != 2 || tables[0][1][0] != "q=1" {
		t.Errorf("tables %q in\n%s", tables, out.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr %q", stderr.String())
	}
}

// --synthetic works from any directory: the tokenizer it ships is built in.
func TestSyntheticOutsideRepository(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	want, err := os.ReadFile("../../testdata/tokenizers/modernbert/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--synthetic", "tiny", "--questions", "1", "--runs", "1", "--warmup", "0"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "laya-metal", "synthetic", "tiny", "tokenizer", "tokenizer.json"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("shipped tokenizer.json: %d bytes (err %v), want testdata's %d", len(got), err, len(want))
	}
	if !strings.Contains(stdout.String(), "| synthetic-tiny ") {
		t.Errorf("output:\n%s", stdout.String())
	}
	// The one-time notice, and no progress: stderr is not a terminal.
	if s := stderr.String(); strings.Count(s, "\n") != 1 || !strings.HasPrefix(s, "laya-bench: writing synthetic tiny checkpoint") || strings.Contains(s, "\r") {
		t.Errorf("stderr %q", s)
	}
	// A --tokenizer that is not there says so, and how to do without.
	err = run(context.Background(), []string{"--synthetic", "english", "--tokenizer", "nowhere"}, &stdout, &stderr)
	if !cli.IsUsage(err) || !strings.Contains(err.Error(), "--tokenizer nowhere: ") || !strings.Contains(err.Error(), "leave --tokenizer out") {
		t.Errorf("err %v", err)
	}
}
