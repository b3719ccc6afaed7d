//go:build linux && amd64

// Command amx-probe measures what Intel AMX (the bf16 tile unit of Sapphire
// and Emerald Rapids Xeons) could give the CPU backend's GEMMs, against the
// AVX-512 FMA peak of the same core, so that the choice between them rests
// on numbers from the machine and not on datasheets. It is a probe, not a
// kernel the library runs.
//
// It checks its TDPBF16PS block (four 16×16 float32 tiles, 32×32 outputs)
// against a float64 reference first, then times, on one thread:
//
//   - fma: 24 independent ZMM FMAs per round (the FMA peak; the outer GEMM
//     micro-kernel keeps 24 accumulators);
//   - amx: the block over S steps of K = 32, with its tiles hot (loaded once:
//     the tile unit's peak) or streamed (four tile loads per step, 2 KiB of A
//     and of B per step: S = 32 from L1/L2, 160 from L2, 640 past L2), as a
//     GEMM's inner loop does.
//
// and prints the bf16 rate and the float32-equivalent rates of the splits
// that emulate a float32 product with bf16 ones: bf16x3 (x and w each as a
// high and a low bf16, three products: ~16 significant bits of each input)
// and bf16x5 (x in three pieces, w in two, every product but the one below
// float32's rounding: float32 accuracy; an F16 weight is exactly two bf16).
// Those are the measured bf16 rate divided by 3 and by 5, arithmetic on a
// measurement, not a measurement of such a GEMM.
//
// Usage (pin it: the numbers are per core):
//
//	taskset -c 0 amx-probe [-rounds 5]
//
// Linux needs the process to ask for the tile data state first
// (arch_prctl ARCH_REQ_XCOMP_PERM); where that fails (no AMX, or a kernel
// older than 5.16) the probe says so and exits with status 2.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
	"unsafe"
)

//go:noescape
func amxBlock(cfg *byte, a, b *byte, steps int, c *float32, ldc int, hot int)

func fmaLoop(n int)

// requestAMX asks Linux for the AMX tile data state for this process.
func requestAMX() error {
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); e != 0 {
		return e
	}
	return nil
}

// tileConfig is palette 1 with tmm0–7 as 16 rows of 64 bytes.
func tileConfig() *[64]byte {
	var c [64]byte
	c[0] = 1
	for t := range 8 {
		c[16+2*t] = 64 // bytes per row, uint16
		c[48+t] = 16   // rows
	}
	return &c
}

// bf16 rounds x to bfloat16, to nearest even (no NaN inputs here).
func bf16(x float32) uint16 {
	b := math.Float32bits(x)
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func bf16Value(h uint16) float64 { return float64(math.Float32frombits(uint32(h) << 16)) }

// pack lays out C = X·Wᵀ (X and W both 32 × k bf16, row-major) for
// amxBlock: per step of 32 k, X's two 16-row tiles as they are and W's two
// 16-row tiles in the VNNI layout (k pairs as rows).
func pack(x, w []uint16, k int) (a, b []uint16) {
	steps := k / 32
	a = make([]uint16, steps*2*512)
	b = make([]uint16, steps*2*512)
	for s := range steps {
		for t := range 2 {
			tile := (s*2 + t) * 512
			for r := range 16 {
				for kk := range 32 {
					a[tile+r*32+kk] = x[(t*16+r)*k+s*32+kk]
				}
			}
			for p := range 16 {
				for n := range 16 {
					for e := range 2 {
						b[tile+p*32+n*2+e] = w[(t*16+n)*k+s*32+2*p+e]
					}
				}
			}
		}
	}
	return a, b
}

func ptr(p *uint16) *byte { return (*byte)(unsafe.Pointer(p)) }

// check runs one block at k = 256 on random bf16 inputs and returns the
// largest error against the float64 sums (the products are exact in
// float32; the error is the accumulation's).
func check() float64 {
	const k = 256
	rng := rand.New(rand.NewPCG(1, 2))
	x, w := make([]uint16, 32*k), make([]uint16, 32*k)
	for i := range x {
		x[i] = bf16(float32(rng.NormFloat64()))
		w[i] = bf16(float32(rng.NormFloat64()))
	}
	a, b := pack(x, w, k)
	c := make([]float32, 32*32)
	amxBlock(&tileConfig()[0], ptr(&a[0]), ptr(&b[0]), k/32, &c[0], 32, 0)
	worst := 0.0
	for i := range 32 {
		for j := range 32 {
			var want float64
			for kk := range k {
				want += bf16Value(x[i*k+kk]) * bf16Value(w[j*k+kk])
			}
			worst = math.Max(worst, math.Abs(want-float64(c[i*32+j])))
		}
	}
	return worst
}

// best returns the highest rate of rounds timings of f, each at least 50 ms
// of calls, in GFLOP/s for flops per call.
func best(rounds int, flops float64, f func()) float64 {
	top := 0.0
	for range rounds {
		n := 0
		start := time.Now()
		for time.Since(start) < 50*time.Millisecond {
			f()
			n++
		}
		top = math.Max(top, flops*float64(n)/time.Since(start).Seconds()/1e9)
	}
	return top
}

func main() {
	rounds := flag.Int("rounds", 5, "timings per case; the best is printed")
	flag.Parse()
	// The FMA peak first: it is worth knowing on a machine without AMX too
	// (the GEMM micro-kernel's ceiling).
	const fmaRounds = 1 << 14
	fma := best(*rounds, fmaRounds*24*32, func() { fmaLoop(fmaRounds) })
	fmt.Printf("fma  (24 ZMM FMA chains)         %7.1f GFLOP/s float32\n", fma)
	if err := requestAMX(); err != nil {
		fmt.Fprintf(os.Stderr, "amx-probe: no AMX tile state for this process (arch_prctl ARCH_REQ_XCOMP_PERM: %v)\n", err)
		os.Exit(2)
	}
	worst := check()
	fmt.Printf("check: 32×32 block, k = 256, max |error| against float64 %.3g\n", worst)
	if worst > 1e-3 {
		fmt.Fprintln(os.Stderr, "amx-probe: the AMX block disagrees with the reference; the timings below would mean nothing")
		os.Exit(1)
	}
	cfg := tileConfig()
	c := make([]float32, 32*32)
	fmt.Println("amx  (TDPBF16PS, 32×32 block)    bf16 GFLOP/s   bf16x3 equiv.   bf16x5 equiv.   bf16x5 / fma")
	for _, steps := range []int{32, 160, 640} {
		a, b := make([]uint16, steps*2*512), make([]uint16, steps*2*512)
		for i := range a {
			a[i], b[i] = bf16(0.5), bf16(0.25)
		}
		for _, hot := range []int{1, 0} {
			name := "streamed"
			if hot != 0 {
				name = "hot"
			}
			r := best(*rounds, float64(steps)*2*32*32*32, func() { amxBlock(&cfg[0], ptr(&a[0]), ptr(&b[0]), steps, &c[0], 32, hot) })
			fmt.Printf("     %4d steps (%4d KiB/operand) %-8s %7.1f        %7.1f         %7.1f         %5.2f×\n",
				steps, steps*2, name, r, r/3, r/5, r/5/fma)
		}
	}
}
