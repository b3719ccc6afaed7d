package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/internal/cudadrv"
)

// Name is the name the backend is registered under.
const Name = "cuda"

// Errors of the backend besides backend's sentinels, checkable with
// errors.Is. ErrNoCUDA and ErrNoNVRTC are the values metal/cuda returns too.
var (
	// ErrNoCUDA means no CUDA driver could be loaded or it reports no GPU.
	ErrNoCUDA = cudadrv.ErrNoCUDA
	// ErrNoNVRTC means the NVRTC runtime compiler could not be loaded.
	ErrNoNVRTC = cudadrv.ErrNoNVRTC
	// ErrNoCUBLAS means cuBLAS (libcublas.so) could not be loaded.
	ErrNoCUBLAS = errors.New("cuda: cuBLAS (libcublas.so) not found")
	// ErrUnsupportedGPU means the GPU's compute capability is below what
	// the kernels need (MinComputeCapability).
	ErrUnsupportedGPU = errors.New("cuda: unsupported GPU")
	// ErrOutOfMemory means the GPU refused an allocation.
	ErrOutOfMemory = errors.New("cuda: out of device memory")
	// ErrSelfTest means the self-test computed a wrong answer.
	ErrSelfTest = errors.New("cuda: self-test failed")
)

// MinComputeCapability is the oldest GPU generation the backend runs on
// (major, minor): Ampere, whose instructions the bf16 rounding uses.
var MinComputeCapability = [2]int{8, 0}

// Precision is what the GEMMs read and how they accumulate.
type Precision uint8

const (
	// FP32 is float32 everywhere, TF32 off: the parity precision.
	FP32 Precision = iota
	// FP16 rounds GEMM operands (weights and activations) to IEEE half and
	// accumulates in float32 on tensor cores; everything else is float32.
	FP16
	// BF16 is FP16 with bfloat16 operands.
	BF16
	// FP16X2 is FP16 with each activation operand split into two fp16
	// terms (the rounding and what it missed), two GEMMs summed in float32:
	// activations keep about 21 bits, weights are rounded to fp16 (exact
	// for fp16 checkpoints). The second GEMM finds the weights in L2.
	FP16X2
)

func (p Precision) String() string {
	switch p {
	case FP32:
		return "fp32"
	case FP16:
		return "fp16"
	case BF16:
		return "bf16"
	case FP16X2:
		return "fp16x2"
	}
	return fmt.Sprintf("Precision(%d)", uint8(p))
}

// ParsePrecision reads "fp32", "fp16", "bf16" or "fp16x2".
func ParsePrecision(s string) (Precision, error) {
	p, err := parsePrecision(s)
	if err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	return p, nil
}

func parsePrecision(s string) (Precision, error) {
	for _, p := range []Precision{FP32, FP16, BF16, FP16X2} {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("precision %q, want fp32, fp16, bf16 or fp16x2", s)
}

// Options configure Open. The zero value runs on GPU 0 in FP32 with CUDA
// graphs.
type Options struct {
	// Device is the CUDA device ordinal.
	Device int
	// Precision of the GEMMs.
	Precision Precision
	// NoGraphs launches every kernel of every request instead of replaying
	// a captured CUDA graph (for comparison and debugging).
	NoGraphs bool
	// Bucket is the token bucket (backend.TokenBucket): a packed batch is
	// filled up to a multiple of it, so that token counts within a bucket
	// share one captured graph. 0 means DefaultBucket; 1 turns it off.
	Bucket int
	// QueriesPerWarp fixes how many queries a warp of the tiled attention
	// kernels keeps (1, 2 or 4); 0 chooses by the grid's size.
	QueriesPerWarp int
	// AttentionWarps is the warps a block of the tiled attention kernels
	// has at one query a warp: 16 (0 means 16: twice the queries share
	// each key and value load) or 8. More queries a warp always run 8.
	AttentionWarps int
	// SIMTAttention runs FP16 and FP16X2 attention on the float32 tiled
	// kernels (as FP32 and BF16 always do) instead of tensor cores, for
	// comparison.
	SIMTAttention bool
	// MMAWarps fixes the warps a block of the tensor-core attention kernels
	// has (1, 2, 4 or 8, sixteen queries each; fewer where the GPU lacks the
	// shared memory) and uses them whatever the grid's size; 0 means 4
	// where the grid fills the GPU, else the float32 kernels.
	MMAWarps int
	// AttentionSplit runs the FP16 and FP16X2 attention on the tensor-core
	// kernels whose four warps share a tile of 16 queries and split its keys
	// (attnsplit=on): four times the warps loading each tile's keys and
	// values where a question makes few tiles.
	AttentionSplit bool
	// RowWarps runs the FP16 and FP16X2 attention of batches whose rows
	// are all at most 128 tokens on the whole-row tensor-core kernels
	// (attnrows=4|6|8: their warps a block; attn_rows), a block a (batch
	// row, head) loading the row's queries, keys and values once, where
	// the tensor-core kernels would run (with MMAWarps, whatever the
	// grid's size); 0 or off (-1): the tiled tensor-core kernels.
	RowWarps int
	// NoRegAttention runs the float32 attention at one query a warp (few
	// tiles: one question) on the tiled kernel's sixteen warps of a query
	// each (attnreg=off) instead of attn_reg, whose sixteen warps share the
	// tile's queries and keep products in registers, for comparison.
	NoRegAttention bool
	// AttentionTerms fixes the fp16 terms the tensor-core attention kernels
	// split q, k, v and the probabilities into: 1 or 2; 0 means the
	// precision's (1 for FP16, 2 for FP16X2, and 2 for an FP16X2 backend's
	// reduced FP16 streams too, whose rows that are not near-ties keep
	// their probabilities). FP16X2 at one term keeps its GEMMs' 21-bit
	// activations but rounds attention's operands to fp16.
	AttentionTerms int
	// NoSmallLinear runs every Linear on cuBLAS, also those on 16 rows or
	// fewer (the heads' marker and CLS rows), which otherwise run as one
	// kernel of the backend's own (the product, bias, activation and a
	// folded residual Add in one launch), for comparison.
	NoSmallLinear bool
	// NoGatherFold keeps the Gathers that a LayerNorm right after them
	// otherwise reads through (the token embeddings' norm reads the
	// embedding table's rows itself, and the decision head's first norm
	// the question type's embedding its residual adds: one kernel fewer
	// each), for comparison.
	NoGatherFold bool
	// MaxGraphs bounds the cached segments (captured graphs with their
	// activation memory; a request shape is one of them, or one more than
	// it had early starts: see SubmitOps); default 128.
	MaxGraphs int
	// SubmitOps is when a stream starts recorded work on the GPU before a
	// Read needs it (backend.Submitter: the encoder's layer boundaries):
	// at the first hint once its segment has SubmitOps operations, then
	// once the next has four times that, so that the GPU starts on the
	// first layer while the host records the next few, and runs those
	// while it records the rest. 0 means DefaultSubmitOps; negative
	// (submit=off) records a forward whole and starts it at the Read.
	SubmitOps int
	// SubmitSplits is how many segments a forward starts before its Read
	// (splits=N), each needing four times the operations of the one before:
	// one more lets the GPU start the middle layers while the host records
	// the last ones and the heads, where with two it waited for that
	// recording (about 66 µs of idle GPU at one traced English question on
	// an H200). 0 means DefaultSubmitSplits.
	SubmitSplits int
	// GEMMBLAS runs the FP16, BF16 and FP16X2 GEMMs through cublasGemmEx
	// (cuBLAS's choice of kernel, bias and activation in a kernel of their
	// own) instead of cuBLASLt, for comparison. FP32 always runs on
	// cublasSgemm. Without libcublasLt they run on cuBLAS anyway.
	GEMMBLAS bool
	// ScalarGeGLU runs GeGLU on geglu (an element a thread, a 64-bit
	// division each) instead of geglu4 (a float4 a thread, one 32-bit
	// division a float4, where the widths are multiples of 4), for
	// comparison; the two agree bit for bit.
	ScalarGeGLU bool
	// NoTune takes cuBLASLt's first heuristic choice for every GEMM shape
	// instead of timing its candidates the first time the shape runs.
	NoTune bool
	// TuneCandidates is how many of the heuristic's algorithms a GEMM shape
	// times (1 to MaxTuneCandidates; 0 means DefaultTuneCandidates): more
	// lets the heuristic's later offers (other tiles, split-K) compete, at
	// the cost of a longer first run of each shape.
	TuneCandidates int
	// SplitK adds to each GEMM shape's timed candidates the heuristic's
	// algorithms again with k split in 2, 4 or 8 parts, where they take it
	// (a GEMM of few rows covers its outputs with fewer blocks than the GPU
	// has multiprocessors); without tuning (NoTune) it changes nothing.
	SplitK bool
	// TuneCold times each candidate reading its weight from somewhere
	// else each launch, in a region three times the GPU's L2, as a forward
	// does, whose every GEMM reads another layer's weight from HBM; by
	// default a candidate's launches read one weight, in L2 after the first.
	// On an H200 it chose no faster algorithms (docs/cuda-perf-log.md).
	TuneCold bool
	// MMARows runs the FP16 and FP16X2 GEMMs of at most this many rows (a
	// question or two: about a hundred) on linear_mma, a tensor-core kernel
	// of the backend's own, instead of cuBLAS: the weight split over blocks
	// by columns and by k, copied into shared memory before the kernel
	// waits for the one before it (with PDL, while that one finishes), and
	// FP16X2's two terms summed in the kernel; 0 (the default) keeps every
	// GEMM on cuBLAS. Weights written on the stream, k not a multiple of 16,
	// and an fp16 output with a residual folded in stay on cuBLAS.
	MMARows int
	// ClusterRows runs the GEMMs of one fp16 term (FP16, and FP16X2's
	// reduced streams) of at most this many rows on linear_cl, a kernel of
	// the backend's own for GEMMs of a question or two: one wave of
	// clusters whose blocks each copy their slice of the weight before the
	// kernel waits for the one before it, take x in chunks under the
	// products, and add their slices of k in the multiprocessors' shared
	// memory; on GPUs with thread block clusters (compute capability 9.0).
	// 0 (the default) keeps them on cuBLAS (or linear_mma, which MMARows
	// takes first). It is slower than cuBLASLt: one English question took
	// 1.48 times the default's GPU time on an H100 (docs/cuda-perf-log.md).
	// Weights written on the stream, k not a multiple of 16, and an fp16
	// output with a residual folded in stay on cuBLAS.
	ClusterRows int
	// ClusterCols is the output columns of a linear_cl tile: 32, 64 or
	// 128; 0 (the default) lets its plan choose for each GEMM.
	ClusterCols int
	// WGRows runs the FP16 and FP16X2 GEMMs (both of FP16X2's terms of x in
	// one kernel) of at most this many rows on linear_wg, linear_cl's plan on
	// warpgroup products (wgmma): tiles of 64 output columns a block of
	// one warpgroup, the block's whole slice of the weight copied before
	// the kernel waits for the one before it, x through a ring of chunks,
	// k split over a cluster where that takes fewer waves. It needs an
	// sm_90 GPU (wgmma is specific to that architecture: H100, H200) and
	// goes before linear_cl (ClusterRows); 0, the default, keeps them on
	// cuBLAS. It is slower than cuBLASLt: one English question took 1.59
	// times the default's GPU time on an H100 (docs/cuda-perf-log.md).
	// Weights written on the stream, k not a multiple of 8, a GELU, and an
	// fp16 output with a residual folded in stay on cuBLAS.
	WGRows int
	// WGSplits forces linear_wg's slices of k a cluster (1 to 8, where
	// the slices fit in shared memory); 0 (the default) lets its plan
	// choose for each GEMM.
	WGSplits int
	// WGRing caps linear_wg's ring of x's chunks (3 to 8 slots; 0, the
	// default, is 8): fewer slots leave a multiprocessor's shared memory
	// to the kernel before it while a block copies its weight early.
	WGRing int
	// WGTMA has linear_wg's copies made by the tensor memory accelerator:
	// one thread issues a box of 64 of k a chunk, of the weight and of
	// each term of x, through tensor maps the driver encodes (CUDA 12.0),
	// counted in by mbarriers, where the block's threads otherwise copy
	// every 16 bytes with an instruction and an address of their own (what
	// the kernel was measured waiting on). On an H200 faster than those
	// copies, still slower than cuBLASLt (BENCHMARKS.md); a GEMM whose
	// tensor maps are not ready when its graph is captured copies the
	// other way.
	WGTMA bool
	// KBatchRows runs each plain product (no bias or activation: every
	// GEMM of the ModernBERT encoder) of one fp16 term (FP16, and FP16X2's
	// reduced streams) of at most this many rows on cuBLAS as two GEMMs
	// over the two halves of k in one strided batch, whose two float32
	// products stay apart for what reads them to add, as FP16X2's two
	// terms' do: twice the blocks, each walking half of k, where a GEMM of
	// one question covers the GPU with few blocks that each wait out every
	// step of k. The registered backend's default is DefaultKBatchRows; 0
	// keeps each such GEMM whole; k must be a multiple of 32.
	KBatchRows int
	// KBatchMinK is the least k a GEMM splits at under KBatchRows (0: any):
	// a product's readers then read two float32 terms, where a whole
	// product of one question may be written as fp16 for GeGLU, so that
	// splitting pays most where k's chain is longest (the MLP output).
	KBatchMinK int
	// KCatRows multiplies FP16X2's two terms of x in one GEMM over twice
	// the k in the GEMMs of at least this many rows: the producer of a
	// GEMM's operand writes a row's two fp16 terms side by side, the
	// weight's fp16 copy is kept twice a row (twice halfOf's memory: about
	// 0.2 GB for the multilingual checkpoint, 0.7 GB for the English one),
	// and the GEMM writes one float32 product, with a bias or activation
	// in its epilogue. The stacked batch writes two products, which every
	// LayerNorm, GeGLU and attention after it reads: this form halves what
	// they read for the same multiply-adds, and reads the weight twice.
	// The answers are FP16X2's (one float32 accumulator over both terms
	// instead of two added after). 0 (the default) keeps the stacked
	// batch. It needs precision=fp16x2 and a GEMM on cuBLAS (not MMARows,
	// ClusterRows or WGRows). A weight whose doubled copy finds no room on
	// the device (no cached request shape is freed for it) keeps the
	// stacked batch (Stats.KCatNoRoom).
	KCatRows int
	// PrefetchRows has the backend's kernel just before a cuBLAS (or
	// linear_small) GEMM of 16-bit operands and at most this many rows (a
	// LayerNorm or a GeGLU:
	// the one recorded last before it in its segment, which takes up to
	// two GEMMs) ask L2 for that GEMM's weight as it starts, so that the
	// GEMM reads it from L2 rather than HBM; 0 (the default) asks for
	// nothing. At one question a GEMM's weight streams in far faster than
	// the GEMM takes; but on an H200 prefetching cost 2–6 % of one
	// question's GPU time (docs/cuda-perf-log.md).
	PrefetchRows int
	// PrefetchDepth is which kernel before such a GEMM asks for its weight:
	// the last LayerNorm or GeGLU before it (1, or 0), or the one before
	// that (2: a layer's second LayerNorm asks for the MLP output's weight,
	// its GeGLU for the next layer's qkv and attention output), and so on.
	PrefetchDepth int
	// MMACols is the output columns a linear_mma block computes: 64 (0
	// means DefaultMMACols) or 128, in twice the warps; each block reads
	// its rows of x whole, so wider blocks read x fewer times, in fewer,
	// longer blocks.
	MMACols int
	// MMANoLN keeps every LayerNorm a kernel of its own. Otherwise, with
	// MMARows, a LayerNorm of the residual stream between two linear_mma
	// GEMMs (the one adding into it, the one alone reading its output) runs
	// in them: the first also writes each row's statistics over its column
	// tiles, the second normalises the rows as it reads them, one kernel
	// fewer.
	MMANoLN bool
	// NoPDL launches the backend's own kernels the plain way. Otherwise,
	// on compute capability 9.0 and newer, they launch with programmatic
	// dependent launch: a kernel may start while the one before it
	// finishes and waits in the kernel for its results, which hides part
	// of each launch's latency in a forward of a few hundred short kernels
	// (on an H200, 4–7 % of a request's GPU time at one and ten
	// questions; docs/cuda-perf-log.md).
	NoPDL bool
	// Driver, NVRTC and CUBLAS name the libraries (default: libcuda.so.1,
	// and libnvrtc.so and libcublas.so from the loader path, the CUDA
	// toolkit or Python's nvidia packages).
	Driver, NVRTC, CUBLAS string
	// Refine, in FP16X2, runs batches of at least RefineTokens tokens in
	// FP16 first (backend.Refiner: about half the GEMM work where the GEMMs
	// are compute-bound) and only the rows whose two largest option logits
	// lie closer than Refine again in FP16X2, so that a row's argmax is
	// FP16X2's (doc.go, Refinement). 0 (or refine=off) turns it off; the
	// registered backend's default is DefaultRefine.
	Refine float32
	// RefineTokens is the fewest tokens a batch runs in FP16 first; 0 means
	// DefaultRefineTokens.
	RefineTokens int
	// BatchRows and BatchTokens are the backend's forward batch
	// (backend.BatchSizer) for a caller that leaves it to the backend: up
	// to BatchRows rows, fewer where they would pass BatchTokens tokens; 0
	// means DefaultBatchRows and DefaultBatchTokens. A GPU with less memory
	// takes a lower BatchTokens: a batch's activations grow with its tokens.
	BatchRows, BatchTokens int
	// KernelCache is the directory the compiled kernels are kept in
	// between processes (default: os.UserCacheDir()/laya-metal/cuda);
	// "off" compiles them at every Open.
	KernelCache string
	// TuneCache is the directory the GEMMs' timed algorithms are kept in
	// between processes, a file for each cuBLASLt library, GPU and tuning
	// setting (default: KernelCache's; "off" times every shape anew in each
	// process). A shape takes the kept algorithm only where cuBLASLt's
	// heuristic offers it for the shape again.
	TuneCache string
	// Defines sets tunables of kernels.cu, which NVRTC then compiles with
	// -DNAME=VALUE (define=NAME=VALUE; KernelTunables lists them, their
	// ranges and defaults): the blocks a multiprocessor must hold of a
	// kernel (a cap on its registers), how far a loop unrolls. They are for
	// measuring variants of a kernel on a GPU from one build; the defaults
	// are what the backend ships, and each set of them is a cubin of its
	// own in KernelCache (two where the extras are needed).
	Defines map[string]int
	// Log, when set, is told of long work as it starts and when it ends:
	// the first Open on a machine (or after an upgrade, or with other
	// Defines) compiles the kernels, which takes up to a minute. It is also
	// told, once, that the GPU's context was lost (Backend.Health). The
	// registered backend writes it to standard error.
	Log func(msg string)
}

// KernelTunable is one of kernels.cu's compile-time tunables
// (Options.Defines).
type KernelTunable struct {
	Name          string
	Min, Max, Def int
	Doc           string
}

// KernelTunables are kernels.cu's tunables, as its "Tunables" section
// defines them (a test holds the two equal).
var KernelTunables = []KernelTunable{
	{"ATTN_MINB", 0, 8, 0, "blocks a multiprocessor of each tiled float32 attention kernel (0: each kernel's own)"},
	{"ATTN_MMA_MINB", 1, 8, 1, "blocks a multiprocessor of each tensor-core attention kernel (a register cap)"},
	{"ATTN_ROWS_MINB", 1, 8, 1, "blocks a multiprocessor of each whole-row tensor-core attention kernel (a register cap; attnrows)"},
	{"ATTN_MMA_UNROLL", 1, 8, 4, "unroll of the tensor-core attention's key and value loads"},
	{"ATTN_MMA_KC16", 2, 8, 4, "keys a chunk of the tensor-core attention, in sixteens"},
	{"ATTN_MMA_LEAN", 0, 1, 0, "the fp16 tensor-core attention's values copied as they are, its masks skipped where they pass all"},
	{"ATTN_SKIP", 0, 1, 0, "the attention kernels leave out the products of a chunk's keys past its tile's last (bit for bit the same)"},
	{"ATTN_EX2", 0, 1, 1, "the tensor-core attention's scale applied in its exponent's fmaf, and ex2.approx.ftz for exp2f (0: scaled first, exp2f)"},
	{"LCL_W16", 0, 1, 0, "linear_cl on sixteen warps a block instead of eight, each with half the row tiles (clrows)"},
	{"LMMA_MINB", 1, 4, 1, "blocks a multiprocessor of linear_mma (a register cap)"},
	{"GEGLU_ERF", 0, 1, 1, "with GEGLU_EXP=0, GeGLU's GELU for one 16-bit term: 1 the erf form, 0 the erfc form (FP16X2's)"},
	{"GEGLU_EXP", 0, 1, 1, "GeGLU's GELU wherever it feeds 16-bit operands: 1 one exp2 of a polynomial (gelu_exp), 0 libdevice's erff or erfcf (GEGLU_ERF)"},
}

func kernelTunable(name string) (KernelTunable, bool) {
	for _, t := range KernelTunables {
		if t.Name == name {
			return t, true
		}
	}
	return KernelTunable{}, false
}

// parseDefine reads define's value, NAME=VALUE, into o.Defines.
func (o *Options) parseDefine(v string) error {
	name, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("define=%q, want define=NAME=VALUE", v)
	}
	n, err := strconv.Atoi(val)
	if err != nil {
		return fmt.Errorf("define=%q: %q is not an integer", v, val)
	}
	if o.Defines == nil {
		o.Defines = map[string]int{}
	}
	o.Defines[name] = n
	return nil
}

// defineFlags are NVRTC's -D flags for defines, in name order (they are
// part of the cubin's cache key).
func defineFlags(defines map[string]int) []string {
	var flags []string
	for _, name := range slices.Sorted(maps.Keys(defines)) {
		flags = append(flags, fmt.Sprintf("-D%s=%d", name, defines[name]))
	}
	return flags
}

// ParseOptions reads options from a comma-separated list, as the LAYA_CUDA
// environment variable gives them to the registered backend:
// precision=fp32|fp16|bf16|fp16x2, device=N, graphs=off, maxgraphs=N,
// submit=N|off, splits=N, bucket=N, attn=mma|simt, mmawarps=0|1|2|4|8, attnrows=4|6|8|off, attnsplit=off|on, attnreg=on|off, attnterms=0|1|2,
// attnqpw=0|1|2|4, attnwarps=8|16, small=on|off, gatherfold=on|off, gemm=lt|blas, tune=on|off,
// tunecands=N, splitk=off|on, tunecold=off|on, mmarows=N, mmacols=64|128, mmaln=on|off, clrows=N, clcols=32|64|128, wgrows=N, wgsplits=N, wgring=N, wgtma=off|on, kbatch=N, kbatchk=N, kcat=N, l2pf=N, l2pfdepth=N, pdl=on|off, geglu=vec|scalar, cache=DIR|off,
// tunecache=DIR|off, refine=MARGIN|off, refinetokens=N, batchrows=N, batchtokens=N, define=NAME=VALUE (repeatable: Options.Defines),
// driver=PATH, nvrtc=PATH, cublas=PATH (the libraries: a CUDA install outside the
// loader path, or the tests' kernel emulator, which then runs every command that takes
// LAYA_CUDA on the CPU).
func ParseOptions(s string) (Options, error) {
	var o Options
	ints := map[string]*int{"device": &o.Device, "bucket": &o.Bucket, "attnqpw": &o.QueriesPerWarp,
		"attnwarps": &o.AttentionWarps, "mmawarps": &o.MMAWarps, "attnterms": &o.AttentionTerms, "maxgraphs": &o.MaxGraphs, "refinetokens": &o.RefineTokens, "batchrows": &o.BatchRows, "batchtokens": &o.BatchTokens, "tunecands": &o.TuneCandidates, "splits": &o.SubmitSplits, "mmarows": &o.MMARows, "mmacols": &o.MMACols, "clrows": &o.ClusterRows, "clcols": &o.ClusterCols, "wgrows": &o.WGRows, "wgsplits": &o.WGSplits, "wgring": &o.WGRing, "kbatch": &o.KBatchRows, "kbatchk": &o.KBatchMinK, "kcat": &o.KCatRows, "l2pf": &o.PrefetchRows, "l2pfdepth": &o.PrefetchDepth}
	// Two-word options: the words, and the field that is whether it is
	// the second.
	words := map[string]struct {
		first, second string
		b             *bool
	}{"attn": {"mma", "simt", &o.SIMTAttention}, "graphs": {"on", "off", &o.NoGraphs},
		"small": {"on", "off", &o.NoSmallLinear}, "gemm": {"lt", "blas", &o.GEMMBLAS}, "tune": {"on", "off", &o.NoTune},
		"geglu": {"vec", "scalar", &o.ScalarGeGLU}, "splitk": {"off", "on", &o.SplitK}, "tunecold": {"off", "on", &o.TuneCold}, "pdl": {"on", "off", &o.NoPDL}, "mmaln": {"on", "off", &o.MMANoLN}, "attnsplit": {"off", "on", &o.AttentionSplit}, "attnreg": {"on", "off", &o.NoRegAttention}, "wgtma": {"off", "on", &o.WGTMA}, "gatherfold": {"on", "off", &o.NoGatherFold}}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		k, v, _ := strings.Cut(f, "=")
		p, isInt := ints[k]
		w, isWords := words[k]
		var err error
		switch {
		case isInt:
			*p, err = strconv.Atoi(v)
		case isWords:
			err = either(k, v, w.first, w.second, w.b)
		case k == "precision":
			o.Precision, err = parsePrecision(v)
		case k == "refine":
			o.Refine, err = parseMargin(v)
		case k == "submit":
			o.SubmitOps, err = parseSubmit(v)
		case k == "attnrows":
			o.RowWarps = -1
			if v != "off" {
				o.RowWarps, err = strconv.Atoi(v)
			}
		case k == "define":
			err = o.parseDefine(v)
		case k == "cache":
			if v == "" {
				err = errors.New("cache=DIR or cache=off")
			}
			o.KernelCache = v
		case k == "tunecache":
			if v == "" {
				err = errors.New("tunecache=DIR or tunecache=off")
			}
			o.TuneCache = v
		case k == "driver" || k == "nvrtc" || k == "cublas":
			if v == "" {
				err = fmt.Errorf("%s=PATH of the library", k)
			}
			*map[string]*string{"driver": &o.Driver, "nvrtc": &o.NVRTC, "cublas": &o.CUBLAS}[k] = v
		default:
			err = errors.New("unknown option (precision=fp32|fp16|bf16|fp16x2, device=N, graphs=on|off, maxgraphs=N, submit=N|off, splits=N, bucket=N, attn=mma|simt, mmawarps=0|1|2|4|8, attnrows=4|6|8|off, attnsplit=off|on, attnreg=on|off, attnterms=0|1|2, attnqpw=0|1|2|4, attnwarps=8|16, small=on|off, gatherfold=on|off, gemm=lt|blas, tune=on|off, tunecands=N, splitk=off|on, tunecold=off|on, mmarows=N, mmacols=64|128, mmaln=on|off, clrows=N, clcols=32|64|128, wgrows=N, wgsplits=N, wgring=N, wgtma=off|on, kbatch=N, kbatchk=N, kcat=N, l2pf=N, l2pfdepth=N, pdl=on|off, geglu=vec|scalar, cache=DIR|off, tunecache=DIR|off, refine=MARGIN|off, refinetokens=N, batchrows=N, batchtokens=N, define=NAME=VALUE, driver=PATH, nvrtc=PATH, cublas=PATH)")
		}
		if err == nil {
			err = o.check()
		}
		if err != nil {
			return o, fmt.Errorf("cuda: option %q: %w", f, err)
		}
	}
	return o, nil
}

// parseSubmit reads submit's value: operations, or off (negative).
func parseSubmit(v string) (int, error) {
	if v == "off" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, errors.New("submit=N (operations, at least 1) or submit=off")
	}
	return n, nil
}

// parseMargin reads refine's value: a logit margin, or off (0).
func parseMargin(v string) (float32, error) {
	if v == "off" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 32)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("refine=%q, want a logit margin above 0, or off", v)
	}
	return float32(f), nil
}

// either reads option k's value v, one of two words: *b is whether it is
// the second.
func either(k, v, first, second string, b *bool) error {
	if v != first && v != second {
		return fmt.Errorf("%s=%q, want %s or %s", k, v, first, second)
	}
	*b = v == second
	return nil
}

// check reports the first option out of its range: ParseOptions refuses it
// as it reads it, Open before it touches a GPU (a queries-a-warp count the
// kernels do not have would leave queries uncomputed).
func (o Options) check() error {
	switch {
	case o.Precision > FP16X2:
		return fmt.Errorf("precision %v, want fp32, fp16, bf16 or fp16x2", o.Precision)
	case o.Bucket < 0:
		return fmt.Errorf("bucket=%d, want a token count (1: none)", o.Bucket)
	case o.QueriesPerWarp != 0 && o.QueriesPerWarp != 1 && o.QueriesPerWarp != 2 && o.QueriesPerWarp != 4:
		return fmt.Errorf("attnqpw=%d, want 1, 2 or 4 (0: by grid size)", o.QueriesPerWarp)
	case o.AttentionWarps != 0 && o.AttentionWarps != 8 && o.AttentionWarps != 16:
		return fmt.Errorf("attnwarps=%d, want 8 or 16", o.AttentionWarps)
	case o.MMAWarps != 0 && o.MMAWarps != 1 && o.MMAWarps != 2 && o.MMAWarps != 4 && o.MMAWarps != 8:
		return fmt.Errorf("mmawarps=%d, want 1, 2, 4 or 8 (0: by grid size)", o.MMAWarps)
	case o.RowWarps != 0 && o.RowWarps != -1 && o.RowWarps != 4 && o.RowWarps != 6 && o.RowWarps != 8:
		return fmt.Errorf("attnrows=%d, want 4, 6 or 8 (warps a block), or off", o.RowWarps)
	case o.Refine < 0 || o.Refine != o.Refine || math.IsInf(float64(o.Refine), 0):
		return fmt.Errorf("refine=%g, want a logit margin above 0, or 0 (off)", o.Refine)
	case o.RefineTokens < 0:
		return fmt.Errorf("refinetokens=%d, want a token count (0: %d)", o.RefineTokens, DefaultRefineTokens)
	case o.BatchRows < 0:
		return fmt.Errorf("batchrows=%d, want the most rows of a forward batch (0: %d)", o.BatchRows, DefaultBatchRows)
	case o.BatchTokens < 0:
		return fmt.Errorf("batchtokens=%d, want the most tokens of a forward batch (0: %d)", o.BatchTokens, DefaultBatchTokens)
	case o.AttentionTerms < 0 || o.AttentionTerms > 2:
		return fmt.Errorf("attnterms=%d, want 1 or 2 (0: the precision's)", o.AttentionTerms)
	case o.MMACols != 0 && o.MMACols != 64 && o.MMACols != 128:
		return fmt.Errorf("mmacols=%d, want 64 or 128", o.MMACols)
	case o.MMARows < 0 || o.MMARows > MaxMMARows:
		return fmt.Errorf("mmarows=%d, want 0 (off) to %d rows", o.MMARows, MaxMMARows)
	case o.ClusterRows < 0 || o.ClusterRows > MaxMMARows:
		return fmt.Errorf("clrows=%d, want 0 (off) to %d rows", o.ClusterRows, MaxMMARows)
	case o.ClusterCols != 0 && o.ClusterCols != 32 && o.ClusterCols != 64 && o.ClusterCols != 128:
		return fmt.Errorf("clcols=%d, want 32, 64 or 128 (0: the plan's)", o.ClusterCols)
	case o.WGRows < 0 || o.WGRows > MaxMMARows:
		return fmt.Errorf("wgrows=%d, want 0 (off) to %d rows", o.WGRows, MaxMMARows)
	case o.WGSplits < 0 || o.WGSplits > 8:
		return fmt.Errorf("wgsplits=%d, want 0 (the plan's) to 8, a portable cluster's blocks", o.WGSplits)
	case o.WGRing != 0 && (o.WGRing < 3 || o.WGRing > 8):
		return fmt.Errorf("wgring=%d, want 3 to 8 slots (0: 8)", o.WGRing)
	case o.KBatchRows < 0:
		return fmt.Errorf("kbatch=%d, want 0 (off) or the most rows of a GEMM split over k's halves", o.KBatchRows)
	case o.KBatchMinK < 0:
		return fmt.Errorf("kbatchk=%d, want 0 (any) or the least k of a GEMM split over k's halves", o.KBatchMinK)
	case o.KCatRows < 0:
		return fmt.Errorf("kcat=%d, want 0 (off) or the least rows of a GEMM over both terms side by side", o.KCatRows)
	case o.PrefetchRows < 0:
		return fmt.Errorf("l2pf=%d, want 0 (off) or the most rows of a GEMM whose weight is prefetched", o.PrefetchRows)
	case o.PrefetchDepth < 0 || o.PrefetchDepth > 4:
		return fmt.Errorf("l2pfdepth=%d, want 1 to 4 (0: 1)", o.PrefetchDepth)
	case o.SubmitSplits < 0 || o.SubmitSplits > MaxSubmitSplits:
		return fmt.Errorf("splits=%d, want 1 to %d (0: %d)", o.SubmitSplits, MaxSubmitSplits, DefaultSubmitSplits)
	case o.TuneCandidates < 0 || o.TuneCandidates > MaxTuneCandidates:
		return fmt.Errorf("tunecands=%d, want 1 to %d (0: %d)", o.TuneCandidates, MaxTuneCandidates, DefaultTuneCandidates)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Defines)) {
		v := o.Defines[name]
		t, ok := kernelTunable(name)
		if !ok {
			names := make([]string, len(KernelTunables))
			for i, t := range KernelTunables {
				names[i] = t.Name
			}
			return fmt.Errorf("define=%s=%d: no such kernel tunable (%s)", name, v, strings.Join(names, ", "))
		}
		if v < t.Min || v > t.Max {
			return fmt.Errorf("define=%s=%d, want %d to %d (default %d)", name, v, t.Min, t.Max, t.Def)
		}
	}
	return nil
}

// MaxMMARows bounds Options.MMARows, ClusterRows and WGRows: linear_mma,
// linear_cl and linear_wg keep a split's rows of x in shared memory, and are made for
// GEMMs that read their weight once.
const MaxMMARows = 256

// DefaultTuneCandidates and MaxTuneCandidates bound Options.TuneCandidates:
// the heuristic's algorithms a GEMM shape times the first time it runs.
const (
	DefaultTuneCandidates = 16
	MaxTuneCandidates     = 128
)

// DefaultRefine is the registered backend's Options.Refine: the logit
// margin under which a row run in FP16 first runs again in FP16X2. It is
// nearly three times the most FP16 moved the gap between two logits of a
// row on any bundled golden (0.036, with the tensor-core attention and the
// GEMM outputs GeGLU and attention read in fp16; 0.027 before those), so
// that the rows it keeps answer as FP16X2 does.
const DefaultRefine = 0.1

// DefaultKBatchRows is the registered backend's Options.KBatchRows: one
// short question's GEMMs (93 rows) run over k's halves. Measured on an
// H100, one English question took 0.968 and 0.986 of the GPU time of whole
// GEMMs in two calls (ten and fifty questions unchanged), and every
// GEMM split made ten questions 1.29 times slower and fifty 1.54, where
// the GEMMs already cover the GPU and their readers then read two float32
// products instead of one 16-bit one (docs/cuda-perf-log.md).
const DefaultKBatchRows = 128

// DefaultRefineTokens is the fewest tokens a batch runs in FP16 first
// (Options.RefineTokens): one short question. Measured with laya-bench's
// questions of 93 tokens, FP16 first takes 12 % off one English question
// end to end (H100) and 23–47 % from four questions on (H200); at one to
// three questions a near-tie runs about the whole batch again, so the
// model's RefineGate holds batches under backend.SmallTokens to a lower
// share of near-ties (backend.SmallShare). Under 64 tokens the GEMMs
// wait on latency alone and FP16 saves too little to risk a second run.
const DefaultRefineTokens = 64

// DefaultBatchRows and DefaultBatchTokens are Options.BatchRows and
// BatchTokens: laya-bench's fifty questions (4,237 tokens packed) in one
// batch, as its tables run them, where 16 rows a batch (the CPU's) ran them
// as four batches one after another; and the largest batch about twice
// that, whose activations (about 0.45 MB a token for the English model,
// each request shape cached with its own) stay a few GB.
const (
	DefaultBatchRows   = 64
	DefaultBatchTokens = 8192
)

func (o Options) refining() bool { return o.Precision == FP16X2 && o.Refine > 0 }

func (o Options) refineTokens() int { return cmp.Or(o.RefineTokens, DefaultRefineTokens) }

// DefaultBucket is the token bucket of Options' zero value: laya-mlx's
// 16-token buckets.
const DefaultBucket = 16

// DefaultSubmitOps is Options.SubmitOps' zero value: about the embeddings
// and one encoder layer, whose GPU time (tens of microseconds a layer at
// one question on an H200) covers recording the next four; those cover
// recording the rest.
const DefaultSubmitOps = 8

// DefaultSubmitSplits is Options.SubmitSplits' zero value: the first layer,
// then the next four or so.
const DefaultSubmitSplits = 2

// MaxSubmitSplits bounds Options.SubmitSplits: each split holds another
// copy of the segment's scratch tensors.
const MaxSubmitSplits = 6

// Stats counts what the backend did, for benchmarks and tests.
type Stats struct {
	Captures, Replays, Eager int // segments captured, replayed, launched kernel by kernel
	Entries                  int // segments cached (graphs with their memory)
	// Submitted counts the segments started before a Read needed them
	// (Options.SubmitOps), also counted above.
	Submitted int
	// Evicted counts the idle cached shapes freed, least recently used
	// first, because the GPU refused an allocation that their memory then
	// made room for.
	Evicted int
	// GEMMTuned counts the GEMM shapes whose cuBLASLt algorithm was
	// chosen when they first ran kernel by kernel (the fastest of the
	// heuristic's candidates where it offers several); GEMMFallback those
	// cuBLASLt had no algorithm for, run by cuBLAS.
	GEMMTuned, GEMMFallback int
	// GEMMTuneKept counts the GEMM shapes that took the algorithm an
	// earlier process (or this one's earlier Open) timed for them, kept in
	// Options.TuneCache, instead of timing their own.
	GEMMTuneKept int
	// GEMMSplitK counts the tuned shapes whose fastest candidate splits k
	// (Options.SplitK).
	GEMMSplitK int
	// PDLRefused counts the captures that failed with programmatic
	// dependent launches (without Options.NoPDL) and were taken again
	// without them.
	PDLRefused int
	// GEMMOwn counts the GEMMs that ran on linear_mma (Options.MMARows),
	// linear_cl (Options.ClusterRows) or linear_wg (Options.WGRows) in the
	// first run of their segment's shape, kernel by kernel.
	GEMMOwn int
	// GEMMKCat counts the GEMMs over FP16X2's two terms side by side
	// (Options.KCatRows) in the first run of their segment's shape, kernel
	// by kernel.
	GEMMKCat int
	// KCatNoRoom counts the weights whose copy twice a row found no room
	// on the device: their GEMMs take the stacked batch instead.
	KCatNoRoom int
	// LayerNormsInGEMM counts, of those, the ones that also computed the
	// LayerNorm of their input (Options.MMANoLN).
	LayerNormsInGEMM int
	// Streams counts the streams that ran in the backend's precision (plain
	// batches, refinements, embeddings), ReducedStreams those that ran in
	// FP16 first (Options.Refine, ReducedStream), WideStreams those that
	// ran in FP32 in a 16-bit precision (WideStream: rows whose outputs
	// were not finite).
	Streams, ReducedStreams, WideStreams int
	// KernelsCached: Open loaded the kernels Options.KernelCache kept
	// instead of compiling them.
	KernelsCached bool
}

// KernelResource is what one of the backend's kernels, as compiled for
// this GPU, takes of a multiprocessor (the driver's function attributes):
// a kernel that holds few warps a multiprocessor hides little of its
// memory latency, and one with local memory spilled registers.
type KernelResource struct {
	Name        string
	Registers   int // a thread's
	LocalBytes  int // a thread's local memory: spilled registers, arrays indexed at run time
	SharedBytes int // a block's static shared memory (the dynamic part comes with each launch)
	MaxThreads  int // the most threads a block may have (launch bounds, registers)
	// WarpsPerSM is the most warps of the kernel a multiprocessor holds
	// by their registers alone (256 at a time to a warp, from one of four
	// partitions), before shared memory and block sizes limit them
	// further.
	WarpsPerSM int
}
