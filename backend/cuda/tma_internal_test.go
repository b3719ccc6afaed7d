//go:build linux

package cuda

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/internal/cudadrv/cudatest"
)

// tmaProbe runs tma_probe on b over a rows × cols fp16 matrix in, with
// boxes of b0 × b1 under the 128-byte swizzle starting dy rows from the
// matrix's first (dy ≤ 0), and returns its output matrix and that matrix's
// columns.
func tmaProbe(b *Backend, in []uint16, rows, cols, b0, b1, dy int) ([]uint16, int, error) {
	gx, gy := (cols+2*b0-1)/(2*b0), (rows-dy+b1-1)/b1
	outCols := 2 * b0 * gx
	out := make([]uint16, gy*b1*outCols)
	var err error
	if e := b.onThread(func() {
		var din, dmap, dout uintptr
		if din, err = b.allocOnce(int64(2 * len(in))); err != nil {
			return
		}
		defer b.drv.Call("cuMemFree_v2", din)
		if err = b.drv.Call("cuMemcpyHtoD_v2", din, uintptr(unsafe.Pointer(&in[0])), uintptr(2*len(in))); err != nil {
			return
		}
		var m tensorMap
		if m, err = b.encodeTensorMap(din, int64(rows), int64(cols), int64(2*cols), b0, b1, true); err != nil {
			return
		}
		if dmap, err = b.allocOnce(int64(unsafe.Sizeof(m))); err != nil {
			return
		}
		defer b.drv.Call("cuMemFree_v2", dmap)
		if err = b.drv.Call("cuMemcpyHtoD_v2", dmap, uintptr(unsafe.Pointer(&m[0])), unsafe.Sizeof(m)); err != nil {
			return
		}
		if dout, err = b.allocOnce(int64(2 * len(out))); err != nil {
			return
		}
		defer b.drv.Call("cuMemFree_v2", dout)
		var l launcher
		shared := 1024 + 128*b1 + 8 // the box's rows take 128 bytes each
		if err = l.launch(b.drv, b.k.tmaProbe, [3]int{gx, gy, 1}, 128, shared, 0, u64(dout), u64(dmap), uint64(b0), uint64(b1), uint64(outCols), i32(dy)); err != nil {
			return
		}
		if err = b.drv.Call("cuCtxSynchronize"); err != nil {
			return
		}
		if err = b.drv.Call("cuMemcpyDtoHAsync_v2", uintptr(unsafe.Pointer(&out[0])), dout, uintptr(2*len(out)), 0); err == nil {
			err = b.drv.Call("cuCtxSynchronize")
		}
	}); e != nil {
		return nil, 0, e
	}
	runtime.KeepAlive(in)
	runtime.KeepAlive(out)
	return out, outCols, err
}

// tmaCases are matrices and boxes: a box row of 128 bytes (the swizzle's
// width) and of 64, rows and columns past the matrix on every side.
var tmaCases = []struct{ rows, cols, b0, b1 int }{{50, 200, 64, 24}, {93, 1024, 64, 96}, {7, 40, 32, 8}, {130, 136, 64, 64}}

// tmaOffsets are the probe's first rows: at the matrix's first, and three
// above it (the TMA takes signed coordinates: rows before the matrix are
// zeros like rows past it).
var tmaOffsets = []int{0, -3}

// checkTMAProbe holds tma_probe's output to the matrix: row R of out is
// row R + dy of in, zeros past it. It reports the first wrong element,
// how many are wrong and how many of those read zero (as where a box never
// landed).
func checkTMAProbe(t *testing.T, in, out []uint16, rows, cols, outCols, dy int) {
	t.Helper()
	bad, zeros, first := 0, 0, ""
	for r := range len(out) / outCols {
		for c := range outCols {
			want := uint16(0)
			if y := r + dy; y >= 0 && y < rows && c < cols {
				want = in[y*cols+c]
			}
			if got := out[r*outCols+c]; got != want {
				if bad == 0 {
					first = fmt.Sprintf("output row %d column %d: %#04x, want %#04x", r, c, got, want)
				}
				bad++
				if got == 0 {
					zeros++
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s; %d of %d elements wrong, %d of them 0", first, bad, len(out), zeros)
	}
}

// runTMAProbe runs tma_probe on b over every case and first row.
func runTMAProbe(t *testing.T, b *Backend) {
	for _, c := range tmaCases {
		for _, dy := range tmaOffsets {
			t.Run(fmt.Sprintf("%dx%d/box=%dx%d/dy=%d", c.rows, c.cols, c.b1, c.b0, dy), func(t *testing.T) {
				in := tmaInput(c.rows, c.cols)
				out, outCols, err := tmaProbe(b, in, c.rows, c.cols, c.b0, c.b1, dy)
				if err != nil {
					t.Fatal(err)
				}
				checkTMAProbe(t, in, out, c.rows, c.cols, outCols, dy)
			})
		}
	}
}

func tmaInput(rows, cols int) []uint16 {
	rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	in := make([]uint16, rows*cols)
	for i := range in {
		in[i] = uint16(rng.Uint32()&0x7bff) | 1 // finite fp16, never zero
	}
	return in
}

// The TMA's 2D copies and the mbarriers on a GPU of compute capability
// 9.0 (in the sm_90a build): each box lands where the 128-byte swizzle
// puts it, zeros past the matrix, through two phases of one mbarrier (the
// emulator's model of them, TestEmuTMAProbe, is held to this).
func TestTMAProbe(t *testing.T) {
	// The sm_90a build (wgrows), whose extras hold tma_probe.
	be, err := Open(Options{WGRows: MaxMMARows})
	cudatest.Check(t, err)
	defer be.Close()
	b := be.(*Backend)
	if !b.wgmma || !b.drv.Has("cuTensorMapEncodeTiled") {
		t.Skipf("%s: compute capability %d.%d, no sm_90a build", b.gpu, b.cc[0], b.cc[1])
	}
	runTMAProbe(t, b)
}

// The same probe on the emulated GPU, through the fake driver's tensor
// maps and the emulator's TMA: it fails if a box is read before its
// mbarrier's phase completes (the destination stays poisoned until then).
func TestEmuTMAProbe(t *testing.T) {
	opts := emuOptions(t)
	opts.WGRows = MaxMMARows // the extras, tma_probe's part
	be, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	b := be.(*Backend)
	runTMAProbe(t, b)
}

// openEmuWGTMA opens the emulated backend with linear_wg's TMA copies,
// closed when t ends.
func openEmuWGTMA(t *testing.T) *Backend {
	opts := emuOptions(t)
	opts.WGRows, opts.WGTMA = MaxMMARows, true
	be, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be.(*Backend)
}

// linear_wg's tensor maps (wgmaps): made once per address and shape on a
// segment's first run and found again when its graph is captured, never
// made then, and no more than maxWGMaps sets of them.
func TestEmuWGMaps(t *testing.T) {
	b := openEmuWGTMA(t)
	const wh, xh = 1 << 20, 1 << 24 // addresses the maps only describe
	var first uintptr
	var err error
	if e := b.onThread(func() {
		if d, err := b.wgMaps(false, wh, xh, 64, 93, 1024, 1, 96); err != nil || d != 0 {
			t.Errorf("maps found before they were made: %#x, %v", d, err)
		}
		if first, err = b.wgMaps(true, wh, xh, 64, 93, 1024, 1, 96); err != nil || first == 0 {
			t.Fatalf("making maps: %#x, %v", first, err)
		}
		if d, err := b.wgMaps(false, wh, xh, 64, 93, 1024, 1, 96); err != nil || d != first {
			t.Errorf("maps found again at %#x (%v), want %#x", d, err, first)
		}
		if d, _ := b.wgMaps(false, wh, xh, 64, 93, 1024, 2, 96); d != 0 {
			t.Errorf("two terms' maps found as one term's")
		}
		for i := 1; i < maxWGMaps; i++ {
			if d, err := b.wgMaps(true, wh, xh+uintptr(256*i), 64, 93, 1024, 1, 96); err != nil || d == 0 {
				t.Fatalf("set %d: %#x, %v", i, d, err)
			}
		}
		if d, err := b.wgMaps(true, wh, xh-256, 64, 93, 1024, 1, 96); err != nil || d != 0 {
			t.Errorf("a set past the bound: %#x, %v", d, err)
		}
		if d, _ := b.wgMaps(true, wh, xh, 64, 93, 1024, 1, 96); d != first {
			t.Errorf("a set made before the bound not found after it")
		}
	}); e != nil {
		t.Fatal(e)
	}
}

// Requests flush on their own threads, so several may make the same
// tensor maps at once: every one gets the set that was kept, and the
// others' copies are freed (the race detector watches the rest).
func TestEmuWGMapsConcurrent(t *testing.T) {
	b := openEmuWGTMA(t)
	const racers = 8
	got := make([]uintptr, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if e := b.onThread(func() { got[i], err = b.wgMaps(true, 1<<20, 1<<24, 64, 93, 1024, 1, 96) }); e != nil || err != nil {
				t.Errorf("racer %d: %v, %v", i, e, err)
			}
		}()
	}
	wg.Wait()
	for i, d := range got {
		if d == 0 || d != got[0] {
			t.Errorf("racer %d got maps at %#x, racer 0 at %#x", i, d, got[0])
		}
	}
	if n := len(b.tmaps); n != 1 {
		t.Errorf("%d sets of maps kept, want 1", n)
	}
}
