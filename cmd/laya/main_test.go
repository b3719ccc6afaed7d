package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/laya-metal/laya/backend"
)

// A mistake on the command line is one line naming the flag and what it
// takes, then the command whose -h explains it, with exit status 2: not
// the whole usage text.
func TestUsageErrors(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"predict", "--nope"}, "laya predict: unknown flag --nope (flags: --backend, --batch-size, --long, --max-windows, --model, --overlap, --preset, --questions, --request, --state, --tournament)"},
		{[]string{"predict", "--batch-size", "x"}, `laya predict: --batch-size "x": want an integer (question rows per forward batch, 0 for the backend's: 16, on cuda up to 64 rows and 8192 tokens)`},
		{[]string{"predict", "--state", "x", "--preset", "triage"}, "laya predict: --model is required: a checkpoint DIR or a Hub id such as convaiinnovations/laya"},
		{[]string{"predict", "--model", predictModel}, "laya predict: give --request FILE, or --state with --questions or --preset"},
		{[]string{"predict", "--model", predictModel, "--state", "x", "--preset", "nope"}, `laya predict: --preset "nope": use triage, email, guard, moderation or router`},
		{[]string{"predict", "--model", predictModel, "extra"}, `laya predict: unexpected argument "extra": every input is given by a flag or on stdin`},
		{[]string{"predict", "--model", predictModel, "--backend", "nope", "--state", "x", "--preset", "triage"}, `laya predict: laya: backend: unknown backend "nope"; registered: auto, cpu`},
		{[]string{"inspect"}, "laya inspect: --model DIR is required"},
		{[]string{"synth", "--preset", "huge", "--out", "x"}, `laya synth: --preset "huge": want english, multilingual or tiny`},
		{[]string{"synth"}, "laya synth: --out DIR is required"},
		{[]string{"tokenize"}, "laya tokenize: give exactly one of --tokenizer or --model"},
		{[]string{"route"}, "laya route: --state is required: give the text, @FILE or - for stdin ('' for an empty state), or use --batch"},
		{[]string{"route", "--state", "x", "--max-line-bytes", "-"}, `laya route: --max-line-bytes "-": want an integer (longest --batch line, in bytes)`},
		{[]string{"snake", "--headless", "--fps", "-3"}, "laya snake: --fps: "},
		{[]string{"presets", "nope"}, `laya presets: unknown preset "nope": use triage, email, guard, moderation or router`},
		{[]string{"serve", "--model", "m", "--log-level", "loud"}, `laya serve: --log-level "loud": want debug, info, warn or error`},
		{[]string{"serve", "--model", "m", "--log-format", "xml"}, `laya serve: --log-format "xml": want json or text`},
		{[]string{"serve", "--model", "m", "--router"}, "laya serve: give --model or --router, not both"},
		{[]string{"serve", "--model", "m", "--model-dir", "english=x"}, "laya serve: --model-dir needs --router"},
		{[]string{"serve"}, "laya serve: --model DIR or --router is required"},
		{[]string{"serve", "--router", "--max-loaded", "0"}, "laya serve: --max-loaded 0: want at least 1"},
		{[]string{"frobnicate"}, `laya: unknown command "frobnicate" (commands: inspect, mcp, predict, presets, probe, route, serve, snake, synth, tokenize)`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		cmd := "laya"
		if tc.args[0] != "frobnicate" {
			cmd += " " + tc.args[0]
		}
		if code != 2 || len(lines) != 2 || !strings.HasPrefix(lines[0], tc.want) || lines[1] != "run '"+cmd+" -h' for usage" {
			t.Errorf("laya %q: exit %d, stderr:\n%s\nwant exit 2 and\n%s\nrun '%s -h' for usage", tc.args, code, stderr.String(), tc.want, cmd)
		}
		if stdout.Len() > 0 {
			t.Errorf("laya %q: stdout %q", tc.args, stdout.String())
		}
	}
}

// A failure of the work itself (here a checkpoint that is not there) exits 1.
func TestFailureExitsOne(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"predict", "--model", t.TempDir(), "--state", "x", "--preset", "triage"}, nil, &stdout, &stderr)
	if code != 1 || !strings.HasPrefix(stderr.String(), "laya predict: ") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want 1 and one line", code, stderr.String())
	}
}

func TestVersionAndHelp(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, nil, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "laya ") ||
			!strings.Contains(stdout.String(), " go1.") || strings.Count(stdout.String(), "\n") != 1 {
			t.Errorf("laya %v: exit %d, %q", args, code, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, nil, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "presets ") {
		t.Errorf("laya: exit %d, %q", code, stdout.String())
	}
}

// predict -h names the backends this binary has.
func TestPredictHelpListsBackends(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"predict", "-h"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	names := backend.Names()
	if len(names) == 0 {
		t.Fatal("no backend registered")
	}
	for _, want := range []string{"this build has: " + strings.Join(names, ", ") + ".", "compute backend: " + strings.Join(names, ", ")} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("predict -h lacks %q:\n%s", want, stderr.String())
		}
	}
}

// helpExamples returns the command lines of a help text's "  $ laya ..."
// examples (with their \ continuations), split as a shell splits them
// (single quotes only, which is all the examples use).
func helpExamples(t *testing.T, usage string) [][]string {
	t.Helper()
	var cmds [][]string
	lines := strings.Split(usage, "\n")
	for i := 0; i < len(lines); i++ {
		line, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "$ laya ")
		if !ok {
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		var args []string
		var cur strings.Builder
		inQuote, inWord := false, false
		for _, r := range line {
			switch {
			case r == '\'':
				inQuote, inWord = !inQuote, true
			case r == ' ' && !inQuote:
				if inWord {
					args = append(args, cur.String())
					cur.Reset()
				}
				inWord = false
			default:
				cur.WriteRune(r)
				inWord = true
			}
		}
		if inWord {
			args = append(args, cur.String())
		}
		if inQuote {
			t.Fatalf("unbalanced quote in %q", line)
		}
		cmds = append(cmds, args)
	}
	return cmds
}

// The examples of inspect, synth and presets -h work when pasted in the
// repository's root (the one that writes to /tmp writes to a temporary
// directory here; "> FILE" is left to the shell).
func TestHelpExamplesRun(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	tmp := t.TempDir()
	t.Chdir("../..")
	for _, usage := range []string{inspectUsage, synthUsage, presetsUsage} {
		examples := helpExamples(t, usage)
		if len(examples) == 0 {
			t.Errorf("no example in %.40q", usage)
		}
		for _, args := range examples {
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "/tmp/", tmp+"/")
			}
			if i := len(args) - 2; i > 0 && args[i] == ">" {
				args = args[:i]
			}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, nil, &stdout, &stderr); code != 0 {
				t.Errorf("laya %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
			}
			if args[0] == "synth" {
				// The example shows what it prints.
				want := "wrote " + filepath.Join(tmp, "laya-tiny") + ": preset tiny, "
				if !strings.HasPrefix(stdout.String(), want) || !strings.Contains(synthUsage, strings.ReplaceAll(stdout.String(), tmp+"/", "/tmp/")) {
					t.Errorf("synth printed %q, which the help example does not show", stdout.String())
				}
			}
		}
	}
}

// synth needs nothing of the repository: run from an empty directory, it
// writes the built-in ModernBERT tokenizer, the same bytes as testdata's.
func TestSynthOutsideRepository(t *testing.T) {
	want, err := os.ReadFile("../../testdata/tokenizers/modernbert/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"synth", "--preset", "tiny", "--out", "ckpt"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join("ckpt", "tokenizer", "tokenizer.json"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("tokenizer.json: %d bytes (err %v), want testdata's %d", len(got), err, len(want))
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr is not a terminal, yet got %q", stderr.String())
	}
	// A --tokenizer that is not there is named, with the way out.
	stderr.Reset()
	code := run(context.Background(), []string{"synth", "--out", "other", "--tokenizer", "no-such-dir"}, nil, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--tokenizer no-such-dir: ") || !strings.Contains(stderr.String(), "leave --tokenizer out") {
		t.Errorf("missing tokenizer: exit %d, %q", code, stderr.String())
	}
}

// synth refuses a directory that holds files unless --force, and --force
// leaves a checkpoint that loads as written.
func TestSynthForce(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	synth := func(extra ...string) int {
		stderr.Reset()
		return run(context.Background(), append([]string{"synth", "--out", dir}, extra...), nil, &stdout, &stderr)
	}
	if code := synth("--mlx-names"); code != 0 {
		t.Fatalf("empty dir: exit %d: %s", code, stderr.String())
	}
	if code := synth(); code != 2 || !strings.Contains(stderr.String(), "is not empty") || !strings.Contains(stderr.String(), "--force") {
		t.Errorf("non-empty dir: exit %d, %q", code, stderr.String())
	}
	if code := synth("--force"); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "mlx_config.json")); !os.IsNotExist(err) {
		t.Errorf("--force without --mlx-names left mlx_config.json (%v)", err)
	}
	stdout.Reset()
	if err := runInspect(context.Background(), []string{"--model", dir, "--no-hash"}, nil, &stdout, &stderr); err != nil {
		t.Errorf("inspect after --force: %v\n%s", err, stdout.String())
	}
}

func TestPresetsCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"presets"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{
		"triage (support tickets, field \"message\"):\n  intent             choice  What does the customer want in `message`?\n",
		"  refund_requested   noul    Does the customer ask for money back?\n",
		"router (requests to route between LLMs, field \"request\"):\n  difficulty         score   How hard is `request` for a language model?\n",
		"guard (", "moderation (", "email (",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("laya presets lacks %q:\n%s", want, stdout.String())
		}
	}
	// One preset prints as the JSON --questions takes: the same questions.
	for _, p := range builtinPresets {
		stdout.Reset()
		if code := run(context.Background(), []string{"presets", p.name}, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("presets %s: exit %d: %s", p.name, code, stderr.String())
		}
		qs, err := routeQuestions(stdout.String(), "")
		if err != nil {
			t.Fatalf("presets %s: %v", p.name, err)
		}
		if got, want := qs.Value().String(), p.questions().Value().String(); got != want {
			t.Errorf("presets %s round trip:\n got %s\nwant %s", p.name, got, want)
		}
	}
}

// An error that crosses packages names each once.
func TestNoDoubledPrefix(t *testing.T) {
	tok := t.TempDir()
	if err := os.WriteFile(filepath.Join(tok, "tokenizer.json"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"synth", "--out", filepath.Join(t.TempDir(), "x"), "--tokenizer", tok}, nil, &stdout, &stderr)
	if code != 1 || !strings.HasPrefix(stderr.String(), "laya synth: synthetic: tokenizer ") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
	for _, doubled := range []string{"synthetic: synthetic", "laya synth: laya synth", "tokenizer: tokenizer"} {
		if strings.Contains(stderr.String(), doubled) {
			t.Errorf("%q in %q", doubled, stderr.String())
		}
	}
}
