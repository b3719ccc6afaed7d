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
// one question (93 rows): the fewest slices of k whose blocks cover the
// GPU, each within the shared memory; none where eight slices do not fit.
func TestPlanLinearCl(t *testing.T) {
	const optin, lmma = 232448, lmmaSharedLimit
	for _, c := range []struct {
		name            string
		m, n, k, shared int
		splits, kc      int
		ok              bool
		kg              int // 0: 1
	}{
		{"qkv", 93, 3072, 1024, optin, 3, 352, true, 0},
		{"qkv, linear_mma's shared memory", 93, 3072, 1024, lmma, 4, 256, true, 0},
		{"attention output", 93, 1024, 1024, optin, 8, 128, true, 0},
		{"MLP input", 93, 5248, 1024, optin, 2, 512, true, 0},
		{"MLP output", 93, 1024, 2624, optin, 8, 336, true, 0},
		{"MLP output, linear_mma's shared memory", 93, 1024, 2624, lmma, 0, 0, false, 0},
		// Three slices of 1376 would fit the shared memory of 16 rows,
		// each more 16-byte chunks than the block has threads.
		{"wide and deep, few rows", 16, 8448, 4096, optin, 4, 1024, true, 0},
		// Four k-groups: their products (96 rows of 72 floats each) need
		// more shared memory than a short slice's operands.
		{"attention output, four k-groups", 93, 1024, 1024, optin, 8, 128, true, 4},
		{"qkv, four k-groups", 93, 3072, 1024, optin, 3, 352, true, 4},
	} {
		kg, rp := max(c.kg, 1), (min(c.m, 128)+15)&^15
		p, ok := planLinearCl(c.m, c.n, c.k, kg, 132, c.shared)
		if ok != c.ok || ok && (p.splits != c.splits || p.kc != c.kc || p.tilesN != (c.n+63)/64 || p.tilesM != 1 || p.shared > c.shared ||
			p.kg != kg || p.shared < kg*rp*72*4) {
			t.Errorf("%s: plan %+v, ok %v; want %d splits of %d, ok %v", c.name, p, ok, c.splits, c.kc, c.ok)
		}
	}
}

// linear_cl's constants are the ones kernels.cu is written for.
func TestLinearClMatchesKernel(t *testing.T) {
	for name, v := range map[string]int{"LCL_SPLITS": maxClusterSplits, "LMMA_MT": lmmaTiles} {
		if def := fmt.Sprintf("\n#define %s %d\n", name, v); !strings.Contains(kernelSource, def) {
			t.Errorf("kernels.cu does not say %q", strings.TrimSpace(def))
		}
	}
}
