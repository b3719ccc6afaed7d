//go:build linux || darwin

package emu_test

import (
	"encoding/binary"
	"math"
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// TestEmulatorShim checks single MSL features of the shim against values
// worked out by hand (see testdata/shim.metal).
func TestEmulatorShim(t *testing.T) {
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s, Sources: testSource(t, "testdata/shim.metal")}, "shim")
		dispatch := func(kernel string, constants []Constant, groups, threads Size3, args ...Arg) {
			t.Helper()
			p, err := d.Pipeline(kernel, constants...)
			if err != nil {
				t.Fatal(err)
			}
			if err := run(t, d, func(cb CommandBuffer) error { return cb.Dispatch(p, groups, threads, args...) }); err != nil {
				t.Fatalf("%s %s: %v", s, kernel, err)
			}
		}
		one := Size3{X: 1, Y: 1, Z: 1}

		out := f32Buffer(t, d, make([]float32, 320))
		dispatch("half_rounding", nil, one, Size3{X: 1, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out})
		// Each half addition rounds: 1 + 0.0003 stays 1 (half ulp at 1 is
		// 2^-10); computing in float first would give 1.0009765625.
		if got := readF32(out, 1)[0]; got != 1 {
			t.Errorf("%s: half 1 + 0.0003h + 0.0003h = %v, want 1", s, got)
		}

		dispatch("simd_ops", nil, one, Size3{X: 64, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out})
		got := readF32(out, 320)
		for tid := 0; tid < 64; tid++ {
			lane := tid % 32
			down := tid + 4
			if lane+4 >= 32 {
				down = tid
			}
			partial := -1.0
			if lane < 8 {
				partial = 8
			}
			want := []float64{float64(lane * (lane - 1) / 2), float64(tid ^ 1), float64(down), float64(tid/32*32 + 3), partial}
			for j, w := range want {
				if float64(got[tid*5+j]) != w {
					t.Errorf("%s: simd_ops thread %d value %d = %v, want %v", s, tid, j, got[tid*5+j], w)
				}
			}
		}

		outu := f32Buffer(t, d, make([]float32, 4))
		dispatch("vectors_and_constants", []Constant{{Index: 1, Value: int32(-7)}, {Index: 2, Value: float32(0.25)}}, one, one,
			Arg{Index: 0, Buffer: out}, Arg{Index: 1, Buffer: outu})
		want := []float32{4, 3, 2, 1, 3, -7, 0.25, 0, 10, 2}
		for i, w := range want {
			if g := readF32(out, 10)[i]; g != w {
				t.Errorf("%s: vectors_and_constants out[%d] = %v, want %v", s, i, g, w)
			}
		}
		if g := binary.LittleEndian.Uint32(outu.Bytes()); g != math.Float32bits(1) {
			t.Errorf("%s: as_type<uint>(1.0f) = %#x", s, g)
		}

		groups, threads := Size3{X: 2, Y: 3, Z: 2}, Size3{X: 4, Y: 2, Z: 2}
		gx, gy, gz := 8, 6, 4
		grid := f32Buffer(t, d, make([]float32, gx*gy*gz))
		dispatch("grid3d", nil, groups, threads, Arg{Index: 0, Buffer: grid}, Arg{Index: 0, ThreadgroupBytes: 4 * 16})
		for z := 0; z < gz; z++ {
			for y := 0; y < gy; y++ {
				for x := 0; x < gx; x++ {
					w := uint32(x + 10*y + 100*z + 1000*(y/threads.Y))
					if g := binary.LittleEndian.Uint32(grid.Bytes()[4*(x+gx*(y+gy*z)):]); g != w {
						t.Fatalf("%s: grid3d at (%d,%d,%d) = %d, want %d", s, x, y, z, g, w)
					}
				}
			}
		}

		b := pseudo(64, 11, -1, 1)
		bb := f32Buffer(t, d, b)
		dispatch("mma_diag", nil, one, Size3{X: 32, Y: 1, Z: 1}, Arg{Index: 0, Buffer: out}, Arg{Index: 1, Buffer: bb})
		got = readF32(out, 128)
		for r := 0; r < 8; r++ {
			for c := 0; c < 8; c++ {
				diag := float32(0)
				if r == c {
					diag = 2
				}
				if got[r*8+c] != diag {
					t.Errorf("%s: diagonal matrix (%d,%d) = %v, want %v", s, r, c, got[r*8+c], diag)
				}
				if got[64+r*8+c] != 2*b[r*8+c] {
					t.Errorf("%s: 2I·B (%d,%d) = %v, want %v", s, r, c, got[64+r*8+c], 2*b[r*8+c])
				}
			}
		}
	}
}
