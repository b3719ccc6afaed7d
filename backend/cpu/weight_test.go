package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// encode returns vals in dtype's little-endian bytes and the float32 values
// those bytes hold (vals rounded to dtype).
func encode(vals []float32, dtype backend.DType) ([]byte, []float32) {
	raw := weights.EncodeFloat32(nil, vals, dtype)
	exact := make([]float32, len(vals))
	if err := weights.DecodeFloat32(exact, raw, dtype); err != nil {
		panic(err)
	}
	return raw, exact
}

// TestWeightsAsStored: a weight uploaded (copied or mapped) in any dtype
// multiplies, gathers and adds exactly as the float32 weight of the values
// its bytes hold, through every tile kernel (F16/BF16 panels are widened
// while packing, rows of a gathered table one at a time).
func TestWeightsAsStored(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const m, n, k = 7, 70, 37 // a ragged panel, a ragged K tail
	for _, kernel := range gemmKernels(t) {
		for _, dtype := range []backend.DType{backend.F32, backend.F16, backend.BF16} {
			for _, mapped := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/mapped=%v", kernel.name, dtype, mapped), func(t *testing.T) {
					useGemmKernel(t, kernel)
					be := New()
					be.workers = 3
					raw, exact := encode(randomValues(rng, n*k), dtype)
					var w backend.Tensor
					var err error
					if mapped {
						// A page-aligned "mapping" with the tensor at an
						// offset of 64 bytes.
						mapping := make([]byte, 64+len(raw)+100)
						copy(mapping[64:], raw)
						w, err = be.UploadMapped("w", dtype, n, k, mapping, 64)
						if err == nil && dtype != backend.F32 && w.(*tensor).half == nil {
							t.Errorf("F16/BF16 matrix was widened at upload")
						}
						if err == nil && unsafe.Pointer(unsafe.SliceData(w.(*tensor).half)) != unsafe.Pointer(&mapping[64]) &&
							unsafe.Pointer(unsafe.SliceData(w.(*tensor).data)) != unsafe.Pointer(&mapping[64]) {
							t.Errorf("mapped weight was copied")
						}
					} else {
						w, err = be.Upload("w", dtype, n, k, raw)
					}
					if err != nil {
						t.Fatal(err)
					}
					s := be.NewStream()
					xv := randomValues(rng, m*k)
					x := s.FromHost(m, k, xv)
					y, ref := s.New(m, n), s.New(m, n)
					s.Linear(y, x, w, nil, backend.Identity)
					s.Linear(ref, x, s.FromHost(n, k, exact), nil, backend.Identity)
					if got, want := read(t, s, y), read(t, s, ref); !bitsEqual(got, want) {
						t.Fatalf("Linear on %v weights differs from the float32 weights", dtype)
					}
					idx := []int32{3, 0, int32(n - 1), 3}
					g := s.New(len(idx), k)
					s.Gather(g, w, idx)
					got := read(t, s, g)
					for i, r := range idx {
						if !bitsEqual(got[i*k:(i+1)*k], exact[int(r)*k:int(r+1)*k]) {
							t.Fatalf("gathered row %d differs", r)
						}
					}
					// Any other op widens the whole weight once.
					sum := s.New(n, k)
					s.Add(sum, w, w)
					for i, v := range read(t, s, sum) {
						if v != 2*exact[i] {
							t.Fatalf("add[%d] = %v, want %v", i, v, 2*exact[i])
						}
					}
					// A weight is never a destination.
					s.Add(w, sum, sum)
					if err := s.Err(); !errors.Is(err, backend.ErrShape) {
						t.Errorf("writing a weight: err %v, want ErrShape", err)
					}
				})
			}
		}
	}
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestWiden holds the SIMD conversions to the portable ones on every F16 and
// BF16 bit pattern, at lengths that leave every tail. NaNs need only stay
// NaNs: VCVTPH2PS quiets a signalling NaN, the table keeps its payload.
func TestWiden(t *testing.T) {
	src := make([]uint16, 65536+13)
	for i := range src {
		src[i] = uint16(i * 40503) // a permutation of all patterns, then 13 more
	}
	for _, dtype := range []backend.DType{backend.F16, backend.BF16} {
		for _, n := range []int{1, 15, 16, 17, 33, len(src)} {
			got, want := make([]float32, n+1), make([]float32, n+1)
			got[n], want[n] = 42, 42 // the element after must stay
			widen(got[:n], src[:n], dtype)
			widenGo(want[:n], src[:n], dtype)
			for i := range got {
				g, w := got[i], want[i]
				if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
					t.Fatalf("%v n=%d: element %d (%#04x) widened to %#08x, Go %#08x", dtype, n, i, src[min(i, n-1)], math.Float32bits(g), math.Float32bits(w))
				}
			}
		}
	}
	// widenGo itself against the weights package's decoder.
	raw := make([]byte, 2*len(src))
	for i, v := range src {
		binary.LittleEndian.PutUint16(raw[2*i:], v)
	}
	for _, dtype := range []backend.DType{backend.F16, backend.BF16} {
		want := make([]float32, len(src))
		if err := weights.DecodeFloat32(want, raw, dtype); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(src))
		widenGo(got, src, dtype)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("%v %#04x: %v, want %v", dtype, src[i], got[i], want[i])
			}
		}
	}
}

func TestUploadMappedRejects(t *testing.T) {
	be := New()
	mapping := make([]byte, 64)
	for _, tc := range []struct {
		rows, cols, off int
		dtype           backend.DType
	}{
		{4, 4, 0, backend.F32 + 100}, // unknown dtype
		{4, 4, 1, backend.F32},       // 64 bytes at offset 1 overrun
		{4, 4, -4, backend.F16},
		{0, 4, 0, backend.F16},
		{8, 8, 0, backend.F16},
	} {
		if _, err := be.UploadMapped("w", tc.dtype, tc.rows, tc.cols, mapping, tc.off); err == nil {
			t.Errorf("%+v: no error", tc)
		}
	}
	// A misaligned F32 tensor is copied, and still right.
	vals := []float32{1, -2, 3.5, 4, 5, 6}
	raw, _ := encode(vals, backend.F32)
	buf := make([]byte, 1+len(raw))
	copy(buf[1:], raw)
	w, err := be.UploadMapped("w", backend.F32, 2, 3, buf, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := be.NewStream()
	if got := read(t, s, w); !bitsEqual(got, vals) {
		t.Errorf("misaligned copy = %v", got)
	}
}

// A closed stream's buffers are reused, zeroed, by the next stream; the old
// handles are refused.
func TestArenaReuse(t *testing.T) {
	be := New()
	s := be.NewStream()
	old := s.FromHost(3, 5, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	ptr := &old.(*tensor).data[0]
	s.Close()
	s2 := be.NewStream()
	fresh := s2.New(3, 5)
	if &fresh.(*tensor).data[:1][0] != ptr {
		t.Errorf("buffer not reused")
	}
	for i, v := range read(t, s2, fresh) {
		if v != 0 {
			t.Fatalf("reused buffer [%d] = %v, want 0", i, v)
		}
	}
	s2.Add(fresh, old, fresh)
	if err := s2.Err(); !errors.Is(err, backend.ErrForeignTensor) {
		t.Errorf("closed stream's tensor: err %v, want ErrForeignTensor", err)
	}
	// Large buffers are cleared by the workers in chunks: every value of
	// a reused one must come back zero, the chunk boundaries included.
	be.workers = 3
	for _, n := range []int{zeroedChunk - 1, zeroedChunk, 3*zeroedChunk + 5, 1 << 20} {
		s := be.NewStream()
		dirty := s.New(1, n)
		ptr := &dirty.(*tensor).data[0]
		for i := range dirty.(*tensor).data {
			dirty.(*tensor).data[i] = float32(i + 1)
		}
		s.Close()
		s = be.NewStream()
		again := s.New(1, n)
		if &again.(*tensor).data[0] != ptr {
			t.Errorf("n = %d: buffer not reused", n)
		}
		for i, v := range again.(*tensor).data {
			if v != 0 {
				t.Fatalf("n = %d: reused buffer [%d] = %v, want 0", n, i, v)
			}
		}
		s.Close()
	}
	for _, n := range []int{1, 64, 65, 100, 1000, 1 << 20, 1<<20 + 1} {
		if c := sizeClass(n); c < n || c > n+n/4+64 || sizeClass(c) != c {
			t.Errorf("sizeClass(%d) = %d", n, c)
		}
	}
}

// Linear followed by the GeGLU of its output runs fused; the answers, and
// the projection itself, equal the unfused pair's bit for bit, for float32
// and F16 weights, and a GeGLU into the Linear's own input is not fused.
func TestGeGLUFused(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	const m, k, inner = 50, 33, 70
	for _, dtype := range []backend.DType{backend.F32, backend.F16} {
		be := New()
		be.workers = 3
		w := uploadRandom(t, be, dtype, 2*inner, k, rng)
		xv := randomValues(rng, m*k)
		s := be.NewStream()
		x := s.FromHost(m, k, xv)
		upA, actA := s.New(m, 2*inner), s.New(m, inner)
		s.Linear(upA, x, w, nil, backend.Identity)
		if s.(*Stream).pending == nil {
			t.Fatal("Linear was not deferred")
		}
		s.GeGLU(actA, upA) // fused
		upB, actB := s.New(m, 2*inner), s.New(m, inner)
		s.Linear(upB, x, w, nil, backend.Identity)
		upHost := read(t, s, upB) // runs the Linear alone
		s.GeGLU(actB, upB)
		if !bitsEqual(read(t, s, actA), read(t, s, actB)) {
			t.Errorf("%v: fused GeGLU differs from Linear then GeGLU", dtype)
		}
		if !bitsEqual(read(t, s, upA), upHost) {
			t.Errorf("%v: the fused pair's projection differs", dtype)
		}
		// k = inner: a GeGLU may write into the Linear's input.
		sq := s.FromHost(m, inner, randomValues(rng, m*inner))
		ref := s.FromHost(m, inner, read(t, s, sq))
		w2 := uploadRandom(t, be, dtype, 2*inner, inner, rng)
		up2, want := s.New(m, 2*inner), s.New(m, inner)
		s.Linear(up2, ref, w2, nil, backend.Identity)
		s.GeGLU(want, up2)
		s.Linear(up2, sq, w2, nil, backend.Identity)
		s.GeGLU(sq, up2)
		if !bitsEqual(read(t, s, sq), read(t, s, want)) {
			t.Errorf("%v: GeGLU into the Linear's input differs", dtype)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A deferred Linear runs before any later operation touches its operands:
// overwriting its input right after it, or reading its output through
// another op, sees the Linear of the input as it was.
func TestDeferredLinearOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	const m, k, n = 9, 12, 10
	be := New()
	s := be.NewStream()
	xv, wv := randomValues(rng, m*k), randomValues(rng, n*k)
	ref := be.NewStream()
	yRef := ref.New(m, n)
	ref.Linear(yRef, ref.FromHost(m, k, xv), ref.FromHost(n, k, wv), nil, backend.Identity)
	want := read(t, ref, yRef)
	x, w := s.FromHost(m, k, xv), s.FromHost(n, k, wv)
	y := s.New(m, n)
	s.Linear(y, x, w, nil, backend.Identity)
	s.Activate(x, x, backend.ReLU) // overwrites the pending Linear's input
	twice := s.New(m, n)
	s.Add(twice, y, y)
	got := read(t, s, twice)
	for i := range want {
		if got[i] != 2*want[i] {
			t.Fatalf("y[%d] = %v after the input was overwritten, want %v", i, got[i]/2, want[i])
		}
	}
}
