package encoder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/oracletest"
)

func load(t *testing.T, name string) (*ModernBERT, backend.Backend, oracletest.DebugHidden) {
	t.Helper()
	dbg := oracletest.Debug(t, name)
	ckpt := oracletest.LoadCheckpoint(t, name)
	be := cpu.New()
	m, err := New(be, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	return m, be, dbg
}

// TestModernBERTGoldens runs upstream's debug row twice in one batch, once
// alone and once right-padded behind a longer row of pad ids, and compares
// the embeddings, every layer and last_hidden_state with upstream's.
func TestModernBERTGoldens(t *testing.T) {
	for _, name := range []string{"tiny-en", "tiny-ml", "real-en"} {
		t.Run(name, func(t *testing.T) {
			m, be, dbg := load(t, name)
			n := len(dbg.InputIDs)
			seqLen := n + 19 // padding longer than the sliding radius
			ids := make([]int32, 2*seqLen)
			pad := int32(m.Config().PadTokenID)
			for i := range ids {
				ids[i] = pad
			}
			for i, id := range dbg.InputIDs {
				ids[i] = int32(id)
			}
			stream := be.NewStream()
			defer stream.Close()
			check := func(what string, x backend.Tensor, want [][]float64) {
				got := make([]float32, x.Rows()*x.Cols())
				if err := stream.Read(context.Background(), x, got); err != nil {
					t.Fatal(err)
				}
				cols := x.Cols()
				worst, scale := 0.0, 1.0
				for r, row := range want {
					for c, v := range row {
						worst = max(worst, math.Abs(float64(got[r*cols+c])-v))
						scale = max(scale, math.Abs(v))
					}
				}
				if !(worst <= 2e-5*scale) {
					t.Errorf("%s: max |Δ| %.3g (scale %.3g)", what, worst, scale)
				}
			}
			obs := func(_ backend.Stream, stage string, i int, x backend.Tensor) {
				switch stage {
				case "embeddings":
					check(stage, x, dbg.Embeddings)
				case "layer":
					check(fmt.Sprintf("layer %d", i), x, dbg.EncoderLayers[i])
				}
			}
			// Row 0: the debug row right-padded; row 1: pad ids only, of
			// full length, which must not leak into row 0.
			h, err := m.Forward(context.Background(), stream, ids, backend.Layout{Lengths: []int{n, seqLen}, SeqLen: seqLen}, obs)
			if err != nil {
				t.Fatal(err)
			}
			check("last_hidden_state", h, dbg.LastHiddenState)
		})
	}
}

func TestModernBERTRejects(t *testing.T) {
	m, be, _ := load(t, "tiny-en")
	s := be.NewStream()
	if _, err := m.Forward(context.Background(), s, []int32{1, 2, 3}, backend.Layout{Lengths: []int{2}, SeqLen: 2}, nil); !errors.Is(err, backend.ErrShape) {
		t.Errorf("3 ids for one row of 2: err = %v, want ErrShape", err)
	}
	if _, err := m.Forward(context.Background(), s, []int32{1, 700}, backend.Layout{Lengths: []int{2}, SeqLen: 2}, nil); !errors.Is(err, backend.ErrShape) {
		t.Errorf("id past the vocabulary: err = %v, want ErrShape", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Forward(ctx, be.NewStream(), []int32{1, 2}, backend.Layout{Lengths: []int{2}, SeqLen: 2}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}
