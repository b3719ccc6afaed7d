package cpu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laya-metal/laya/backend"
)

func TestUpload(t *testing.T) {
	be := New()
	want := []float32{1, -2.5, 0.375, 1024}
	f32 := make([]byte, 16)
	f16 := []byte{0x00, 0x3c, 0x00, 0xc1, 0x00, 0x36, 0x00, 0x64}
	bf16 := make([]byte, 8)
	for i, v := range want {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(v))
		binary.LittleEndian.PutUint16(bf16[2*i:], uint16(math.Float32bits(v)>>16))
	}
	for _, tt := range []struct {
		dtype backend.DType
		raw   []byte
	}{{backend.F32, f32}, {backend.F16, f16}, {backend.BF16, bf16}} {
		w, err := be.Upload("w", tt.dtype, 2, 2, tt.raw)
		if err != nil {
			t.Fatalf("%v: %v", tt.dtype, err)
		}
		if got := read(t, be.NewStream(), w); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v: %v, want %v", tt.dtype, got, want)
		}
	}
	if _, err := be.Upload("w", backend.F16, 2, 3, f16); !errors.Is(err, backend.ErrShape) {
		t.Errorf("short data: err = %v, want ErrShape", err)
	}
	if _, err := be.Upload("w", backend.DType(9), 2, 2, f32); !errors.Is(err, backend.ErrDType) {
		t.Errorf("unknown dtype: err = %v, want ErrDType", err)
	}
}

func read(t *testing.T, s backend.Stream, x backend.Tensor) []float32 {
	t.Helper()
	out := make([]float32, x.Rows()*x.Cols())
	if err := s.Read(context.Background(), x, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func randomValues(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// checkClose compares got with a float64 reference: |Δ| ≤ tol·(1+|want|).
func checkClose(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// geluRef is the GELU in float64, through erfc (accurate for x < 0 too).
func geluRef(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

// TestLinear holds the blocked GEMM to a naive float64 product on shapes that
// hit every tail of the micro-kernels (3×4 SIMD, 2×4 Go) and the 64×48 tiles.
func TestLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	be := New()
	be.workers = 3 // uneven split on any machine
	for _, shape := range [][3]int{{1, 1, 1}, {1, 5, 3}, {2, 4, 8}, {3, 7, 5}, {5, 67, 33}, {33, 130, 64}, {70, 9, 200}} {
		for _, act := range []backend.Activation{backend.Identity, backend.GELU, backend.ReLU} {
			for _, withBias := range []bool{false, true} {
				m, n, k := shape[0], shape[1], shape[2]
				t.Run(fmt.Sprintf("%dx%dx%d/%v/bias=%v", m, n, k, act, withBias), func(t *testing.T) {
					s := be.NewStream()
					xv, wv, bv := randomValues(rng, m*k), randomValues(rng, n*k), randomValues(rng, n)
					x, w := s.FromHost(m, k, xv), s.FromHost(n, k, wv)
					var bias backend.Tensor
					if withBias {
						bias = s.FromHost(1, n, bv)
					}
					y := s.New(m, n)
					s.Linear(y, x, w, bias, act)
					want := make([]float64, m*n)
					for i := range m {
						for j := range n {
							var sum float64
							for kk := range k {
								sum += float64(xv[i*k+kk]) * float64(wv[j*k+kk])
							}
							if withBias {
								sum += float64(bv[j])
							}
							switch act {
							case backend.GELU:
								sum = geluRef(sum)
							case backend.ReLU:
								sum = max(sum, 0)
							}
							want[i*n+j] = sum
						}
					}
					checkClose(t, "y", read(t, s, y), want, 1e-5*math.Sqrt(float64(k)))
				})
			}
		}
	}
}

func TestLayerNormSoftmaxGeGLUAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	be := New()
	s := be.NewStream()
	const rows, cols = 5, 12
	xv, wv, bv := randomValues(rng, rows*cols), randomValues(rng, cols), randomValues(rng, cols)
	for i := range xv {
		xv[i] = xv[i]*3 + 7 // an offset mean exercises the centring
	}
	x := s.FromHost(rows, cols, xv)

	for _, withBias := range []bool{false, true} {
		var bias backend.Tensor
		if withBias {
			bias = s.FromHost(1, cols, bv)
		}
		y := s.New(rows, cols)
		s.LayerNorm(y, x, s.FromHost(1, cols, wv), bias, 1e-5)
		want := make([]float64, rows*cols)
		for r := range rows {
			var mean, sq float64
			for c := range cols {
				mean += float64(xv[r*cols+c]) / cols
			}
			for c := range cols {
				d := float64(xv[r*cols+c]) - mean
				sq += d * d / cols
			}
			for c := range cols {
				v := (float64(xv[r*cols+c]) - mean) / math.Sqrt(sq+1e-5) * float64(wv[c])
				if withBias {
					v += float64(bv[c])
				}
				want[r*cols+c] = v
			}
		}
		checkClose(t, fmt.Sprintf("layerNorm bias=%v", withBias), read(t, s, y), want, 1e-6)
	}

	sm := s.New(rows, cols)
	s.Softmax(sm, x)
	want := make([]float64, rows*cols)
	for r := range rows {
		var sum float64
		for c := range cols {
			sum += math.Exp(float64(xv[r*cols+c]))
		}
		for c := range cols {
			want[r*cols+c] = math.Exp(float64(xv[r*cols+c])) / sum
		}
	}
	checkClose(t, "softmax", read(t, s, sm), want, 1e-6)
	s.Softmax(x, x) // in place must equal out of place
	checkClose(t, "softmax in place", read(t, s, x), want, 1e-6)

	g := s.New(rows, cols/2)
	s.GeGLU(g, s.FromHost(rows, cols, xv))
	want = want[:rows*cols/2]
	for r := range rows {
		for c := range cols / 2 {
			want[r*cols/2+c] = geluRef(float64(xv[r*cols+c])) * float64(xv[r*cols+cols/2+c])
		}
	}
	checkClose(t, "geglu", read(t, s, g), want, 1e-6)

	a, b := s.FromHost(1, 3, []float32{1, 2, 3}), s.FromHost(1, 3, []float32{0.5, -2, 4})
	s.Add(a, a, b)
	checkClose(t, "add", read(t, s, a), []float64{1.5, 0, 7}, 0)
	s.Activate(b, b, backend.ReLU)
	checkClose(t, "relu", read(t, s, b), []float64{0.5, 0, 4}, 0)
}

func TestGather(t *testing.T) {
	s := New().NewStream()
	table := s.FromHost(3, 2, []float32{0, 1, 10, 11, 20, 21})
	out := s.New(4, 2)
	s.Gather(out, table, []int32{2, 0, 2, 1})
	checkClose(t, "gather", read(t, s, out), []float64{20, 21, 0, 1, 20, 21, 10, 11}, 0)
	s.Gather(out, table, []int32{0, 1, 3, 0})
	if err := s.Err(); !errors.Is(err, backend.ErrShape) {
		t.Fatalf("index 3 of 3 rows: err = %v, want ErrShape", err)
	}
}

// TestStickyError checks that the first error turns the stream into no-ops
// and surfaces at Read.
func TestStickyError(t *testing.T) {
	s := New().NewStream()
	x := s.FromHost(2, 2, []float32{1, 2, 3, 4})
	s.Linear(s.New(2, 2), x, s.New(3, 3), nil, backend.Identity) // K mismatch
	first := s.Err()
	if !errors.Is(first, backend.ErrShape) {
		t.Fatalf("err = %v, want ErrShape", first)
	}
	s.Add(x, x, x)
	if err := s.Read(context.Background(), x, make([]float32, 4)); err != first {
		t.Fatalf("Read err = %v, want the first error %v", err, first)
	}
	s2 := New().NewStream()
	s2.Add(x, x, x)
	s2.Close()
	s3 := New().NewStream()
	s3.Close()
	s3.Add(x, x, x)
	if err := s3.Err(); !errors.Is(err, backend.ErrForeignTensor) {
		t.Fatalf("closed stream: err = %v, want ErrForeignTensor", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := New().NewStream().Read(ctx, x, make([]float32, 4)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Read: err = %v", err)
	}
}
