// Command parity runs laya-metal's forward pass (encoder, decision head with
// final-head pruning, scorer, act head: the packages the library's forward
// uses, on the backend it names) over explicit token rows and writes their
// option logits and act probabilities as JSON, for parity.py to compare with
// the PyTorch reference at full size. It is built once as a static binary
// (run.sh) so the comparison runs on a machine with PyTorch but no Go.
//
// Usage:
//
//	parity --model DIR --rows rows.json [--backend cpu|cuda] [--batch 6] > ours.json
//
// rows.json: {"rows": [{"input_ids": [...], "markers": [...], "qtype": 0}]}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/laya-metal/laya/backend"
	_ "github.com/laya-metal/laya/backend/cpu"
	_ "github.com/laya-metal/laya/backend/cuda" // on a CUDA host; LAYA_CUDA sets its precision
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/weights"
)

type row struct {
	InputIDs []int `json:"input_ids"`
	Markers  []int `json:"markers"`
	QType    int   `json:"qtype"`
}

type output struct {
	Logits   []float32 `json:"logits"`
	ActProbs []float32 `json:"act_probs"`
}

type model struct {
	ckpt *weights.Checkpoint
	forwardpass.Parts
}

func main() {
	dir := flag.String("model", "", "checkpoint directory")
	rowsPath := flag.String("rows", "", "rows JSON file")
	backendName := flag.String("backend", "cpu", "backend")
	batch := flag.Int("batch", 6, "rows per batch (the reference's padded batches)")
	flag.Parse()
	if *dir == "" || *rowsPath == "" || *batch < 1 {
		flag.Usage()
		os.Exit(2)
	}
	raw, err := os.ReadFile(*rowsPath)
	if err != nil {
		log.Fatal(err)
	}
	var in struct{ Rows []row }
	if err := json.Unmarshal(raw, &in); err != nil {
		log.Fatalf("%s: %v", *rowsPath, err)
	}
	ckpt, err := weights.LoadCheckpoint(*dir)
	if err != nil {
		log.Fatal(err)
	}
	defer ckpt.Close()
	be, err := backend.Open(*backendName)
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	m := &model{ckpt: ckpt}
	if m.Parts, err = forwardpass.NewParts(be, ckpt); err != nil {
		log.Fatal(err)
	}
	var out []output
	for start := 0; start < len(in.Rows); start += *batch {
		res, err := m.run(context.Background(), be, in.Rows[start:min(start+*batch, len(in.Rows))])
		if err != nil {
			log.Fatalf("rows %d…: %v", start, err)
		}
		out = append(out, res...)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(map[string]any{"backend": *backendName, "rows": out}); err != nil {
		log.Fatal(err)
	}
}

// run is one batch as the library runs it on the backend: packed where the
// backend takes packed rows (filled up to its token bucket), else right
// padded, through the pruned pass.
func (m *model) run(ctx context.Context, be backend.Backend, rows []row) ([]output, error) {
	layout := make([]forwardpass.Row, len(rows))
	for b, r := range rows {
		if len(r.InputIDs) == 0 || len(r.Markers) == 0 {
			return nil, fmt.Errorf("row %d: empty ids or markers", b)
		}
		layout[b] = forwardpass.Row{IDs: r.InputIDs, Markers: r.Markers, QType: heads.QType(r.QType)}
	}
	logits, probs, err := m.RunRowsPruned(ctx, be, layout, int32(max(m.ckpt.Encoder.PadTokenID, 0)))
	if err != nil {
		return nil, err
	}
	out := make([]output, len(rows))
	for b := range rows {
		out[b] = output{Logits: logits[b], ActProbs: probs[b]}
	}
	return out, nil
}
