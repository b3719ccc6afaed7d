package laya

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights/synthetic"
)

// BenchmarkForward measures one request's forward pass (ms/request): the
// tiny-en oracle rows of case lang_en, and a full-size English model
// (synthetic weights of ModernBERT-large's shape) on rows of 93 tokens.
func BenchmarkForward(b *testing.B) {
	b.Run("tiny-en/lang_en", func(b *testing.B) {
		var rows []forwardRow
		for _, c := range oracletest.Cases(b, "tiny-en") {
			if c.Name == "lang_en" {
				rows = append(rows, forwardtest.Rows(c.Rows)...)
			}
		}
		if len(rows) == 0 {
			b.Fatal("case lang_en not found")
		}
		benchForward(b, loadNetwork(b, oracletest.Checkpoint("tiny-en"), 16), rows)
	})
	for _, questions := range []int{1, 4} {
		b.Run(fmt.Sprintf("english-full/%dq-93tok", questions), func(b *testing.B) {
			if testing.Short() {
				b.Skip("full-size model skipped in -short mode")
			}
			n := loadNetwork(b, syntheticEnglish(b), 16)
			rows := make([]forwardRow, questions)
			for q := range rows {
				ids := make([]int, 93)
				for i := range ids {
					ids[i] = 1000 + 37*i%40000
				}
				ids[0], ids[92] = 50281, 50282 // [CLS] … [SEP]
				ids[20], ids[25] = 50284, 50284
				rows[q] = forwardRow{IDs: ids, Markers: []int{20, 25}, QType: heads.QType(q % 3)}
			}
			benchForward(b, n, rows)
		})
	}
}

func benchForward(b *testing.B, n *network, rows []forwardRow) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := n.forward(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/request")
}

// syntheticEnglish writes the full-size synthetic English checkpoint (~800
// MB) once into a cache directory under os.TempDir keyed by the spec and
// returns the directory; later runs reuse it.
func syntheticEnglish(b *testing.B) string {
	spec := synthetic.English()
	spec.TokenizerDir = filepath.Join("testdata", "tokenizers", "modernbert")
	dir, err := synthetic.TempCheckpoint(spec)
	if err != nil {
		b.Fatal(err)
	}
	return dir
}
