package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func testFlags(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprintln(out, "Usage: laya predict [flags]") }
	fs.String("model", "", "Laya checkpoint `DIR`")
	fs.Int("batch-size", 16, "question rows per forward batch")
	fs.Uint64("seed", 1, "random seed")
	fs.Float64("fps", 12, "ticks per second")
	fs.Bool("json", false, "print JSON")
	fs.Duration("wait", time.Second, "")
	fs.Func("pair", "a `NAME=DIR` pair", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want NAME=DIR, got %q", s)
		}
		return nil
	})
	fs.String("D", "", "macro")
	return fs
}

func TestParseFlagsMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "unknown flag --nope (flags: -D, --batch-size, --fps, --json, --model, --pair, --seed, --wait)"},
		{[]string{"-x"}, "unknown flag -x (flags: -D, --batch-size, --fps, --json, --model, --pair, --seed, --wait)"},
		{[]string{"--batch-size", "x"}, `--batch-size "x": want an integer (question rows per forward batch)`},
		{[]string{"--batch-size=99999999999999999999"}, `--batch-size "99999999999999999999": want an integer (question rows per forward batch)`},
		{[]string{"--seed", "-1"}, `--seed "-1": want a non-negative integer (random seed)`},
		{[]string{"--fps", "fast"}, `--fps "fast": want a number (ticks per second)`},
		{[]string{"--wait", "soon"}, `--wait "soon": want a duration such as 500ms or 2s`},
		{[]string{"--json=maybe"}, `--json "maybe": want true or false (print JSON)`},
		{[]string{"--pair", "x"}, `--pair "x": want NAME=DIR, got "x"`},
		{[]string{"--model"}, "--model needs a value: Laya checkpoint DIR"},
		{[]string{"-D"}, "-D needs a value: macro"},
	} {
		var out bytes.Buffer
		fs := testFlags(&out)
		err := ParseFlags(fs, tc.args)
		var u *UsageError
		if !errors.As(err, &u) {
			t.Errorf("%q: err %v, want a *UsageError", tc.args, err)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.args, err, tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("%q: printed %q; a mistake prints nothing but its error", tc.args, out.String())
		}
	}
}

func TestParseFlagsHelp(t *testing.T) {
	var out bytes.Buffer
	fs := testFlags(&out)
	if err := ParseFlags(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v, want flag.ErrHelp", err)
	}
	if out.String() != "Usage: laya predict [flags]\n" {
		t.Errorf("help printed %q", out.String())
	}
	// After a mistake the flag set still prints its usage when asked.
	_ = ParseFlags(fs, []string{"--nope"})
	out.Reset()
	fs.Usage()
	if out.Len() == 0 {
		t.Error("the usage function was not restored")
	}
}

func TestReport(t *testing.T) {
	sentinel := errors.New("no such checkpoint")
	for _, tc := range []struct {
		name string
		err  error
		code int
		want string
	}{
		{"ok", nil, 0, ""},
		{"help", flag.ErrHelp, 0, ""},
		{"wrapped help", fmt.Errorf("x: %w", flag.ErrHelp), 0, ""},
		{"failure", fmt.Errorf("load: %w", sentinel), 1, "laya predict: load: no such checkpoint\n"},
		{"usage", Usagef("--model is required"), 2, "laya predict: --model is required\nrun 'laya predict -h' for usage\n"},
		{"wrapped usage", fmt.Errorf("a: %w", Usagef("b")), 2, "laya predict: a: b\nrun 'laya predict -h' for usage\n"},
		{"usage of another command", &UsageError{Err: sentinel, Help: "laya-bench --compare"}, 2,
			"laya predict: no such checkpoint\nrun 'laya-bench --compare -h' for usage\n"},
	} {
		var out bytes.Buffer
		if got := Report(&out, "laya predict", tc.err); got != tc.code {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.code)
		}
		if out.String() != tc.want {
			t.Errorf("%s: printed %q, want %q", tc.name, out.String(), tc.want)
		}
	}
	// The cause stays reachable through a usage error.
	if err := Usage(fmt.Errorf("x: %w", sentinel)); !errors.Is(err, sentinel) || !IsUsage(err) {
		t.Errorf("Usage lost the cause or the mark: %v", err)
	}
	if Usage(nil) != nil {
		t.Error("Usage(nil) != nil")
	}
}

func TestVersionLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "laya (devel)"},
		{"test binary", &debug.BuildInfo{}, "laya (devel)"},
		{"go install @v", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "laya v1.2.3"},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261204030000-e1b77a8d00c1+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "e1b77a8d00c1f00ba4cafe0000000000deadbeef"},
			{Key: "vcs.time", Value: "2026-12-04T03:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"laya v0.0.0-20261204030000-e1b77a8d00c1+dirty (revision e1b77a8d00c1, 2026-12-04T03:00:00Z, modified)"},
		{"clean", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			"laya (devel) (revision abc)"},
	} {
		if got := versionLine("laya", tc.info); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	if v := Version("msl-emu"); !strings.HasPrefix(v, "msl-emu ") || !strings.Contains(v, " go1.") {
		t.Errorf("Version = %q", v)
	}
}

// Progress reaches only a terminal: a pipe, as when stderr is redirected,
// gets nothing.
func TestProgressSilentWhenPiped(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := NewProgress(w)
	if p != nil {
		t.Error("NewProgress(pipe) draws")
	}
	p.Printf("run %d of %d", 1, 50)
	p.Clear()
	file := filepath.Join(t.TempDir(), "model.safetensors")
	stop := WatchFile(w, "writing", file, 1000)
	if err := os.WriteFile(file, make([]byte, 500), 0o644); err != nil {
		t.Fatal(err)
	}
	stop()
	w.Close()
	if got, _ := io.ReadAll(r); len(got) > 0 {
		t.Errorf("a pipe got %q", got)
	}
	if NewProgress(&bytes.Buffer{}) != nil {
		t.Error("NewProgress(buffer) draws")
	}
}

func TestProgressRedraws(t *testing.T) {
	var out bytes.Buffer
	p := &Progress{w: &out}
	p.Printf("run %d of %d", 10, 50)
	p.Printf("done")
	p.Clear()
	want := "\rrun 10 of 50" + "\rdone        " + "\r    \r"
	if out.String() != want {
		t.Errorf("drew %q, want %q", out.String(), want)
	}
}
