package gpu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/weights"
)

// The Metal backend is held to package backend/cpu, the reference, op by
// op on random data, through the emulator (the same Go code as on a GPU).

var (
	emuOnce sync.Once
	emuBe   *Backend
	emuErr  error
)

// emulator returns one "metal-emu" backend shared by the tests (compiling
// the kernels is the slow part; clang's objects are cached across runs).
func emulator(t testing.TB) *Backend {
	t.Helper()
	emuOnce.Do(func() { emuBe, emuErr = openEmulator() })
	if emuErr != nil {
		t.Fatalf("metal-emu: %v", emuErr)
	}
	return emuBe
}

// random gives reproducible values in [lo, hi).
func random(n int, seed uint64, lo, hi float32) []float32 {
	out := make([]float32, n)
	s := seed*0x9e3779b97f4a7c15 + 1
	for i := range out {
		s = s*6364136223846793005 + 1442695040888963407
		out[i] = lo + (hi-lo)*float32(s>>40)/float32(1<<24)
	}
	return out
}

// rawOf encodes vs as dtype; the float32 values each backend will see are
// returned by decoding it again.
func rawOf(vs []float32, dtype backend.DType) []byte {
	out := make([]byte, 0, len(vs)*dtype.Size())
	for _, v := range vs {
		switch dtype {
		case backend.F16:
			out = binary.LittleEndian.AppendUint16(out, weights.Float32ToFloat16(v))
		case backend.BF16:
			out = binary.LittleEndian.AppendUint16(out, weights.Float32ToBFloat16(v))
		default:
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}

// opCase runs one operation on a backend and returns what it read back.
type opCase struct {
	name string
	tol  float64 // max |metal − cpu| / (1 + |cpu|)
	run  func(be backend.Backend, s backend.Stream) (backend.Tensor, error)
}

func upload(be backend.Backend, name string, dtype backend.DType, rows, cols int, seed uint64, lo, hi float32) (backend.Tensor, error) {
	return be.Upload(name, dtype, rows, cols, rawOf(random(rows*cols, seed, lo, hi), dtype))
}

func opCases() []opCase {
	var cases []opCase
	for _, dt := range []backend.DType{backend.F32, backend.F16, backend.BF16} {
		cases = append(cases, opCase{"gather/" + dt.String(), 0, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			table, err := upload(be, "emb", dt, 37, 70, 1, -2, 2)
			if err != nil {
				return nil, err
			}
			dst := s.New(5, 70)
			s.Gather(dst, table, []int32{36, 0, 5, 5, 17})
			return dst, nil
		}})
		for _, act := range []backend.Activation{backend.Identity, backend.GELU, backend.ReLU} {
			for _, bias := range []bool{false, true} {
				name := fmt.Sprintf("linear/%s/%s/bias=%v", dt, act, bias)
				cases = append(cases, opCase{name, 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
					w, err := upload(be, "w", dt, 45, 67, 2, -0.3, 0.3)
					if err != nil {
						return nil, err
					}
					var b backend.Tensor
					if bias {
						if b, err = upload(be, "b", dt, 1, 45, 3, -1, 1); err != nil {
							return nil, err
						}
					}
					x := s.FromHost(19, 67, random(19*67, 4, -2, 2))
					dst := s.New(19, 45)
					s.Linear(dst, x, w, b, act)
					return dst, nil
				}})
			}
		}
		for _, bias := range []bool{false, true} {
			cases = append(cases, opCase{fmt.Sprintf("layerNorm/%s/bias=%v", dt, bias), 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
				w, err := upload(be, "norm.w", dt, 1, 130, 5, 0.5, 1.5)
				if err != nil {
					return nil, err
				}
				var b backend.Tensor
				if bias {
					if b, err = upload(be, "norm.b", dt, 1, 130, 6, -1, 1); err != nil {
						return nil, err
					}
				}
				x := s.FromHost(7, 130, random(7*130, 7, -3, 5))
				s.LayerNorm(x, x, w, b, 1e-5) // in place, as the encoder does
				return x, nil
			}})
		}
	}
	cases = append(cases,
		opCase{"add", 0, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			a := s.FromHost(9, 31, random(9*31, 8, -3, 3))
			s.Add(a, a, s.FromHost(9, 31, random(9*31, 9, -3, 3)))
			return a, nil
		}},
		// An fp16 weight matrix read by an operation other than Linear or
		// Gather goes through its widened float32 twin.
		opCase{"add/f16 weight", 0, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			w, err := upload(be, "w16", backend.F16, 9, 31, 16, -3, 3)
			if err != nil {
				return nil, err
			}
			a := s.FromHost(9, 31, random(9*31, 8, -3, 3))
			s.Add(a, a, w)
			return a, nil
		}},
		opCase{"softmax", 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			x := s.FromHost(4, 300, random(4*300, 10, -8, 8))
			s.Softmax(x, x)
			return x, nil
		}},
		opCase{"geglu", 1e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			dst := s.New(6, 96)
			s.GeGLU(dst, s.FromHost(6, 192, random(6*192, 11, -4, 4)))
			return dst, nil
		}},
		opCase{"actFeatures", 1e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			dst := s.New(3, 20)
			s.ActFeatures(dst, s.FromHost(3, 16, random(48, 12, -1, 1)), s.FromHost(1, 9, random(9, 13, -5, 5)), []int{1, 6, 2})
			return dst, nil
		}},
	)
	// Linear then GeGLU of its output: the backend fuses the two into one
	// GEMM (metal.GemmOp.Gated). Both outputs are checked, the projection
	// too, as the fused dispatch must still write it; an odd number of
	// columns, and a GeGLU that overwrites the Linear's input, keep the
	// unfused pair.
	for _, dt := range []backend.DType{backend.F32, backend.F16} {
		for _, c := range []struct {
			name       string
			inner      int
			bias       bool
			readUp     bool
			intoInput  bool
			oddColumns bool
		}{
			{"gated", 40, false, false, false, false},
			{"gated/bias", 23, true, false, false, false},
			{"projection", 23, true, true, false, false},
			{"into the input", 40, false, false, true, false},
			{"odd columns", 0, true, true, false, true},
		} {
			cases = append(cases, opCase{fmt.Sprintf("linear+geglu/%s/%s", dt, c.name), 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
				const rows = 21
				k, n := 40, 2*c.inner
				if c.oddColumns {
					n = 45
				}
				w, err := upload(be, "wi", dt, n, k, 17, -0.3, 0.3)
				if err != nil {
					return nil, err
				}
				var b backend.Tensor
				if c.bias {
					if b, err = upload(be, "bi", dt, 1, n, 18, -1, 1); err != nil {
						return nil, err
					}
				}
				x := s.FromHost(rows, k, random(rows*k, 19, -2, 2))
				up := s.New(rows, n)
				s.Linear(up, x, w, b, backend.Identity)
				if c.oddColumns {
					s.Activate(up, up, backend.GELU)
					return up, nil
				}
				dst := s.New(rows, c.inner)
				if c.intoInput {
					dst = x
				}
				s.GeGLU(dst, up)
				if c.readUp {
					return up, nil
				}
				return dst, nil
			}})
		}
	}
	for _, theta := range []float64{10000, 160000} {
		cases = append(cases, opCase{fmt.Sprintf("rope/theta=%v", theta), 1e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			qkv := s.FromHost(2*45, 3*2*16, random(2*45*96, 14, -2, 2))
			s.Rope(qkv, backend.RopeParams{Layout: backend.Layout{SeqLen: 45}, Heads: 2, HeadDim: 16, Theta: theta})
			return qkv, nil
		}})
	}
	for _, sliding := range []bool{false, true} {
		cases = append(cases, opCase{fmt.Sprintf("attention/sliding=%v", sliding), 2e-6, func(be backend.Backend, s backend.Stream) (backend.Tensor, error) {
			const seqLen, heads, headDim = 50, 2, 32
			qkv := s.FromHost(3*seqLen, 3*heads*headDim, random(3*seqLen*3*heads*headDim, 15, -2, 2))
			dst := s.New(3*seqLen, heads*headDim)
			s.Attention(dst, qkv, backend.AttentionParams{Layout: backend.Layout{SeqLen: seqLen, Lengths: []int{50, 33, 1}}, Heads: heads, HeadDim: headDim,
				Scale: 0.3, Sliding: sliding, Radius: 8})
			return dst, nil
		}})
	}
	return cases
}

func TestOpsMatchCPU(t *testing.T) { runOps(t, emulator(t)) }

// runOps holds every op case on mb to the CPU backend.
func runOps(t *testing.T, mb backend.Backend) { runOpCases(t, mb, opCases()) }

// runOpCases holds cases on mb to the CPU backend.
func runOpCases(t *testing.T, mb backend.Backend, cases []opCase) {
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var outs [2][]float32
			for i, be := range []backend.Backend{cpu.New(), mb} {
				s := be.NewStream()
				got, err := c.run(be, s)
				if err != nil {
					t.Fatalf("%s: %v", be.Name(), err)
				}
				outs[i] = make([]float32, got.Rows()*got.Cols())
				if err := s.Read(ctx, got, outs[i]); err != nil {
					t.Fatalf("%s: %v", be.Name(), err)
				}
				s.Close()
			}
			worst := 0.0
			for i, want := range outs[0] {
				d := math.Abs(float64(outs[1][i])-float64(want)) / (1 + math.Abs(float64(want)))
				if !(d <= c.tol) {
					t.Fatalf("element %d: metal %v, cpu %v (%.3g > %.1g)", i, outs[1][i], want, d, c.tol)
				}
				worst = max(worst, d)
			}
			t.Logf("max relative difference %.2g", worst)
		})
	}
}

// Errors are sticky and name the operation, as on the CPU stream.
func TestStreamErrors(t *testing.T) {
	ctx := context.Background()
	mb := emulator(t)
	other := cpu.New()
	w, err := mb.Upload("w", backend.F32, 4, 8, rawOf(random(32, 1, -1, 1), backend.F32))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		run  func(s backend.Stream) backend.Tensor
		want error
	}{
		{"linear shape", func(s backend.Stream) backend.Tensor {
			dst := s.New(3, 5)
			s.Linear(dst, s.New(3, 8), w, nil, backend.Identity)
			return dst
		}, backend.ErrShape},
		{"gather index", func(s backend.Stream) backend.Tensor {
			dst := s.New(1, 8)
			s.Gather(dst, w, []int32{4})
			return dst
		}, backend.ErrShape},
		{"foreign tensor", func(s backend.Stream) backend.Tensor {
			dst := s.New(2, 2)
			s.Add(dst, dst, other.NewStream().New(2, 2))
			return dst
		}, backend.ErrForeignTensor},
		{"other stream's tensor", func(s backend.Stream) backend.Tensor {
			dst := s.New(2, 2)
			s.Add(dst, dst, mb.NewStream().New(2, 2))
			return dst
		}, backend.ErrForeignTensor},
		{"weight as destination", func(s backend.Stream) backend.Tensor {
			s.Activate(w, w, backend.ReLU)
			return w
		}, backend.ErrForeignTensor},
		{"attention lengths", func(s backend.Stream) backend.Tensor {
			dst := s.New(4, 8)
			s.Attention(dst, s.New(4, 24), backend.AttentionParams{Layout: backend.Layout{SeqLen: 2, Lengths: []int{2, 3}}, Heads: 2, HeadDim: 4, Scale: 1})
			return dst
		}, backend.ErrShape},
		{"new", func(s backend.Stream) backend.Tensor { return s.New(0, 3) }, backend.ErrShape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mb.NewStream()
			defer s.Close()
			out := c.run(s)
			// Later operations are no-ops; the first error stays.
			s.Add(out, out, out)
			err := s.Read(ctx, out, make([]float32, out.Rows()*out.Cols()))
			if !errors.Is(err, c.want) || !errors.Is(s.Err(), c.want) {
				t.Fatalf("Read: %v, Err: %v; want %v", err, s.Err(), c.want)
			}
		})
	}
	if _, err := mb.Upload("bad", backend.F32, 2, 2, make([]byte, 15)); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Upload with a short buffer: %v, want ErrShape", err)
	}
	if _, err := mb.Upload("bad", weights.DType(99), 1, 1, make([]byte, 4)); !errors.Is(err, backend.ErrDType) {
		t.Errorf("Upload of an unknown dtype: %v, want ErrDType", err)
	}
}

// A stream can be read in the middle (the encoder's observer does), and
// work recorded afterwards goes into a new command buffer.
func TestReadMidStream(t *testing.T) {
	ctx := context.Background()
	s := emulator(t).NewStream()
	defer s.Close()
	a := s.FromHost(1, 3, []float32{1, 2, 3})
	s.Add(a, a, a)
	got := make([]float32, 3)
	if err := s.Read(ctx, a, got); err != nil || got[2] != 6 {
		t.Fatalf("first read: %v %v", got, err)
	}
	s.Add(a, a, a)
	s.Activate(a, a, backend.ReLU)
	if err := s.Read(ctx, a, got); err != nil || got[0] != 4 || got[2] != 12 {
		t.Fatalf("second read: %v %v", got, err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Read(canceled, a, got); !errors.Is(err, context.Canceled) {
		t.Fatalf("read with a canceled context: %v", err)
	}
}
