//go:build linux

package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/cudadrv"
)

// cublasLt holds the cuBLASLt entry points the FP16, BF16 and FP16X2 GEMMs
// use (FP32 stays on cublasSgemm, the parity path). Its handle, like
// cuBLAS's, is a CUDA stream's (cstream.lt).
type cublasLt struct {
	path                                                  string
	create, destroy, descCreate, descDestroy, descSet     uintptr
	layoutCreate, layoutDestroy, layoutSet                uintptr
	prefCreate, prefDestroy, prefSet, heuristic, matmulFn uintptr
	// Optional (0 where the library lacks them): what split-K
	// candidates need (splitKCandidates).
	capGet, cfgGet, cfgSet, check uintptr
	getVersion                    uintptr // size_t cublasLtGetVersion(void), 0 where missing
}

// loadCUBLASLt loads the libcublasLt of the libcublas found at blasPath:
// cuBLAS links its own toolkit's cuBLASLt, so the name with cuBLAS's major
// version (its soname) finds the one already loaded, and its directory is
// searched first; one of another toolkit could not be relied on to pair
// with it. beside (a cuBLAS named by path, Options.CUBLAS) takes only the
// one in its directory, or none: the kernel emulator named so has its own
// there (a link to itself), and a CUDA install elsewhere on the machine
// would be handed its memory.
func loadCUBLASLt(blasPath string, beside bool) (*cublasLt, error) {
	names, dirs := ltSearch(blasPath)
	var h uintptr
	var path string
	var err error
	if beside {
		err = fmt.Errorf("none of %s beside %s", strings.Join(names, ", "), blasPath)
		for _, n := range names {
			if p := filepath.Join(filepath.Dir(blasPath), n); fileExists(p) {
				h, path, err = cudadrv.FindLibrary(p, nil, nil)
				break
			}
		}
	} else {
		h, path, err = cudadrv.FindLibrary("", names, dirs)
	}
	if err != nil {
		return nil, fmt.Errorf("cuda: cuBLASLt (libcublasLt.so) not found: %v", err)
	}
	c := &cublasLt{path: path}
	for name, p := range map[string]*uintptr{
		"cublasLtCreate": &c.create, "cublasLtDestroy": &c.destroy, "cublasLtMatmulDescCreate": &c.descCreate,
		"cublasLtMatmulDescDestroy": &c.descDestroy, "cublasLtMatmulDescSetAttribute": &c.descSet,
		"cublasLtMatrixLayoutCreate": &c.layoutCreate, "cublasLtMatrixLayoutDestroy": &c.layoutDestroy,
		"cublasLtMatrixLayoutSetAttribute": &c.layoutSet, "cublasLtMatmulPreferenceCreate": &c.prefCreate,
		"cublasLtMatmulPreferenceDestroy": &c.prefDestroy, "cublasLtMatmulPreferenceSetAttribute": &c.prefSet,
		"cublasLtMatmulAlgoGetHeuristic": &c.heuristic, "cublasLtMatmul": &c.matmulFn,
	} {
		if *p, err = purego.Dlsym(h, name); err != nil {
			return nil, fmt.Errorf("cuda: cuBLASLt: %s has no %s", path, name)
		}
	}
	for name, p := range map[string]*uintptr{
		"cublasLtMatmulAlgoCapGetAttribute": &c.capGet, "cublasLtMatmulAlgoConfigGetAttribute": &c.cfgGet,
		"cublasLtMatmulAlgoConfigSetAttribute": &c.cfgSet, "cublasLtMatmulAlgoCheck": &c.check,
		"cublasLtGetVersion": &c.getVersion,
	} {
		*p, _ = purego.Dlsym(h, name)
	}
	return c, nil
}

// ltSearch is the names and directories loadCUBLASLt tries for the
// libcublas at blasPath.
func ltSearch(blasPath string) (names, dirs []string) {
	names, dirs = []string{"libcublasLt.so", "libcublasLt.so.13", "libcublasLt.so.12"}, cudadrv.LibraryDirs
	if blasPath == "" {
		return names, dirs
	}
	dirs = append([]string{filepath.Dir(blasPath)}, dirs...)
	if _, version, ok := strings.Cut(filepath.Base(blasPath), ".so."); ok {
		names = []string{"libcublasLt.so." + strings.SplitN(version, ".", 2)[0]}
	}
	return names, dirs
}

// probe makes and drops a handle: a library that cannot is left out at
// Open (the GEMMs run on cuBLAS) rather than failing every request.
func (c *cublasLt) probe() error {
	var h uintptr
	if err := c.call("cublasLtCreate", c.create, uintptr(unsafe.Pointer(&h))); err != nil {
		return err
	}
	return c.call("cublasLtDestroy", c.destroy, h)
}

// call invokes an entry point and turns a cublasStatus_t into an error
// (*ltError).
//
//go:uintptrescapes
func (c *cublasLt) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if st := int32(r); st != 0 {
		return &ltError{name, st}
	}
	return nil
}

// ltError is a cuBLASLt call's failure: its cublasStatus_t.
type ltError struct {
	call   string
	status int32
}

func (e *ltError) Error() string {
	if name, ok := cublasStatusNames[e.status]; ok {
		return fmt.Sprintf("cuda: %s failed with %s (cuBLAS status %d)", e.call, name, e.status)
	}
	return fmt.Sprintf("cuda: %s failed with cuBLAS status %d", e.call, e.status)
}

// cublasStatusNames are cublasStatus_t's names (cublas_api.h).
var cublasStatusNames = map[int32]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cublasStatus_t values (cublas_api.h).
const (
	cublasStatusInvalidValue = 7  // CUBLAS_STATUS_INVALID_VALUE
	cublasStatusNotSupported = 15 // CUBLAS_STATUS_NOT_SUPPORTED
)

// refused reports whether err is cublasLtMatmul turning a call down as it
// checks it, before it launches anything.
func refused(err error) bool {
	var e *ltError
	return errors.As(err, &e) && (e.status == cublasStatusInvalidValue || e.status == cublasStatusNotSupported)
}

// cuBLASLt enum values used, from cublasLt.h of CUDA 12.6 (as vendored in
// github.com/zspace/system.cuda-12.6, include/cublasLt.h). The same values
// are in NVIDIA's nvmath-python bindings generated from the CUDA 13
// headers (nvmath.bindings.cublasLt: MatmulDescAttribute, Epilogue,
// MatrixLayoutAttribute, MatmulPreferenceAttribute): the enums grow, their
// values stay. An attribute set with the wrong size is refused
// (CUBLAS_STATUS_INVALID_VALUE), so each comment names the C type too.
const (
	ltDescTransA       = 3  // CUBLASLT_MATMUL_DESC_TRANSA, int32_t (cublasOperation_t)
	ltDescTransB       = 4  // CUBLASLT_MATMUL_DESC_TRANSB, int32_t
	ltDescEpilogue     = 7  // CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t
	ltDescBiasPointer  = 8  // CUBLASLT_MATMUL_DESC_BIAS_POINTER, const void*
	ltDescBiasDataType = 26 // CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t (default -1: D's type)

	ltLayoutBatchCount  = 5 // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t
	ltLayoutBatchOffset = 6 // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t (elements)

	ltPrefMaxWorkspace  = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t
	ltPrefReductionMask = 3 // CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, uint32_t
	ltPrefAlignA        = 5 // CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t; B, C, D are 6, 7, 8

	ltCapSplitK        = 0 // CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, int32_t
	ltCapReductionMask = 1 // CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, uint32_t
	ltConfigSplitK     = 2 // CUBLASLT_ALGO_CONFIG_SPLITK_NUM, uint32_t
	ltConfigReduction  = 3 // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, uint32_t
	ltReductionInPlace = 1 // CUBLASLT_REDUCTION_SCHEME_INPLACE: partial sums added in D's type, in D
	ltReductionCompute = 2 // CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: in float32, in the workspace, then reduced
	ltReductionOutput  = 4 // CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: in D's type, in the workspace

	ltEpilogueDefault  = 1 // CUBLASLT_EPILOGUE_DEFAULT
	ltEpilogueReLU     = 2 // CUBLASLT_EPILOGUE_RELU
	ltEpilogueBias     = 4 // CUBLASLT_EPILOGUE_BIAS
	ltEpilogueReLUBias = 6 // CUBLASLT_EPILOGUE_RELU_BIAS (RELU | BIAS)
)

// ltAlgo is cublasLtMatmulAlgo_t (uint64_t data[8]).
type ltAlgo [8]uint64

// ltHeuristic is cublasLtMatmulHeuristicResult_t: the algorithm, its
// workspace (size_t), its status (cublasStatus_t), its waves (float) and
// four reserved ints.
type ltHeuristic struct {
	algo      ltAlgo
	workspace uint64
	state     int32
	waves     float32
	_         [4]int32
}

// The sizes the C structs have: an array of results is written by C.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(ltAlgo{})-64]
	_ = [1]struct{}{}[unsafe.Sizeof(ltHeuristic{})-96]
)

// ltEpilogue is the epilogue that applies a Linear's bias and activation
// in the GEMM, and whether it does: GELU stays with the bias_act kernel,
// whose GELU is the exact erf form (cuBLASLt's is the tanh approximation).
func ltEpilogue(bias bool, act backend.Activation) (uint32, bool) {
	switch {
	case act == backend.Identity && bias:
		return ltEpilogueBias, true
	case act == backend.Identity:
		return ltEpilogueDefault, true
	case act == backend.ReLU && bias:
		return ltEpilogueReLUBias, true
	case act == backend.ReLU:
		return ltEpilogueReLU, true
	}
	return ltEpilogueDefault, false
}

// ltGEMM is one cuBLASLt GEMM of a Linear: D[m×n] (row-major; fp32) =
// B[m×k]·A[n×k]ᵀ with A the 16-bit weight and B the 16-bit activation, as
// cuBLAS sees it column-major: D (n×m, ld n) = op_T(A) (k×n, ld k) · B
// (k×m, ld k).
type ltGEMM struct {
	m, n, k int
	typ     uint32 // cudaR16F or cudaR16BF
	dtyp    uint32 // D's: cudaR32F, or cudaR16F (an output for one GeGLU or attention alone)
	// batch is 1, or 2: FP16X2's two terms of B into two D (A's stride
	// 0, one weight), strideB and strideD elements apart; or the two
	// halves of k (Options.KBatchRows: k is then a half, ld the whole,
	// strideA and strideB k elements apart in A's and B's rows).
	batch                     int
	strideA, strideB, strideD int64
	ld                        int // A's and B's leading dimension; 0: k
	epilogue                  uint32
	accumulate                bool // beta = 1: D += the product
	a, b, d, bias             uintptr
}

// ltKey is everything an ltGEMM's descriptors and chosen algorithm depend
// on; its addresses count only by their alignment.
type ltKey struct {
	m, n, k, ld               int
	typ, dtyp                 uint32
	batch                     int
	strideA, strideB, strideD int64
	epilogue                  uint32
	accumulate                bool
	align                     [4]uint32 // bytes, up to 256: A, B, C and D, bias
}

func (g *ltGEMM) key() ltKey {
	k := ltKey{m: g.m, n: g.n, k: g.k, ld: cmp.Or(g.ld, g.k), typ: g.typ, dtyp: g.dtyp, batch: g.batch, epilogue: g.epilogue,
		accumulate: g.accumulate}
	if g.batch > 1 {
		k.strideA, k.strideB, k.strideD = g.strideA, g.strideB, g.strideD
	}
	// A batch's second matrices lie a stride on: their alignment counts.
	k.align = [4]uint32{alignment(g.a, 2*k.strideA), alignment(g.b, 2*k.strideB), alignment(g.d, 4*k.strideD), alignment(g.bias, 0)}
	return k
}

// alignment is the largest power of two up to 256 dividing p and stride
// (bytes). cuBLASLt's heuristic assumes 256 unless told less (its
// MIN_ALIGNMENT preferences), and an algorithm it picks for 256 may fail or
// misread a matrix that is less aligned: an FP16X2 second term starts m·k
// halves after the first.
func alignment(p uintptr, stride int64) uint32 {
	v := uint64(p) | uint64(stride) | 256
	return uint32(v & -v)
}

// ltPlan is a GEMM shape's descriptors and candidate algorithms (the
// heuristic's, best guess first). none: cuBLASLt has no algorithm for it
// (no candidates, or the call refused them), the cuBLAS call runs it.
// pick, tuned and none are guarded by ltGEMMs.mu.
type ltPlan struct {
	desc, a, b, d uintptr // desc is 0 for a bias epilogue: each call makes its own with its bias
	cands         []ltHeuristic
	split         int // cands from here on are split-K variants (splitKCandidates)
	pick          int
	tuned, none   bool
}

// ltGEMMs is a backend's cuBLASLt state: the plans of the shapes seen, and
// the scratch output and events the tuning times candidates with.
type ltGEMMs struct {
	lib   *cublasLt
	mu    sync.Mutex
	plans map[ltKey]*ltPlan
	// keep is the algorithms timed by earlier processes and this one
	// (Options.TuneCache); nil keeps none.
	keep *tuneCache

	tuneMu       sync.Mutex // serialises tuning: the fields below
	scratch      uintptr
	scratchBytes int64
	retired      []uintptr // outgrown scratch, freed at Close (a free may synchronise the device)
	cold         uintptr   // the weights' region of Options.TuneCold, coldBytes long (zeros)
	coldBytes    int64
	start, end   uintptr
}

const (
	tuneRounds = 2 // each candidate's best of
	tuneReps   = 4 // launches between a round's events
	// maxTuneScratch bounds the scratch output: a GEMM whose output is
	// larger takes the heuristic's first choice (at that size it is
	// compute-bound, where the heuristic does well).
	maxTuneScratch = 256 << 20
)

func ltSet[T int32 | uint32 | int64 | uint64](c *cublasLt, fn uintptr, name string, obj uintptr, attr int, v T) error {
	return c.call(name, fn, obj, uintptr(attr), uintptr(unsafe.Pointer(&v)), unsafe.Sizeof(v))
}

// newDesc makes a matmul descriptor: fp32 compute and scale, A transposed,
// epilogue epi with an fp32 bias at bias (0: none).
func (c *cublasLt) newDesc(epi uint32, bias uintptr) (uintptr, error) {
	var d uintptr
	if err := c.call("cublasLtMatmulDescCreate", c.descCreate, uintptr(unsafe.Pointer(&d)), cublasCompute32F, cudaR32F); err != nil {
		return 0, err
	}
	const set = "cublasLtMatmulDescSetAttribute"
	err := ltSet(c, c.descSet, set, d, ltDescTransA, int32(cublasOpT))
	if err == nil {
		err = ltSet(c, c.descSet, set, d, ltDescTransB, int32(cublasOpN))
	}
	if err == nil {
		err = ltSet(c, c.descSet, set, d, ltDescEpilogue, epi)
	}
	if err == nil && bias != 0 {
		// The bias is fp32 whatever the operands (the default, D's type,
		// is that too; set so that it does not depend on it).
		if err = ltSet(c, c.descSet, set, d, ltDescBiasDataType, int32(cudaR32F)); err == nil {
			err = ltSet(c, c.descSet, set, d, ltDescBiasPointer, uint64(bias))
		}
	}
	if err != nil {
		c.call("cublasLtMatmulDescDestroy", c.descDestroy, d)
		return 0, err
	}
	return d, nil
}

// newLayout makes a column-major matrix layout, batched when batch > 1.
func (c *cublasLt) newLayout(typ uint32, rows, cols, ld, batch int, stride int64) (uintptr, error) {
	var l uintptr
	if err := c.call("cublasLtMatrixLayoutCreate", c.layoutCreate, uintptr(unsafe.Pointer(&l)), uintptr(typ), uintptr(rows), uintptr(cols), uintptr(ld)); err != nil {
		return 0, err
	}
	if batch > 1 {
		const set = "cublasLtMatrixLayoutSetAttribute"
		err := ltSet(c, c.layoutSet, set, l, ltLayoutBatchCount, int32(batch))
		if err == nil {
			err = ltSet(c, c.layoutSet, set, l, ltLayoutBatchOffset, stride)
		}
		if err != nil {
			c.call("cublasLtMatrixLayoutDestroy", c.layoutDestroy, l)
			return 0, err
		}
	}
	return l, nil
}

// newPlan makes k's descriptors and asks the heuristic for candidates,
// with desc when the call brings its own (a bias epilogue); h is a
// cuBLASLt handle. A heuristic that refuses the shape leaves the plan
// without candidates.
func (c *cublasLt) newPlan(h uintptr, k ltKey, desc uintptr, cands int, splitK bool) (*ltPlan, error) {
	p := &ltPlan{}
	err := func() error {
		var err error
		if desc == 0 {
			if p.desc, err = c.newDesc(k.epilogue, 0); err != nil {
				return err
			}
			desc = p.desc
		}
		if p.a, err = c.newLayout(k.typ, k.k, k.n, k.ld, k.batch, k.strideA); err != nil {
			return err
		}
		if p.b, err = c.newLayout(k.typ, k.k, k.m, k.ld, k.batch, k.strideB); err != nil {
			return err
		}
		if p.d, err = c.newLayout(k.dtyp, k.n, k.m, k.n, k.batch, k.strideD); err != nil {
			return err
		}
		var pref uintptr
		if err = c.call("cublasLtMatmulPreferenceCreate", c.prefCreate, uintptr(unsafe.Pointer(&pref))); err != nil {
			return err
		}
		defer c.call("cublasLtMatmulPreferenceDestroy", c.prefDestroy, pref)
		const set = "cublasLtMatmulPreferenceSetAttribute"
		err = ltSet(c, c.prefSet, set, pref, ltPrefMaxWorkspace, uint64(gemmWorkspace))
		for i, a := range [4]uint32{k.align[0], k.align[1], k.align[2], k.align[2]} { // A, B, C, D
			if err == nil {
				err = ltSet(c, c.prefSet, set, pref, ltPrefAlignA+i, a)
			}
		}
		if err == nil && k.dtyp != cudaR32F {
			// An fp16 D: a split's partial sums in float32 only, not in D. A
			// library that refuses the preference keeps its default.
			ltSet(c, c.prefSet, set, pref, ltPrefReductionMask, uint32(ltReductionCompute))
		}
		if err != nil {
			return err
		}
		res := make([]ltHeuristic, cands)
		var got int32
		if c.call("cublasLtMatmulAlgoGetHeuristic", c.heuristic, h, desc, p.a, p.b, p.d, p.d, pref, uintptr(cands),
			uintptr(unsafe.Pointer(&res[0])), uintptr(unsafe.Pointer(&got))) != nil {
			return nil
		}
		for _, r := range res[:min(int(got), cands)] {
			if r.state == 0 && r.workspace <= gemmWorkspace {
				p.cands = append(p.cands, r)
			}
		}
		p.split = len(p.cands)
		if splitK {
			p.cands = append(p.cands, c.splitKCandidates(h, desc, p, k)...)
		}
		return nil
	}()
	p.none = len(p.cands) == 0
	if err != nil {
		p.destroy(c)
		return nil, err
	}
	return p, nil
}

// splitKFactors are the K splits offered for an algorithm that takes them
// and runs unsplit.
var splitKFactors = [...]uint32{2, 4, 8}

// minSplitK is the fewest k each part of a split keeps.
const minSplitK = 128

// splitKCandidates are p's candidates again with K split in 2, 4 or 8
// parts, where the algorithm supports it and cuBLASLt accepts the result
// within the workspace: a GEMM of few rows (one question: 96) covers the
// outputs with fewer blocks than the GPU has multiprocessors, each walking
// all of k, and splitting k gives it more blocks (Options.SplitK). Their
// partial sums meet in float32 (the compute type's reduction) where the
// algorithm offers it; in D itself or in D's type only when D is float32.
func (c *cublasLt) splitKCandidates(h, desc uintptr, p *ltPlan, k ltKey) []ltHeuristic {
	if c.capGet == 0 || c.cfgGet == 0 || c.cfgSet == 0 || c.check == 0 {
		return nil
	}
	const capGet, cfgGet = "cublasLtMatmulAlgoCapGetAttribute", "cublasLtMatmulAlgoConfigGetAttribute"
	var out []ltHeuristic
	for _, r := range p.cands {
		var support int32
		var mask, cur uint32
		if !c.algoAttr(capGet, c.capGet, &r.algo, ltCapSplitK, unsafe.Pointer(&support)) || support == 0 ||
			!c.algoAttr(capGet, c.capGet, &r.algo, ltCapReductionMask, unsafe.Pointer(&mask)) ||
			!c.algoAttr(cfgGet, c.cfgGet, &r.algo, ltConfigSplitK, unsafe.Pointer(&cur)) || cur > 1 {
			continue
		}
		scheme := reductionScheme(mask, k.dtyp)
		if scheme == 0 {
			continue
		}
		for _, n := range splitKFactors {
			if k.k/int(n) < minSplitK {
				break
			}
			a := r.algo
			if c.call("cublasLtMatmulAlgoConfigSetAttribute", c.cfgSet, uintptr(unsafe.Pointer(&a)), ltConfigSplitK, uintptr(unsafe.Pointer(&n)), 4) != nil ||
				c.call("cublasLtMatmulAlgoConfigSetAttribute", c.cfgSet, uintptr(unsafe.Pointer(&a)), ltConfigReduction, uintptr(unsafe.Pointer(&scheme)), 4) != nil {
				continue
			}
			var res ltHeuristic
			if c.call("cublasLtMatmulAlgoCheck", c.check, h, desc, p.a, p.b, p.d, p.d, uintptr(unsafe.Pointer(&a)), uintptr(unsafe.Pointer(&res))) != nil ||
				res.state != 0 || res.workspace > gemmWorkspace {
				continue
			}
			res.algo = a
			out = append(out, res)
		}
	}
	return out
}

// algoAttr reads the 4-byte attribute attr of algo into v through fn, a
// capability or configuration getter named name; false where it fails.
func (c *cublasLt) algoAttr(name string, fn uintptr, algo *ltAlgo, attr int, v unsafe.Pointer) bool {
	var written uint64
	return c.call(name, fn, uintptr(unsafe.Pointer(algo)), uintptr(attr), uintptr(v), 4, uintptr(unsafe.Pointer(&written))) == nil
}

// reductionScheme is the split-K reduction to ask of an algorithm whose
// supported schemes are mask, for a D of type dtyp: float32 partial sums
// where offered, else D's own type when D is float32; 0 for none (an fp16
// D would round each part).
func reductionScheme(mask, dtyp uint32) uint32 {
	switch {
	case mask&ltReductionCompute != 0:
		return ltReductionCompute
	case dtyp != cudaR32F:
		return 0
	case mask&ltReductionOutput != 0:
		return ltReductionOutput
	case mask&ltReductionInPlace != 0:
		return ltReductionInPlace
	}
	return 0
}

func (p *ltPlan) destroy(c *cublasLt) {
	if p.desc != 0 {
		c.call("cublasLtMatmulDescDestroy", c.descDestroy, p.desc)
	}
	for _, l := range []uintptr{p.a, p.b, p.d} {
		if l != 0 {
			c.call("cublasLtMatrixLayoutDestroy", c.layoutDestroy, l)
		}
	}
}

// matmul issues D = alpha·op(A)·B + beta·D on stream with algorithm algo
// and the workspace at ws (gemmWorkspace bytes).
func (c *cublasLt) matmul(h, desc uintptr, p *ltPlan, alpha, beta *float32, a, b, d uintptr, algo *ltAlgo, ws, stream uintptr) error {
	return c.call("cublasLtMatmul", c.matmulFn, h, desc, uintptr(unsafe.Pointer(alpha)), a, p.a, b, p.b, uintptr(unsafe.Pointer(beta)),
		d, p.d, d, p.d, uintptr(unsafe.Pointer(algo)), ws, gemmWorkspace, stream)
}

// gemmLt runs g through cuBLASLt on x's CUDA stream; false (and no error)
// where cuBLASLt has no algorithm for it and the caller's cuBLAS call
// must. A shape's first run kernel by kernel (x.tune) times the
// heuristic's candidates and keeps the fastest; a capture, or a profiled
// run, takes what is kept, else the heuristic's first.
func (x *run) gemmLt(g *ltGEMM) (bool, error) {
	b, L := x.b, x.b.lt
	c := L.lib
	var desc uintptr
	if g.bias != 0 {
		var err error
		if desc, err = c.newDesc(g.epilogue, g.bias); err != nil {
			return false, err
		}
		// The descriptor's values are taken when the call is issued (and
		// captured); it may go right after.
		defer c.call("cublasLtMatmulDescDestroy", c.descDestroy, desc)
	}
	p, err := b.ltPlan(x.cs.lt, g.key(), desc)
	if err != nil {
		return false, err
	}
	if desc == 0 {
		desc = p.desc
	}
	L.mu.Lock()
	pick, tuned, none := p.pick, p.tuned, p.none
	L.mu.Unlock()
	if none {
		return false, nil
	}
	if !tuned && x.tune && !b.opts.NoTune {
		if pick, err = b.tune(x, p, g, desc, g.key()); err != nil {
			return false, err
		}
	}
	beta := b.beta
	if g.accumulate {
		beta = b.alpha
	}
	for {
		err = c.matmul(x.cs.lt, desc, p, b.alpha, beta, g.a, g.b, g.d, &p.cands[pick].algo, x.ws, x.cs.stream)
		if !refused(err) {
			return err == nil, err
		}
		// Nothing launched (nor captured): the next candidate from now on,
		// and once the library has refused them all, cuBLAS (the heuristic
		// can offer what the call then refuses, as for a batch whose A
		// does not move).
		L.mu.Lock()
		if p.pick == pick {
			p.pick = pick + 1
		}
		pick = p.pick
		out := pick >= len(p.cands)
		first := out && !p.none
		if out {
			p.none = true
		}
		L.mu.Unlock()
		if out {
			if first {
				b.count(func(st *Stats) { st.GEMMFallback++ })
			}
			return false, nil
		}
	}
}

// ltPlan returns key's plan, making it on first use with the cuBLASLt
// handle h (and desc, see newPlan).
func (b *Backend) ltPlan(h uintptr, key ltKey, desc uintptr) (*ltPlan, error) {
	L := b.lt
	L.mu.Lock()
	defer L.mu.Unlock()
	if L.plans == nil {
		return nil, errors.New("cuda: the backend is closed")
	}
	if p, ok := L.plans[key]; ok {
		return p, nil
	}
	// Split candidates only compete when timed: untuned, the heuristic's
	// first choice runs, and a refusal falls back to cuBLAS as before.
	p, err := L.lib.newPlan(h, key, desc, cmp.Or(b.opts.TuneCandidates, DefaultTuneCandidates), b.opts.SplitK && !b.opts.NoTune)
	if err != nil {
		return nil, err
	}
	L.plans[key] = p
	if p.none {
		b.count(func(st *Stats) { st.GEMMFallback++ })
	}
	return p, nil
}

// tune times p's candidates for g on x's CUDA stream and keeps the
// fastest. The candidates write a scratch output, never g's: what the
// segment computes does not depend on tuning (only on the algorithm
// chosen). They run with g's beta (D = C = the scratch) and epilogue, so
// that each is timed doing the work g's call does.
func (b *Backend) tune(x *run, p *ltPlan, g *ltGEMM, desc uintptr, key ltKey) (int, error) {
	L := b.lt
	L.tuneMu.Lock()
	defer L.tuneMu.Unlock()
	kept := -1
	if algo, ok := L.keep.lookup(key); ok {
		kept = slices.IndexFunc(p.cands, func(h ltHeuristic) bool { return h.algo == algo })
	}
	L.mu.Lock()
	pick, tuned := p.pick, p.tuned
	if !tuned && kept >= 0 {
		p.pick, p.tuned = kept, true
	}
	L.mu.Unlock()
	if tuned {
		return pick, nil
	}
	if kept >= 0 {
		b.count(func(st *Stats) { st.GEMMTuneKept++ })
		return kept, nil
	}
	// A failure while timing (an event, a candidate the library took and
	// then failed) leaves the heuristic's choice: tuning only ranks
	// algorithms that all compute the product, and a broken context fails
	// the request's own calls next anyway.
	pick, timed, err := b.timeCandidates(x, p, g, desc)
	if err != nil {
		pick, timed = 0, false
	}
	L.mu.Lock()
	p.pick, p.tuned = pick, true
	L.mu.Unlock()
	if timed {
		L.keep.add(key, p.cands[pick].algo)
	}
	b.count(func(st *Stats) {
		st.GEMMTuned++
		if pick >= p.split {
			st.GEMMSplitK++
		}
	})
	return pick, nil
}

// timeCandidates returns the index of p's fastest candidate for g: each
// one launched once (a candidate the library refuses is skipped), then
// its best of tuneRounds rounds of tuneReps launches between two events.
// timed is false where it took the heuristic's first choice untimed (one
// candidate, an output too large, no room for the scratch output). With
// tuneMu held.
func (b *Backend) timeCandidates(x *run, p *ltPlan, g *ltGEMM, desc uintptr) (pick int, timed bool, err error) {
	L, c := b.lt, b.lt.lib
	need := (int64(g.batch-1)*g.strideD + int64(g.m)*int64(g.n)) * 4
	if len(p.cands) < 2 || need > maxTuneScratch {
		return 0, false, nil
	}
	if need > L.scratchBytes {
		size := min(max(need, 2*L.scratchBytes, 1<<20), maxTuneScratch)
		addr, err := b.allocSpare(size, "GEMM tuning scratch")
		if err != nil {
			// No room to time candidates in: the heuristic's choice.
			return 0, false, nil
		}
		if L.scratch != 0 {
			L.retired = append(L.retired, L.scratch)
		}
		L.scratch, L.scratchBytes = addr, size
	}
	if L.start == 0 {
		// Both or neither: a start without an end would be recorded
		// against a null event by every later tuning.
		var ev [2]uintptr
		for i := range ev {
			if err := b.drv.Call("cuEventCreate", uintptr(unsafe.Pointer(&ev[i])), 0); err != nil {
				if ev[0] != 0 {
					b.drv.Call("cuEventDestroy_v2", ev[0])
				}
				return 0, false, err
			}
		}
		L.start, L.end = ev[0], ev[1]
	}
	beta := b.beta
	if g.accumulate {
		beta = b.alpha
	}
	weight := b.coldWeights(x, g, int64(g.n)*int64(g.k)*2)
	launch := func(i int) error {
		return c.matmul(x.cs.lt, desc, p, b.alpha, beta, weight(), g.b, L.scratch, &p.cands[i].algo, x.ws, x.cs.stream)
	}
	best := make([]float32, len(p.cands))
	runs := make([]bool, len(p.cands))
	for i := range p.cands {
		best[i], runs[i] = float32(math.Inf(1)), launch(i) == nil
	}
	s := x.cs.stream
	for range tuneRounds {
		for i := range p.cands {
			if !runs[i] {
				continue
			}
			if err := b.drv.Call("cuEventRecord", L.start, s); err != nil {
				return 0, false, err
			}
			for range tuneReps {
				if err := launch(i); err != nil {
					return 0, false, err
				}
			}
			if err := b.drv.Call("cuEventRecord", L.end, s); err != nil {
				return 0, false, err
			}
			if err := b.drv.Call("cuEventSynchronize", L.end); err != nil {
				return 0, false, err
			}
			var ms float32
			if err := b.drv.Call("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), L.start, L.end); err != nil {
				return 0, false, err
			}
			best[i] = min(best[i], ms)
		}
	}
	// None runs: the first, whose call is then refused too.
	for i := range best {
		if runs[i] && (!runs[pick] || best[i] < best[pick]) {
			pick = i
		}
	}
	return pick, runs[pick], nil
}

// coldWeights returns where a timed launch reads its weight of wbytes:
// g.a's own, or with Options.TuneCold the next of the slots of a region
// three times the L2 (made on first use, zeros), so that each launch finds
// its weight in HBM as a forward's GEMMs do, having touched twice the L2
// since it last read that slot. Without the room (or an L2 size), g.a.
// With tuneMu held.
func (b *Backend) coldWeights(x *run, g *ltGEMM, wbytes int64) func() uintptr {
	L := b.lt
	stride := align(wbytes, 256)
	if !b.opts.TuneCold || b.l2 <= 0 {
		return func() uintptr { return g.a }
	}
	if L.cold == 0 {
		size := 3 * b.l2
		addr, err := b.allocSpare(size, "GEMM tuning weights")
		if err != nil {
			return func() uintptr { return g.a }
		}
		if err := b.drv.Call("cuMemsetD8Async", addr, 0, uintptr(size), x.cs.stream); err != nil {
			b.drv.Call("cuMemFree_v2", addr)
			return func() uintptr { return g.a }
		}
		L.cold, L.coldBytes = addr, size
	}
	slots := L.coldBytes / stride
	if slots < 3 {
		return func() uintptr { return g.a }
	}
	turn := int64(0)
	return func() uintptr {
		a := L.cold + uintptr(turn%slots*stride)
		turn++
		return a
	}
}

// release frees the plans, the scratch and the events; on the worker
// thread, the GPU idle.
func (L *ltGEMMs) release(b *Backend) {
	L.keep.close()
	L.mu.Lock()
	for _, p := range L.plans {
		p.destroy(L.lib)
	}
	L.plans = nil
	L.mu.Unlock()
	for _, a := range append(L.retired, L.scratch, L.cold) {
		if a != 0 {
			b.drv.Call("cuMemFree_v2", a)
		}
	}
	L.retired, L.scratch, L.scratchBytes, L.cold, L.coldBytes = nil, 0, 0, 0, 0
	for _, e := range []uintptr{L.start, L.end} {
		if e != 0 {
			b.drv.Call("cuEventDestroy_v2", e)
		}
	}
	L.start, L.end = 0, 0
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
