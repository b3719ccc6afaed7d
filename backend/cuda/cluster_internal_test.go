//go:build linux

package cuda

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/internal/cudadrv/cudatest"
)

// clusterProbe runs cluster_probe on b over blocks blocks of threads
// threads, in clusters of csize blocks, through the launcher's cluster
// launch, and returns its output: four floats a thread.
func clusterProbe(b *Backend, blocks, threads, csize int) ([]float32, error) {
	out := make([]float32, 4*blocks*threads)
	n := uintptr(16 * blocks * threads)
	var err error
	if e := b.onThread(func() {
		var d uintptr
		if d, err = b.allocOnce(int64(n)); err != nil {
			return
		}
		defer b.drv.Call("cuMemFree_v2", d)
		var l launcher
		if err = l.launchCluster(b.drv, b.k.clusterProbe, [3]int{blocks, 1, 1}, threads, 16*threads, 0, csize, u64(d)); err != nil {
			return
		}
		if err = b.drv.Call("cuCtxSynchronize"); err != nil {
			return
		}
		if err = b.drv.Call("cuMemcpyDtoHAsync_v2", uintptr(unsafe.Pointer(&out[0])), d, n, 0); err == nil {
			err = b.drv.Call("cuCtxSynchronize")
		}
	}); e != nil {
		return nil, e
	}
	runtime.KeepAlive(out)
	return out, err
}

// checkClusterProbe holds cluster_probe's output to what each thread must
// read: (rank, thread, block, cluster size) as the next thread of the next
// block in its cluster wrote them.
func checkClusterProbe(t *testing.T, out []float32, blocks, threads, csize int) {
	t.Helper()
	for b := range blocks {
		rank := b % csize
		peer := (rank + 1) % csize
		for th := range threads {
			want := [4]float32{float32(peer), float32((th + 1) % threads), float32(b - rank + peer), float32(csize)}
			got := [4]float32(out[4*(b*threads+th) : 4*(b*threads+th)+4])
			if got != want {
				t.Fatalf("block %d thread %d read %v, want %v", b, th, got, want)
			}
		}
	}
}

var clusterCases = []struct{ blocks, threads, csize int }{{8, 48, 1}, {8, 48, 2}, {8, 64, 4}, {16, 96, 8}}

// The cluster primitives on a GPU of compute capability 9.0 or more: each
// thread reads, through mapa after the cluster barrier, what another block
// of its cluster wrote to its shared memory (the emulator's model of them,
// TestEmuCluster, is held to this).
func TestClusterProbe(t *testing.T) {
	be, err := Open(Options{ClusterRows: MaxMMARows}) // the extras, cluster_probe's part
	cudatest.Check(t, err)
	defer be.Close()
	b := be.(*Backend)
	if b.cc[0] < 9 || !b.drv.Has("cuLaunchKernelEx") {
		t.Skipf("%s: compute capability %d.%d, no thread block clusters", b.gpu, b.cc[0], b.cc[1])
	}
	for _, c := range clusterCases {
		out, err := clusterProbe(b, c.blocks, c.threads, c.csize)
		if err != nil {
			t.Fatalf("clusters of %d: %v", c.csize, err)
		}
		checkClusterProbe(t, out, c.blocks, c.threads, c.csize)
	}
}

// linear_cl's plans on this GPU for one question (93 rows) of the two
// encoders' GEMMs, with the clusters the driver says run at once: every
// shape has a plan within the GPU's shared memory; the log lists each
// plan and the blocks a wave.
func TestLinearClPlans(t *testing.T) {
	be, err := Open(Options{ClusterRows: MaxMMARows})
	cudatest.Check(t, err)
	defer be.Close()
	b := be.(*Backend)
	if !b.clusters {
		t.Skipf("%s: compute capability %d.%d, no thread block clusters", b.gpu, b.cc[0], b.cc[1])
	}
	t.Logf("%s, %d multiprocessors, %d warps a block: blocks a wave by cluster size %v", b.gpu, b.sms, b.clWarps(), b.clWaves)
	for _, c := range []struct {
		name string
		n, k int
	}{
		{"ModernBERT-large qkv", 3072, 1024}, {"attention output", 1024, 1024}, {"MLP input", 5248, 1024}, {"MLP output", 1024, 2624},
		{"mmBERT-base qkv", 2304, 768}, {"attention output", 768, 768}, {"MLP input", 2304, 768}, {"MLP output", 768, 1152},
	} {
		p, ok := planLinearCl(93, c.n, c.k, b.opts.ClusterCols, b.sms, b.clShared(), &b.clWaves)
		if !ok || p.shared > b.clShared() {
			t.Errorf("%s (%d×%d): plan %+v, ok %v", c.name, c.n, c.k, p, ok)
			continue
		}
		blocks := p.tilesN * p.splits * p.tilesM
		t.Logf("%s (%d×%d): %d-column tiles, %d slices of %d, %d blocks (%d a wave), %d bytes of shared memory", c.name, c.n, c.k,
			p.bn, p.splits, p.kc, blocks, b.clWaves.wave(p.splits, b.sms), p.shared)
	}
}

// The same probe through the backend's launcher on the emulated GPU: the
// cluster launch attribute as the fake driver reads it, and the emulator's
// clusters.
func TestEmuClusterProbe(t *testing.T) {
	opts := emuOptions(t)
	opts.ClusterRows = MaxMMARows // the extras, cluster_probe's part
	be, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	b := be.(*Backend)
	for _, c := range clusterCases {
		t.Run(fmt.Sprintf("cluster=%d", c.csize), func(t *testing.T) {
			out, err := clusterProbe(b, c.blocks, c.threads, c.csize)
			if err != nil {
				t.Fatal(err)
			}
			checkClusterProbe(t, out, c.blocks, c.threads, c.csize)
		})
	}
	// A cluster that does not divide the grid is refused, as by CUDA.
	if _, err := clusterProbe(b, 6, 32, 4); err == nil {
		t.Error("clusters of 4 over 6 blocks ran")
	}
}

// The emulator's clusters directly (runner): every thread reads what the
// next thread of the next block in its cluster wrote, the blocks' shared
// memory poisoned before them, so that a read the cluster barrier did not
// order after the write reads NaN.
func TestEmuCluster(t *testing.T) {
	for _, c := range clusterCases {
		t.Run(fmt.Sprintf("cluster=%d", c.csize), func(t *testing.T) {
			res := emuRun(t, [][]byte{make([]byte, 16*c.blocks*c.threads)}, emuLaunch{name: "cluster_probe",
				grid: [3]int{c.blocks, 1, 1}, threads: c.threads, smem: 16 * c.threads, cluster: c.csize, args: []emuArg{emuBuf(0, 0)}})
			out := bytesF32(res[0])
			for _, v := range out {
				if math.IsNaN(float64(v)) {
					t.Fatal("a thread read shared memory no thread had written")
				}
			}
			checkClusterProbe(t, out, c.blocks, c.threads, c.csize)
		})
	}
}

// planLinearCl's first rule on an H100's or H200's 132 multiprocessors, at
// one English question (93 rows) and two (200): of the tiles and slices
// whose operands fit, the least work a block (its copies, products and
// adding) times the waves (estimated: clusters of three and five filling
// 120 multiprocessors, of eight 128; or as the driver says); none where
// nothing fits.
func TestPlanLinearCl(t *testing.T) {
	const optin = 232448
	var threes clWaves
	threes[3] = 132 // a driver with GPCs of 18 (or 15) multiprocessors
	for _, c := range []struct {
		name                 string
		m, n, k, cols, share int
		waves                *clWaves
		bn, splits, kc       int // 0: no plan
	}{
		// 24 tiles of 128 in clusters of five: 120 blocks, one wave.
		{"qkv", 93, 3072, 1024, 0, optin, nil, 128, 5, 208},
		// Forced to 64 columns: two waves of five 208-deep slices do less
		// a block than one of two 512-deep ones or three of eight
		// 128-deep ones, whose adding counts eight times.
		{"qkv, tiles of 64", 93, 3072, 1024, 64, optin, nil, 64, 5, 208},
		{"attention output", 93, 1024, 1024, 0, optin, nil, 64, 8, 128},
		// 41 tiles of 128: 123 blocks in clusters of three take two
		// estimated waves, in clusters of five two of shorter slices;
		// where the driver runs 44 clusters of three at once, one.
		{"MLP input", 93, 5248, 1024, 0, optin, nil, 128, 5, 208},
		{"MLP input, 44 clusters of three", 93, 5248, 1024, 0, optin, &threes, 128, 3, 352},
		{"MLP output", 93, 1024, 2624, 0, optin, nil, 64, 8, 336},
		{"MLP output, 64 KiB of shared memory", 93, 1024, 2624, 0, 64 << 10, nil, 0, 0, 0},
		{"attention output, two questions", 200, 1024, 1024, 0, optin, nil, 128, 8, 128},
	} {
		p, ok := planLinearCl(c.m, c.n, c.k, c.cols, 132, c.share, c.waves)
		want := c.bn != 0
		if ok != want || ok && (p.bn != c.bn || p.splits != c.splits || p.kc != c.kc || p.tilesN != (c.n+c.bn-1)/c.bn ||
			p.tilesM != (c.m+127)/128 || p.shared > c.share || p.shared != lclShared(c.kc, c.m, c.bn)) {
			t.Errorf("%s: plan %+v, ok %v; want tiles of %d, %d splits of %d, ok %v", c.name, p, ok, c.bn, c.splits, c.kc, want)
		}
	}
}

// linear_cl's constants are the ones kernels.cu is written for.
func TestLinearClMatchesKernel(t *testing.T) {
	for name, v := range map[string]int{"LCL_SPLITS": maxClusterSplits, "LMMA_MT": lmmaTiles, "LCL_XC": clChunk} {
		if def := fmt.Sprintf("\n#define %s %d\n", name, v); !strings.Contains(kernelSource, def) {
			t.Errorf("kernels.cu does not say %q", strings.TrimSpace(def))
		}
	}
	// Backend.clWarps: 8 << LCL_W16.
	if def := "\n#define LCL_WARPS (LCL_W16 ? 16 : 8)\n"; !strings.Contains(kernelSource, def) {
		t.Errorf("kernels.cu does not say %q", strings.TrimSpace(def))
	}
}

// planLinearWg's first rule on an H100's or H200's 132 multiprocessors
// with 227 KiB of shared memory a block, at one English question (93 rows:
// 96 padded) and for mmBERT-base's qkv: the least estimated work a block
// (its chunks of x; split, the cluster's adding and barriers) times the
// waves; two terms of x, forced splits, a capped ring; none where no
// slice fits.
func TestPlanLinearWg(t *testing.T) {
	const optin = 232448
	for _, c := range []struct {
		name                                   string
		m, n, k, terms, splits, maxRing, share int
		wantSplits, kc, ring, np               int // wantSplits 0: no plan
	}{
		// 48 tiles whole over k: 1,024 deep, the weight's 128 KiB and a
		// ring of eight of x's sixteen chunks.
		{"qkv", 93, 3072, 1024, 1, 0, 0, optin, 1, 1024, 8, 96},
		// 16 tiles: clusters of eight fill the GPU once.
		{"attention output", 93, 1024, 1024, 1, 0, 0, optin, 8, 128, 2, 96},
		{"MLP input", 93, 5248, 1024, 1, 0, 0, optin, 1, 1024, 8, 96},
		// 41 chunks: a slice of all of them does not fit; seven slices of
		// six chunks, 112 blocks in clusters of seven.
		{"MLP output", 93, 1024, 2624, 1, 0, 0, optin, 7, 384, 6, 96},
		{"mmBERT-base qkv", 93, 2304, 768, 1, 0, 0, optin, 1, 768, 8, 96},
		{"qkv in two slices", 93, 3072, 1024, 1, 2, 0, optin, 2, 512, 8, 96},
		// Two terms of x (FP16X2): twice the chunks to copy and multiply
		// make two slices cheaper, with a ring of six slots of both.
		{"qkv, two terms", 93, 3072, 1024, 2, 0, 0, optin, 2, 512, 6, 96},
		// A ring of three: 165 KiB.
		{"qkv, a ring of three", 93, 3072, 1024, 1, 0, 3, optin, 1, 1024, 3, 96},
		// Forced to a cluster size no slicing gives (41 chunks in six
		// slices of seven, never eight).
		{"MLP output in eight slices", 93, 1024, 2624, 1, 8, 0, optin, 0, 0, 0, 0},
		// 128 rows a block: a ring of six.
		{"two questions' qkv", 200, 3072, 1024, 1, 0, 0, optin, 1, 1024, 6, 128},
		// A row's chunks of x cost less than a cluster's adding.
		{"a row", 1, 1024, 1024, 1, 0, 0, optin, 1, 1024, 8, 32},
		// Only slices of two chunks fit.
		{"qkv, 64 KiB of shared memory", 93, 3072, 1024, 1, 0, 0, 64 << 10, 8, 128, 2, 96},
		{"MLP output, 16 KiB of shared memory", 93, 1024, 2624, 1, 0, 0, 16 << 10, 0, 0, 0, 0},
	} {
		p, ok := planLinearWg(c.m, c.n, c.k, c.terms, c.splits, c.maxRing, 132, c.share, nil)
		want := c.wantSplits != 0
		if ok != want || ok && (p.splits != c.wantSplits || p.kc != c.kc || p.ring != c.ring || p.np != c.np || p.bn != wgCols ||
			p.tilesN != (c.n+wgCols-1)/wgCols || p.tilesM != (c.m+wgRows-1)/wgRows || p.shared > c.share ||
			p.shared != lwgShared(c.kc, c.np, c.terms, c.ring)) {
			t.Errorf("%s: plan %+v, ok %v; want %d splits of %d, a ring of %d, %d rows, ok %v", c.name, p, ok, c.wantSplits, c.kc, c.ring,
				c.np, want)
		}
	}
}

// linear_wg's constants are the ones kernels.cu is written for.
func TestLinearWgMatchesKernel(t *testing.T) {
	for name, v := range map[string]int{"LWG_BN": wgCols, "LWG_ROWS": wgRows, "LWG_CS": wgCS} {
		if def := fmt.Sprintf("\n#define %s %d\n", name, v); !strings.Contains(kernelSource, def) {
			t.Errorf("kernels.cu does not say %q", strings.TrimSpace(def))
		}
	}
}
