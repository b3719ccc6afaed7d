//go:build linux

package cuda

import (
	"testing"

	"github.com/laya-metal/laya/backend"
)

// The model asks the backend for its forward batch (backend.BatchSizer):
// the defaults, or the options where set.
func TestBatchLimits(t *testing.T) {
	for _, c := range []struct {
		opts         Options
		rows, tokens int
	}{
		{Options{}, DefaultBatchRows, DefaultBatchTokens},
		{Options{BatchRows: 8}, 8, DefaultBatchTokens},
		{Options{BatchTokens: 2048}, DefaultBatchRows, 2048},
	} {
		var be backend.Backend = &Backend{opts: c.opts}
		bs, ok := be.(backend.BatchSizer)
		if !ok {
			t.Fatal("the backend is no backend.BatchSizer")
		}
		if rows, tokens := bs.BatchLimits(); rows != c.rows || tokens != c.tokens {
			t.Errorf("%+v: batches of %d rows and %d tokens, want %d and %d", c.opts, rows, tokens, c.rows, c.tokens)
		}
	}
}
