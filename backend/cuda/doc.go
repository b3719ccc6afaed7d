// Package cuda registers the "cuda" backend: Laya's forward pass on an
// NVIDIA GPU (compute capability 8.0 or newer) with its own CUDA kernels
// (kernels.cu, compiled by NVRTC for the GPU at hand at the first Open and
// kept in the user cache directory for the next ones) and cuBLAS
// and cuBLASLt GEMMs, reached through purego: no cgo, and no CUDA at build
// time. The driver (libcuda.so.1), NVRTC and cuBLAS (with cuBLASLt where
// it is found) are loaded when a backend is opened, from the loader path,
// the CUDA toolkit or PyTorch's pip wheels;
// the plumbing is shared with metal/cuda (package internal/cudadrv).
//
// Only programs that import it link it (purego makes a Linux binary
// dynamically linked):
//
//	import _ "github.com/laya-metal/laya/backend/cuda"
//
// laya-bench imports it; the laya command has it when built with
// -tags cuda.
//
// # How a request runs
//
// Weights are copied into device memory once, at Upload (as float32, plus
// a 16-bit copy in the reduced precisions). A stream records operations
// without running them; Read runs what was recorded as one segment. The
// segment's shape (its operations, their shapes and parameters, the
// addresses of what it reads from outside itself) picks an entry: the
// activation memory, pinned host staging for its inputs (token ids, row
// positions, FromHost data) and outputs, and, from the second time the
// same shape comes by, a CUDA graph captured from it. A request is then
// one host-to-device copy, one graph launch, one device-to-host copy of
// the tensor read together with up to fifteen small tensors the segment
// wrote, the latest first (so that the act probabilities read after the
// logits need no second trip),
// and one synchronisation, all on the request's own thread (the context
// made current there; a wait past a few milliseconds goes to a waiter
// thread). The encoder tells the stream where its layers end
// (backend.Submitter): there the stream starts the first layer, and later
// the next four, as segments of their own without waiting for them, so that
// the GPU runs them while the host records the rest (Options.SubmitOps;
// Options.SubmitSplits starts more, each four times the one before);
// a request of one short question otherwise waited for the whole
// forward's recording, about a tenth of its time on an H200, before the
// GPU began. The later segments read and write the earlier one's residual
// stream by address and remake the scratch tensors the model discarded;
// the one Read waits for all of them. A packed batch's shape is its token count and
// number of rows, not its rows' lengths (the attention kernels launch a
// grid bounded by those two and skip the empty tiles), and the stream asks
// for 16-token buckets (backend.TokenBucket): the model fills a batch up
// to a multiple of 16 tokens with a row of its own, so that the requests
// of a bucket replay one graph rather than each token count capturing its
// own. Once a shape has been seen nothing is allocated on the device for
// it while it stays cached: Options.MaxGraphs bounds the entries (one to
// three a request shape), and the
// least recently returned idle ones are freed first; when the GPU refuses
// an allocation, idle entries are freed in that order until it fits
// (Stats.Evicted), so that cached shapes never fail a request that fits
// without them (none is freed for one that would not fit even so). The Go
// side still allocates part of its recording (about two hundred small
// objects for a ModernBERT-large forward, the operations' closures and
// tensors; the operations themselves are taken from slabs the stream
// before left).
//
// Recording lets the backend fold what the model's code spells as separate
// operations: a residual Add into the GEMM before it (cuBLAS's beta = 1,
// on Discard) or, where the GEMM cannot take it (FP16X2), into the
// LayerNorm after it; RoPE into the attention that reads q and k next (the
// tiled kernels rotate them as they load them); and, in the 16-bit
// precisions, the rounding of a GEMM's input into the kernel that produced
// it (LayerNorm, attention, GeGLU), which stores only that 16-bit copy when
// the model discards the output after the GEMMs and nothing else read it.
// In FP16 a GEMM whose output only a GeGLU, or only a tensor-core
// attention, reads before the model discards it writes that output as fp16
// (its float32 sum rounded once; those kernels' fp16 outputs, and the
// attention's operands, are rounded again): half the bytes written and
// read. An output over fp16's range becomes infinite there, as any FP16
// activation copy does; refinement reruns such rows (non-finite outputs
// count as near-ties), and a row whose outputs stay non-finite runs in
// FP32 (see Precisions).
// Per-row metadata (positions, attention tiles) is staged once per request,
// whatever the number of layers.
//
// A Linear on 16 rows or fewer (the heads' marker and CLS rows) runs as one
// kernel of the backend's own instead of cuBLAS: the product of the float32
// input with the weight as the precision keeps it (float32, or its fp16 or
// bf16 copy), accumulated in float32, with the bias, the activation and a
// folded residual Add, where the GEMM path takes three or four launches.
// Its input is not rounded to 16 bits, so in the reduced precisions these
// Linears are a little more exact than the GEMMs.
//
// # Precisions
//
//   - FP32: float32 everywhere, TF32 off (cuBLAS pedantic math). It holds
//     the cpu backend's parity gates against upstream (logits within 1e-4,
//     act probabilities within 1e-5).
//   - FP16X2 (the registered backend's default): fp16 weights, each GEMM
//     activation operand split into two fp16 terms, both multiplied by one
//     strided-batched tensor-core GEMM with float32 accumulation (the
//     weight is read from memory once), whose two products the operation
//     reading them adds; everything else float32. With Options.KCatRows
//     (kcat=N, off by default) the GEMMs of N rows or more take the two
//     terms side by side in each row instead, by the weight twice over,
//     one GEMM over twice the k into one float32 product: the same
//     multiply-adds, half the bytes for the kernels that read it.
//   - FP16 and BF16: one 16-bit term per operand, float32 accumulation.
//
// An activation past fp16's 65504 becomes infinite in an FP16 GEMM or
// attention operand, and in FP16X2's first term, and the row's outputs
// NaN. The weights' float32 copies stay resident next to their 16-bit ones
// (the 16-bit copies are made from them), so in every 16-bit precision the
// backend is a backend.Widener: the model runs the rows whose outputs are
// not finite, after any refinement, again on an FP32 stream (WideStream),
// whose outputs are the FP32 backend's. A checkpoint whose activations
// reach that far so answers as upstream does, more slowly, instead of
// failing with laya.ErrNonFinite; finite rows never run twice for it. A
// row still not finite in FP32 is reported as before. Its segments capture
// graphs of their own, counted against maxgraphs, and Stats.WideStreams
// counts its streams; where most rows need it, precision=fp32 costs less.
//
// The 16-bit GEMMs run on cuBLASLt, a Linear's bias and ReLU in the GEMM's
// epilogue (GELU, the exact erf form, stays a kernel of its own: cuBLASLt's
// is the tanh approximation). The first time a GEMM shape runs, kernel by
// kernel, the heuristic's candidate algorithms are timed on it (into a
// scratch output) and the fastest is kept for the backend's life; the
// captured graph replays it. FP32 stays on cublasSgemm. Without
// libcublasLt, or with gemm=blas, the 16-bit GEMMs run on cublasGemmEx.
// A GEMM of one question (Options.KBatchRows) covers the GPU with about a
// hundred blocks that each walk all of k: one of one fp16 term without
// bias or activation runs as one strided batch of two GEMMs over k's
// halves instead, twice the blocks, and its two float32 products stay
// apart, as FP16X2's two terms' do, for the kernel reading them to add
// (a residual Add of them folds into the LayerNorm after it).
//
// # GEMMs of few rows
//
// At a question or two (about a hundred rows) a forward is a chain of a
// few hundred kernels each shorter than a launch's latency: the GEMMs read
// their weights once, and cuBLAS's kernels start late and cover the GPU
// with few blocks. With Options.MMARows such a GEMM runs on linear_mma
// instead: the weight split over blocks by 64 output columns (mmacols) and by k
// (planLinearMMA: chunks of 256, 128 or 64 as the grid then gives each
// multiprocessor two blocks), each block copying its slice of the weight
// into shared memory first, then x (FP16X2's two terms, multiplied and
// summed in the kernel: no stacked products for the reader to add), fp16
// tensor-core products with float32 accumulation, and the splits added in
// their order by the last block of a tile to finish (so that the result
// does not depend on which block that is), which applies the bias,
// activation, folded residual and fp16 output, or, where the GEMM's output
// only a GeGLU reads before the model discards it, the GeGLU itself (its
// float32 output and 16-bit copy; the GeGLU then launches nothing and the
// product is never written: a block's columns are matching halves of the
// gate and value rows, in FP16 and FP16X2). A LayerNorm of the residual
// stream between two such GEMMs (the one adding into it, the one alone
// reading its output: in ModernBERT every LayerNorm of the encoder but the
// embeddings' and the final one) runs in them unless mmaln=off: the first
// also writes each row's mean and sum of squared deviations over each of
// its column tiles, the second combines them in tile order (Chan's pairwise
// update) and normalises its slices of the rows as it reads them, and the
// LayerNorm launches nothing. On an H200 and an H100 it runs clean under
// compute-sanitizer's memcheck and is slower: one question took 2.9 times
// the default path's GPU time on an H100 (4.0 with the LayerNorm in it;
// docs/cuda-perf-log.md: each block reads x whole for its slice of k, and
// the last block of a column tile adds the splits alone), so it stays off
// by default. The kernels' arithmetic and bookkeeping are also checked
// without a GPU by running them on the CPU (emu_internal_test.go), and so
// is the whole backend, on a fake driver, NVRTC, cuBLAS and cuBLASLt over
// that emulator (emu_backend_internal_test.go: goldens in every precision,
// these paths included, the 16-bit GEMMs on the default path, cuBLASLt
// with its tuning, epilogues and split K, and on cuBLAS).
//
// # Programmatic dependent launch
//
// On compute capability 9.0 and newer every kernel of the backend's own is
// launched with programmatic dependent launch (cuLaunchKernelEx; pdl=off,
// Options.NoPDL, launches them the plain way): it may start while the
// kernel before it finishes and waits for it in the kernel
// (griddepcontrol.wait) before it reads or writes anything another kernel
// touches; linear_mma copies its weight slice before it waits. A capture
// the driver refuses so is taken again without (Stats.PDLRefused). On an
// H200 it takes 4–7 % off a request's GPU time at one and ten questions.
//
// Attention in FP16 and FP16X2 runs on tensor cores (mma.sync, fp16
// operands, float32 accumulation) where its grid fills the GPU (ten
// questions and more): FP16 rounds q, k, v and the probabilities to fp16
// once, FP16X2 splits each into two fp16 terms and keeps about float32's
// accuracy. Below that (one question), and in FP32 and BF16, it runs on
// float32 kernels, whose blocks start computing sooner. Where those make
// few tiles (one question: a tile of 16 queries a block) the block's
// sixteen warps share its queries (attn_reg): each thread keeps a few
// queries' products with a few keys, or a few queries' outputs over a few
// dimensions, in registers, so that a key or value read from shared memory
// serves several queries, where the tiled kernels give each warp a query
// that reads every key and value of the chunk itself.
//
// The reduced precisions are gated on every bundled golden: the same
// answer as upstream for every question and calibrated probabilities
// within 0.005. FP16X2 and FP16 are measured per checkpoint in
// BENCHMARKS.md; FP16 misses the gate on near-ties of one checkpoint, BF16
// on all three.
//
// # Refinement
//
// FP16X2's second term doubles the GEMMs' tensor-core work, which costs
// little at one question (the GEMMs wait on the weights, and the second
// product finds them in L2) and up to half the request's GPU time at fifty.
// So with Options.Refine (the registered backend's default: refine=0.1),
// a batch of at least Options.RefineTokens tokens (default 64: one short
// question) runs in FP16 first (backend.Refiner: the same fp16 weights,
// one term), and only the rows whose two largest option logits lie closer
// than the margin run again in FP16X2, whose outputs replace theirs. On
// every bundled golden FP16 moved the gap between two logits of a row by
// at most 0.036 from upstream's (TestForwardGoldens reports it per
// checkpoint), so a row's argmax (a choice, a tournament group's winner)
// kept from FP16 is the one FP16X2 gives, as far as the goldens' error
// bound goes (a model's refined rows also show how far FP16 moved their
// gaps, and a move over half the margin grows the model's margin to twice
// it: backend.RefineGate); on the goldens 3–8 % of the rows are refined. The
// probabilities, scores and noul values of rows not refined are FP16's
// (within 0.005 of upstream's), and which batches run reduced depends on
// their size and on recent near-ties, so they may differ from call to call
// by FP16's error. Where near-ties are common (a checkpoint of random
// weights, whose options score alike) the second pass costs more than the
// first saves: the model then runs batches in FP16X2 directly, whose own
// near-ties tell it when to go back (backend.RefineGate, one per loaded
// model; batches of one to three questions, which save less, go plain from
// a lower share of near-ties), except batches large enough that, by the
// times the model measured of its own runs, FP16 first and the near-ties
// again still cost clearly less (fifty such multilingual questions on an
// H100: 0.88 of FP16X2's GPU time). A question refined alone runs twice, its
// request taking about 1.9 times as long as in FP16X2 directly: the
// median request gains, a near-tie's pays. A long state's windows, which compete with each other, run in
// FP16X2 only. Reduced and FP16X2
// segments capture graphs of their own, both counted against maxgraphs;
// attnterms, when set, applies to both. refine=off runs every batch in
// FP16X2; Stats counts the streams of each kind.
//
// # Options
//
// The environment variable LAYA_CUDA sets the registered backend's options,
// comma-separated (ParseOptions): precision=fp32|fp16|bf16|fp16x2
// (default fp16x2 with refine=0.1 and kbatch=128),
// device=N, graphs=off, maxgraphs=N (segments cached), submit=N|off
// (segments started while the host records the rest: above), splits=N
// (how many start early, each four times the operations of the one
// before; default 2), bucket=N
// (tokens; 1 turns the buckets off), and, for measurements, attn=mma|simt (simt keeps FP16 and
// FP16X2 attention on the float32 kernels), mmawarps=1|2|4|8 (warps a block
// of the tensor-core kernels, used whatever the grid's size),
// attnsplit=off|on (on: the tensor-core kernels whose four warps share a
// tile of 16 queries and split its keys, whatever the grid's size; more
// warps loading a tile's keys where a question makes few tiles; on an H200
// within the spread at one question, 4–5 % slower at ten),
// attnrows=4|6|8|off (batches whose rows are all at most 128 tokens on
// attn_rows, a block of that many warps a batch row and head, the row
// loaded once; off by default: on an H100 at ten and fifty questions six
// warps level with the default, four and eight up to 6 % slower but for
// eight at ten multilingual questions, 4–6 % faster), attnterms=1|2
// (their fp16 terms; default the precision's, and two for FP16X2's
// reduced FP16 pass), attnqpw=1|2|4
// (queries a warp of the float32 kernels; by default chosen by the grid's
// size), attnwarps=8|16 (their warps a block at one query a warp; default
// 16), attnreg=on|off (off: the tiled kernel's warp a query where attn_reg
// would run; on an H100 8 % more GPU time at one question), small=on|off (off runs the Linears on few rows on cuBLAS too),
// gatherfold=on|off (off: the Gathers before the token embeddings' norm and
// the decision head's first stay kernels of their own, for comparison),
// gemm=lt|blas (cuBLASLt, the default, or cuBLAS for the 16-bit GEMMs)
// and tune=on|off (off: cuBLASLt's first heuristic choice, untimed),
// tunecands=N (how many of the heuristic's algorithms are timed; 16),
// splitk=off|on (on: also time them with k split in 2, 4 or 8 parts),
// mmarows=N (the FP16 and FP16X2 GEMMs of at most N rows on linear_mma,
// the backend's own tensor-core kernel: see GEMMs of few rows; 0, the
// default, keeps them on cuBLAS), mmacols=64|128 (its output columns a
// block), mmaln=on|off (off keeps the LayerNorms between linear_mma GEMMs
// kernels of their own), clrows=N (the GEMMs of one fp16 term of at most N
// rows on linear_cl, one wave of clusters whose blocks copy their weight
// before the kernel before them ends and add their slices of k in shared
// memory; needs compute capability 9.0; 0, the default, keeps them on
// cuBLAS; on an H100 one English question took 1.48 times the default's
// GPU time with it), clcols=32|64|128 (its tiles' output columns; 0, the default,
// lets its plan choose for each GEMM), wgrows=N (those GEMMs of at most N
// rows on linear_wg instead, linear_cl's plan on warpgroup products: tiles
// of 64 output columns a warpgroup, each block's weight slice copied before
// the kernel before it ends, x through a ring of chunks; needs an sm_90 GPU,
// whose architecture-specific target the kernels are then compiled for; no
// GELU in its epilogue; 0, the default, keeps them on cuBLAS; on an H100
// one English question took 1.59 times the default's GPU time with it),
// wgsplits=N (its slices of k a cluster, 1 to 8; 0 lets its plan choose),
// wgring=N (its most chunks of x in flight, 3 to 8; 0 is 8), wgtma=off|on (on: its
// copies of the weight and of x made by the tensor memory accelerator, a
// box of 64 of k a chunk issued by one thread through tensor maps, counted
// in by mbarriers; on an H200 faster than the threads' copies, still slower
// than cuBLASLt), kbatch=N (each plain GEMM
// of one fp16 term and at most N rows on cuBLAS as one batch of two GEMMs
// over k's halves, their products stacked for the reader to add, as
// FP16X2's terms are: twice the blocks, each half as long; the registered
// backend's default is 128, one question, 1–3 % less GPU time for one
// English question on an H100; 0 keeps them whole), kbatchk=N (the least
// k such a GEMM splits at; 0, the default, any), kcat=N (FP16X2's GEMMs
// of at least N rows over the two terms side by side, one GEMM over twice
// the k into one float32 product; 0, the default, keeps the stacked
// batch), pdl=on|off (off: the backend's own kernels
// without programmatic dependent launch), geglu=vec|scalar (vec, the default: GeGLU a float4 a thread where the
// widths allow, bit for bit scalar's, 7 % less GPU time at ten and fifty
// English questions on an H200);
// cache=DIR|off keeps the compiled kernels in DIR instead of
// os.UserCacheDir()/laya-metal/cuda, or compiles them at every Open;
// tunecache=DIR|off keeps the GEMMs' timed algorithms in DIR instead of
// the kernels' directory (a file a cuBLASLt library, GPU and tuning
// setting; a shape takes its kept algorithm where the heuristic offers it
// again, and times nothing), or times every shape in each process;
// refine=MARGIN|off and refinetokens=N set the refinement (above);
// batchrows=N and batchtokens=N the forward batch of a caller that leaves
// it to the backend (backend.BatchSizer: up to 64 rows, fewer where they
// would pass 8,192 tokens; a GPU with little memory takes fewer tokens);
// define=NAME=VALUE (repeatable) sets one of kernels.cu's compile-time
// tunables (KernelTunables: the blocks a multiprocessor of the attention
// kernels and linear_mma, a cap on their registers; the unroll of the
// tensor-core attention's loads, its chunk of keys, its lean form and
// whether its scale is applied inside the exponent (ATTN_EX2, the
// default); GeGLU's GELU as one exp2 of a polynomial (GEGLU_EXP, the
// default) or libdevice's erf or erfc form), for comparing variants of a
// kernel on a GPU;
// KernelResources reports each kernel's registers and spills as the GPU's
// compiler built it.
//
// The first Open on a machine, and the first after an upgrade or with
// other tunables, compiles kernels.cu (the whole file took about a minute
// on an H200 host); Options.Log hears of it, and the registered backend
// writes that to standard error. Later Opens load the kept cubins in well
// under a second. kernels.cu compiles in two parts: the core, which every
// Open loads, and the extras (linear_mma, the tensor-core attention at 1,
// 2 and 8 warps and its key-split kernels, about two thirds of the PTX),
// which only an Open whose options use them compiles and loads, or one on
// a GPU without the shared memory of the four-warp attention.
//
// SelfTest opens a backend and checks a small GEMM and attention against a
// float64 reference; a caller choosing a backend automatically runs it
// first, and it says why the cuda backend should not be picked (no driver,
// NVRTC or cuBLAS, too old a GPU, too little memory, a wrong answer).
package cuda
