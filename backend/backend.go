package backend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/laya-metal/laya/weights"
)

// Sentinel errors, checkable with errors.Is.
var (
	// ErrShape reports operands whose shapes (or parameters: an eps, a
	// rope theta, an activation) do not fit the operation; the Check
	// functions (contract.go) define what fits.
	ErrShape = errors.New("backend: shape mismatch")
	// ErrDType reports weight data of a type the backend cannot read.
	ErrDType = errors.New("backend: unsupported dtype")
	// ErrForeignTensor reports a tensor handle made by another backend or
	// stream, or one used after its stream was closed.
	ErrForeignTensor = errors.New("backend: foreign or released tensor")
	// ErrUnknownBackend reports a backend name nobody registered.
	ErrUnknownBackend = errors.New("backend: unknown backend")
	// ErrDeviceLost reports a device the backend can no longer use for the
	// rest of the process (a GPU context after a kernel fault, which CUDA
	// keeps failing every later call with): only a new process recovers, so
	// a server should stop reporting itself healthy (Healther).
	ErrDeviceLost = errors.New("backend: device lost, restart the process")
)

// Healther is implemented by backends that can lose their device for good
// (ErrDeviceLost): Health returns that error once it happened, else nil.
type Healther interface {
	Health() error
}

// DType is the element type of uploaded weight data: the checkpoint's own
// (weights.F32, weights.F16, weights.BF16), so weights upload as stored.
type DType = weights.DType

// The dtypes a backend must accept.
const (
	F32  = weights.F32
	F16  = weights.F16
	BF16 = weights.BF16
)

// Tensor is a backend-owned float32 array. Every tensor is a row-major
// matrix [Rows, Cols]; batch and sequence dimensions are folded into Rows
// (row = batchIndex*SeqLen + position), which is how the model code and the
// kernels index them.
type Tensor interface {
	Rows() int
	Cols() int
}

// Activation is an element-wise function fused into Linear or applied by
// Activate.
type Activation uint8

const (
	Identity Activation = iota
	// GELU is the exact erf form 0.5·x·(1+erf(x/√2)) (PyTorch's default
	// "gelu", used by ModernBERT, the scorer and the act head).
	GELU
	// ReLU is max(x, 0) (the PyTorch TransformerEncoderLayer default, used by
	// the decision head's feed-forward).
	ReLU
)

func (a Activation) String() string {
	switch a {
	case Identity:
		return "identity"
	case GELU:
		return "gelu"
	case ReLU:
		return "relu"
	}
	return fmt.Sprintf("Activation(%d)", uint8(a))
}

// Backend owns the weights and creates streams. It is safe for concurrent
// use: several goroutines may each run their own Stream.
type Backend interface {
	// Name is the name the backend is registered under ("cpu", "metal").
	Name() string
	// Upload stores one weight matrix [rows, cols] from raw little-endian
	// data of dtype (len(raw) = rows·cols·dtype.Size()). A vector is a
	// matrix with one row. The backend converts to float32 once, here, or
	// keeps the data and converts on load; raw is not retained after Upload
	// returns unless the backend documents otherwise. See CheckUpload.
	Upload(name string, dtype DType, rows, cols int, raw []byte) (Tensor, error)
	// NewStream starts an empty stream of operations.
	NewStream() Stream
	// Close releases every weight.
	Close() error
}

// MappedUploader is implemented by backends that can read weights in place
// from a checkpoint's file mapping instead of copying them (the Metal
// backend wraps the mapping in device buffers: Apple GPUs share memory with
// the CPU). Loader uses it when the checkpoint is mmap'd.
//
// The mapping must stay mapped and unchanged until the backend is closed:
// close the backend before the checkpoint (laya.Agent.Close does).
type MappedUploader interface {
	// UploadMapped is Upload of the tensor stored at mapping[offset:
	// offset+rows·cols·dtype.Size()]. mapping is the whole read-only file
	// mapping (weights.Safetensors.Mapping: page-aligned, its length
	// page-rounded); the backend wraps it once, not once per tensor, and
	// may still copy a tensor it cannot use in place (a dtype its kernels
	// do not read, an offset misaligned for them).
	UploadMapped(name string, dtype DType, rows, cols int, mapping []byte, offset int) (Tensor, error)
}

// MappingForgetter is implemented by MappedUploaders that keep what they
// made of a mapping (wrapping buffers, copies) for reuse. A caller that
// shares one backend between checkpoints (laya.WithBackendInstance) calls
// ForgetMapping before it unmaps a checkpoint: the next checkpoint may be
// mapped at the same address, and must not be read through the old one's
// buffers.
type MappingForgetter interface {
	ForgetMapping(mapping []byte)
}

// Timer is implemented by backends that know how long their device worked
// (the Metal backend: the GPU time of its command buffers). Requests run
// one after another take the difference of two readings.
type Timer interface {
	// DeviceTime is the device time of all work finished so far, by every
	// stream of the backend.
	DeviceTime() time.Duration
}

// Refiner is implemented by backends with a precision faster than their
// streams' own whose decisions a caller must check (the cuda backend: GEMM
// operands in one fp16 term instead of fp16x2's two). A model runs a batch
// of tokens tokens on the stream ReducedStream returns, then every row
// whose two largest option logits lie closer than margin (or that has a
// non-finite output) again on a NewStream, whose outputs replace the
// reduced ones: near-ties are where a reduced precision flips an answer,
// and rows never see each other in a batch, so re-running some rows
// changes no other. A nil stream (a batch too small for the reduced
// precision to pay, or refining off) means NewStream for the whole batch.
// The margin is the backend's calibration; a caller's RefineGate may grow
// it for the checkpoint at hand (RefineGate.Margin).
//
// Only decisions taken by a row's own argmax are covered: a caller that
// compares rows with each other (the best of a long state's windows) runs
// them on NewStream. Whether a row runs reduced depends on its batch (its
// token count) and on the caller's RefineGate, so the probabilities of rows
// that are not near-ties may differ between two runs by the reduced
// precision's error.
type Refiner interface {
	ReducedStream(tokens int) (s Stream, margin float32)
}

// Widener is implemented by backends whose streams compute in a precision
// with a narrower range than float32 somewhere, and that also hold what a
// wider one needs (the cuda backend: its fp16 GEMM operands overflow past
// 65504, and its float32 weights stay resident next to their fp16
// copies). A model runs every row whose outputs are not finite (Finite)
// after NewStream, and after any refinement (Refiner), again on a stream
// WideStream returns, whose outputs replace the others: an activation
// beyond the narrow precision's range turns a row's outputs into NaN there,
// and the wide stream answers it as the backend's widest precision does,
// more slowly. Finite rows never run on it, and rows never see each other
// in a batch, so re-running some rows changes no other. A row still not
// finite on the wide stream is the checkpoint's: its outputs stand.
type Widener interface {
	// WideStream starts a stream in a precision wider than NewStream's;
	// nil when NewStream's is already the widest.
	WideStream() Stream
}

// BatchSizer is implemented by backends whose best forward batch is not the
// CPU's few rows: a GPU's cost per row falls as a batch grows until its
// multiprocessors are full (on the cuda backend one English question of 93
// tokens takes 1.2 ms, ten 2.2 and fifty 8.0), so a caller that leaves the
// batch size to the backend (laya.WithBatchSize unset) runs up to rows rows
// in one batch, fewer where their tokens would pass tokens (never fewer than
// one row): the token bound keeps a batch's activations, which grow with its
// tokens, in device memory whatever the rows' lengths. Batching changes no
// answer beyond float rounding.
type BatchSizer interface {
	BatchLimits() (rows, tokens int)
}

// RefineGate is a Refiner's caller's account of whether running reduced
// first pays: a batch's reduced run saves a share of its plain cost, and
// each row run again costs a plain run of that row, so once more than
// MaxShare of the rows of recent batches were near-ties (SmallShare for a
// batch of one to three questions, which saves less), reducing loses,
// and Open says no. The caller then runs those batches plain and still
// reports their near-ties, counted on the plain outputs (Observe), which
// keeps the account current without running anything twice: traffic
// whose near-ties fall under ReopenShare opens it again. Traffic of real decisions, few of them near-ties, keeps it
// open; a checkpoint whose options tie throughout (random weights) closes
// it. One gate a loaded model: near-ties are the checkpoint's and its
// traffic's, not the backend's. The zero value is open. It is safe for
// concurrent use.
//
// It also keeps the margin honest for the checkpoint at hand: a Refiner's
// margin is calibrated on known checkpoints, and a refined row shows how
// far the reduced run moved the gaps between its logits (ObserveSpread).
// Once a move over half the margin is seen, Margin answers twice the
// largest, so that a kept row's gap stays at least twice any move seen. It
// never shrinks: a checkpoint that rounds badly once may again, and the
// cost of a margin too large is speed (more rows run again, and then the
// gate closes), where one too small costs answers.
//
// MaxShare is where reducing stops paying for a typical batch; how much a
// reduced run saves grows with the batch (a large one's plain run costs
// about its size, a second run of a few rows a fixed amount more). So the
// gate also learns what batches cost (ObserveCost: the time of each run,
// reduced or plain, by its token count) and opens past the shares for a
// batch whose measured reduced run plus the plain run of its share of
// near-tie tokens is clearly cheaper than its measured plain run. It never
// closes for cost where the shares keep it open. One batch in costExplore
// that it opens for cost alone runs plain, so that a plain cost measured
// badly (a first run that compiled or captured) is measured again, and one
// in costProbe of a size whose reduced run was never measured (a size
// first seen after the gate closed) runs reduced to measure it. Which
// precision a batch runs in changes only its speed and the rounding of
// rows not near-ties: near-ties are refined either way.
type RefineGate struct {
	mu     sync.Mutex
	share  float64 // moving average of the share of near-tie rows, per batch observed
	closed bool    // Open said no last (it reopens lower: ReopenShare)
	spread float32 // the largest move of a gap between two logits a refined row showed

	costs  [2][costBuckets]costWindow // [plain, reduced] runs by bits.Len(tokens)
	byCost int                        // batches opened for cost alone
	probes int                        // batches closed whose reduced cost is unmeasured
}

// costWindow keeps the last costWindowLen runs of batches of one size class.
type costWindow struct {
	n      int // runs observed
	tokens [costWindowLen]int
	secs   [costWindowLen]float64
}

const (
	costBuckets   = 32 // bits.Len of a token count: any int32
	costWindowLen = 8
	// costMinRuns runs of a size class are needed before its cost counts:
	// the first run of a shape may compile or capture it.
	costMinRuns = 3
	// costMargin is how much cheaper reducing must be estimated to open
	// the gate for cost: the least of several runs of one process drifts
	// by a few percent.
	costMargin = 0.95
	// costExplore: one batch in this many that the gate opens for cost
	// alone runs plain, refreshing the plain cost it opened on.
	costExplore = 16
	// costProbe: one batch in this many that the shares close, whose
	// reduced run is not yet measured at its size, runs reduced to
	// measure it (a batch size first seen after the gate closed).
	costProbe = 4
)

// ObserveCost adds the time a run of a batch of tokens tokens took, on a
// Refiner's reduced stream or on a plain one (its near-tie rows run again
// are plain runs of their own). The caller's wall time is what it should
// be: the host's share of a run is part of what reducing saves or costs.
func (g *RefineGate) ObserveCost(reduced bool, tokens int, d time.Duration) {
	if tokens <= 0 || d <= 0 {
		return
	}
	k := 0
	if reduced {
		k = 1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	w := &g.costs[k][costBucket(tokens)]
	w.tokens[w.n%costWindowLen], w.secs[w.n%costWindowLen] = tokens, d.Seconds()
	w.n++
}

func costBucket(tokens int) int { return min(bits.Len(uint(max(tokens, 0))), costBuckets-1) }

// at is the cost of a run of tokens tokens, from the runs of its size
// class scaled by their tokens (up and down when scale, else only up: a
// run of fewer tokens costs at most what one of more did), their least
// (a run slowed by a compile, a capture or another process's load says
// nothing of the cost); false with fewer than costMinRuns runs.
func (w *costWindow) at(tokens float64, scale bool) (float64, bool) {
	if w.n < costMinRuns {
		return 0, false
	}
	best := math.Inf(1)
	for i := range min(w.n, costWindowLen) {
		f := tokens / float64(w.tokens[i])
		if !scale {
			f = max(f, 1)
		}
		best = min(best, w.secs[i]*f)
	}
	return best, true
}

// Verdicts of RefineGate.cost on a batch the shares close the gate for.
const (
	costLoses      = iota // reducing costs more, or cannot be priced yet
	costPays              // clearly less
	costUnmeasured        // its plain run is measured, its reduced run not yet
)

// cost prices a batch of tokens tokens run reduced first, its share of
// near-tie tokens then run plain, against it run plain, by the runs
// observed. Both of the batch's own costs must have been measured at its
// size class; the near-ties' plain run is priced at the nearest measured
// class at or above theirs, never below.
func (g *RefineGate) cost(tokens int) int {
	b := costBucket(tokens)
	plain, ok := g.costs[0][b].at(float64(tokens), true)
	if !ok {
		return costLoses // running plain measures it
	}
	reduced, ok := g.costs[1][b].at(float64(tokens), true)
	if !ok {
		return costUnmeasured
	}
	again := g.share * float64(tokens)
	for c := costBucket(int(math.Ceil(again))); c <= b; c++ {
		if cost, ok := g.costs[0][c].at(again, false); ok {
			if reduced+cost < costMargin*plain {
				return costPays
			}
			return costLoses
		}
	}
	return costLoses
}

const (
	// MaxShare is the share of near-tie rows above which RefineGate
	// closes for batches of SmallTokens tokens or more: about where the
	// fp16 pass plus the fp16x2 pass over the rows run again costs fp16x2
	// alone at ten questions (cuda backend, H200). Larger batches save
	// more by reducing; the gate opens for them by their measured costs.
	MaxShare = 0.25
	// SmallShare is MaxShare for batches under SmallTokens tokens (one to
	// three short questions): their reduced run saves only 9–15 % of the
	// plain run (cuda backend), and a near-tie runs about the whole batch
	// again, so reducing pays only while fewer than about one row in ten
	// is a near-tie.
	SmallShare = 0.1
	// SmallTokens is the size from which a batch is held to MaxShare.
	SmallTokens = 256
	// ReopenShare is the share under which a closed RefineGate opens
	// again for a large batch: lower than MaxShare, so that traffic whose
	// share hovers at MaxShare does not switch precision batch by batch
	// (a small batch's is as far under SmallShare).
	ReopenShare = 0.75 * MaxShare
	// refineWeight is the weight of a batch's share in the moving average.
	refineWeight = 0.25
)

// Open reports whether the next batch, one of tokens tokens that the
// Refiner offered a reduced stream for, should run reduced first: while
// the share of near-ties is under its limit, or past it where the costs
// observed say reducing still pays.
func (g *RefineGate) Open(tokens int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	limit := MaxShare
	if tokens < SmallTokens {
		limit = SmallShare
	}
	if g.closed {
		limit *= ReopenShare / MaxShare
	}
	g.closed = g.share > limit
	if !g.closed {
		return true
	}
	switch g.cost(tokens) {
	case costPays:
		g.byCost++
		return g.byCost%costExplore != 0
	case costUnmeasured:
		g.probes++
		return g.probes%costProbe == 0
	}
	return false
}

// Observe adds a batch of rows rows, again of which were near-ties: run
// again after a reduced run, or, in a batch run plain while the gate was
// closed, near-ties of the plain outputs at the margin the reduced run
// would have had.
func (g *RefineGate) Observe(rows, again int) {
	if rows <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.share += refineWeight * (float64(min(max(again, 0), rows))/float64(rows) - g.share)
}

// Margin is the near-tie margin to use for a Refiner's margin: margin, or
// twice the largest spread ObserveSpread saw where that is more.
func (g *RefineGate) Margin(margin float32) float32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(margin, 2*g.spread)
}

// ObserveSpread adds a refined row's spread: how far its reduced run moved
// the gap between two of its logits (Spread). Spreads that are not finite
// say nothing of the rounding and are left out.
func (g *RefineGate) ObserveSpread(spread float32) {
	if !(spread >= 0) || math.IsInf(float64(spread), 0) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.spread = max(g.spread, spread)
}

// Spread is the most the gap between two of a row's logits moved from
// reduced to exact: max(exact−reduced) − min(exact−reduced) over the
// logits where both are finite (0 for rows of other lengths).
func Spread(reduced, exact []float32) float32 {
	if len(reduced) != len(exact) {
		return 0
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for i, r := range reduced {
		d := exact[i] - r
		if d != d || math.IsInf(float64(d), 0) {
			continue
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi < lo {
		return 0
	}
	return hi - lo
}

// NearTie reports whether the answer to a row of option logits could differ
// between two runs whose logits differ by less than margin/2 each: its two
// largest logits lie closer than margin, or a logit is not finite.
func NearTie(logits []float32, margin float32) bool {
	if !Finite(logits) {
		return true
	}
	first, second := float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, v := range logits {
		if v > first {
			first, second = v, first
		} else if v > second {
			second = v
		}
	}
	return len(logits) > 1 && first-second < margin
}

// Finite reports whether every value is a number other than ±Inf.
func Finite(values []float32) bool {
	for _, v := range values {
		if v != v || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}

// Counter is implemented by backends that count what they did, by name
// (the cuda backend: request shapes captured as graphs, graph replays,
// segments run kernel by kernel, GEMM shapes tuned, ...). The counts only
// grow, except gauges a backend says are (a cache's entries): benchmarks
// take the difference of two readings, so that a timed request that ran
// kernel by kernel instead of replaying its graph shows.
type Counter interface {
	Counters() map[string]int
}

// OpTime is the device time spent in one kind of operation.
type OpTime struct {
	Op    string // "linear+gelu", "attention", …
	Count int    // operations timed
	Time  time.Duration
}

// Profiler is implemented by backends that can time each operation on the
// device. Timing an operation alone means waiting for it alone: with
// profiling on, every operation is submitted and waited for by itself, so
// the times include a per-operation sync a normal run does not pay, and
// their sum exceeds the unprofiled device time. Use them to rank
// operations, not to predict a request's latency.
type Profiler interface {
	// SetProfiling turns per-operation timing on or off; turning it on
	// clears the times collected so far.
	SetProfiling(on bool)
	// OpTimes returns the times collected since profiling was turned on,
	// longest first.
	OpTimes() []OpTime
}

// Stream records operations on tensors. Operations may run asynchronously;
// Read waits for everything recorded before it. A Stream is used by one
// goroutine at a time. Close releases every tensor the stream created.
//
// dst may alias a source only where an operation says so. Each operation's
// operands must pass the Check function of the same name (CheckGather,
// CheckLayerNorm, …), which is its contract; a backend records that
// function's error, and may refuse more (limits of its own kernels).
type Stream interface {
	// New returns a zeroed scratch tensor [rows, cols]. See CheckDims.
	New(rows, cols int) Tensor
	// FromHost returns a tensor [rows, cols] holding a copy of data. See
	// CheckFromHost.
	FromHost(rows, cols int, data []float32) Tensor

	// Gather copies rows: dst[i] = table[index[i]]. It is the token
	// embedding lookup, the type-embedding broadcast and the read of hidden
	// states at marker or [CLS] positions. See CheckGather.
	Gather(dst, table Tensor, index []int32)
	// LayerNorm normalises each row of x: (x−mean)/sqrt(var+eps)·weight
	// (+bias), with the biased variance. bias may be nil. weight and bias
	// are [1, cols]. dst may be x. See CheckLayerNorm.
	LayerNorm(dst, x, weight, bias Tensor, eps float32)
	// Linear computes dst = act(x·weightᵀ + bias) for x [M, K], weight
	// [N, K] (the PyTorch layout) and dst [M, N]. bias [1, N] may be nil.
	// See CheckLinear.
	Linear(dst, x, weight, bias Tensor, act Activation)
	// Add computes dst = a + b element-wise. dst may be a or b. See
	// CheckAdd.
	Add(dst, a, b Tensor)
	// Activate applies act element-wise. dst may be x. See CheckActivate.
	Activate(dst, x Tensor, act Activation)
	// Softmax applies a max-subtracted softmax to each row. dst may be x.
	// See CheckSoftmax.
	Softmax(dst, x Tensor)
	// GeGLU computes dst = GELU(x[:, :I]) · x[:, I:] for x [M, 2I] and dst
	// [M, I]: the FIRST half is activated (ModernBERT's MLP). See
	// CheckGeGLU.
	GeGLU(dst, x Tensor)
	// Rope rotates the query and key parts of a fused projection in place.
	// See RopeParams and CheckRope.
	Rope(qkv Tensor, p RopeParams)
	// Attention runs multi-head scaled-dot-product attention on a fused
	// projection qkv [B·L, 3·H·Dh] laid out per row as [q | k | v], each
	// [H, Dh] head-major, and writes the concatenated heads to dst
	// [B·L, H·Dh]. See AttentionParams for the masks and CheckAttention.
	Attention(dst, qkv Tensor, p AttentionParams)
	// ActFeatures builds the act head's input [B, d+4] from cls [B, d] and
	// the real logits of all B rows, row after row, counts[b] ≥ 1 of them
	// for row b (logits has Σcounts elements; its shape is ignored). From
	// upstream laya/common.py, DecisionModel.forward:
	//
	//	p     = softmax(z)                      z = row b's raw logits, k = counts[b]
	//	kk    = max(2, k)
	//	ent   = −Σ p·log(max(p, 1e-9)) / log(kk)
	//	top1, top2 = the two largest p          top2 = 0 when k = 1
	//	dst[b] = concat(cls[b], top1, top1−top2, ent, kk/255)
	//
	// Upstream runs this over all Kmax slots with padded logits set to −1e4;
	// exp(−1e4 − max) is exactly 0 in float32, so padded slots add nothing
	// and the unpadded rule above equals it. See CheckActFeatures.
	ActFeatures(dst, cls, logits Tensor, counts []int)

	// Read waits for the stream and copies t into dst (len rows·cols). It
	// returns the stream's first error, or ctx's error if ctx ends first.
	// See CheckRead.
	Read(ctx context.Context, t Tensor, dst []float32) error
	// Err is the first error recorded so far.
	Err() error
	// Close releases the stream's tensors; handles become invalid.
	Close()
}

// RopeParams describes rotary position embedding over a fused projection
// [B·L, 3·H·Dh] (or, packed, [ΣLengths, 3·H·Dh]: see Packed): the q and k
// parts of every row at position p (= row mod L; packed, the row's offset in
// its batch row) are rotated, split-half ("rotate_half", non-interleaved, as in HF
// ModernBERT and GPT-NeoX) over the full head dim:
//
//	inv_freq[j] = 1 / Theta^(2j/Dh)        j < Dh/2, float32 as PyTorch
//	angle       = float32(p) · inv_freq[j] float32
//	x'[j]       = x[j]·cos − x[j+Dh/2]·sin
//	x'[j+Dh/2]  = x[j+Dh/2]·cos + x[j]·sin
type RopeParams struct {
	// Layout gives L (SeqLen: positions restart at 0 in every batch row)
	// and, Packed, each row's length; a right-padded batch may leave
	// Lengths nil (its rows are then any multiple of SeqLen).
	Layout
	Heads   int // H
	HeadDim int // Dh, even
	Theta   float64
}

// AttentionParams describes the masks and scale of Attention. Batch rows are
// right-padded (or, with Packed, back to back: row b's Lengths[b] tokens
// right after row b−1's, qkv [ΣLengths, 3·H·Dh]): in batch row b, keys
// j < Lengths[b] are real. A query i may
// attend key j iff j is real and, when Sliding, |i−j| ≤ Radius (inclusive).
// Padded query rows are never read by the model; backends write zeros there.
type AttentionParams struct {
	Layout      // L = SeqLen; B = len(Lengths)
	Heads   int // H
	HeadDim int // Dh
	Scale   float32
	Sliding bool
	Radius  int
}
