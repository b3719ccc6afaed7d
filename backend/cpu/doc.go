// Package cpu is the float32 reference implementation of backend.Backend.
// Every GPU kernel is held to its answers, so exactness comes first:
// exact-erf GELU (correctly rounded in float32 on all tested values), RoPE
// angles rounded to float32 exactly where PyTorch rounds them,
// max-subtracted softmax, float64 statistics in LayerNorm.
//
// Speed comes second, built like a BLAS for Laya's shapes (M ≈ 100 rows):
//   - GEMM (gemm.go): W in PyTorch's [N, K] layout used as stored — float32
//     rows in place, F16/BF16 widened one panel at a time while packing
//     (weight.go); micro-kernels chosen at run time: AVX-512 6×4 (K cut in
//     blocks of 1536), AVX2+FMA 3×4, NEON 3×4 on arm64, pure Go under the
//     purego tag; each with a documented summation order pinned by a test.
//     Where the CPU has AVX-512F, every Linear and GeGLU runs the
//     outer-product kernel (gemm_outer.go: 8×48, one FMA per k in k
//     order, Xᵀ packed lazily in 48-token tiles by in-register
//     transposes, the next W block prefetched by the kernel where the
//     weights come from DRAM); LAYA_CPU_GEMM=dot selects the dot kernels
//     instead.
//   - Work spread over a persistent worker pool (pool.go): each worker
//     polls a task slot of its own for 1 ms before blocking (poolSpin;
//     LAYA_CPU_SPIN=0 turns polling off, or sets another duration); no
//     goroutine per call. GEMM units of one W panel × a block of rows,
//     taken from an atomic counter, split until each worker has several
//     (gemmUnitPlan), the last ones in column halves (unitPlan).
//     Backend.SetProfile and Joins measure the workers' idle time per
//     call site, and how much of it came before the chunks started
//     (laya-bench --joins); the Backend is a backend.Profiler.
//   - Attention (attn_amd64.go) with AVX-512 outer-product tiles of 6
//     queries × 64 keys (QKᵀ, Kᵀ packed once per head by transposes) and 6
//     queries × 64 of the head dim (PV, V rows in place), a vectorised
//     softmax whose float64-lane exp rounds to math.Exp's float32; jobs of
//     (row, head, block of 12–48 queries), claimed one at a time, so one
//     question fills 16 workers;
//     sliding windows skip the keys no query of the block sees. Elsewhere
//     (attention.go) through the GEMM tile kernel and a scalar softmax.
//   - LayerNorm, residual Add and RoPE in AVX-512 (ops_amd64.go), the Go
//     loops' arithmetic.
//   - Epilogues: bias and activation while the unit (on the outer-product
//     kernel: each group of its tiles) is in cache; a Linear's GeGLU,
//     residual Add or RoPE (rope.go: units of whole heads) runs fused into
//     it (bit for bit the unfused answers).
//   - Prologue: a LayerNorm whose output the next Linear reads runs inside
//     that GEMM's packing, eight rows at a time as tiles are needed
//     (norm.go), its output still written whole.
//   - Packed batches (packed.go, backend.RowPacker): a batch's rows back to
//     back without padding, so uneven questions cost their real tokens.
//   - GELU/GeGLU in AVX-512 (gelu_amd64.go); a fast exp for the softmax.
//   - Loading: UploadMapped keeps views of the checkpoint's mapping, so a
//     load is the mmap plus validation, and activation buffers are reused
//     across requests (arena.go; a large reused one is zeroed by the
//     workers).
//
// Operations run when they are recorded, but for a LayerNorm and a Linear:
// they run with the next operation, a LayerNorm inside a Linear of its
// output, a Linear fused with what comes next where that is its GeGLU,
// residual Add or RoPE, so that a Discard in between can spare storing its
// output.
// Stream.Read only copies. Importing the package registers the backend as
// "cpu".
package cpu
