package cuda_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/cuda"
)

// Dispatches between two barriers are unordered, as in Metal's concurrent
// encoder: with Options.Shuffle they run in another order than encoded
// (one stream, so the order is the shuffle's alone), and a Barrier between
// them restores the encoded order. Eight vector_adds each write their own
// value into the same buffer; the last to run wins.
func TestShuffleAndBarrier(t *testing.T) {
	const n = 8
	winners := map[float32]bool{}
	for seed := uint64(1); seed <= 4; seed++ {
		for _, barriers := range []bool{false, true} {
			dev := openDevice(t, cuda.Options{Streams: 1, Shuffle: seed})
			zero, _ := dev.NewBuffer(4)
			out, _ := dev.NewBuffer(4)
			p, err := dev.Pipeline("vector_add")
			if err != nil {
				t.Fatal(err)
			}
			cb, _ := dev.NewCommandBuffer()
			for i := 0; i < n; i++ {
				v, _ := dev.NewBuffer(4)
				putFloats(v.Bytes(), []float32{float32(i)})
				if err := cb.Dispatch(p, metal.Size3{X: 1, Y: 1, Z: 1}, metal.Size3{X: 1, Y: 1, Z: 1},
					metal.Arg{Index: 0, Buffer: v}, metal.Arg{Index: 1, Buffer: zero}, metal.Arg{Index: 2, Buffer: out},
					metal.Arg{Index: 3, Bytes: binary.LittleEndian.AppendUint32(nil, 1)}); err != nil {
					t.Fatal(err)
				}
				if barriers {
					cb.Barrier()
				}
			}
			if _, err := cb.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := floats(out.Bytes())[0]
			if barriers && got != n-1 {
				t.Errorf("seed %d with barriers: the last dispatch run wrote %v, want %d (encode order)", seed, got, n-1)
			}
			if !barriers {
				winners[got] = true
			}
			dev.Close()
		}
	}
	if len(winners) < 2 {
		t.Errorf("without barriers, 4 shuffle seeds all ran the same dispatch last (%v): no reordering", winners)
	}
}
