package tokenizer

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// benchCorpus is mixed multilingual text: the serialized states of the
// real-en oracle cases (English, Spanish, German, French, Japanese, Chinese,
// Hindi, Arabic, JSON, conversations) and the texts of the HF golden file.
func benchCorpus(b *testing.B) (corpus []string, request string) {
	b.Helper()
	var cases struct {
		Cases []struct {
			State    string `json:"state_serialized"`
			StateIDs []int  `json:"state_ids"`
		} `json:"cases"`
	}
	readJSON(b, filepath.Join(oracleDir, "goldens", "real-en", "cases.json"), &cases)
	best := -1
	for _, c := range cases.Cases {
		corpus = append(corpus, c.State)
		// The typical request: the state closest to 90 tokens.
		if d := abs(len(c.StateIDs) - 90); best < 0 || d < best {
			best, request = d, c.State
		}
	}
	var golden struct {
		Cases []idCase `json:"cases"`
	}
	readJSON(b, filepath.Join(modernbertDir, "golden.json"), &golden)
	for _, c := range golden.Cases {
		corpus = append(corpus, c.Text)
	}
	return corpus, request
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func BenchmarkEncode(b *testing.B) {
	corpus, request := benchCorpus(b)
	size := 0
	for _, s := range corpus {
		size += len(s)
	}
	tokPath := filepath.Join(modernbertDir, "tokenizer.json")
	tok := mustLoad(b, tokPath)

	b.Run("modernbert-corpus", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, s := range corpus {
				tok.Encode(s)
			}
		}
	})
	b.Run("modernbert-request", func(b *testing.B) {
		b.SetBytes(int64(len(request)))
		for b.Loop() {
			tok.Encode(request)
		}
		b.ReportMetric(float64(len(tok.Encode(request))), "tokens")
	})
	b.Run("modernbert-corpus-cold", func(b *testing.B) {
		// A fresh tokenizer per op: no word is cached yet.
		data, err := os.ReadFile(tokPath)
		if err != nil {
			b.Fatal(err)
		}
		base, err := FromJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(size))
		for b.Loop() {
			b.StopTimer()
			cold := *base
			cold.model = &bpe{}
			*cold.model = bpeCopyNoCache(base.model)
			b.StartTimer()
			for _, s := range corpus {
				cold.Encode(s)
			}
		}
	})
	b.Run("tiny-ml-corpus", func(b *testing.B) {
		ml := mustLoad(b, filepath.Join(oracleDir, "checkpoints", "tiny-ml", "tokenizer", "tokenizer.json"))
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, s := range corpus {
				ml.Encode(s)
			}
		}
	})
	b.Run("npm-rust-corpus", func(b *testing.B) {
		benchNPM(b, tokPath, corpus, size)
	})
	b.Run("npm-rust-request", func(b *testing.B) {
		benchNPM(b, tokPath, []string{request}, len(request))
	})
}

// bpeCopyNoCache copies the model tables without the word cache.
func bpeCopyNoCache(m *bpe) bpe {
	return bpe{
		vocab: m.vocab, vocabR: m.vocabR, merges: m.merges, unkID: m.unkID, fuseUnk: m.fuseUnk,
		byteFall: m.byteFall, ignoreMerge: m.ignoreMerge, prefix: m.prefix, suffix: m.suffix, byteIDs: m.byteIDs,
	}
}

// benchNPM runs scripts/goldens/tokenizer-goldens/bench.mjs once and reports the
// Rust binding's time per op in the same units, for comparison. It is
// skipped when node or the npm package is not installed.
func benchNPM(b *testing.B, tokPath string, corpus []string, size int) {
	script := filepath.Join("..", "scripts", "goldens", "tokenizer-goldens", "bench.mjs")
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("node not installed")
	}
	if _, err := os.Stat(filepath.Join("..", "scripts", "goldens", "tokenizer-goldens", "node_modules", "tokenizers")); err != nil {
		b.Skip("npm tokenizers not installed (cd scripts/goldens/tokenizer-goldens && npm install)")
	}
	data, err := json.Marshal(corpus)
	if err != nil {
		b.Fatal(err)
	}
	corpusPath := filepath.Join(b.TempDir(), "corpus.json")
	if err := os.WriteFile(corpusPath, data, 0o644); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command("node", script, tokPath, corpusPath, "1").Output()
	if err != nil {
		b.Fatalf("node %s: %v", script, err)
	}
	var res struct {
		NsPerOp float64 `json:"ns_per_op"`
		Ops     int     `json:"ops"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("node %s: %v: %s", script, err, out)
	}
	// The timing is the node process's; the Go loop below only satisfies
	// the benchmark framework.
	for b.Loop() {
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(res.NsPerOp, "rust-ns/op")
	b.ReportMetric(float64(size)/res.NsPerOp*1e9/1e6, "rust-MB/s")
}
