package forwardtest

import (
	"context"
	"math"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/forwardpass"
)

// RunFunc runs rows on a backend, as forwardpass.Parts' runners do.
type RunFunc func(ctx context.Context, be backend.Backend, rows []forwardpass.Row, pad int32, obs backend.Observer) ([][]float32, [][]float32, error)

// RunPacked is a RunFunc for parts.RunRowsPruned: packed rows filled up to
// the token bucket, the pruned pass, as the library runs a batch on a
// backend that packs rows.
func RunPacked(parts forwardpass.Parts) RunFunc {
	return func(ctx context.Context, be backend.Backend, rows []forwardpass.Row, pad int32, _ backend.Observer) ([][]float32, [][]float32, error) {
		return parts.RunRowsPruned(ctx, be, rows, pad)
	}
}

// RunRefined runs rows as the model does on a backend.Refiner: all of them
// on its reduced stream, then the near-ties (backend.NearTie at the
// reduced stream's margin) and the rows with a non-finite probability
// again on a plain one, alone in their batch. It adds the rows it ran
// again to refined.
func RunRefined(ctx context.Context, be backend.Backend, run RunFunc, rows []forwardpass.Row, pad int32, refined int) ([][]float32, [][]float32, int, error) {
	var margin float32
	reduced := streamsOf{be, func() backend.Stream {
		s, m := be.(backend.Refiner).ReducedStream(1 << 30)
		if s == nil {
			panic("no reduced stream")
		}
		margin = m
		return s
	}}
	logits, probs, err := run(ctx, reduced, rows, pad, nil)
	if err != nil {
		return nil, nil, refined, err
	}
	var again []int
	for i := range rows {
		nonFinite := false
		for _, p := range probs[i] {
			nonFinite = nonFinite || math.IsNaN(float64(p)) || math.IsInf(float64(p), 0)
		}
		if nonFinite || backend.NearTie(logits[i], margin) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return logits, probs, refined, nil
	}
	sub := make([]forwardpass.Row, len(again))
	for j, i := range again {
		sub[j] = rows[i]
	}
	l2, p2, err := run(ctx, be, sub, pad, nil)
	if err != nil {
		return nil, nil, refined, err
	}
	for j, i := range again {
		logits[i], probs[i] = l2[j], p2[j]
	}
	return logits, probs, refined + len(again), nil
}

// streamsOf is a backend whose NewStream is another's kind of stream.
type streamsOf struct {
	backend.Backend
	newStream func() backend.Stream
}

func (s streamsOf) NewStream() backend.Stream { return s.newStream() }
