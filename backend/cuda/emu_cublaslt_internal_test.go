//go:build linux

package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/laya-metal/laya/internal/half"
)

// emuLtEnv is the emulator's cuBLASLt called directly, with a backend
// opened on the emulator for its context (the worker thread's) and device
// memory.
type emuLtEnv struct {
	t      *testing.T
	b      *Backend
	lib    string // libcuemu.so
	c      *cublasLt
	h      uintptr
	ws     uintptr // gemmWorkspace bytes
	allocs []uintptr
}

func newEmuLtEnv(t *testing.T) *emuLtEnv {
	opts := emuOptions(t)
	be, err := Open(opts) // FP32: the backend itself loads no cuBLASLt
	if err != nil {
		t.Fatal(err)
	}
	e := &emuLtEnv{t: t, b: be.(*Backend), lib: opts.CUBLAS}
	t.Cleanup(func() {
		e.b.w.Do(func() {
			for _, p := range e.allocs {
				e.b.drv.Call("cuMemFree_v2", p)
			}
			if e.h != 0 {
				e.c.call("cublasLtDestroy", e.c.destroy, e.h)
			}
		})
		be.Close()
	})
	if e.c, err = loadCUBLASLt(opts.CUBLAS, true); err != nil {
		t.Fatal(err)
	}
	if e.c.capGet == 0 || e.c.cfgGet == 0 || e.c.cfgSet == 0 || e.c.check == 0 {
		t.Fatal("the emulator's cuBLASLt lacks the algorithm attribute entry points split K needs")
	}
	e.b.w.Do(func() { err = e.c.call("cublasLtCreate", e.c.create, uintptr(unsafe.Pointer(&e.h))) })
	if err != nil {
		t.Fatal(err)
	}
	e.ws = e.alloc(gemmWorkspace)
	return e
}

// alloc is n bytes of device memory.
func (e *emuLtEnv) alloc(n int) uintptr {
	var p uintptr
	var err error
	e.b.w.Do(func() { err = e.b.drv.Call("cuMemAlloc_v2", uintptr(unsafe.Pointer(&p)), uintptr(n)) })
	if err != nil {
		e.t.Fatal(err)
	}
	e.allocs = append(e.allocs, p)
	return p
}

func (e *emuLtEnv) put(dst uintptr, src []byte) {
	var err error
	e.b.w.Do(func() {
		err = e.b.drv.Call("cuMemcpyHtoD_v2", dst, uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)))
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *emuLtEnv) get(src uintptr, n int) []byte {
	out := make([]byte, n)
	var err error
	e.b.w.Do(func() {
		err = e.b.drv.Call("cuMemcpyDtoHAsync_v2", uintptr(unsafe.Pointer(&out[0])), src, uintptr(n), 0)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// ltStatus is err's cublasStatus_t: 0 for none, -1 for an error that is
// not a cuBLASLt status.
func ltStatus(err error) int32 {
	var le *ltError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &le):
		return le.status
	}
	return -1
}

// emuLtCase is a GEMM as a Linear issues it (cublaslt.go's ltGEMM): D
// (m×n row-major: column-major n×m, ld n) = B (m×k) · A (n×k)ᵀ, that is
// op_T(A) (k×n, ld k) · B (k×m, ld k), batched with A's stride 0.
type emuLtCase struct {
	name      string
	typ, dtyp uint32
	m, n, k   int
	batch     int
	epi       uint32
	bias      bool
	beta      float32
}

// emuLtData is a case's operands in device memory and their values.
type emuLtData struct {
	a, b, d, bias     uintptr
	strideB, strideD  int64
	av, bv, cv, biasv []float64 // the values as stored: A n×k, B batch×m×k, C batch×m×n, bias n
	dBytes            int
	desc, la, lb, ld  uintptr
	dOff              uintptr // D's (and C's) offset into its allocation
	dAlloc            uintptr
	align             [4]uint32 // the preference's alignments of A, B, C and D
	reductionMask     uint32    // the preference's, 0 for its default
}

func emuLtValues(seed *uint64, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		*seed = *seed*6364136223846793005 + 1442695040888963407
		v[i] = (float64(*seed>>40)/float64(1<<24)*2 - 1) * scale
	}
	return v
}

// emuLtStore rounds v to typ in place and returns its bytes.
func emuLtStore(v []float64, typ uint32) []byte {
	var buf bytes.Buffer
	for i, x := range v {
		switch typ {
		case cudaR32F:
			f := float32(x)
			v[i] = float64(f)
			buf.Write(unsafe.Slice((*byte)(unsafe.Pointer(&f)), 4))
		case cudaR16F:
			h := half.Float32ToFloat16(float32(x))
			v[i] = float64(half.Float16ToFloat32(h))
			buf.Write([]byte{byte(h), byte(h >> 8)})
		case cudaR16BF:
			h := half.Float32ToBFloat16(float32(x))
			v[i] = float64(half.BFloat16ToFloat32(h))
			buf.Write([]byte{byte(h), byte(h >> 8)})
		}
	}
	return buf.Bytes()
}

func emuLtLoad(b []byte, typ uint32, i int) float64 {
	switch typ {
	case cudaR32F:
		return float64(math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24))
	case cudaR16F:
		return float64(half.Float16ToFloat32(uint16(b[2*i]) | uint16(b[2*i+1])<<8))
	}
	return float64(half.BFloat16ToFloat32(uint16(b[2*i]) | uint16(b[2*i+1])<<8))
}

func typeBytes(typ uint32) int {
	if typ == cudaR32F {
		return 4
	}
	return 2
}

// setup uploads the case's operands (C in D, or D poisoned with NaN where
// beta is 0: it must not be read) and makes its descriptors.
func (e *emuLtEnv) setup(c emuLtCase, seed uint64, dOff uintptr) *emuLtData {
	t := e.t
	d := &emuLtData{dOff: dOff}
	es, ds := typeBytes(c.typ), typeBytes(c.dtyp)
	d.strideB = int64(c.m * c.k)
	// D's matrices apart by more than their size, so that a stride taken
	// for the size shows.
	d.strideD = int64(c.m*c.n + 8)
	d.av = emuLtValues(&seed, c.n*c.k, 1.0/8)
	d.bv = emuLtValues(&seed, c.batch*c.m*c.k, 1)
	d.biasv = emuLtValues(&seed, c.n, 0.5)
	d.a = e.alloc(len(d.av) * es)
	e.put(d.a, emuLtStore(d.av, c.typ))
	d.b = e.alloc(len(d.bv) * es)
	e.put(d.b, emuLtStore(d.bv, c.typ))
	d.dBytes = (int(d.strideD)*(c.batch-1) + c.m*c.n) * ds
	d.dAlloc = e.alloc(d.dBytes + int(dOff))
	d.d = d.dAlloc + dOff
	cv := emuLtValues(&seed, d.dBytes/ds, 2)
	if c.beta == 0 {
		for i := range cv {
			cv[i] = math.NaN()
		}
	}
	e.put(d.d, emuLtStore(cv, c.dtyp))
	d.cv = cv
	if c.bias {
		d.bias = e.alloc(c.n * 4)
		e.put(d.bias, emuLtStore(d.biasv, cudaR32F))
	}
	// The alignments the preference tells, as the backend's (ltGEMM.key):
	// of each pointer and of the next matrix of its batch.
	var sb, sd int64
	if c.batch > 1 {
		sb, sd = d.strideB*int64(es), d.strideD*int64(ds)
	}
	d.align = [4]uint32{alignment(d.a, 0), alignment(d.b, sb), alignment(d.d, sd), alignment(d.d, sd)}
	var err error
	if d.desc, err = e.c.newDesc(c.epi, d.bias); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.c.call("cublasLtMatmulDescDestroy", e.c.descDestroy, d.desc)
		for _, l := range []uintptr{d.la, d.lb, d.ld} {
			e.c.call("cublasLtMatrixLayoutDestroy", e.c.layoutDestroy, l)
		}
	})
	if d.la, err = e.c.newLayout(c.typ, c.k, c.n, c.k, c.batch, 0); err != nil {
		t.Fatal(err)
	}
	if d.lb, err = e.c.newLayout(c.typ, c.k, c.m, c.k, c.batch, d.strideB); err != nil {
		t.Fatal(err)
	}
	if d.ld, err = e.c.newLayout(c.dtyp, c.n, c.m, c.n, c.batch, d.strideD); err != nil {
		t.Fatal(err)
	}
	return d
}

// heuristic asks for up to want algorithms for the case.
func (e *emuLtEnv) heuristic(d *emuLtData, want int) ([]ltHeuristic, error) {
	c := e.c
	var pref uintptr
	if err := c.call("cublasLtMatmulPreferenceCreate", c.prefCreate, uintptr(unsafe.Pointer(&pref))); err != nil {
		return nil, err
	}
	defer c.call("cublasLtMatmulPreferenceDestroy", c.prefDestroy, pref)
	const set = "cublasLtMatmulPreferenceSetAttribute"
	if err := ltSet(c, c.prefSet, set, pref, ltPrefMaxWorkspace, uint64(gemmWorkspace)); err != nil {
		return nil, err
	}
	for i, a := range d.align {
		if err := ltSet(c, c.prefSet, set, pref, ltPrefAlignA+i, a); err != nil {
			return nil, err
		}
	}
	if d.reductionMask != 0 {
		if err := ltSet(c, c.prefSet, set, pref, ltPrefReductionMask, d.reductionMask); err != nil {
			return nil, err
		}
	}
	res := make([]ltHeuristic, want)
	got := int32(-1)
	err := c.call("cublasLtMatmulAlgoGetHeuristic", c.heuristic, e.h, d.desc, d.la, d.lb, d.ld, d.ld, pref, uintptr(want),
		uintptr(unsafe.Pointer(&res[0])), uintptr(unsafe.Pointer(&got)))
	if err != nil {
		return nil, err
	}
	if got < 0 || int(got) > want {
		e.t.Fatalf("the heuristic wrote %d results of %d requested", got, want)
	}
	return res[:got], nil
}

// matmul runs the case with algo and its workspace of wsBytes, alpha 1.
func (e *emuLtEnv) matmul(c emuLtCase, d *emuLtData, algo *ltAlgo, wsBytes uintptr) error {
	alpha, beta := float32(1), c.beta
	return e.c.call("cublasLtMatmul", e.c.matmulFn, e.h, d.desc, uintptr(unsafe.Pointer(&alpha)), d.a, d.la, d.b, d.lb,
		uintptr(unsafe.Pointer(&beta)), d.d, d.ld, d.d, d.ld, uintptr(unsafe.Pointer(algo)), e.ws, wsBytes, 0)
}

// check compares D with a float64 recomputation from the operands as
// stored: the products of 16-bit values are exact in float32, so only the
// float32 sums err, by at most about k·2⁻²⁴ times the magnitude of their
// terms (in any order or split); an fp16 D rounds once more (split K in D's
// type, once per part). Eight times that: a dropped bias (up to 0.5), C
// (up to 2), a transposed operand or a batch read at the wrong stride is
// off by orders of magnitude more.
func (e *emuLtEnv) check(c emuLtCase, d *emuLtData, what string) {
	t := e.t
	t.Helper()
	got := e.get(d.d, d.dBytes)
	bad := 0
	for q := range c.batch {
		for r := range c.m {
			for col := range c.n {
				want, mag := 0.0, 0.0
				for l := range c.k {
					v := d.bv[q*c.m*c.k+r*c.k+l] * d.av[col*c.k+l]
					want += v
					mag += math.Abs(v)
				}
				i := q*int(d.strideD) + r*c.n + col
				if c.beta != 0 {
					want += float64(c.beta) * d.cv[i]
					mag += math.Abs(d.cv[i])
				}
				if c.epi&ltEpilogueBias != 0 {
					want += d.biasv[col]
					mag += math.Abs(d.biasv[col])
				}
				if c.epi&ltEpilogueReLU != 0 {
					want = max(want, 0)
				}
				tol := 8*float64(c.k)*0x1p-24*mag + 1e-6
				if c.dtyp == cudaR16F {
					tol += 4 * 0x1p-11 * mag
				}
				g := emuLtLoad(got, c.dtyp, i)
				if diff := math.Abs(g - want); !(diff <= tol) {
					if bad++; bad <= 3 {
						t.Errorf("%s %s: batch %d D[%d,%d] = %v, want %v (off by %.3g, tolerance %.3g)", c.name, what, q, r, col, g, want, diff, tol)
					}
				}
			}
		}
	}
	// Between the matrices of a batch, D keeps what it had.
	for q := range c.batch - 1 {
		for i := q*int(d.strideD) + c.m*c.n; i < (q+1)*int(d.strideD); i++ {
			if g := emuLtLoad(got, c.dtyp, i); !(g == d.cv[i] || math.IsNaN(g) && math.IsNaN(d.cv[i])) {
				t.Errorf("%s %s: D's element %d between batch matrices is %v, was %v", c.name, what, i, g, d.cv[i])
				break
			}
		}
	}
}

// restore writes C back into D for the next run.
func (e *emuLtEnv) restore(c emuLtCase, d *emuLtData) {
	cv := append([]float64(nil), d.cv...)
	e.put(d.d, emuLtStore(cv, c.dtyp))
}

func (e *emuLtEnv) algoAttr(get uintptr, name string, a *ltAlgo, attr int) uint32 {
	var v uint32
	if !e.c.algoAttr(name, get, a, attr, unsafe.Pointer(&v)) {
		e.t.Fatalf("%s %d failed", name, attr)
	}
	return v
}

// The emulator's cuBLASLt against a float64 product, in the calls the
// backend makes (cublaslt.go): A transposed, fp16 and bf16 operands, fp32
// and fp16 D, a batch of two with A's stride 0, the bias and ReLU
// epilogues, beta 1 (D += the product) and beta 0 over a D of NaN (C
// unread). Every algorithm the heuristic offers runs, and split-K variants
// made through the algorithm's configuration (each reduction scheme the
// algorithm has); then what it must refuse.
func TestEmuCUBLASLt(t *testing.T) {
	e := newEmuLtEnv(t)
	cases := []emuLtCase{
		{"fp16 relu+bias beta=1", cudaR16F, cudaR32F, 7, 24, 72, 1, ltEpilogueReLUBias, true, 1},
		{"fp16 batch 2 stride-0 A beta=0", cudaR16F, cudaR32F, 5, 40, 96, 2, ltEpilogueDefault, false, 0},
		{"fp16 batch 2 beta=1", cudaR16F, cudaR32F, 3, 16, 64, 2, ltEpilogueDefault, false, 1},
		{"fp16 D bias beta=1", cudaR16F, cudaR16F, 9, 32, 80, 1, ltEpilogueBias, true, 1},
		{"fp16 D beta=0", cudaR16F, cudaR16F, 4, 8, 128, 1, ltEpilogueDefault, false, 0},
		{"bf16 relu", cudaR16BF, cudaR32F, 6, 24, 64, 1, ltEpilogueReLU, false, 0},
		{"bf16 relu+bias batch 2", cudaR16BF, cudaR32F, 2, 8, 32, 2, ltEpilogueReLUBias, true, 1},
	}
	for ci, c := range cases {
		d := e.setup(c, uint64(ci+1), 0)
		cands, err := e.heuristic(d, 8)
		if err != nil {
			t.Fatalf("%s: heuristic: %v", c.name, err)
		}
		// Three algorithms and, where k splits (64 and more), a split one.
		want := 3
		if c.k >= 64 {
			want = 4
		}
		if len(cands) != want {
			t.Fatalf("%s: %d algorithms, want %d", c.name, len(cands), want)
		}
		for i := range cands {
			if cands[i].state != 0 || cands[i].workspace > gemmWorkspace {
				t.Errorf("%s: algorithm %d: state %d, workspace %d", c.name, i, cands[i].state, cands[i].workspace)
			}
			for j := range i {
				if cands[i].algo == cands[j].algo {
					t.Errorf("%s: algorithms %d and %d are the same", c.name, j, i)
				}
			}
		}
		// A smaller request is the same list cut short.
		two, err := e.heuristic(d, 2)
		if err != nil || len(two) != 2 || two[0].algo != cands[0].algo || two[1].algo != cands[1].algo {
			t.Errorf("%s: two requested: %d results (%v), want the first two of %d", c.name, len(two), err, len(cands))
		}
		for i := range cands {
			if err := e.matmul(c, d, &cands[i].algo, gemmWorkspace); err != nil {
				t.Fatalf("%s: algorithm %d: %v", c.name, i, err)
			}
			e.check(c, d, fmt.Sprintf("algorithm %d", i))
			e.restore(c, d)
		}
		// Split K through the configuration, as splitKCandidates makes
		// it, in each scheme of each algorithm that splits.
		splits := 0
		for i := range cands {
			a := cands[i].algo
			if e.algoAttr(e.c.cfgGet, "config", &a, ltConfigSplitK) != 1 ||
				e.algoAttr(e.c.capGet, "capability", &a, ltCapSplitK) == 0 {
				continue
			}
			mask := e.algoAttr(e.c.capGet, "capability", &a, ltCapReductionMask)
			for _, scheme := range []uint32{ltReductionInPlace, ltReductionCompute, ltReductionOutput} {
				if mask&scheme == 0 {
					continue
				}
				for _, parts := range []uint32{2, 3, 8} {
					s := a
					if err := ltSet(e.c, e.c.cfgSet, "cfgSet", uintptr(unsafe.Pointer(&s)), ltConfigSplitK, parts); err != nil {
						t.Fatal(err)
					}
					if err := ltSet(e.c, e.c.cfgSet, "cfgSet", uintptr(unsafe.Pointer(&s)), ltConfigReduction, scheme); err != nil {
						t.Fatal(err)
					}
					var res ltHeuristic
					if err := e.c.call("check", e.c.check, e.h, d.desc, d.la, d.lb, d.ld, d.ld, uintptr(unsafe.Pointer(&s)), uintptr(unsafe.Pointer(&res))); err != nil {
						t.Fatalf("%s: algorithm %d in %d parts, scheme %d: %v", c.name, i, parts, scheme, err)
					}
					if res.state != 0 || res.algo != (ltAlgo{}) {
						t.Errorf("%s: the check's result %+v: want state 0 and its algorithm field untouched", c.name, res)
					}
					// The partial sums in the workspace: scheme COMPUTE in
					// float32, OUTPUT in D's type, INPLACE in D.
					wantWS := uint64(0)
					switch scheme {
					case ltReductionCompute:
						wantWS = uint64(parts) * uint64(c.m*c.n*c.batch) * 4
					case ltReductionOutput:
						wantWS = uint64(parts) * uint64(c.m*c.n*c.batch) * uint64(typeBytes(c.dtyp))
					}
					if res.workspace != wantWS {
						t.Errorf("%s: %d parts, scheme %d: workspace %d, want %d", c.name, parts, scheme, res.workspace, wantWS)
					}
					if wantWS > 0 {
						if st := ltStatus(e.matmul(c, d, &s, uintptr(wantWS-1))); st != cublasStatusInvalidValue {
							t.Errorf("%s: a workspace a byte short: status %d, want CUBLAS_STATUS_INVALID_VALUE", c.name, st)
						}
					}
					if err := e.matmul(c, d, &s, uintptr(wantWS)); err != nil {
						t.Fatalf("%s: algorithm %d in %d parts, scheme %d: %v", c.name, i, parts, scheme, err)
					}
					e.check(c, d, fmt.Sprintf("algorithm %d in %d parts, scheme %d", i, parts, scheme))
					e.restore(c, d)
					splits++
				}
			}
		}
		if splits == 0 {
			t.Errorf("%s: no algorithm splits k", c.name)
		}
	}
}

// The heuristic's split algorithm keeps to the preference's reduction
// schemes (the backend allows only float32 parts for an fp16 D) and the
// algorithms to the alignment they were chosen for: a D less aligned than
// the preference said is refused, not misread, and one the preference
// announced runs.
func TestEmuCUBLASLtPreferences(t *testing.T) {
	e := newEmuLtEnv(t)
	c := emuLtCase{"fp16 D", cudaR16F, cudaR16F, 4, 16, 128, 1, ltEpilogueDefault, false, 1}
	for _, mask := range []uint32{ltReductionCompute, ltReductionInPlace, ltReductionOutput} {
		d := e.setup(c, 1, 0)
		d.reductionMask = mask
		cands, err := e.heuristic(d, 8)
		if err != nil {
			t.Fatal(err)
		}
		split := 0
		for i := range cands {
			a := cands[i].algo
			if e.algoAttr(e.c.cfgGet, "config", &a, ltConfigSplitK) > 1 {
				split++
				if got := e.algoAttr(e.c.cfgGet, "config", &a, ltConfigReduction); got != mask {
					t.Errorf("reduction mask %d: a split algorithm with scheme %d", mask, got)
				}
			}
		}
		if split != 1 {
			t.Errorf("reduction mask %d: %d split algorithms, want 1", mask, split)
		}
	}
	// D 16 bytes into its allocation, the preference not told.
	d := e.setup(c, 2, 16)
	d.align[2], d.align[3] = 256, 256
	cands, err := e.heuristic(d, 8)
	if err != nil {
		t.Fatal(err)
	}
	if st := ltStatus(e.matmul(c, d, &cands[0].algo, gemmWorkspace)); st != cublasStatusNotSupported {
		t.Errorf("a D 16-byte aligned on an algorithm chosen for 256: status %d, want CUBLAS_STATUS_NOT_SUPPORTED", st)
	}
	if got := e.algoAttr(e.c.capGet, "capability", &cands[0].algo, 19); got != 32 { // CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES
		t.Errorf("D's alignment capability %d, want 32 (its leading dimension's)", got)
	}
	d.align[2], d.align[3] = 16, 16
	if cands, err = e.heuristic(d, 8); err != nil {
		t.Fatal(err)
	}
	if err := e.matmul(c, d, &cands[0].algo, gemmWorkspace); err != nil {
		t.Fatalf("a D as aligned as the preference said: %v", err)
	}
	e.check(c, d, "16-byte aligned D")
}

// What the emulator's cuBLASLt refuses as cublasLt.h says: attributes of
// the wrong size or unknown, a problem whose layouts disagree, an
// algorithm not its own or configured past its capabilities, what it does
// not implement; on a failed context, the call fails; with
// cuemu_skip_work, it computes nothing.
func TestEmuCUBLASLtRefuses(t *testing.T) {
	e := newEmuLtEnv(t)
	c := emuLtCase{"fp16", cudaR16F, cudaR32F, 4, 16, 64, 1, ltEpilogueDefault, false, 1}
	d := e.setup(c, 3, 0)
	cands, err := e.heuristic(d, 8)
	if err != nil {
		t.Fatal(err)
	}
	lt := e.c
	var v64 uint64
	var v32 uint32
	attr := func(fn uintptr, obj uintptr, a int, p unsafe.Pointer, n uintptr) int32 {
		return ltStatus(lt.call("set", fn, obj, uintptr(a), uintptr(p), n))
	}
	for _, r := range []struct {
		what string
		got  int32
		want int32
	}{
		{"the epilogue as 8 bytes", attr(lt.descSet, d.desc, ltDescEpilogue, unsafe.Pointer(&v64), 8), cublasStatusInvalidValue},
		{"the bias pointer as 4 bytes", attr(lt.descSet, d.desc, ltDescBiasPointer, unsafe.Pointer(&v32), 4), cublasStatusInvalidValue},
		{"an unknown descriptor attribute", attr(lt.descSet, d.desc, 9999, unsafe.Pointer(&v32), 4), cublasStatusInvalidValue},
		{"a batch count as 8 bytes", attr(lt.layoutSet, d.lb, ltLayoutBatchCount, unsafe.Pointer(&v64), 8), cublasStatusInvalidValue},
		{"a batch offset as 4 bytes", attr(lt.layoutSet, d.lb, ltLayoutBatchOffset, unsafe.Pointer(&v32), 4), cublasStatusInvalidValue},
		{"an unknown layout attribute", attr(lt.layoutSet, d.lb, 77, unsafe.Pointer(&v32), 4), cublasStatusInvalidValue},
		{"split K as 8 bytes", attr(lt.cfgSet, uintptr(unsafe.Pointer(&cands[0].algo)), ltConfigSplitK, unsafe.Pointer(&v64), 8), cublasStatusInvalidValue},
		{"the algorithm's id (read-only)", attr(lt.cfgSet, uintptr(unsafe.Pointer(&cands[0].algo)), 0, unsafe.Pointer(&v32), 4), cublasStatusInvalidValue},
	} {
		if r.got != r.want {
			t.Errorf("%s: status %d, want %d", r.what, r.got, r.want)
		}
	}
	var pref uintptr
	if err := lt.call("prefCreate", lt.prefCreate, uintptr(unsafe.Pointer(&pref))); err != nil {
		t.Fatal(err)
	}
	if st := attr(lt.prefSet, pref, ltPrefMaxWorkspace, unsafe.Pointer(&v32), 4); st != cublasStatusInvalidValue {
		t.Errorf("the workspace preference as 4 bytes: status %d", st)
	}
	if st := attr(lt.prefSet, pref, 99, unsafe.Pointer(&v32), 4); st != cublasStatusInvalidValue {
		t.Errorf("an unknown preference: status %d", st)
	}
	var res [1]ltHeuristic
	var got int32
	if st := ltStatus(lt.call("heuristic", lt.heuristic, e.h, d.desc, d.la, d.lb, d.ld, d.ld, pref, 0, uintptr(unsafe.Pointer(&res[0])), uintptr(unsafe.Pointer(&got)))); st != cublasStatusInvalidValue {
		t.Errorf("no results requested: status %d", st)
	}
	lt.call("prefDestroy", lt.prefDestroy, pref)
	var written uint64
	if st := ltStatus(lt.call("capGet", lt.capGet, uintptr(unsafe.Pointer(&cands[0].algo)), ltCapSplitK, uintptr(unsafe.Pointer(&v64)), 8, uintptr(unsafe.Pointer(&written)))); st != cublasStatusInvalidValue {
		t.Errorf("the split-K capability into 8 bytes: status %d", st)
	}
	if st := ltStatus(lt.call("capGet", lt.capGet, uintptr(unsafe.Pointer(&cands[0].algo)), ltCapSplitK, 0, 0, uintptr(unsafe.Pointer(&written)))); st != 0 || written != 4 {
		t.Errorf("the split-K capability's size: status %d, %d bytes", st, written)
	}
	// An algorithm configured past its capabilities, or not its own.
	for i := range cands {
		a := cands[i].algo
		if e.algoAttr(lt.capGet, "capability", &a, ltCapSplitK) != 0 {
			continue
		}
		ltSet(lt, lt.cfgSet, "cfgSet", uintptr(unsafe.Pointer(&a)), ltConfigSplitK, uint32(2))
		ltSet(lt, lt.cfgSet, "cfgSet", uintptr(unsafe.Pointer(&a)), ltConfigReduction, uint32(ltReductionCompute))
		var r ltHeuristic
		if st := ltStatus(lt.call("check", lt.check, e.h, d.desc, d.la, d.lb, d.ld, d.ld, uintptr(unsafe.Pointer(&a)), uintptr(unsafe.Pointer(&r)))); st != cublasStatusNotSupported {
			t.Errorf("algorithm %d split though it cannot: status %d", i, st)
		}
		if st := ltStatus(e.matmul(c, d, &a, gemmWorkspace)); st != cublasStatusNotSupported {
			t.Errorf("algorithm %d split though it cannot, run: status %d", i, st)
		}
	}
	noSplit := cands[0].algo
	ltSet(lt, lt.cfgSet, "cfgSet", uintptr(unsafe.Pointer(&noSplit)), ltConfigSplitK, uint32(2))
	if st := ltStatus(e.matmul(c, d, &noSplit, gemmWorkspace)); st != cublasStatusNotSupported {
		t.Errorf("split with no reduction scheme: status %d", st)
	}
	foreign := ltAlgo{1, 2, 3}
	if st := ltStatus(e.matmul(c, d, &foreign, gemmWorkspace)); st != cublasStatusInvalidValue {
		t.Errorf("an algorithm not the library's: status %d", st)
	}
	// Layouts that make no product: B of another k.
	lb, err := lt.newLayout(c.typ, c.k+8, c.m, c.k+8, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	alpha, beta := float32(1), float32(1)
	if st := ltStatus(lt.call("matmul", lt.matmulFn, e.h, d.desc, uintptr(unsafe.Pointer(&alpha)), d.a, d.la, d.b, lb, uintptr(unsafe.Pointer(&beta)),
		d.d, d.ld, d.d, d.ld, uintptr(unsafe.Pointer(&cands[0].algo)), e.ws, gemmWorkspace, 0)); st != cublasStatusInvalidValue {
		t.Errorf("B of another k: status %d", st)
	}
	lt.call("layoutDestroy", lt.layoutDestroy, lb)
	// GELU's epilogue is not emulated (the backend never asks for it).
	gelu := uint32(32) // CUBLASLT_EPILOGUE_GELU
	if err := ltSet(lt, lt.descSet, "descSet", d.desc, ltDescEpilogue, gelu); err != nil {
		t.Fatal(err)
	}
	if st := ltStatus(e.matmul(c, d, &cands[0].algo, gemmWorkspace)); st != cublasStatusNotSupported {
		t.Errorf("the GELU epilogue: status %d, want CUBLAS_STATUS_NOT_SUPPORTED", st)
	}
	if err := ltSet(lt, lt.descSet, "descSet", d.desc, ltDescEpilogue, uint32(ltEpilogueDefault)); err != nil {
		t.Fatal(err)
	}
	// Nothing above wrote D; skipping the work leaves it so too.
	lib := e.lib
	skip := emuSym(t, lib, "cuemu_skip_work")
	purego.SyscallN(skip, 1)
	err = e.matmul(c, d, &cands[0].algo, gemmWorkspace)
	purego.SyscallN(skip, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := append([]float64(nil), d.cv...)
	emuLtStore(before, c.dtyp)
	got16 := e.get(d.d, d.dBytes)
	for i := range before {
		if v := emuLtLoad(got16, c.dtyp, i); v != before[i] {
			t.Fatalf("D[%d] = %v after refused and skipped calls, was %v", i, v, before[i])
		}
	}
	// A context CUDA gave up on.
	sticky := emuSym(t, lib, "cuemu_set_sticky")
	purego.SyscallN(sticky, 700)
	st := ltStatus(e.matmul(c, d, &cands[0].algo, gemmWorkspace))
	purego.SyscallN(sticky, 0)
	if st != 13 { // CUBLAS_STATUS_EXECUTION_FAILED
		t.Errorf("on a failed context: status %d, want CUBLAS_STATUS_EXECUTION_FAILED", st)
	}
	if err := e.matmul(c, d, &cands[0].algo, gemmWorkspace); err != nil {
		t.Fatal(err)
	}
	e.check(c, d, "after the refusals")
}
