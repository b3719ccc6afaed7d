package laya

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLoad measures laya.Load on the cpu backend (ms/load): the tiny-en
// oracle checkpoint and, when LAYA_BENCH_MODEL names a checkpoint directory
// (e.g. one `laya synth --preset english` wrote) or the synthetic English
// model of BenchmarkForward exists, that one. On the cpu backend weights are
// used as stored over the file mapping, so this is the mmap plus header and
// config validation, the tokenizer and the calibration; the first request
// then pages the weights in.
func BenchmarkLoad(b *testing.B) {
	dirs := map[string]string{"tiny-en": filepath.Join("testdata", "oracle", "checkpoints", "tiny-en")}
	if d := os.Getenv("LAYA_BENCH_MODEL"); d != "" {
		dirs["env"] = d
	} else if d := filepath.Join(os.TempDir(), "laya-bench-english-F16-seed1"); fileExists(filepath.Join(d, "model.safetensors")) {
		dirs["english-full"] = d
	}
	for _, name := range []string{"tiny-en", "env", "english-full"} {
		dir, ok := dirs[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				a, err := Load(ctx, dir, WithBackend("cpu"))
				if err != nil {
					b.Fatal(err)
				}
				a.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/load")
		})
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
