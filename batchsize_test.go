package laya

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/oracletest"
)

func TestBatchEnd(t *testing.T) {
	tests := []struct {
		rows, tokens int
		lens         []int
		want         []int // each batch's end
	}{
		{3, 0, []int{5, 5, 5, 5, 5, 5, 5}, []int{3, 6, 7}},
		{64, 10, []int{3, 3, 3, 3, 20, 4}, []int{3, 4, 5, 6}}, // a row past the tokens runs alone
		{64, 9, []int{3, 3, 3, 3}, []int{3, 4}},               // exactly the tokens fit
		{2, 100, []int{1, 1, 1, 1, 1}, []int{2, 4, 5}},        // rows bound first
		{64, 8192, []int{9000, 9000, 10}, []int{1, 2, 3}},     // every batch has a row
		{1, 0, []int{4, 4}, []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.rows, tt.tokens, tt.lens), func(t *testing.T) {
			n := &network{batchSize: tt.rows, batchTokens: tt.tokens}
			var got []int
			for start, end := 0, 0; start < len(tt.lens); start = end {
				var tokens int
				end, tokens = n.batchEnd(start, len(tt.lens), func(i int) int { return tt.lens[i] })
				got = append(got, end)
				if want := sum(tt.lens[start:end]); tokens != want {
					t.Errorf("batch [%d, %d): %d tokens, want %d", start, end, tokens, want)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("batches end at %v, want %v", got, tt.want)
			}
		})
	}
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// sizerBackend is a backend.BatchSizer over another backend, counting the
// streams it starts: the forward runs a batch on a stream of its own.
type sizerBackend struct {
	backend.Backend
	rows, tokens int
	streams      *int
}

func (b sizerBackend) BatchLimits() (int, int) { return b.rows, b.tokens }

func (b sizerBackend) NewStream() backend.Stream {
	*b.streams++
	return b.Backend.NewStream()
}

// TestBackendBatchLimits: with no batch size given, the network takes the
// backend's rows and tokens and cuts its batches by them, answering as
// upstream does; a batch size given keeps its rows and no token bound.
func TestBackendBatchLimits(t *testing.T) {
	cpu, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	ckpt := oracletest.LoadCheckpoint(t, "tiny-en")
	cases := oracletest.Cases(t, "tiny-en")
	var rows []forwardRow
	var want []oracletest.Row
	for _, c := range cases {
		rows = append(rows, forwardtest.Rows(c.Rows)...)
		want = append(want, c.Rows...)
	}
	// A token bound that holds about three of the rows, shortest first.
	sorted := make([]int, len(rows))
	for i, r := range rows {
		sorted[i] = len(r.IDs)
	}
	slices.Sort(sorted)
	bound := sorted[0] + sorted[1] + sorted[2]
	for _, tt := range []struct {
		name                 string
		batchSize            int
		wantRows, wantTokens int
	}{
		{"the backend's", 0, 5, bound},
		{"given", 7, 7, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			streams := 0
			be := sizerBackend{cpu, 5, bound, &streams}
			n, err := newNetwork(ckpt, networkOptions{Instance: be, BatchSize: tt.batchSize, PadID: ckpt.Encoder.PadTokenID})
			if err != nil {
				t.Fatal(err)
			}
			defer n.close()
			if n.batchSize != tt.wantRows || n.batchTokens != tt.wantTokens {
				t.Fatalf("batches of %d rows and %d tokens, want %d and %d", n.batchSize, n.batchTokens, tt.wantRows, tt.wantTokens)
			}
			// The batches the limits make, counted here independently.
			batches, inRows, inTokens := 0, 0, 0
			for _, l := range sorted {
				if inRows == 0 || inRows == tt.wantRows || (tt.wantTokens > 0 && inTokens+l > tt.wantTokens) {
					batches++
					inRows, inTokens = 0, 0
				}
				inRows++
				inTokens += l
			}
			streams = 0
			got, err := n.forward(context.Background(), rows)
			if err != nil {
				t.Fatal(err)
			}
			if streams != batches {
				t.Errorf("%d batches for %d rows, want %d", streams, len(rows), batches)
			}
			for i, w := range want {
				where := fmt.Sprintf("row %d (%s)", i, w.QID)
				oracletest.Compare(t, where+" logits", got[i].Logits, w.Logits, oracletest.LogitTol)
				oracletest.Compare(t, where+" act_probs", got[i].ActProbs, w.ActProbs, oracletest.ActProbTol)
			}
		})
	}
}
