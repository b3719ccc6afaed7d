package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// BENCHMARKS.md and the README must be what benchmarks/results gives: a
// hand edit of a table, or a new results folder without regenerating,
// fails here.
func TestDocumentsUpToDate(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, name := range documents {
		doc, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), beginPrefix) {
			t.Errorf("%s has no generated table", name)
		}
		got, err := render(doc, os.DirFS(root))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got) != string(doc) {
			t.Errorf("%s is out of date with benchmarks/results: run go run ./scripts/bench/benchtables", name)
		}
	}
}

// A cell exactly as paired.py prints it (pacing.summary's fields and the
// samples), so that a run's files drop into benchmarks/results unchanged.
const pairedPyCell = `{"model": "multilingual", "questions": 10, "input_tokens": 862, "tokens_per_row": 86, "threads": 2,
 "torch": "2.11.0", "transformers": "5.17.0", "gap_s": 0.3, "pairs": 3,
 "ours_median_ms": 1234.56, "torch_median_ms": 1300.04, "ratio_of_medians": 0.9496,
 "median_pair_ratio": 0.953, "ci95": [0.91, 1.004], "pairs_ours_faster": 2,
 "ours_ms": [1200.0, 1234.56, 1300.0], "torch_ms": [1290.0, 1300.04, 1250.0]}`

const blasPyCell = `{"model": "english", "questions": 1, "input_tokens": 93, "gflop": 58.1, "blas": "openblas",
 "openblas_core": "SkylakeX", "numpy": "1.24.2", "gap_s": 0.3, "pairs": 2,
 "ours_median_ms": 99.94, "blas_median_ms": 140.0, "ratio_of_medians": 0.71,
 "median_pair_ratio": 0.7149, "ci95": [0.6, 0.8], "pairs_ours_faster": 2,
 "ours_ms": [99.0, 100.88], "blas_ms": [139.0, 141.0]}`

const runJSON = `{"date": "2026-12-05", "commit": "abc1234", "machine": "a test box", "commands": ["x"], "transcribed": false}`

func TestRender(t *testing.T) {
	doc := func(kind string) string {
		return "intro\n<!-- benchtables: " + kind + " -->\nstale\n<!-- benchtables: end -->\noutro\n"
	}
	tests := []struct {
		name    string
		kind    string
		files   fstest.MapFS
		want    []string // lines the output must contain
		notWant []string
		wantErr string
	}{
		{
			name: "paired.py output, interval reaching 1 is not bold",
			kind: "paired",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234/run.json":                       {Data: []byte(runJSON)},
				"benchmarks/results/2026-12-05-abc1234/paired-multilingual-2-q10.json": {Data: []byte(pairedPyCell)},
			},
			want: []string{
				"Measured 2026-12-05 at commit abc1234 on a test box. Raw results: [`benchmarks/results/2026-12-05-abc1234/`](benchmarks/results/2026-12-05-abc1234/).",
				"| workload | cores | tokens | ours, end to end | PyTorch, forward only | median per-pair ratio (95 % CI) | ours faster |",
				"| multilingual, 10 questions | 2 | 862 | 1,234.6 ms | 1,300.0 ms | 0.95× (0.91–1.00) | 2 of 3 |",
			},
			notWant: []string{"stale", "transcribed"},
		},
		{
			name: "blas_paired.py output, interval below 1 is bold",
			kind: "blaspaired",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234/run.json":                      {Data: []byte(runJSON)},
				"benchmarks/results/2026-12-05-abc1234/blaspaired-english-16-q1.json": {Data: []byte(blasPyCell)},
			},
			want: []string{
				"| workload | cores | tokens | ours, end to end | BLAS products alone | median per-pair ratio (95 % CI) | ours faster |",
				"| english, 1 question | 16 | 93 | 99.9 ms | 140.0 ms | **0.71×** (0.60–0.80) | 2 of 2 |",
			},
		},
		{
			name: "the newest folder with the kind wins; other kinds are ignored",
			kind: "paired",
			files: fstest.MapFS{
				"benchmarks/results/2026-11-01-0000000/run.json":                       {Data: []byte(strings.Replace(runJSON, "abc1234", "0000000", 1))},
				"benchmarks/results/2026-11-01-0000000/paired-multilingual-2-q10.json": {Data: []byte(strings.Replace(pairedPyCell, "1234.56", "5000", 1))},
				"benchmarks/results/2026-12-05-abc1234/run.json":                       {Data: []byte(runJSON)},
				"benchmarks/results/2026-12-05-abc1234/paired-multilingual-2-q10.json": {Data: []byte(pairedPyCell)},
				"benchmarks/results/2026-12-09-fffffff/run.json":                       {Data: []byte(runJSON)},
				"benchmarks/results/2026-12-09-fffffff/blaspaired-english-16-q1.json":  {Data: []byte(blasPyCell)},
			},
			want:    []string{"1,234.6 ms", "2026-12-05-abc1234"},
			notWant: []string{"5,000.0 ms", "fffffff", "0000000"},
		},
		{
			// Same date: the run with a later run.json time wins, whatever
			// the commits' names; a run without a time is the day's earliest.
			name: "runs of one date are ordered by their time",
			kind: "csv:serve",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-fffffff/run.json":  {Data: []byte(strings.Replace(runJSON, "abc1234", "fffffff", 1))},
				"benchmarks/results/2026-12-05-fffffff/serve.csv": {Data: []byte("clients\nold\n")},
				"benchmarks/results/2026-12-05-0000001/run.json":  {Data: []byte(strings.Replace(strings.Replace(runJSON, "abc1234", "0000001", 1), `"transcribed"`, `"time": "09:10", "transcribed"`, 1))},
				"benchmarks/results/2026-12-05-0000001/serve.csv": {Data: []byte("clients\nmiddle\n")},
				"benchmarks/results/2026-12-05-0000002/run.json":  {Data: []byte(strings.Replace(strings.Replace(runJSON, "abc1234", "0000002", 1), `"transcribed"`, `"time": "16:40", "transcribed"`, 1))},
				"benchmarks/results/2026-12-05-0000002/serve.csv": {Data: []byte("clients\nnew\n")},
			},
			want:    []string{"| new |", "2026-12-05-0000002"},
			notWant: []string{"| old |", "| middle |"},
		},
		{
			name: "order: more cores first, then preset, questions, later calls; a note follows the workload",
			kind: "paired",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234/run.json":                             {Data: []byte(strings.Replace(runJSON, `"transcribed": false`, `"transcribed": true`, 1))},
				"benchmarks/results/2026-12-05-abc1234/paired-multilingual-2-q10-call2.json": {Data: []byte(strings.Replace(pairedPyCell, `"pairs": 3`, `"pairs": 3, "note": "second call"`, 1))},
				"benchmarks/results/2026-12-05-abc1234/paired-multilingual-2-q10.json":       {Data: []byte(pairedPyCell)},
				"benchmarks/results/2026-12-05-abc1234/paired-english-2-q1.json":             {Data: []byte(strings.Replace(blasPyCell, "blas_median", "torch_median", 1))},
				"benchmarks/results/2026-12-05-abc1234/paired-english-16-q1.json":            {Data: []byte(strings.Replace(blasPyCell, "blas_median", "torch_median", 1))},
			},
			want: []string{
				"| english, 1 question | 16 | 93 | 99.9 ms | 140.0 ms | **0.71×** (0.60–0.80) | 2 of 2 |\n" +
					"| english, 1 question | 2 | 93 | 99.9 ms | 140.0 ms | **0.71×** (0.60–0.80) | 2 of 2 |\n" +
					"| multilingual, 10 questions | 2 | 862 | 1,234.6 ms | 1,300.0 ms | 0.95× (0.91–1.00) | 2 of 3 |\n" +
					"| multilingual, 10 questions (second call) | 2 |",
				"(transcribed from the README tables of that time; the per-run samples were not kept)",
			},
		},
		{
			name: "a CSV table, numeric columns right-aligned",
			kind: "csv:serve",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234/run.json":  {Data: []byte(runJSON)},
				"benchmarks/results/2026-12-05-abc1234/serve.csv": {Data: []byte("clients,batching,P99 ms\n1,on (10 ms),66–72\n8,off,a|b\n")},
			},
			want: []string{
				"| clients | batching | P99 ms |\n|---:|---|---|\n| 1 | on (10 ms) | 66–72 |\n| 8 | off | a\\|b |\n<!-- benchtables: end -->\noutro\n",
			},
		},
		{
			// As scripts/bench/serveload writes it (gpucheck/cuda-serve.sh's
			// serve-load-cuda.csv): quoted labels with commas, "–" where a
			// level ran no pass, several statuses in a cell.
			name: "a serveload CSV",
			kind: "csv:serve-load-cuda",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234-serve-cuda/run.json": {Data: []byte(runJSON)},
				"benchmarks/results/2026-12-05-abc1234-serve-cuda/serve-load-cuda.csv": {Data: []byte(
					"checkpoint,backend,clients,answered,req/s,questions/s,P50 ms,P99 ms,statuses,mean batch,peak RSS MB\n" +
						"\"synthetic english (full-size, f16), fp16x2\",cuda,1,812,162.3,162.3,6,9,200×812,1.0,1530\n" +
						"\"synthetic english (full-size, f16), fp16x2\",cuda,128,0,0.0,0.0,–,–,503×90 error×2,–,1611\n")},
			},
			want: []string{
				"Raw results: [`benchmarks/results/2026-12-05-abc1234-serve-cuda/`]",
				"| checkpoint | backend | clients | answered | req/s | questions/s | P50 ms | P99 ms | statuses | mean batch | peak RSS MB |\n" +
					"|---|---|---:|---:|---:|---:|---|---|---:|---|---:|\n" +
					"| synthetic english (full-size, f16), fp16x2 | cuda | 1 | 812 | 162.3 | 162.3 | 6 | 9 | 200×812 | 1.0 | 1530 |\n" +
					"| synthetic english (full-size, f16), fp16x2 | cuda | 128 | 0 | 0.0 | 0.0 | – | – | 503×90 error×2 | – | 1611 |\n",
			},
		},
		{
			name: "summary: ranges over presets and calls, per reference and core count",
			kind: "summary",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234/run.json":                             {Data: []byte(runJSON)},
				"benchmarks/results/2026-12-05-abc1234/paired-multilingual-2-q10.json":       {Data: []byte(pairedPyCell)},
				"benchmarks/results/2026-12-05-abc1234/paired-multilingual-2-q10-call2.json": {Data: []byte(strings.Replace(pairedPyCell, "0.953", "0.9", 1))},
				"benchmarks/results/2026-12-05-abc1234/paired-english-16-q1.json":            {Data: []byte(strings.Replace(blasPyCell, "blas_median", "torch_median", 1))},
				"benchmarks/results/2026-12-06-bcd2345/run.json":                             {Data: []byte(strings.NewReplacer("abc1234", "bcd2345", "12-05", "12-06").Replace(runJSON))},
				"benchmarks/results/2026-12-06-bcd2345/blaspaired-english-16-q1.json":        {Data: []byte(blasPyCell)},
			},
			want: []string{
				"| comparison | cores | 1 question | 10 questions |\n|---|---:|---:|---:|\n" +
					"| ours / PyTorch's forward | 16 | 0.71× | |\n" +
					"| ours / PyTorch's forward | 2 | | 0.90–0.95× |\n" +
					"| ours / BLAS products alone | 16 | 0.71× | |\n",
				"[2026-12-05 at abc1234](benchmarks/results/2026-12-05-abc1234/), [2026-12-06 at bcd2345](benchmarks/results/2026-12-06-bcd2345/)",
			},
		},
		{
			name: "the file name and its content disagree",
			kind: "paired",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234/run.json":                      {Data: []byte(runJSON)},
				"benchmarks/results/2026-12-05-abc1234/paired-multilingual-2-q1.json": {Data: []byte(pairedPyCell)},
			},
			wantErr: "the name says 1 questions, the file 10",
		},
		{
			name: "no folder has the kind",
			kind: "csv:snake",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234/run.json": {Data: []byte(runJSON)},
			},
			wantErr: "no folder under benchmarks/results has its files",
		},
		{
			name: "a folder without run.json",
			kind: "paired",
			files: fstest.MapFS{
				"benchmarks/results/2026-12-05-abc1234/paired-multilingual-2-q10.json": {Data: []byte(pairedPyCell)},
			},
			wantErr: "run.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := render([]byte(doc(tt.kind)), tt.files)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := string(got)
			if !strings.HasPrefix(s, "intro\n<!-- benchtables: "+tt.kind+" -->\n") || !strings.HasSuffix(s, "<!-- benchtables: end -->\noutro\n") {
				t.Errorf("text outside the markers changed:\n%s", s)
			}
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("output lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(s, w) {
					t.Errorf("output has %q:\n%s", w, s)
				}
			}
		})
	}
}

func TestRenderMarkers(t *testing.T) {
	for _, doc := range []string{
		"<!-- benchtables: paired -->\nno end\n",
		"<!-- benchtables: end -->\n",
		"<!-- benchtables: paired",
	} {
		if _, err := render([]byte(doc), fstest.MapFS{}); err == nil {
			t.Errorf("render(%q) gave no error", doc)
		}
	}
}

func TestMillis(t *testing.T) {
	for in, want := range map[float64]string{0.04: "0.0", 99.95: "100.0", 1234.56: "1,234.6", 1234567.0: "1,234,567.0", 100.0: "100.0"} {
		if got := millis(in); got != want {
			t.Errorf("millis(%v) = %q, want %q", in, got, want)
		}
	}
}
