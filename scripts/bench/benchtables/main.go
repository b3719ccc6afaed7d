// Command benchtables writes the speed tables of BENCHMARKS.md, and the
// README's summary of them, from the raw results under benchmarks/results,
// so that a table in either is always the rendering of files a run left,
// never numbers typed by hand.
//
// Usage, from the module root:
//
//	go run ./scripts/bench/benchtables            # rewrite BENCHMARKS.md
//	go run ./scripts/bench/benchtables -check     # exit 1 if one is out of date
//
// A results folder is benchmarks/results/<date>-<commit>/ and holds a
// run.json (date, optionally the time, commit, machine, commands, whether
// the numbers were transcribed) and the files its run wrote:
//
//   - paired-<preset>-<cores>-q<questions>[-<tag>].json: one cell of
//     scripts/bench/bench-torch/paired.sh (ours against PyTorch's forward);
//   - blaspaired-…json: the same with REFERENCE=blas (ours against the
//     model's matrix products alone in numpy's BLAS);
//   - <name>.csv: any other table, header row first (laya serve's and laya
//     snake's benchmarks).
//
// BENCHMARKS.md and README.md mark where each table goes:
//
//	<!-- benchtables: paired -->        (or blaspaired, csv:<name>, summary)
//	…generated…
//	<!-- benchtables: end -->
//
// Each marked table is rendered from the newest folder (by the date its
// name starts with, then run.json's optional "time" for runs of one date)
// that has files of its kind; summary condenses the newest paired and
// blaspaired tables into ranges of their ratios.
package main

//go:generate go run . -root ../../..

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// run is a results folder's run.json.
type run struct {
	Date        string   `json:"date"`
	Commit      string   `json:"commit"`
	Machine     string   `json:"machine"`
	Software    string   `json:"software"`
	Commands    []string `json:"commands"`
	Transcribed bool     `json:"transcribed"`
	Notes       string   `json:"notes"`
	// Time (optional, "15:04" UTC) orders the runs of one date, whose
	// folder names differ only by commit.
	Time string `json:"time"`
}

// cell is the part of paired.py's and blas_paired.py's JSON the table shows
// (pacing.summary's fields; the samples themselves, ours_ms and torch_ms or
// blas_ms, are read by no table).
type cell struct {
	Model       string     `json:"model"`
	Questions   int        `json:"questions"`
	InputTokens int        `json:"input_tokens"`
	Pairs       int        `json:"pairs"`
	OursMedian  float64    `json:"ours_median_ms"`
	TorchMedian float64    `json:"torch_median_ms"`
	BLASMedian  float64    `json:"blas_median_ms"`
	PairRatio   float64    `json:"median_pair_ratio"`
	CI95        [2]float64 `json:"ci95"`
	OursFaster  int        `json:"pairs_ours_faster"`
	// Note, when present, is shown after the workload (a second call of
	// the same cell, say).
	Note string `json:"note"`

	preset string
	cores  int
	tag    string
}

var cellName = regexp.MustCompile(`^(paired|blaspaired)-([a-z]+)-(\d+)-q(\d+)(?:-([a-z0-9-]+))?\.json$`)

const (
	beginPrefix = "<!-- benchtables: "
	endMarker   = "<!-- benchtables: end -->"
)

func main() {
	root := flag.String("root", ".", "module root (holds BENCHMARKS.md and benchmarks/results)")
	check := flag.Bool("check", false, "do not write: exit 1 when BENCHMARKS.md differs from what the results give")
	flag.Parse()
	for _, name := range documents {
		doc := filepath.Join(*root, name)
		old, err := os.ReadFile(doc)
		if err != nil {
			fail(err)
		}
		updated, err := render(old, os.DirFS(*root))
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		if bytes.Equal(old, updated) {
			continue
		}
		if *check {
			fail(fmt.Errorf("%s is out of date with benchmarks/results: run go run ./scripts/bench/benchtables", name))
		}
		if err := os.WriteFile(doc, updated, 0o644); err != nil {
			fail(err)
		}
	}
}

// documents are the files whose marked tables are generated: the full tables
// and the README's summary of them.
var documents = []string{"BENCHMARKS.md", "README.md"}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchtables:", err)
	os.Exit(1)
}

// render returns doc with every marked table regenerated from the results
// under benchmarks/results of fsys.
func render(doc []byte, fsys fs.FS) ([]byte, error) {
	var out bytes.Buffer
	rest := string(doc)
	for {
		i := strings.Index(rest, beginPrefix)
		if i < 0 {
			out.WriteString(rest)
			return out.Bytes(), nil
		}
		j := strings.Index(rest[i:], " -->\n")
		if j < 0 {
			return nil, fmt.Errorf("unterminated marker at %q", firstLine(rest[i:]))
		}
		kind := rest[i+len(beginPrefix) : i+j]
		if kind == "end" {
			return nil, errors.New("an end marker without its begin marker")
		}
		afterBegin := i + j + len(" -->\n")
		k := strings.Index(rest[afterBegin:], endMarker)
		if k < 0 {
			return nil, fmt.Errorf("table %q has no %s", kind, endMarker)
		}
		table, err := renderKind(kind, fsys)
		if err != nil {
			return nil, fmt.Errorf("table %q: %w", kind, err)
		}
		out.WriteString(rest[:afterBegin])
		out.WriteString(table)
		out.WriteString(endMarker)
		rest = rest[afterBegin+k+len(endMarker):]
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

const resultsDir = "benchmarks/results"

// renderKind renders one table from the newest folder that has its files.
func renderKind(kind string, fsys fs.FS) (string, error) {
	if kind == "summary" {
		return summaryTable(fsys)
	}
	dir, r, files, err := latest(kind, fsys)
	if err != nil {
		return "", err
	}
	var table string
	if name, ok := strings.CutPrefix(kind, "csv:"); ok {
		table, err = csvTable(fsys, path.Join(dir, name+".csv"))
	} else {
		var cells []cell
		if cells, err = readCells(fsys, dir, files); err == nil {
			table = pairedTable(kind, cells)
		}
	}
	if err != nil {
		return "", err
	}
	return provenance(dir, r) + "\n" + table, nil
}

// latest finds the newest results folder (by date, then time) with files
// of kind, and returns it, its run.json and those files.
func latest(kind string, fsys fs.FS) (string, run, []string, error) {
	dirs, err := fs.ReadDir(fsys, resultsDir)
	if err != nil {
		return "", run{}, nil, err
	}
	// Newest first: by date (the name's prefix), then by run.json's time
	// where a date has several runs, then by name.
	type folder struct{ name, time string }
	var folders []folder
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		var r run
		if err := readJSON(fsys, path.Join(resultsDir, d.Name(), "run.json"), &r); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", run{}, nil, err
		}
		folders = append(folders, folder{d.Name(), r.Time})
	}
	sort.Slice(folders, func(i, j int) bool {
		a, b := folders[i], folders[j]
		if da, db := a.name[:min(10, len(a.name))], b.name[:min(10, len(b.name))]; da != db {
			return da > db
		}
		if a.time != b.time {
			return a.time > b.time
		}
		return a.name > b.name
	})
	for _, f := range folders {
		name := f.name
		dir := path.Join(resultsDir, name)
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return "", run{}, nil, err
		}
		var files []string
		for _, e := range entries {
			if matchesKind(kind, e.Name()) {
				files = append(files, e.Name())
			}
		}
		if len(files) == 0 {
			continue
		}
		sort.Strings(files)
		var r run
		if err := readJSON(fsys, path.Join(dir, "run.json"), &r); err != nil {
			return "", run{}, nil, err
		}
		return dir, r, files, nil
	}
	return "", run{}, nil, fmt.Errorf("no folder under %s has its files", resultsDir)
}

func matchesKind(kind, file string) bool {
	if name, ok := strings.CutPrefix(kind, "csv:"); ok {
		return file == name+".csv"
	}
	m := cellName.FindStringSubmatch(file)
	return m != nil && m[1] == kind
}

func readJSON(fsys fs.FS, name string, v any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// provenance is the line above a table: when, at which commit, on what, and
// where its raw results are.
func provenance(dir string, r run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s at commit %s on %s", r.Date, r.Commit, r.Machine)
	if r.Software != "" {
		fmt.Fprintf(&b, "; %s", r.Software)
	}
	fmt.Fprintf(&b, ". Raw results: [`%s/`](%s/)", dir, dir)
	if r.Transcribed {
		b.WriteString(" (transcribed from the README tables of that time; the per-run samples were not kept)")
	}
	b.WriteString(".\n")
	return b.String()
}

// readCells reads paired cells, in paired.sh's order: more cores first,
// then preset, questions, and a cell's later calls after it.
func readCells(fsys fs.FS, dir string, files []string) ([]cell, error) {
	var cells []cell
	for _, f := range files {
		m := cellName.FindStringSubmatch(f)
		var c cell
		if err := readJSON(fsys, path.Join(dir, f), &c); err != nil {
			return nil, err
		}
		c.preset = m[2]
		c.cores, _ = strconv.Atoi(m[3])
		c.tag = m[5]
		if q, _ := strconv.Atoi(m[4]); q != c.Questions {
			return nil, fmt.Errorf("%s/%s: the name says %d questions, the file %d", dir, f, q, c.Questions)
		}
		cells = append(cells, c)
	}
	sort.SliceStable(cells, func(i, j int) bool {
		a, b := cells[i], cells[j]
		if a.cores != b.cores {
			return a.cores > b.cores
		}
		if a.preset != b.preset {
			return a.preset < b.preset
		}
		if a.Questions != b.Questions {
			return a.Questions < b.Questions
		}
		return a.tag < b.tag
	})
	return cells, nil
}

func pairedTable(kind string, cells []cell) string {
	ref := "PyTorch, forward only"
	if kind == "blaspaired" {
		ref = "BLAS products alone"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| workload | cores | tokens | ours, end to end | %s | median per-pair ratio (95 %% CI) | ours faster |\n", ref)
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cells {
		refMedian := c.TorchMedian
		if kind == "blaspaired" {
			refMedian = c.BLASMedian
		}
		workload := fmt.Sprintf("%s, %d question", c.preset, c.Questions)
		if c.Questions != 1 {
			workload += "s"
		}
		if c.Note != "" {
			workload += " (" + c.Note + ")"
		}
		// Bold where the whole interval is below 1: ahead beyond the
		// spread of the pairs.
		ratio := fmt.Sprintf("%.2f×", c.PairRatio)
		if c.CI95[1] < 1 {
			ratio = "**" + ratio + "**"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s ms | %s ms | %s (%.2f–%.2f) | %d of %d |\n",
			workload, c.cores, c.InputTokens, millis(c.OursMedian), millis(refMedian),
			ratio, c.CI95[0], c.CI95[1], c.OursFaster, c.Pairs)
	}
	return b.String()
}

// summaryTable condenses the newest PyTorch and BLAS tables into one line
// per reference and core count: the range of the median per-pair ratios
// over presets and calls, per question count.
func summaryTable(fsys fs.FS) (string, error) {
	type row struct {
		ref    string
		cores  int
		ratios map[int][]float64
	}
	var rows []row
	questions := map[int]bool{}
	var sources []string
	for _, k := range []struct{ kind, ref string }{
		{"paired", "ours / PyTorch's forward"},
		{"blaspaired", "ours / BLAS products alone"},
	} {
		dir, r, files, err := latest(k.kind, fsys)
		if err != nil {
			return "", fmt.Errorf("%s: %w", k.kind, err)
		}
		cells, err := readCells(fsys, dir, files)
		if err != nil {
			return "", err
		}
		for _, c := range cells {
			if len(rows) == 0 || rows[len(rows)-1].ref != k.ref || rows[len(rows)-1].cores != c.cores {
				rows = append(rows, row{k.ref, c.cores, map[int][]float64{}})
			}
			last := &rows[len(rows)-1]
			last.ratios[c.Questions] = append(last.ratios[c.Questions], c.PairRatio)
			questions[c.Questions] = true
		}
		sources = append(sources, fmt.Sprintf("[%s at %s](%s/)", r.Date, r.Commit, dir))
	}
	var qs []int
	for q := range questions {
		qs = append(qs, q)
	}
	sort.Ints(qs)
	var b strings.Builder
	b.WriteString("| comparison | cores |")
	for _, q := range qs {
		if q == 1 {
			b.WriteString(" 1 question |")
		} else {
			fmt.Fprintf(&b, " %d questions |", q)
		}
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(qs)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d |", r.ref, r.cores)
		for _, q := range qs {
			rs := r.ratios[q]
			if len(rs) == 0 {
				b.WriteString(" |")
				continue
			}
			lo, hi := rs[0], rs[0]
			for _, x := range rs {
				lo, hi = min(lo, x), max(hi, x)
			}
			if fmt.Sprintf("%.2f", lo) == fmt.Sprintf("%.2f", hi) {
				fmt.Fprintf(&b, " %.2f× |", lo)
			} else {
				fmt.Fprintf(&b, " %.2f–%.2f× |", lo, hi)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nRanges span English and multilingual; raw results: %s.\n", strings.Join(sources, ", "))
	return b.String(), nil
}

// millis prints a duration in ms with one decimal and thousands separated.
func millis(ms float64) string {
	s := strconv.FormatFloat(ms, 'f', 1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	return whole + "." + frac
}

// csvTable renders a CSV file as a Markdown table; columns whose every
// value starts with a digit are right-aligned.
func csvTable(fsys fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return "", err
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if len(rows) < 2 {
		return "", fmt.Errorf("%s: a header and at least one row are needed", name)
	}
	var out strings.Builder
	writeRow := func(cells []string) {
		out.WriteString("|")
		for _, c := range cells {
			out.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		out.WriteString("\n")
	}
	writeRow(rows[0])
	out.WriteString("|")
	for col := range rows[0] {
		numeric := true
		for _, r := range rows[1:] {
			if r[col] == "" || r[col][0] < '0' || r[col][0] > '9' {
				numeric = false
			}
		}
		if numeric {
			out.WriteString("---:|")
		} else {
			out.WriteString("---|")
		}
	}
	out.WriteString("\n")
	for _, r := range rows[1:] {
		writeRow(r)
	}
	return out.String(), nil
}
