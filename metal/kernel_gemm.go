package metal

import (
	"fmt"
	"math"
)

// GemmInput is the element type of a GEMM's X and W.
type GemmInput int

const (
	GemmF32 GemmInput = iota // float32 X and W: gemm_f32
	GemmF16                  // IEEE half X and W: gemm_f16
	// GemmF32F16W is float32 X against IEEE half W (fp16 weights as
	// stored): gemm_f32_f16w.
	GemmF32F16W
)

// GemmOp is one GEMM with its fused prologue and epilogue
// (kernels/gemm.metal):
//
//	X'    = LayerNorm(X; LNWeight, LNBias, Eps)       only when LNWeight is set
//	Y     = act(X'·Wᵀ + bias)                         X [M, K], W [N, K], Y [M, N]
//	Gated = GELU(Y[:, :N/2]) · Y[:, N/2:]             only when Gated is set
//	Res  += Y                                         only when Residual is set
//
// W is a linear layer's weight as stored (the PyTorch layout); bias,
// LNWeight and LNBias are float32 or nil; Y, Gated and Residual are
// float32. Any sizes: edges are handled in the kernel.
type GemmOp struct {
	Input GemmInput
	X, W  Buffer
	Bias  Buffer // nil: no bias
	// Y receives the projection; it may be nil when Gated or Residual is
	// set and nobody reads Y (the fused GeGLU and residual then write only
	// what is read).
	Y Buffer
	// WOffset and BiasOffset are byte offsets of W and bias in their
	// buffers, for weights bound inside a wrapped file mapping. Each must be
	// a multiple of its element size: Metal requires a device pointer's
	// offset to be aligned to the type the kernel reads.
	WOffset, BiasOffset int
	M, N, K             int
	// Act is applied after the bias, in the GEMM's store.
	Act Activation
	// Gated, when not nil, also receives ModernBERT's GeGLU of Y [M, N/2]
	// (N even, Act ActIdentity). It is geglu_f32 on Y fused into the same
	// store, bit for bit.
	Gated Buffer
	// Residual, when not nil, is an [M, N] float32 buffer updated in place:
	// Residual += Y (the transformer's x = x + proj). It must not be X, W,
	// the bias or the LayerNorm operands: other threadgroups still read
	// those while this one writes.
	Residual Buffer
	// LNWeight, when not nil, makes the GEMM LayerNorm each row of X first
	// (biased variance, Eps), with K float32 weights and optional K biases.
	LNWeight, LNBias             Buffer
	LNWeightOffset, LNBiasOffset int
	Eps                          float32
	// Slices, when 2 or more, splits K (deterministic split-K, see
	// GemmSplitSlices): EncodeGemm then only writes each slice's raw
	// products to Partial, Slices × [M, N] float32, and EncodeGemmReduce,
	// after a barrier, sums them in slice order and applies the epilogue
	// (bias, activation, Y, GeGLU, residual). Slices must be what
	// GemmSplitSlices or GemmKSlice gives for K: every slice non-empty.
	Slices  int
	Partial Buffer
}

// Gemm tiling (kernels/gemm.metal): a threadgroup of 128 threads owns
// GemmTileM rows × GemmTileN columns of Y and steps K by GemmTileK.
const (
	GemmTileM   = 32
	GemmTileN   = 64
	GemmTileK   = 32
	gemmThreads = 128
	// GemmThreads is the tile kernels' threadgroup size.
	GemmThreads = gemmThreads
)

// GemvMaxRows is the most rows the GEMV kernels take (gemv_*: M ≤ 8, no
// LayerNorm prologue, no GeGLU); EncodeGemm picks them by itself.
const (
	GemvMaxRows = 8
	gemvCols    = 8
)

// gemvNames are the GEMV kernels by input kind (constants: no string is
// built per dispatch).
var gemvNames = [...]string{GemmF32: "gemv_f32", GemmF16: "gemv_f16", GemmF32F16W: "gemv_f32_f16w"}

// Split-K. A GEMM whose grid of output tiles is smaller than the GPU can
// hold at once leaves cores idle however fast each tile is (at M = 93
// tokens, a 1024-column projection is 16 × 3 = 48 threadgroups, on GPUs of
// up to 40 cores that each hold several). Splitting K into S slices gives
// S times the threadgroups, each doing 1/S of the K loop; a second
// dispatch adds the S partial tiles in a fixed order (slice 0 + slice 1 +
// …), so the result is the same on every run, and applies the epilogue.
// The price is the partial matrices' traffic (S·M·N floats written and
// read) and one more dependent dispatch. (MLX splits K the same way, a
// partial dispatch over a [P, M, N] float intermediate and then an
// accumulation dispatch: steel_matmul_splitk_axpby in ml-explore/mlx
// mlx/backend/metal/matmul.cpp.)
const (
	// GemmMinSliceK is the least K a slice multiplies: 8 K steps, so the
	// staging prologue and the partial store stay small beside the work.
	GemmMinSliceK = 8 * GemmTileK
	// maxSlices bounds S, and with it the partial matrices.
	maxSlices = 8
)

// GemmSplitSlices chooses the slices S of a split-K GEMM from its shape
// and the threadgroups the GPU runs at once (targetGroups: cores ×
// threadgroups each core holds): 1 (no split) when the tiles already fill
// the GPU, M is GEMV-sized, or K is too short for two slices of
// GemmMinSliceK; otherwise the most slices that keep the grid within one
// wave of targetGroups, rounded so that each slice is whole K tiles.
func GemmSplitSlices(m, n, k int, geglu bool, targetGroups int) int {
	return GemmSplitSlicesMinK(m, n, k, geglu, targetGroups, GemmMinSliceK)
}

// GemmSplitSlicesMinK is GemmSplitSlices with slices of at least minK
// (tests split small models with it).
func GemmSplitSlicesMinK(m, n, k int, geglu bool, targetGroups, minK int) int {
	g := GemmGrid(m, n, geglu)
	tiles := g.X * g.Y
	minK = max(minK, GemmTileK)
	if targetGroups <= 0 || m <= GemvMaxRows || tiles*2 > targetGroups || k < 2*minK {
		return 1
	}
	s := min(targetGroups/tiles, k/minK, maxSlices)
	if s < 2 {
		return 1
	}
	_, slices := GemmKSlice(k, s)
	return slices
}

// GemmKSlice is the K values per slice (a multiple of GemmTileK) when K is
// split about s ways, and the slices that makes (each non-empty).
func GemmKSlice(k, s int) (kSlice, slices int) {
	kSlice = ceilDiv(ceilDiv(k, max(s, 1)), GemmTileK) * GemmTileK
	return kSlice, ceilDiv(k, kSlice)
}

// GemmGrid is the threadgroup grid of the tile kernels (for plans and tests).
func GemmGrid(m, n int, geglu bool) Size3 {
	if geglu {
		return Size3{ceilDiv(n/2, GemmTileN/2), ceilDiv(m, GemmTileM), 1}
	}
	return Size3{ceilDiv(n, GemmTileN), ceilDiv(m, GemmTileM), 1}
}

// EncodeGemm encodes op as one dispatch.
func EncodeGemm(cb CommandBuffer, k *Kernels, op GemmOp) error {
	name, xElem, wElem := "gemm_f32", 4, 4
	switch op.Input {
	case GemmF32:
	case GemmF16:
		name, xElem, wElem = "gemm_f16", 2, 2
	case GemmF32F16W:
		name, wElem = "gemm_f32_f16w", 2
	default:
		return fmt.Errorf("%w: gemm: unknown input kind %d", ErrInvalidDispatch, op.Input)
	}
	m, n, kd := op.M, op.N, op.K
	if m <= 0 || n <= 0 || kd <= 0 || m*kd > 1<<31 || n*kd > 1<<31 || m*n > 1<<31 {
		return fmt.Errorf("%w: %s: %d×%d×%d", ErrInvalidDispatch, name, m, n, kd)
	}
	if op.Act > ActReLU {
		return fmt.Errorf("%w: %s: activation %d", ErrInvalidDispatch, name, op.Act)
	}
	geglu := op.Gated != nil
	if geglu && (n%2 != 0 || op.Act != ActIdentity || op.Residual != nil) {
		return fmt.Errorf("%w: %s: GeGLU needs an even N (got %d), no other activation (got %d) and no residual", ErrInvalidDispatch, name, n, op.Act)
	}
	if op.Y == nil && !geglu && op.Residual == nil {
		return fmt.Errorf("%w: %s: no output (Y, Gated and Residual are nil)", ErrInvalidDispatch, name)
	}
	if op.WOffset < 0 || op.WOffset%wElem != 0 || op.BiasOffset < 0 || op.BiasOffset%4 != 0 ||
		op.LNWeightOffset < 0 || op.LNWeightOffset%4 != 0 || op.LNBiasOffset < 0 || op.LNBiasOffset%4 != 0 {
		return fmt.Errorf("%w: %s: a W, bias or LayerNorm offset is negative or not a multiple of its element size", ErrInvalidDispatch, name)
	}
	ln := op.LNWeight != nil
	if ln && (!(op.Eps >= 0) || math.IsInf(float64(op.Eps), 0)) {
		return fmt.Errorf("%w: %s: LayerNorm eps %v", ErrInvalidDispatch, name, op.Eps)
	}
	if op.LNBias != nil && !ln {
		return fmt.Errorf("%w: %s: a LayerNorm bias without its weight", ErrInvalidDispatch, name)
	}
	if op.Residual != nil {
		for _, b := range []Buffer{op.X, op.W, op.Bias, op.LNWeight, op.LNBias, op.Gated} {
			if b == op.Residual {
				return fmt.Errorf("%w: %s: the residual is also an operand the GEMM reads", ErrInvalidDispatch, name)
			}
		}
	}
	split := op.Slices > 1
	kSlice := 0
	if split {
		var slices int
		kSlice, slices = GemmKSlice(kd, op.Slices)
		if slices != op.Slices {
			return fmt.Errorf("%w: %s: %d K slices of %d×%d×%d (K splits into %d slices of %d)",
				ErrInvalidDispatch, name, op.Slices, m, n, kd, slices, kSlice)
		}
		if err := checkLen(name, "partial", op.Partial, 4*op.Slices*m*n); err != nil {
			return err
		}
	}
	if err := checkLen(name, "X", op.X, xElem*m*kd); err != nil {
		return err
	}
	if err := checkLen(name, "W", op.W, op.WOffset+wElem*n*kd); err != nil {
		return err
	}
	for _, o := range []struct {
		what      string
		index     int
		buf       Buffer
		off, need int
	}{
		{"Y", 2, op.Y, 0, 4 * m * n},
		{"bias", 3, op.Bias, op.BiasOffset, 4 * n},
		{"gated", 5, op.Gated, 0, 4 * m * (n / 2)},
		{"residual", 6, op.Residual, 0, 4 * m * n},
		{"LayerNorm weight", 7, op.LNWeight, op.LNWeightOffset, 4 * kd},
		{"LayerNorm bias", 8, op.LNBias, op.LNBiasOffset, 4 * kd},
	} {
		if o.buf == nil {
			continue
		}
		if err := checkLen(name, o.what, o.buf, o.off+o.need); err != nil {
			return err
		}
	}
	// Whole 4-element chunks of every row are aligned vectors.
	vec := kd%4 == 0 && op.WOffset%(4*wElem) == 0
	grid := GemmGrid(m, n, geglu)
	if split {
		return encodeGemmSplit(cb, k, op, name, grid, kSlice, vec)
	}
	if m <= GemvMaxRows && !geglu && !ln {
		name = gemvNames[op.Input]
		grid = Size3{ceilDiv(n, gemvCols), 1, 1}
	}
	// Function constants 0..9 (see the kernel); every one is set, as Metal
	// wants a value for each constant a function uses.
	p, err := k.pipeline(name,
		Constant{Index: 0, Value: op.Bias != nil},
		Constant{Index: 1, Value: uint32(op.Act)},
		Constant{Index: 2, Value: geglu},
		Constant{Index: 4, Value: ln},
		Constant{Index: 5, Value: op.LNBias != nil},
		Constant{Index: 6, Value: op.Residual != nil},
		Constant{Index: 7, Value: op.Y != nil},
		Constant{Index: 8, Value: vec},
		Constant{Index: 9, Value: false})
	if err != nil {
		return err
	}
	e := newEncoding()
	e.read(0, op.X, 0)
	e.read(1, op.W, op.WOffset)
	e.write(2, op.Y, 0)
	e.read(3, op.Bias, op.BiasOffset)
	params(e, 4, GemmParams{M: uint32(m), N: uint32(n), K: uint32(kd), Eps: op.Eps})
	e.write(5, op.Gated, 0)
	e.readWrite(6, op.Residual, 0)
	e.read(7, op.LNWeight, op.LNWeightOffset)
	e.read(8, op.LNBias, op.LNBiasOffset)
	return e.dispatch(cb, p, grid, Size3{gemmThreads, 1, 1})
}

// encodeGemmSplit encodes the slices of a split-K GEMM (gemm_split): the
// prologue runs, the epilogue does not; each slice stores its raw tile.
func encodeGemmSplit(cb CommandBuffer, k *Kernels, op GemmOp, name string, grid Size3, kSlice int, vec bool) error {
	grid.Z = op.Slices
	// The tile kernel's constants as EncodeGemm sets them, the epilogue's
	// off: geglu stays on (it arranges the W rows of each tile).
	p, err := k.pipeline(name,
		Constant{Index: 0, Value: false},
		Constant{Index: 1, Value: uint32(ActIdentity)},
		Constant{Index: 2, Value: op.Gated != nil},
		Constant{Index: 4, Value: op.LNWeight != nil},
		Constant{Index: 5, Value: op.LNBias != nil},
		Constant{Index: 6, Value: false},
		Constant{Index: 7, Value: false},
		Constant{Index: 8, Value: vec},
		Constant{Index: 9, Value: true})
	if err != nil {
		return err
	}
	e := newEncoding()
	e.read(0, op.X, 0)
	e.read(1, op.W, op.WOffset)
	params(e, 4, GemmParams{M: uint32(op.M), N: uint32(op.N), K: uint32(op.K), Eps: op.Eps, KSlice: uint32(kSlice)})
	e.read(7, op.LNWeight, op.LNWeightOffset)
	e.read(8, op.LNBias, op.LNBiasOffset)
	e.write(9, op.Partial, 0)
	return e.dispatch(cb, p, grid, Size3{gemmThreads, 1, 1})
}

// gemmReduceThreads is gemm_reduce_f32's threadgroup size.
const gemmReduceThreads = 256

// EncodeGemmReduce encodes the second half of a split-K GEMM (op.Slices ≥
// 2, after EncodeGemm of the same op and a barrier): gemm_reduce_f32 sums
// op.Partial's slices in order and applies op's epilogue. op is checked
// as EncodeGemm checks it.
func EncodeGemmReduce(cb CommandBuffer, k *Kernels, op GemmOp) error {
	const name = "gemm_reduce_f32"
	m, n := op.M, op.N
	if op.Slices < 2 || m <= 0 || n <= 0 || m*n > 1<<31 || op.Slices > 1<<31/(m*n) {
		return fmt.Errorf("%w: %s: %d slices of %d×%d", ErrInvalidDispatch, name, op.Slices, m, n)
	}
	geglu := op.Gated != nil
	if geglu && (n%2 != 0 || op.Act != ActIdentity || op.Residual != nil) || op.Act > ActReLU {
		return fmt.Errorf("%w: %s: GeGLU needs an even N (got %d), no other activation (got %d) and no residual", ErrInvalidDispatch, name, n, op.Act)
	}
	if op.Y == nil && !geglu && op.Residual == nil {
		return fmt.Errorf("%w: %s: no output (Y, Gated and Residual are nil)", ErrInvalidDispatch, name)
	}
	if op.BiasOffset < 0 || op.BiasOffset%4 != 0 {
		return fmt.Errorf("%w: %s: bias offset %d", ErrInvalidDispatch, name, op.BiasOffset)
	}
	if op.Residual != nil && op.Residual == op.Partial {
		return fmt.Errorf("%w: %s: the residual is the partial buffer", ErrInvalidDispatch, name)
	}
	for _, o := range []struct {
		what      string
		buf       Buffer
		off, need int
	}{
		{"partial", op.Partial, 0, 4 * op.Slices * m * n},
		{"Y", op.Y, 0, 4 * m * n},
		{"bias", op.Bias, op.BiasOffset, 4 * n},
		{"gated", op.Gated, 0, 4 * m * (n / 2)},
		{"residual", op.Residual, 0, 4 * m * n},
	} {
		if o.buf == nil && o.what != "partial" {
			continue
		}
		if err := checkLen(name, o.what, o.buf, o.off+o.need); err != nil {
			return err
		}
	}
	p, err := k.pipeline(name,
		Constant{Index: 0, Value: op.Bias != nil},
		Constant{Index: 1, Value: uint32(op.Act)},
		Constant{Index: 2, Value: geglu},
		Constant{Index: 6, Value: op.Residual != nil},
		Constant{Index: 7, Value: op.Y != nil})
	if err != nil {
		return err
	}
	elems := m * n
	if geglu {
		elems = m * (n / 2)
	}
	e := newEncoding()
	e.read(0, op.Partial, 0)
	e.write(1, op.Y, 0)
	e.read(2, op.Bias, op.BiasOffset)
	params(e, 3, GemmReduceParams{M: uint32(m), N: uint32(n), Slices: uint32(op.Slices)})
	e.write(4, op.Gated, 0)
	e.readWrite(5, op.Residual, 0)
	return e.dispatch(cb, p, Size3{ceilDiv(elems, gemmReduceThreads), 1, 1}, Size3{gemmReduceThreads, 1, 1})
}

// EncodeGemmSplitK encodes a whole split-K GEMM on one command buffer: the
// slices, a barrier, the reduction (op.Slices ≥ 2).
func EncodeGemmSplitK(cb CommandBuffer, k *Kernels, op GemmOp) error {
	if op.Slices < 2 {
		return fmt.Errorf("%w: gemm split-K: %d slices", ErrInvalidDispatch, op.Slices)
	}
	if err := EncodeGemm(cb, k, op); err != nil {
		return err
	}
	cb.Barrier()
	return EncodeGemmReduce(cb, k, op)
}

// gemmKernels models this file's kernels (DispatchCost,
// KernelThreadgroupMemory).
var gemmKernels = map[string]kernelModel{
	"gemm_f32":        {cost: gemmCost, threadgroupMemory: gemmF32Threadgroup},
	"gemm_f16":        {cost: gemmCost, threadgroupMemory: gemmF16WThreadgroup},
	"gemm_f32_f16w":   {cost: gemmCost, threadgroupMemory: gemmF16WThreadgroup},
	"gemv_f32":        {cost: gemmCost},
	"gemv_f16":        {cost: gemmCost},
	"gemv_f32_f16w":   {cost: gemmCost},
	"gemm_reduce_f32": {cost: gemmReduceCost},
}

// The static threadgroup arrays of the GEMM tile kernels (kernels/gemm.metal).
const (
	gemmXTile = 2 * GemmTileM * (GemmTileK + 4) // double-buffered X tile (kLdX = kBK + 4)
	gemmWTile = 2 * GemmTileN * (GemmTileK + 8) // double-buffered W tile (kLdW = kBK + 8)
	gemmStats = 2 * GemmTileM                   // mean and rstd per row

	gemmF32Threadgroup  = 4 * (gemmXTile + gemmWTile + gemmStats)
	gemmF16WThreadgroup = 4*(gemmXTile+gemmStats) + 2*gemmWTile // W stays half
)

// gemmCost models the GEMM tile and GEMV kernels: the multiply, the
// prologue's statistics, and every buffer the epilogue reads and writes.
func gemmCost(d *dispatchDesc) Cost {
	p, ok := paramsOf[GemmParams](d.arg(4))
	if !ok {
		return Cost{}
	}
	m, n, k := float64(p.M), float64(p.N), float64(p.K)
	xe, we := 4.0, 4.0
	switch d.kernel {
	case "gemm_f16", "gemv_f16":
		xe, we = 2, 2
	case "gemm_f32_f16w", "gemv_f32_f16w":
		we = 2
	}
	c := Cost{FLOPs: 2 * m * n * k}
	out := 0.0
	if d.arg(2) != nil {
		out += 4 * m * n
	}
	split := d.on(9)
	if d.on(2) && !split {
		out += 4 * m * n / 2
	}
	if split {
		out += 4 * m * n * float64(d.groups.Z) // each slice's partial matrix
	}
	if d.on(6) {
		out += 2 * 4 * m * n // residual read and written
	}
	if d.on(0) {
		out += 4 * n
	}
	xReads := 1.0
	if d.on(4) {
		c.FLOPs += 8 * m * k // statistics and normalisation
		out += 4 * k
		if d.on(5) {
			out += 4 * k
		}
		xReads = 2 // the statistics pass and the staging
	}
	c.IdealBytes = xe*m*k + we*n*k + out
	// Tiles: X once per column of threadgroups, W once per row of
	// them; GEMV: W once, X once per threadgroup. Split-K: each slice
	// stages its part of X and W, and with a LayerNorm prologue every
	// slice reads its rows whole once more for their statistics.
	c.RequestedBytes = float64(d.groups.X)*xReads*xe*m*k + float64(d.groups.Y)*we*n*k + out
	if split && d.on(4) {
		c.RequestedBytes += float64(d.groups.X) * float64(d.groups.Z-1) * xe * m * k
	}
	return c
}

// gemmReduceCost models the split-K reduction: the partial matrices read
// once and the epilogue.
func gemmReduceCost(d *dispatchDesc) Cost {
	p, ok := paramsOf[GemmReduceParams](d.arg(3))
	if !ok {
		return Cost{}
	}
	m, n, s := float64(p.M), float64(p.N), float64(p.Slices)
	c := Cost{FLOPs: (s - 1) * m * n}
	out := 4 * s * m * n // the partial matrices, read once
	if d.arg(1) != nil {
		out += 4 * m * n
	}
	if d.on(2) {
		out += 4 * m * n / 2
	}
	if d.on(6) {
		out += 2 * 4 * m * n
	}
	if d.on(0) {
		out += 4 * n
	}
	c.IdealBytes, c.RequestedBytes = out, out
	return c
}
