package cuda_test

import (
	"context"
	"testing"
	"time"

	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/cuda"
)

// TestLaunchCost logs what one dispatch costs: encoding (Dispatch), issuing
// (Commit: cuLaunchKernel through purego and the worker thread) and GPU
// time, for 2000 one-threadgroup vector_adds, with and without a Barrier
// between each, on 1 and 4 streams. It checks the results, not the times.
func TestLaunchCost(t *testing.T) {
	for _, streams := range []int{1, 4} {
		dev := openDevice(t, cuda.Options{Streams: streams})
		a, _ := dev.NewBuffer(4 * 128)
		out, _ := dev.NewBuffer(4 * 128)
		p, err := dev.Pipeline("vector_add")
		if err != nil {
			t.Fatal(err)
		}
		for _, barriers := range []bool{false, true} {
			const n = 2000
			for round := 0; round < 2; round++ { // the first round warms up
				putFloats(a.Bytes(), make([]float32, 128))
				cb, _ := dev.NewCommandBuffer()
				start := time.Now()
				for i := 0; i < n; i++ {
					src := a
					if i > 0 && barriers {
						src = out
					}
					if err := cb.Dispatch(p, metal.Size3{X: 1, Y: 1, Z: 1}, metal.Size3{X: 128, Y: 1, Z: 1},
						metal.Arg{Index: 0, Buffer: src}, metal.Arg{Index: 1, Buffer: a}, metal.Arg{Index: 2, Buffer: out}, metal.Arg{Index: 3, Bytes: u32(128)}); err != nil {
						t.Fatal(err)
					}
					if barriers {
						cb.Barrier()
					}
				}
				encoded := time.Since(start)
				cb.Commit()
				issued := time.Since(start) - encoded
				tm, err := cb.Wait(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				wall := time.Since(start)
				// a is zero: out is 0 either way; with barriers the chain
				// out = out + a must also have run in order to stay 0.
				for i, v := range floats(out.Bytes()) {
					if v != 0 {
						t.Fatalf("out[%d] = %v", i, v)
					}
				}
				if round == 1 {
					t.Logf("LAUNCH | %d streams | barriers %v | encode %.2f µs | issue %.2f µs | GPU %.2f µs | wall %.2f µs per dispatch |",
						streams, barriers, us(encoded)/n, us(issued)/n, us(tm.GPUTime())/n, us(wall)/n)
				}
			}
		}
		dev.Close()
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
