package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	root      = "../../.."
	tinyModel = root + "/testdata/oracle/checkpoints/tiny-en"
)

// buildLaya builds cmd/laya (without -tags cuda, so it has the cpu backend
// only) once per test binary.
var layaBin string

func buildLaya(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds laya and serves a checkpoint; not in -short")
	}
	if layaBin != "" {
		return layaBin
	}
	dir, err := os.MkdirTemp("", "serveload-test")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "laya")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/laya").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	layaBin = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if layaBin != "" {
		os.RemoveAll(filepath.Dir(layaBin))
	}
	os.Exit(code)
}

func readCSV(t *testing.T, name string) [][]string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// The backend and serve flags reach laya serve, and each row names the
// device the server reports and counts the body's questions.
func TestRunBackendAndServeArgs(t *testing.T) {
	bin := buildLaya(t)
	tests := []struct {
		name      string
		body      string
		args      []string
		questions float64 // per request
		backend   string  // how the backend column starts
		apiKey    string  // LAYA_API_KEY for the server and the clients
	}{
		{"one question", root + "/testdata/requests/refund.json", []string{"-backend", "cpu"}, 1, "cpu", ""},
		{"three questions, serve flags", root + "/testdata/requests/email.json",
			[]string{"-backend", "cpu", "-serve-arg=--batch-size=4", "-serve-arg", "--log-format=text"}, 3, "cpu", ""},
		// laya serve's own choice, as /ready names it (no GPU in a test run).
		{"no backend flag", root + "/testdata/requests/refund.json", nil, 1, "cpu", ""},
		// The key reaches /v1/systemone, /metrics and /ready (the device).
		{"api key", root + "/testdata/requests/refund.json", nil, 1, "cpu", "k-123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LAYA_API_KEY", tt.apiKey)
			out := filepath.Join(t.TempDir(), "load.csv")
			args := append([]string{"-laya", bin, "-model", tinyModel, "-label", "tiny", "-body", tt.body,
				"-c", "1,2", "-duration", "300ms", "-load", out, "-warmup", "2"}, tt.args...)
			var stdout, stderr bytes.Buffer
			if err := run(args, &stdout, &stderr); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			rows := readCSV(t, out)
			if !slices.Equal(rows[0], loadHeader) {
				t.Fatalf("header %q, want %q", rows[0], loadHeader)
			}
			if len(rows) != 3 {
				t.Fatalf("%d rows, want a header and 2:\n%q", len(rows), rows)
			}
			col := func(row []string, name string) string { return row[slices.Index(loadHeader, name)] }
			for i, row := range rows[1:] {
				if got := col(row, "checkpoint"); got != "tiny" {
					t.Errorf("row %d: checkpoint %q, want tiny", i, got)
				}
				if got := col(row, "backend"); !strings.HasPrefix(got, tt.backend) {
					t.Errorf("row %d: backend %q, want %s… (what /ready reports)", i, got, tt.backend)
				}
				if got, want := col(row, "clients"), strconv.Itoa(i+1); got != want {
					t.Errorf("row %d: clients %q, want %q", i, got, want)
				}
				answered, _ := strconv.Atoi(col(row, "answered"))
				if answered == 0 || col(row, "statuses") != "200×"+col(row, "answered") || col(row, "mean batch") == "–" {
					t.Errorf("row %d: answered %q, statuses %q: want only 200s", i, col(row, "answered"), col(row, "statuses"))
				}
				reqs, err1 := strconv.ParseFloat(col(row, "req/s"), 64)
				qs, err2 := strconv.ParseFloat(col(row, "questions/s"), 64)
				// Both are rounded to 0.1.
				if slack := 0.05*tt.questions + 0.05 + 1e-9; err1 != nil || err2 != nil || math.Abs(qs-reqs*tt.questions) > slack {
					t.Errorf("row %d: req/s %q, questions/s %q: want %v questions a request", i,
						col(row, "req/s"), col(row, "questions/s"), tt.questions)
				}
			}
		})
	}
}

// When laya serve cannot start, run fails at once with one line that says
// why, instead of waiting out -ready-timeout; a warm-up request that is not
// answered stops the run before any row is written.
func TestRunServeFails(t *testing.T) {
	bin := buildLaya(t)
	noQuestions := filepath.Join(t.TempDir(), "no-questions.json")
	if err := os.WriteFile(noQuestions, []byte(`{"state": "hello"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown backend", []string{"-backend", "no-such-backend"},
			[]string{"--backend no-such-backend exited before it was ready (exit status", `unknown backend "no-such-backend"`}},
		{"unknown serve flag", []string{"-serve-arg=--no-such-flag"},
			[]string{"--no-such-flag exited before it was ready (exit status 2)", "unknown flag --no-such-flag"}},
		{"missing checkpoint", []string{"-model", filepath.Join(t.TempDir(), "absent")},
			[]string{"exited before it was ready (exit status", "absent"}},
		{"warm-up refused", []string{"-warmup", "2", "-body", noQuestions},
			[]string{"warm-up request 1 of 2: 4", "questions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "load.csv")
			args := append([]string{"-laya", bin, "-model", tinyModel, "-body", root + "/testdata/requests/refund.json",
				"-c", "1", "-duration", "100ms", "-load", out, "-ready-timeout", "10m"}, tt.args...)
			err := run(args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil {
				t.Fatal("run succeeded")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-c", "1,x"},
		{"-c", "0"},
		{"stray"},
		{"-no-such-flag"},
	} {
		if err := run(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

func TestCountQuestions(t *testing.T) {
	email, err := os.ReadFile(root + "/testdata/requests/email.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		body string
		want int
	}{
		{string(email), 3},
		{`{"state": "x", "questions": {"a": {"type": "noul"}}}`, 1},
		{`{"state": "x", "questions": [{"name": "a"}, {"name": "b"}]}`, 2},
		{`{"state": "x"}`, 0},
		{`{"questions": "a"}`, 0},
		{`not json`, 0},
	} {
		if got := countQuestions([]byte(tt.body)); got != tt.want {
			t.Errorf("countQuestions(%.40q) = %d, want %d", tt.body, got, tt.want)
		}
	}
}

// Rows append under the same header; a file with other columns is refused.
func TestAppendCSV(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "t.csv")
	h := []string{"a", "b"}
	if err := appendCSV(name, h, [][]string{{"1", "2"}}); err != nil {
		t.Fatal(err)
	}
	if err := appendCSV(name, h, [][]string{{"3", "4"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := readCSV(t, name), [][]string{h, {"1", "2"}, {"3", "4"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("got %q, want %q", got, want)
	}
	err := appendCSV(name, []string{"a", "b", "c"}, [][]string{{"5", "6", "7"}})
	if err == nil || !strings.Contains(err.Error(), "write to a new file") {
		t.Errorf("other header: err = %v", err)
	}
	empty := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := appendCSV(empty, h, [][]string{{"1", "2"}}); err != nil {
		t.Fatal(err)
	}
	if got := readCSV(t, empty); len(got) != 2 || !slices.Equal(got[0], h) {
		t.Errorf("empty file: got %q, want the header first", got)
	}
}

func TestFirstLine(t *testing.T) {
	for _, tt := range []struct {
		writes []string
		want   string
	}{
		{[]string{"\n  \nlaya serve: boom", " here\nrun 'laya serve -h'\n"}, "laya serve: boom here"},
		{[]string{"no newline"}, "no newline"},
		{[]string{strings.Repeat("x", 5000) + "\nsecond\n"}, strings.Repeat("x", 4096)},
		{nil, ""},
	} {
		var l firstLine
		for _, w := range tt.writes {
			if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if got := l.String(); got != tt.want {
			t.Errorf("%.30q: got %.30q, want %.30q", tt.writes, got, tt.want)
		}
	}
}

// scripts/gpucheck/cuda-serve.sh end to end on the cpu backend and the tiny
// preset (LAYA_SERVE_BACKEND=cpu is the script's switch for machines without a
// GPU): the CSV, run.json and summary it leaves, and its one-line failure.
func TestCudaServeScript(t *testing.T) {
	laya := buildLaya(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "serveload"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Symlink(laya, filepath.Join(bin, "laya")); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../../gpucheck/cuda-serve.sh")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	runScript := func(out string, env ...string) (string, error) {
		cmd := exec.Command(bash, script, bin, out)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), append([]string{"PRESETS=tiny", "LEVELS=1,2", "DURATION=300ms", "WORK=" + work}, env...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		return stderr.String(), err
	}

	out := t.TempDir()
	if stderr, err := runScript(out, "LAYA_SERVE_BACKEND=cpu"); err != nil {
		t.Fatalf("cuda-serve.sh: %v\n%s", err, stderr)
	}
	rows := readCSV(t, filepath.Join(out, "serve-load-cuda.csv"))
	if len(rows) != 3 || !slices.Equal(rows[0], loadHeader) {
		t.Fatalf("serve-load-cuda.csv:\n%q", rows)
	}
	for _, row := range rows[1:] {
		if row[0] != "synthetic tiny (f16)" || row[1] != "cpu" || !strings.HasPrefix(row[8], "200×") {
			t.Errorf("row %q: want synthetic tiny (f16) on cpu, answered", row)
		}
	}
	var r struct {
		Date, Commit, Machine, Software string
		Commands                        []string
	}
	b, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil || r.Date == "" || len(r.Commands) != 4 || !strings.Contains(r.Software, "refund.json") {
		t.Errorf("run.json (%v):\n%s", err, b)
	}
	summary, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(summary), "| synthetic tiny (f16) | cpu | 2 |") || !strings.Contains(string(summary), "- synthetic tiny (f16): most ") {
		t.Errorf("summary.md:\n%s", summary)
	}

	stderr, err := runScript(t.TempDir(), "LAYA_SERVE_BACKEND=no-such-backend")
	if code := exitCode(err); code != 1 {
		t.Errorf("with a backend that cannot open: exit %d, want 1\n%s", code, stderr)
	}
	last := strings.TrimSpace(stderr[strings.LastIndex(strings.TrimRight(stderr, "\n"), "\n")+1:])
	if !strings.HasPrefix(last, "cuda-serve: tiny: serveload: ") || !strings.Contains(last, `unknown backend "no-such-backend"`) {
		t.Errorf("last line %q: want cuda-serve's one line naming the unknown backend", last)
	}
}

func exitCode(err error) int {
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
