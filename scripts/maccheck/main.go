// Command maccheck assembles the report of scripts/maccheck/mac-check.sh from the
// step records and logs the script leaves in one directory, so that the
// report's logic (which lines of a failing log matter, how validation
// warnings are counted, the verdict) is Go, tested on Linux, while the
// script only runs commands on the Mac.
//
// Usage:
//
//	go run ./scripts/maccheck report DIR
//	go run ./scripts/maccheck parity WANT.json GOT.json
//	go run ./scripts/maccheck soak URL N PID BODY.json
//
// parity holds one laya predict answer to another (the GPU's to the
// CPU's): the same JSON, numbers within parityTolerance. soak sends N
// requests to a running laya serve and samples its RSS (process PID).
//
// DIR holds steps.tsv (one step a line: name, PASS|FAIL|SKIP, seconds, log
// file relative to DIR, note; tab-separated), env.txt (the environment
// facts, "key: value" lines) and the logs.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

const usageText = `usage: go run ./scripts/maccheck report DIR
       go run ./scripts/maccheck parity WANT.json GOT.json
       go run ./scripts/maccheck soak URL N PID BODY.json`

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "report":
		err = writeReport(os.Stdout, os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "parity":
		err = parityFiles(os.Stdout, os.Args[2], os.Args[3])
	case len(os.Args) == 6 && os.Args[1] == "soak":
		err = soakCommand(os.Stdout, os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usageText)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "maccheck:", err)
		os.Exit(1)
	}
}

// step is one line of steps.tsv.
type step struct {
	Name    string
	Status  string // PASS, FAIL or SKIP
	Seconds float64
	Log     string // relative to the log directory; may be empty
	Note    string
}

func parseSteps(r io.Reader) ([]step, error) {
	var steps []step
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "\t")
		for len(f) < 5 {
			f = append(f, "")
		}
		switch f[1] {
		case "PASS", "FAIL", "SKIP":
		default:
			return nil, fmt.Errorf("steps.tsv:%d: status %q, want PASS, FAIL or SKIP", n, f[1])
		}
		secs, _ := strconv.ParseFloat(f[2], 64)
		steps = append(steps, step{Name: f[0], Status: f[1], Seconds: secs, Log: f[3], Note: strings.Join(f[4:], " ")})
	}
	return steps, sc.Err()
}

// failureRe matches the lines of a failing log worth sending back: test
// failures with their file:line messages, panics, fatal errors, signals,
// Objective-C exceptions and Metal's failed assertions.
//
// The Metal compiler's diagnostics ("kernels/gemm.metal:12:5: error: …")
// arrive inside a test's multi-line t.Fatalf, indented, so they are matched
// anywhere on the line.
var failureRe = regexp.MustCompile(`^\s*--- FAIL|^FAIL\b|^\s+\S+\.go:\d+: |panic: |^fatal error: |\[signal |^SIG[A-Z]+: |^signal: |exception|Terminating app|failed assertion|^\S+\.go:\d+:\d+: |` + compilerDiag)

// compilerDiag matches a Metal compiler diagnostic of a .metal file (or of
// Metal's "program_source" for a source compiled from memory).
const compilerDiag = `(?:\S+\.metal|program_source):\d+:\d+: (?:fatal error|error|warning):`

var compilerDiagRe = regexp.MustCompile(compilerDiag)

// compilerDiagnostics returns the compiler diagnostics of log, trimmed and
// without repeats, at most max of them.
func compilerDiagnostics(log []byte, max int) []string {
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		l := sc.Text()
		loc := compilerDiagRe.FindStringIndex(l)
		if loc == nil {
			continue
		}
		d := strings.TrimSpace(l[loc[0]:])
		if !seen[d] && len(out) < max {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// failureLines returns up to max matching lines, in order, and how many
// more matched.
func failureLines(log []byte, max int) (lines []string, more int) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if l := sc.Text(); failureRe.MatchString(l) {
			if len(lines) < max {
				lines = append(lines, strings.TrimRight(l, " \r"))
			} else {
				more++
			}
		}
	}
	return lines, more
}

// tail returns the last n lines of log.
func tail(log []byte, n int) []string {
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// head returns the first n lines of log.
func head(log []byte, n int) []string {
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines[:min(n, len(lines))]
}

// Validation warnings: OBJC_DEBUG_MISSING_POOLS prints "objc[pid]:
// MISSING POOLS: ... autoreleased with no pool in place"; the Metal
// validation layer (MTL_DEBUG_LAYER=1) prints "-[MTLDebug...]" messages and
// "failed assertion" before it aborts, and "Metal API Validation Enabled"
// once (not a warning).
var (
	missingPoolRe = regexp.MustCompile(`MISSING POOLS|autoreleased with no pool`)
	metalWarnRe   = regexp.MustCompile(`-\[MTLDebug|failed assertion|MTLValidation|Metal API Validation.*(warning|error)`)
)

type validation struct {
	MissingPools, Metal int
	Samples             []string
}

func countValidation(log []byte) validation {
	var v validation
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		l := sc.Text()
		hit := false
		if missingPoolRe.MatchString(l) {
			v.MissingPools++
			hit = true
		} else if metalWarnRe.MatchString(l) {
			v.Metal++
			hit = true
		}
		if hit && len(v.Samples) < 10 {
			v.Samples = append(v.Samples, strings.TrimSpace(l))
		}
	}
	return v
}

// grepLines returns the log lines containing marker, trimmed of the test
// framework's indentation and "file_test.go:N: " prefix.
func grepLines(log []byte, marker string) []string {
	var out []string
	prefix := regexp.MustCompile(`^\s*\S+_test\.go:\d+: `)
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, marker) {
			out = append(out, prefix.ReplaceAllString(strings.TrimSpace(l), ""))
		}
	}
	return out
}

// sections returns every run of lines of log that starts with a line
// beginning with start and ends before the next blank line.
func sections(log []byte, start string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(string(log), "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), start):
			in = true
			out = append(out, l)
		case in && strings.TrimSpace(l) == "":
			in = false
		case in:
			out = append(out, l)
		}
	}
	return out
}

// tableLines returns the Markdown table rows of log (lines starting "|").
func tableLines(log []byte) []string {
	var out []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(l, "|") {
			out = append(out, l)
		}
	}
	return out
}

// isEmulatorStep reports the steps that check the MSL emulator on the Mac:
// it has never run on macOS, so they have a verdict of their own and do
// not sink the GPU's.
func isEmulatorStep(s step) bool { return strings.HasPrefix(s.Name, "emulator") }

// emulatorVerdict is the emulator steps' verdict line.
func emulatorVerdict(steps []step) string {
	var failed, ran, skipped []string
	for _, s := range steps {
		if !isEmulatorStep(s) {
			continue
		}
		switch s.Status {
		case "FAIL":
			failed = append(failed, s.Name)
		case "SKIP":
			skipped = append(skipped, s.Name+" ("+s.Note+")")
		default:
			ran = append(ran, s.Name)
		}
	}
	switch {
	case len(failed) > 0:
		return "EMULATOR VERDICT: FAIL: " + strings.Join(failed, "; ") + " (the GPU verdict below does not depend on it)"
	case len(ran) > 0:
		return "EMULATOR VERDICT: PASS"
	case len(skipped) > 0:
		return "EMULATOR VERDICT: NOT RUN: " + strings.Join(skipped, "; ")
	}
	return "EMULATOR VERDICT: NOT RUN"
}

// verdict is the report's last line: the GPU's verdict (the emulator steps
// have emulatorVerdict).
func verdict(steps []step, v validation, env map[string]string) string {
	var failed, skipped []string
	for _, s := range steps {
		if isEmulatorStep(s) {
			continue
		}
		switch s.Status {
		case "FAIL":
			failed = append(failed, s.Name)
		case "SKIP":
			skipped = append(skipped, s.Name)
		}
	}
	where := strings.TrimSpace(env["chip"] + ", macOS " + env["macos"])
	switch {
	case len(failed) > 0:
		return fmt.Sprintf("VERDICT: FAIL on %s: %s", where, strings.Join(failed, "; "))
	case v.MissingPools+v.Metal > 0:
		return fmt.Sprintf("VERDICT: PASS WITH WARNINGS on %s: %d missing-pool and %d Metal validation warnings", where, v.MissingPools, v.Metal)
	case len(skipped) > 0:
		return fmt.Sprintf("VERDICT: PASS on %s (skipped: %s)", where, strings.Join(skipped, "; "))
	}
	return fmt.Sprintf("VERDICT: PASS on %s: the Metal backend works", where)
}

func readEnv(path string) (map[string]string, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	env := map[string]string{}
	var order []string
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		k = strings.TrimSpace(k)
		if _, dup := env[k]; !dup {
			order = append(order, k)
		}
		env[k] = strings.TrimSpace(v)
	}
	return env, order, nil
}

func readLog(dir, name string) []byte {
	if name == "" {
		return nil
	}
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return b
}

// logsWith concatenates the logs of the steps whose log name contains part.
func logsWith(dir string, steps []step, part string) []byte {
	var all []byte
	for _, s := range steps {
		if strings.Contains(s.Log, part) {
			all = append(all, readLog(dir, s.Log)...)
		}
	}
	return all
}

func writeReport(w io.Writer, dir string) error {
	f, err := os.Open(filepath.Join(dir, "steps.tsv"))
	if err != nil {
		return err
	}
	steps, err := parseSteps(f)
	f.Close()
	if err != nil {
		return err
	}
	env, order, err := readEnv(filepath.Join(dir, "env.txt"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }

	p("laya-metal mac-check report (format 1)")
	p("")
	p("== environment")
	for _, k := range order {
		p("%-16s %s", k+":", env[k])
	}
	p("")
	p("== steps")
	for _, s := range steps {
		line := fmt.Sprintf("[%s] %-22s %6.1fs", s.Status, s.Name, s.Seconds)
		if s.Log != "" {
			line += "  log: " + s.Log
			if pass, skip := countTests(readLog(dir, s.Log)); pass+skip > 0 {
				line += fmt.Sprintf("  tests: %d passed, %d skipped", pass, skip)
			}
		}
		if s.Note != "" {
			line += "  (" + s.Note + ")"
		}
		p("%s", line)
	}

	all := logsWith(dir, steps, "")
	if dev := grepLines(all, "metal-device "); len(dev) > 0 {
		p("")
		p("== device")
		p("%s", dev[0])
	}
	if rss := append(grepLines(all, "rss-after-load "), grepLines(all, "mapped weights: ")...); len(rss) > 0 {
		p("")
		p("== zero-copy (weights mapped, RSS after load)")
		for _, l := range dedupe(rss) {
			p("%s", l)
		}
	}
	if diags := compilerDiagnostics(all, 40); len(diags) > 0 {
		p("")
		p("== Metal compiler diagnostics (from every log)")
		for _, l := range diags {
			p("  %s", l)
		}
	}
	if st := grepLines(all, "self-test "); len(st) > 0 {
		p("")
		p("== self-test at open (measured on this Mac)")
		for _, l := range dedupe(st) {
			p("%s", l)
		}
	}
	val := countValidation(logsWith(dir, steps, "validation"))
	p("")
	p("== validation (MTL_SHADER_VALIDATION=1, MTL_DEBUG_LAYER=1, OBJC_DEBUG_MISSING_POOLS=YES)")
	p("warnings: %d (missing autorelease pools: %d, Metal validation: %d)", val.MissingPools+val.Metal, val.MissingPools, val.Metal)
	for _, l := range val.Samples {
		p("  %s", l)
	}
	if pools := logsWith(dir, steps, "pools"); len(pools) > 0 {
		on := countValidation(pools)
		p("")
		p("== autorelease pools in Dispatch and Barrier (LAYA_METAL_ENCODE_POOLS=1)")
		p("missing-pool warnings without them: %d; with them: %d", val.MissingPools, on.MissingPools)
		if val.MissingPools > 0 && on.MissingPools == 0 {
			p("the driver autoreleases while encoding: make SystemOptions.EncodePools the default")
		}
	}
	if par := grepLines(all, "parity "); len(par) > 0 {
		p("")
		p("== laya predict --backend metal against --backend cpu")
		for _, l := range par {
			p("%s", l)
		}
	}
	if soak := grepLines(all, "soak "); len(soak) > 0 {
		p("")
		p("== laya serve --backend metal soak (RSS sampled)")
		for _, l := range soak {
			p("%s", l)
		}
	}
	if lat := tableLines(logsWith(dir, steps, "bench")); len(lat) > 0 {
		p("")
		p("== latency (laya-bench: wall time and GPU time per request)")
		for _, l := range lat {
			p("%s", l)
		}
	}
	if prof := sections(logsWith(dir, steps, "bench"), "GPU time per operation"); len(prof) > 0 {
		p("")
		p("== GPU time per operation (laya-bench --profile)")
		for _, l := range prof {
			p("%s", l)
		}
	}
	if plan := head(logsWith(dir, steps, "plan"), 70); len(plan) > 0 {
		p("")
		p("== plan (laya-bench --plan: a MODEL of the GPU floor, not a measurement)")
		for _, l := range plan {
			p("%s", l)
		}
	}
	for _, s := range steps {
		if s.Status != "FAIL" {
			continue
		}
		log := readLog(dir, s.Log)
		p("")
		p("== failure: %s (%s)", s.Name, s.Log)
		lines, more := failureLines(log, 40)
		for _, l := range lines {
			p("  %s", l)
		}
		if more > 0 {
			p("  ... %d more matching lines in the log", more)
		}
		p("  -- last lines of the log:")
		for _, l := range tail(log, 25) {
			p("  | %s", l)
		}
	}
	p("")
	p("%s", emulatorVerdict(steps))
	p("%s", verdict(steps, val, env))
	return nil
}

// countTests counts go test -v's top-level and subtest PASS and SKIP lines.
func countTests(log []byte) (pass, skip int) {
	for _, l := range strings.Split(string(log), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "--- PASS: "):
			pass++
		case strings.HasPrefix(l, "--- SKIP: "):
			skip++
		}
	}
	return pass, skip
}

func dedupe(lines []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}
