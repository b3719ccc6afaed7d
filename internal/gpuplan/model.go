package gpuplan

import (
	"strings"

	"github.com/laya-metal/laya/backend/gpu"
	"github.com/laya-metal/laya/metal"
)

// The tile-aware time model. The roofline floor (GPUFloor.FloorMs) prices
// the useful work at the GPU's peak; this model prices what the kernels
// actually launch, per dispatch:
//
//   - padded FLOPs: a GEMM's tiles compute whole 32×64 tiles over whole
//     K steps (M = 93 costs as 96), at the simdgroup-matrix rate;
//   - wave quantisation: a core holds R threadgroups of a kernel at once
//     (bounded by the core's threadgroup memory, threads and SIMD groups,
//     from the kernel's own threadgroup memory and size), so the grid runs
//     in ceil(threadgroups / (cores × R)) waves, each taking one
//     threadgroup's work at 1/R of a core's rate — a grid smaller than
//     cores × R leaves slots idle and gains nothing from them;
//   - memory: the minimal bytes at DRAM bandwidth, the rest of what the
//     tiles request (re-reads of X and W by other threadgroups) at the
//     system-level cache's bandwidth;
//   - a dependent dispatch (behind a barrier) adds DependentDispatchMicros.
//
// A dispatch takes max(compute, memory) plus its barrier. Everything here
// is an ESTIMATE from the assumptions in TimeModel, never a measurement.

// TimeModel holds the assumptions of the tile-aware model, each with its
// source (printed and written to JSON with every plan).
type TimeModel struct {
	// CoreThreadgroupMemory is the threadgroup memory of one GPU core:
	// "~60 KB" (philipturner/metal-benchmarks, On-Chip Memory, Apple 7/8;
	// assumed for Apple 9 and later too).
	CoreThreadgroupMemory int `json:"core_threadgroup_memory_bytes"`
	// CoreMaxThreads is the most threads a core keeps resident: the upper
	// end of "384–3072", which register-heavy kernels lower (ibid.).
	CoreMaxThreads int `json:"core_max_threads"`
	// CoreMaxSimdgroups: "ALU utilization maxes out at 24 simds/core"
	// (ibid.): more resident SIMD groups do not add throughput.
	CoreMaxSimdgroups int `json:"core_max_simdgroups"`
	// MatrixEfficiency is the fraction of the FP32 peak that
	// simdgroup-matrix code reaches: 101.7 matrix FFMA32 per core-cycle
	// of 128 (ibid., "Matrix FFMA32", A15+/M1+) = 0.79. Other kernels are
	// priced at the full peak (they are memory-bound here).
	MatrixEfficiency float64 `json:"matrix_efficiency"`
	// CacheBandwidthRatio is the system-level cache's bandwidth over
	// DRAM's: SLC ~15.4–19.8 B and RAM ~7.7–9.9 B per core-cycle (ibid.),
	// a ratio of 2. Bytes the tiles request beyond the minimal ones are
	// re-reads that this cache serves.
	CacheBandwidthRatio float64 `json:"cache_bandwidth_ratio"`
	// DependentDispatchMicros is the cost of a dispatch behind a barrier
	// (see the constant).
	DependentDispatchMicros float64 `json:"dependent_dispatch_us"`
	// Assumptions are the above in words, with what the model leaves out.
	Assumptions []string `json:"assumptions"`
}

// DefaultTimeModel is the model every plan is priced with.
var DefaultTimeModel = TimeModel{
	CoreThreadgroupMemory:   60 << 10,
	CoreMaxThreads:          3072,
	CoreMaxSimdgroups:       24,
	MatrixEfficiency:        101.7 / 128,
	CacheBandwidthRatio:     2,
	DependentDispatchMicros: DependentDispatchMicros,
	Assumptions: []string{
		"ESTIMATE, not a measurement: no Apple GPU ran any of this",
		"per core ~60 KB threadgroup memory, ≤ 3072 resident threads, ALU saturated at 24 SIMD groups (philipturner/metal-benchmarks, Apple 7/8 figures, assumed for M3/M4)",
		"simdgroup-matrix kernels (GEMM tiles, flash attention) at 0.79 of the FP32 peak: 101.7 of 128 FFMA per core-cycle measured in a matrix multiply (ibid.); other kernels at the full peak",
		"GEMM tiles priced on padded work: whole 32×64 tiles over whole 32-wide K steps",
		"wave quantisation: a grid runs in ceil(threadgroups / (cores × resident threadgroups per core)) waves, each threadgroup at 1/R of its core (a lone threadgroup gains nothing from its core's idle slots; if it did, small grids and split-K's gain are overstated)",
		"memory: minimal bytes at DRAM bandwidth, the rest of the bytes the tiles request (re-reads) at 2× that, the system-level cache (SLC ~15.4–19.8 vs RAM ~7.7–9.9 B per core-cycle, ibid.)",
		"a dispatch takes max(compute, memory); behind a barrier it adds 2.5 µs (ml-explore/mlx#4521, antonellof/ferrox#149); dispatches do not overlap",
		"flash attention priced on its unpadded FLOPs; host encoding, command-buffer commits and the CPU wait are not in it",
	},
}

// KernelModel is one dispatch under the model.
type KernelModel struct {
	Groups      int     `json:"threadgroups"`
	Resident    int     `json:"resident_per_core"` // R
	Waves       int     `json:"waves"`
	PaddedFLOPs float64 `json:"padded_flops"`
	ComputeUs   float64 `json:"compute_us"`
	MemoryUs    float64 `json:"memory_us"`
	// TimeUs is max(compute, memory) + the barrier's cost.
	TimeUs float64 `json:"time_us"`
}

// Resident is R, the threadgroups of a kernel (threads per threadgroup)
// one core holds at once.
func (m TimeModel) Resident(kernel string, threads int) int {
	threads = max(threads, 1)
	simds := (threads + 31) / 32
	r := min(m.CoreMaxThreads/threads, max(m.CoreMaxSimdgroups/simds, 1))
	if tg := metal.KernelThreadgroupMemory(kernel); tg > 0 {
		r = min(r, m.CoreThreadgroupMemory/tg)
	}
	return max(r, 1)
}

// SplitKTarget is the threadgroups g runs at once for the fp16-weight GEMM
// tile kernel (cores × R): the targetGroups of Backend.SetSplitK and
// metal.GemmSplitSlices for that GPU, under the model.
func (m TimeModel) SplitKTarget(g GPU) int {
	return g.Cores * m.Resident("gemm_f32_f16w", metal.GemmThreads)
}

// matrixKernel reports whether a kernel computes with simdgroup matrices.
func matrixKernel(kernel string) bool {
	return strings.HasPrefix(kernel, "gemm_") && kernel != "gemm_reduce_f32" || kernel == "attention_flash_f32"
}

// Dispatch prices one recorded dispatch of cost c on g.
func (m TimeModel) Dispatch(g GPU, d gpu.PlannedDispatch, c metal.Cost) KernelModel {
	threads := d.Threads.X * d.Threads.Y * d.Threads.Z
	km := KernelModel{Groups: d.Groups.X * d.Groups.Y * d.Groups.Z, Resident: m.Resident(d.Kernel, threads), PaddedFLOPs: c.FLOPs}
	if km.Groups == 0 {
		return km
	}
	peak := g.FP32TFLOPS * 1e12
	if matrixKernel(d.Kernel) {
		peak *= m.MatrixEfficiency
	}
	if p, ok := gemmTileParams(d); ok {
		// Whole tiles over whole K steps: the grid's own extent.
		kPad := (int(p.K) + metal.GemmTileK - 1) / metal.GemmTileK * metal.GemmTileK
		if d.Groups.Z > 1 {
			kPad = d.Groups.Z * int(p.KSlice)
		}
		mn := 2 * float64(d.Groups.Y*metal.GemmTileM) * float64(d.Groups.X*metal.GemmTileN) * float64(kPad)
		km.PaddedFLOPs = mn + max(c.FLOPs-2*float64(p.M)*float64(p.N)*float64(p.K), 0) // + the prologue's
	}
	slots := g.Cores * km.Resident
	km.Waves = (km.Groups + slots - 1) / slots
	perGroup := km.PaddedFLOPs / float64(km.Groups)
	km.ComputeUs = float64(km.Waves) * perGroup / (peak / float64(slots)) * 1e6
	bw := g.BandwidthGBs * 1e9
	km.MemoryUs = (c.IdealBytes/bw + max(c.RequestedBytes-c.IdealBytes, 0)/(bw*m.CacheBandwidthRatio)) * 1e6
	km.TimeUs = max(km.ComputeUs, km.MemoryUs)
	if d.AfterBarrier {
		km.TimeUs += m.DependentDispatchMicros
	}
	return km
}

// gemmTileParams decodes the parameters of a GEMM tile dispatch (not the
// GEMV kernels: they have no tiles to pad).
func gemmTileParams(d gpu.PlannedDispatch) (metal.GemmParams, bool) {
	switch d.Kernel {
	case "gemm_f32", "gemm_f16", "gemm_f32_f16w":
	default:
		return metal.GemmParams{}, false
	}
	for i := range d.Args {
		if a := &d.Args[i]; a.Index == 4 && len(a.Bytes) >= 20 {
			return metal.DecodeGemmParams(a.Bytes), true
		}
	}
	return metal.GemmParams{}, false
}
