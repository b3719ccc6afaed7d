package metal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/laya-metal/laya/kernels"
)

// A kernel's buffer roles are declared once, where its dispatch function
// binds them (Arg.Access), and its cost once, beside that function
// (kernelModels). These tests hold both to the .metal sources, read here
// independently of the code under test: every kernel function is priced,
// and every buffer each dispatch function binds declares the access its
// parameter allows (a device const or constant parameter is read, any
// other device pointer written).

// kernelSignature maps a kernel's [[buffer(n)]] indices to whether the
// parameter is writable (not const).
type kernelSignature map[int]bool

var (
	kernelDecl = regexp.MustCompile(`(?s)kernel\s+void\s+(\w+)\s*\((.*?)\)\s*\{`)
	bufferAttr = regexp.MustCompile(`\[\[\s*buffer\((\d+)\)`)
)

// kernelSignatures parses every kernel function of package kernels.
func kernelSignatures(t *testing.T) map[string]kernelSignature {
	t.Helper()
	sigs := map[string]kernelSignature{}
	files, err := fs.Glob(kernels.FS(), "*.metal")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .metal sources: %v", err)
	}
	for _, f := range files {
		src, err := kernels.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range kernelDecl.FindAllStringSubmatch(src, -1) {
			sig := kernelSignature{}
			for _, param := range strings.Split(m[2], ",\n") {
				b := bufferAttr.FindStringSubmatch(param)
				if b == nil {
					continue
				}
				i, _ := strconv.Atoi(b[1])
				decl := strings.Fields(param[:strings.Index(param, "[[")])
				sig[i] = decl[0] == "device" && !slices.Contains(decl, "const")
			}
			if _, dup := sigs[m[1]]; dup {
				t.Fatalf("kernel %s declared twice", m[1])
			}
			sigs[m[1]] = sig
		}
	}
	return sigs
}

// checkAccess reports the buffer arguments of one dispatch of kernel whose
// declared access disagrees with sig.
func checkAccess(kernel string, sig kernelSignature, args []Arg) error {
	var errs []error
	for _, a := range args {
		if a.Buffer == nil {
			continue
		}
		writable, ok := sig[a.Index]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: buffer(%d) is no parameter", kernel, a.Index))
		case a.Access != AccessRead && a.Access != AccessWrite && a.Access != AccessReadWrite:
			errs = append(errs, fmt.Errorf("%s: buffer(%d) bound with access %v", kernel, a.Index, a.Access))
		case writable && !a.Access.Writes():
			errs = append(errs, fmt.Errorf("%s: buffer(%d) is a writable parameter bound as %v", kernel, a.Index, a.Access))
		case !writable && a.Access.Writes():
			errs = append(errs, fmt.Errorf("%s: buffer(%d) is a const parameter bound as %v", kernel, a.Index, a.Access))
		}
	}
	return errors.Join(errs...)
}

func TestEveryKernelPriced(t *testing.T) {
	sigs := kernelSignatures(t)
	for _, name := range slices.Sorted(maps.Keys(sigs)) {
		if _, ok := kernelModels[name]; !ok {
			t.Errorf("kernel %s (kernels/*.metal) has no cost model: give its family's kernel_<family>.go one", name)
		}
	}
	for name := range kernelModels {
		if _, ok := sigs[name]; !ok {
			t.Errorf("cost model for %s, which no .metal source declares", name)
		}
	}
	if _, err := DispatchCost("no_such_kernel", nil, Size3{1, 1, 1}, Size3{1, 1, 1}, nil); !errors.Is(err, ErrNoCost) {
		t.Errorf("DispatchCost of an unknown kernel: %v, want ErrNoCost", err)
	}
}

// TestBindingsDeclareAccess runs every dispatch function of the package on
// a device that records and runs nothing, in every variant that picks
// another kernel or binds another optional buffer, and checks each
// dispatch against its kernel's signature; together the dispatches must
// reach every kernel of the sources, and each must be priced.
func TestBindingsDeclareAccess(t *testing.T) {
	sigs := kernelSignatures(t)
	dev := &recordDevice{}
	k := NewKernels(dev)
	buf := func(n int) Buffer { b, _ := dev.NewBuffer(4 * n); return b }
	const m, n, kd = 40, 64, 96
	x, w, bias, y, res, lnw, lnb := buf(m*kd), buf(n*kd), buf(n), buf(m*n), buf(m*n), buf(kd), buf(kd)
	gemm := func(in GemmInput, rows int) GemmOp {
		return GemmOp{Input: in, X: x, W: w, Bias: bias, Y: y, M: rows, N: n, K: kd}
	}
	shape := AttentionShape{Batch: 2, SeqLen: 8, Heads: 2, HeadDim: 32, Scale: 0.1}
	qkv, att, lengths := buf(16*3*64), buf(16*64), buf(2)
	table := buf(8 * 32)
	encoders := map[string]func(cb CommandBuffer) error{
		"gather f32": func(cb CommandBuffer) error {
			return EncodeGather(cb, k, GatherOp{Elem: ElemF32, Table: buf(10 * 8), Out: buf(3 * 8), IndexValues: []int32{1, 2, 3}, Rows: 3, Cols: 8, TableRows: 10})
		},
		"gather f16 index buffer": func(cb CommandBuffer) error {
			return EncodeGather(cb, k, GatherOp{Elem: ElemF16, Table: buf(10 * 8), Index: buf(3), Out: buf(3 * 8), Rows: 3, Cols: 8, TableRows: 10})
		},
		"layernorm": func(cb CommandBuffer) error {
			return EncodeLayerNorm(cb, k, LayerNormOp{In: x, Weight: lnw, Bias: lnb, Out: buf(m * kd), Rows: m, Cols: kd, Eps: 1e-5})
		},
		"gemm f32":  func(cb CommandBuffer) error { return EncodeGemm(cb, k, gemm(GemmF32, m)) },
		"gemm f16":  func(cb CommandBuffer) error { return EncodeGemm(cb, k, gemm(GemmF16, m)) },
		"gemm f16w": func(cb CommandBuffer) error { return EncodeGemm(cb, k, gemm(GemmF32F16W, m)) },
		"gemv f32":  func(cb CommandBuffer) error { return EncodeGemm(cb, k, gemm(GemmF32, 4)) },
		"gemv f16":  func(cb CommandBuffer) error { return EncodeGemm(cb, k, gemm(GemmF16, 4)) },
		"gemv f16w residual": func(cb CommandBuffer) error {
			op := gemm(GemmF32F16W, 4)
			op.Residual = res
			return EncodeGemm(cb, k, op)
		},
		"gemm layernorm geglu": func(cb CommandBuffer) error {
			op := gemm(GemmF32F16W, m)
			op.Y, op.Gated, op.LNWeight, op.LNBias = nil, buf(m*n/2), lnw, lnb
			return EncodeGemm(cb, k, op)
		},
		"gemm residual": func(cb CommandBuffer) error {
			op := gemm(GemmF32, m)
			op.Y, op.Residual = nil, res
			return EncodeGemm(cb, k, op)
		},
		"gemm split-K": func(cb CommandBuffer) error {
			op := gemm(GemmF32F16W, m)
			op.Residual, op.LNWeight = res, lnw
			_, op.Slices = GemmKSlice(kd, 2)
			op.Partial = buf(op.Slices * m * n)
			return EncodeGemmSplitK(cb, k, op)
		},
		"attention": func(cb CommandBuffer) error {
			s := shape
			s.HeadDim = 96 // past the flash kernel's
			return EncodeAttention(cb, k, AttentionOp{QKV: buf(16 * 3 * 192), Out: buf(16 * 192), LengthsBuffer: lengths, Shape: s})
		},
		"attention flash rope": func(cb CommandBuffer) error {
			return EncodeAttention(cb, k, AttentionOp{QKV: qkv, Out: att, Lengths: []int{8, 5}, Table: table, Shape: shape})
		},
		"rope":        func(cb CommandBuffer) error { return Rope(cb, k, qkv, table, 16, 8, 2, 32) },
		"vector add":  func(cb CommandBuffer) error { return VectorAdd(cb, k, x, lnw, res, kd) },
		"activate":    func(cb CommandBuffer) error { return Activate(cb, k, ActGELU, x, y, kd) },
		"geglu":       func(cb CommandBuffer) error { return GeGLU(cb, k, x, y, 4, 16) },
		"softmax":     func(cb CommandBuffer) error { return Softmax(cb, k, x, y, 4, 16) },
		"actFeatures": func(cb CommandBuffer) error { return ActFeatures(cb, k, x, lnw, buf(3), y, 2, 8, 4) },
	}
	reached := map[string]bool{}
	for _, what := range slices.Sorted(maps.Keys(encoders)) {
		cb := &recordCommandBuffer{}
		if err := encoders[what](cb); err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if len(cb.dispatches) == 0 {
			t.Errorf("%s: no dispatch", what)
		}
		for _, d := range cb.dispatches {
			reached[d.kernel] = true
			sig, ok := sigs[d.kernel]
			if !ok {
				t.Errorf("%s: dispatched %s, which no .metal source declares", what, d.kernel)
				continue
			}
			if err := checkAccess(d.kernel, sig, d.args); err != nil {
				t.Errorf("%s: %v", what, err)
			}
			c, err := DispatchCost(d.kernel, d.constants, d.groups, d.threads, d.args)
			if err != nil {
				t.Errorf("%s: %v", what, err)
			} else if c.IdealBytes <= 0 {
				t.Errorf("%s: %s priced at %+v: no bytes", what, d.kernel, c)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sigs)) {
		if !reached[name] {
			t.Errorf("no dispatch function case reaches kernel %s: add one above", name)
		}
	}
}

// A write declared as a read, or a read declared as a write, is caught;
// so is a buffer bound with no access at all.
func TestCheckAccessCatchesMisdeclaredRoles(t *testing.T) {
	sigs := kernelSignatures(t)
	b := sysTestBuffer{64}
	good := []Arg{{Index: 0, Buffer: b, Access: AccessRead}, {Index: 1, Buffer: b, Access: AccessRead},
		{Index: 2, Buffer: b, Access: AccessWrite}, {Index: 3, Bytes: []byte{1, 0, 0, 0}}}
	if err := checkAccess("vector_add", sigs["vector_add"], good); err != nil {
		t.Fatalf("vector_add as bound: %v", err)
	}
	for i, mutant := range []Access{AccessRead, AccessNone} {
		args := slices.Clone(good)
		args[2].Access = mutant // out, written
		if err := checkAccess("vector_add", sigs["vector_add"], args); err == nil {
			t.Errorf("mutant %d: vector_add's output bound as %v passes", i, mutant)
		}
	}
	args := slices.Clone(good)
	args[0].Access = AccessReadWrite // a, const
	if err := checkAccess("vector_add", sigs["vector_add"], args); err == nil {
		t.Errorf("vector_add's const input bound as read-write passes")
	}
}

// recordDevice runs nothing: it hands out host buffers and pipelines that
// only name their kernel.
type recordDevice struct{}

func (recordDevice) Name() string                                { return "record" }
func (recordDevice) NewBuffer(size int) (Buffer, error)          { return &hostBuffer{make([]byte, size)}, nil }
func (recordDevice) NewBufferWithBytes(b []byte) (Buffer, error) { return &hostBuffer{b}, nil }
func (recordDevice) Pipeline(kernel string, constants ...Constant) (Pipeline, error) {
	return recordPipeline{kernel, constants}, nil
}
func (recordDevice) NewCommandBuffer() (CommandBuffer, error) { return &recordCommandBuffer{}, nil }
func (recordDevice) Close() error                             { return nil }

type hostBuffer struct{ b []byte }

func (h *hostBuffer) Bytes() []byte { return h.b }
func (h *hostBuffer) Len() int      { return len(h.b) }
func (h *hostBuffer) Release()      {}

type recordPipeline struct {
	kernel    string
	constants []Constant
}

func (p recordPipeline) Kernel() string                { return p.kernel }
func (p recordPipeline) MaxThreadsPerThreadgroup() int { return 1024 }
func (p recordPipeline) ThreadExecutionWidth() int     { return 32 }

type recordedDispatch struct {
	kernel          string
	constants       []Constant
	groups, threads Size3
	args            []Arg
}

type recordCommandBuffer struct{ dispatches []recordedDispatch }

func (c *recordCommandBuffer) Dispatch(p Pipeline, groups, threads Size3, args ...Arg) error {
	rp := p.(recordPipeline)
	kept := slices.Clone(args)
	for i := range kept {
		kept[i].Bytes = slices.Clone(kept[i].Bytes)
	}
	c.dispatches = append(c.dispatches, recordedDispatch{rp.kernel, rp.constants, groups, threads, kept})
	return nil
}
func (c *recordCommandBuffer) Barrier(...Buffer)                    {}
func (c *recordCommandBuffer) Commit() error                        { return nil }
func (c *recordCommandBuffer) Wait(context.Context) (Timing, error) { return Timing{}, nil }
