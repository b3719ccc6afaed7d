package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// outerKernels are the kernels with an outer-product path: its Go
// reference everywhere, the SIMD one where this CPU has it.
func outerKernels(t testing.TB) []gemmKernel {
	var ks []gemmKernel
	for _, k := range gemmKernels(t) {
		if k.outer != nil {
			ks = append(ks, k)
		}
	}
	return ks
}

// halfMatrix returns vals as an F16 matrix operand (rows × k) and the
// float32 values its bits hold.
func halfMatrix(vals []float32, k int) (matrix, []float32) {
	raw, exact := encode(vals, backend.F16)
	bits := make([]uint16, len(vals))
	for i := range bits {
		bits[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return matrix{half: bits, dtype: backend.F16, ld: k}, exact
}

// TestGemmOuterRagged runs the outer-product path on M, N and K that are
// multiples of nothing (one 48-token tile and a bit, ragged 8-row blocks,
// K tails of every unroll), F32 and F16 weights, against the float64
// product within the float32 bound of a k-term sum, and bit for bit
// against the documented order (one fused multiply-add per k, in k order):
// every output where the shape is small, a sample of 300 where it is large.
func TestGemmOuterRagged(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	ms := []int{1, 7, 31, 32, 33, 93, 97, 200}
	nks := []int{1, 3, 17, 65, 1023}
	for _, kernel := range outerKernels(t) {
		for _, m := range ms {
			for _, n := range nks {
				for _, k := range nks {
					if kernel.name == "outer-go" && m*n*k > 2_000_000 {
						continue // the software FMAs are slow; the SIMD kernel covers these
					}
					dtype := backend.F32
					if (m+n+k)%2 == 1 {
						dtype = backend.F16
					}
					t.Run(fmt.Sprintf("%s/%dx%dx%d/%v", kernel.name, m, n, k, dtype), func(t *testing.T) {
						useGemmKernel(t, kernel)
						x, wv := randomValues(rng, m*k), randomValues(rng, n*k)
						w := matrix{f32: wv, ld: k}
						if dtype == backend.F16 {
							w, wv = halfMatrix(wv, k)
						}
						be := New()
						be.workers = 3
						y := make([]float32, m*n)
						for i := range y {
							y[i] = float32(math.NaN())
						}
						be.gemmW(y, x, w, nil, m, n, k, backend.Identity)
						all := m*n*k <= 3_000_000
						for s := 0; s < m*n; s++ {
							i, j := s/n, s%n
							if !all {
								if s >= 300 {
									break
								}
								i, j = rng.IntN(m), rng.IntN(n)
							}
							xr, wr := x[i*k:i*k+k], wv[j*k:j*k+k]
							var sum, abs float64
							for kk := range k {
								p := float64(xr[kk]) * float64(wr[kk])
								sum += p
								abs += math.Abs(p)
							}
							got := y[i*n+j]
							if d := math.Abs(float64(got) - sum); !(d <= float64(k+1)*0x1p-24*abs) {
								t.Fatalf("y[%d, %d] = %v, want %v", i, j, got, sum)
							}
							if want := laneOrderDot(xr, wr, 1); math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("y[%d, %d] = %v, want %v as summed in k order", i, j, got, want)
							}
						}
					})
				}
			}
		}
	}
}

// TestGemmRowSubset: gemmRows and gemmGeGLURows compute exactly the listed
// rows (in any order), bit for bit as a GEMM of just those rows computes
// them, and leave every other row of their outputs untouched; on every kernel (the
// outer-product path packs the listed rows, the dot kernels gather them),
// with the package's own kernel choice too, F32 and F16 weights, bias and
// activation.
func TestGemmRowSubset(t *testing.T) {
	const m, n, k = 97, 70, 129
	rng := rand.New(rand.NewPCG(43, 44))
	x := randomValues(rng, m*k)
	bias := randomValues(rng, n)
	perm := rng.Perm(m)
	subsets := map[string][]int{"all": nil, "60": perm[:60], "5": perm[60:65], "1": {m - 1}, "none": {}}
	kernels := append(gemmKernels(t), gemmKernel{name: "default"})
	for _, kernel := range kernels {
		for _, dtype := range []backend.DType{backend.F32, backend.F16} {
			for name, rows := range subsets {
				t.Run(fmt.Sprintf("%s/%v/%s", kernel.name, dtype, name), func(t *testing.T) {
					if kernel.name != "default" {
						useGemmKernel(t, kernel)
					}
					wv := randomValues(rng, n*k)
					w := matrix{f32: wv, ld: k}
					if dtype == backend.F16 {
						w, _ = halfMatrix(wv, k)
					}
					be := New()
					be.workers = 2
					nan := func(size int) []float32 {
						v := make([]float32, size)
						for i := range v {
							v[i] = float32(math.NaN())
						}
						return v
					}
					// The reference: the listed rows gathered into a
					// GEMM of their own (the package's kernel choice
					// depends on the row count, so the default case must
					// compare against the same count), put back in place.
					gathered := func(run func(xs []float32, count int) (y, g []float32)) (y, g []float32) {
						y, g = nan(m*n), nan(m*n/2)
						list := rows
						if list == nil {
							list = perm // every row, in some order
						}
						xs := make([]float32, len(list)*k)
						for i, r := range list {
							copy(xs[i*k:], x[r*k:r*k+k])
						}
						ys, gs := run(xs, len(list))
						for i, r := range list {
							copy(y[r*n:r*n+n], ys[i*n:])
							copy(g[r*n/2:r*n/2+n/2], gs[i*n/2:])
						}
						return y, g
					}
					full, _ := gathered(func(xs []float32, count int) ([]float32, []float32) {
						ys := nan(count * n)
						be.gemmW(ys, xs, w, bias, count, n, k, backend.GELU)
						return ys, nan(count * n / 2)
					})
					got := nan(m * n)
					be.gemmRows(got, x, w, bias, rows, m, n, k, backend.GELU)
					checkRows(t, "linear", got, full, rows, m, n)

					// GeGLU over n = 70 columns (35 value, 35 gate), no bias.
					fullY, fullG := gathered(func(xs []float32, count int) ([]float32, []float32) {
						op := &linearOp{dst: &tensor{rows: count, cols: n, data: nan(count * n)}, x: xs, w: w, m: count, n: n, k: k}
						gs := nan(count * n / 2)
						be.gemmGeGLU(op, gs)
						return op.dst.data, gs
					})
					op := &linearOp{dst: &tensor{rows: m, cols: n, data: nan(m * n)}, x: x, w: w, m: m, n: n, k: k}
					gotG := nan(m * n / 2)
					be.gemmGeGLURows(op, gotG, rows)
					checkRows(t, "geglu projection", op.dst.data, fullY, rows, m, n)
					checkRows(t, "geglu", gotG, fullG, rows, m, n/2)
				})
			}
		}
	}
}

// checkRows: the listed rows of got (all for nil) equal want bit for bit,
// the others are still the NaN they were filled with.
func checkRows(t *testing.T, what string, got, want []float32, rows []int, m, n int) {
	t.Helper()
	listed := make([]bool, m)
	for _, r := range rows {
		listed[r] = true
	}
	for i := range m {
		for j := range n {
			g := got[i*n+j]
			switch {
			case rows == nil || listed[i]:
				if math.Float32bits(g) != math.Float32bits(want[i*n+j]) {
					t.Fatalf("%s: y[%d, %d] = %v, want %v", what, i, j, g, want[i*n+j])
				}
			case !math.IsNaN(float64(g)):
				t.Fatalf("%s: unlisted row %d written (y[%d, %d] = %v)", what, i, i, j, g)
			}
		}
	}
}

// TestOuterKernelStores drives the outer-product micro-kernel directly in
// both store modes on every ragged block (1–8 rows, 1–48 columns, K of
// every unroll remainder), against outerBlockGo bit for bit, and checks
// that nothing around the stored block is written: row-major with a row
// stride wider than the block, transposed through offsets that interleave
// the block with untouched floats.
func TestOuterKernelStores(t *testing.T) {
	kern := simdGemmOuter()
	if kern == nil {
		t.Skip("no SIMD outer-product kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(45, 46))
	for _, k := range []int{1, 2, 3, 4, 5, 8, 17} {
		a := randomValues(rng, outerMR*k)
		b := randomValues(rng, k*outerNR)
		var ap [outerMR]*float32
		for r := range ap {
			ap[r] = &a[r*k]
		}
		for rows := 1; rows <= outerMR; rows++ {
			for _, cols := range []int{1, 7, 15, 16, 17, 31, 33, 47, 48} {
				for _, transposed := range []bool{false, true} {
					const ldc = 61
					size := ldc * outerNR * 2
					var idx *int32
					offs := make([]int32, outerNR)
					if transposed {
						for j := range offs {
							offs[j] = int32((2*j + 1) * ldc) // every other row of a wider matrix
						}
						idx = &offs[0]
					}
					got, want := make([]float32, size), make([]float32, size)
					for i := range got {
						got[i] = float32(math.NaN())
						want[i] = got[i]
					}
					// The prefetch pointer runs past b (prefetches never
					// fault) and must not change a bit.
					kern(&ap, &b[0], k, &got[0], ldc, rows, cols, idx, (*byte)(unsafe.Pointer(&b[len(b)/2])), (*byte)(unsafe.Pointer(&b[0])))
					outerBlockGo(&ap, &b[0], k, &want[0], ldc, rows, cols, idx, nil, nil)
					if !bitsEqual(got, want) {
						t.Fatalf("k=%d rows=%d cols=%d transposed=%v: the stored block or its surroundings differ", k, rows, cols, transposed)
					}
				}
			}
		}
	}
}

// TestOuterGroupEpilogues: with one Xᵀ tile per group (outerL2Bytes shrunk,
// as at K ≈ 2,000 and more), a unit's epilogues run once per group and its
// kernel calls prefetch the next group's tiles; the answers must be those
// of one group for the whole unit bit for bit (the rounding does not
// depend on the grouping), every listed row written and no other: Linear
// with bias and GELU, the fused GeGLU, and the fused residual add, F32 and
// F16 weights, all rows and a scattered subset. The small K of the other
// tests puts every token in one group, so without this the per-group path
// would be tested only at full size.
func TestOuterGroupEpilogues(t *testing.T) {
	const m, n, k = 150, 74, 70 // 4 tiles, the last of 6 tokens
	rng := rand.New(rand.NewPCG(45, 46))
	x, bias, a := randomValues(rng, m*k), randomValues(rng, n), randomValues(rng, m*n)
	subsets := map[string][]int{"all": nil, "scattered": rng.Perm(m)[:101]}
	nan := func(size int) []float32 {
		v := make([]float32, size)
		for i := range v {
			v[i] = float32(math.NaN())
		}
		return v
	}
	for _, kernel := range outerKernels(t) {
		for _, dtype := range []backend.DType{backend.F32, backend.F16} {
			for name, rows := range subsets {
				t.Run(fmt.Sprintf("%s/%v/%s", kernel.name, dtype, name), func(t *testing.T) {
					useGemmKernel(t, kernel)
					w := matrix{f32: randomValues(rng, n*k), ld: k}
					if dtype == backend.F16 {
						w, _ = halfMatrix(w.f32, k)
					}
					be := New()
					be.workers = 2
					run := func(groupBytes int) (lin, proj, glu, res []float32) {
						saved := outerL2Bytes
						outerL2Bytes = groupBytes
						defer func() { outerL2Bytes = saved }()
						lin = nan(m * n)
						be.gemmRows(lin, x, w, bias, rows, m, n, k, backend.GELU)
						op := &linearOp{dst: &tensor{rows: m, cols: n, data: nan(m * n)}, x: x, w: w, m: m, n: n, k: k}
						glu = nan(m * n / 2)
						be.gemmGeGLURows(op, glu, rows)
						proj = op.dst.data
						op = &linearOp{dst: &tensor{rows: m, cols: n, data: nan(m * n)}, x: x, w: w, m: m, n: n, k: k}
						res = nan(m * n)
						be.gemmResidual(op, res, a)
						return lin, proj, glu, res
					}
					lin, proj, glu, res := run(4 * k * outerNR)
					lin1, proj1, glu1, res1 := run(1 << 30)
					for _, c := range []struct {
						what      string
						got, want []float32
						rows      []int
						n         int
					}{{"linear", lin, lin1, rows, n}, {"geglu projection", proj, proj1, rows, n}, {"geglu", glu, glu1, rows, n / 2}, {"residual", res, res1, nil, n}} {
						for i, v := range c.want {
							if listed := c.rows == nil || slices.Contains(c.rows, i/c.n); listed && math.IsNaN(float64(v)) {
								t.Fatalf("%s: one group left y[%d, %d] unwritten", c.what, i/c.n, i%c.n)
							}
						}
						checkRows(t, c.what, c.got, c.want, c.rows, m, c.n)
					}
				})
			}
		}
	}
}

// TestPackTile checks packTile (on AVX-512: transposes for full tiles'
// blocks of 16 k, gathers for the rest) against the definition: dst[kk·48
// + j] = x[rows[j]·ldx + kk] for kk in [k0, k1), 0 past the last token, and
// nothing written outside [k0, k1). Rows come in any order and stride.
func TestPackTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const m, ldx, k = 70, 203, 150
	x := randomValues(rng, m*ldx)
	for _, cols := range []int{outerNR, outerNR - 1, 17, 16, 1} {
		for _, kr := range [][2]int{{0, 64}, {64, 128}, {128, 150}, {3, 19}, {5, 20}, {0, 1}, {0, 150}, {16, 48}} {
			rows := rng.Perm(m)[:cols]
			dst := make([]float32, k*outerNR)
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			packTile(dst, x, ldx, rows, kr[0], kr[1])
			for kk := 0; kk < k; kk++ {
				for j := 0; j < outerNR; j++ {
					got := dst[kk*outerNR+j]
					var want float32
					switch {
					case kk < kr[0] || kk >= kr[1]:
						if !math.IsNaN(float64(got)) {
							t.Fatalf("cols %d, k [%d, %d): wrote k %d token %d", cols, kr[0], kr[1], kk, j)
						}
						continue
					case j < cols:
						want = x[rows[j]*ldx+kk]
					}
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("cols %d, k [%d, %d): k %d token %d = %v, want %v", cols, kr[0], kr[1], kk, j, got, want)
					}
				}
			}
		}
	}
}

// TestOuterFillPrefetchTargets checks where outerFill points each kernel
// call's two prefetch streams, with a kernel that only records them: the
// tile stream (pf) never points into W's stored rows; in the first group of
// a unit of any length, the first call of each block is given the start of
// the next block's stored W rows on the W stream (pfw), after a part's last
// block the next part's first block, and after the last part's last block
// nothing (pfw = pf); no other call, and with noPrefetchNextBlock none, is
// given W's rows.
func TestOuterFillPrefetchTargets(t *testing.T) {
	const k, nrows = 64, 20 // blocks of 8, 8 and 4 rows
	rng := rand.New(rand.NewPCG(47, 48))
	be := New()
	for _, c := range []struct {
		name     string
		tokens   int
		off      bool
		wantNext bool
	}{{"one tile", 40, false, true}, {"two groups", 4 * outerNR, false, true}, {"many groups", 40 * outerNR, false, true}, {"switched off", 40, true, false}} {
		t.Run(c.name, func(t *testing.T) {
			saved, savedL2 := noPrefetchNextBlock, outerL2Bytes
			noPrefetchNextBlock, outerL2Bytes = c.off, 2*k*outerNR*4 // two tiles a group
			defer func() { noPrefetchNextBlock, outerL2Bytes = saved, savedL2 }()
			x := randomValues(rng, c.tokens*k)
			px := be.packX(x, k, k, nil, c.tokens)
			defer px.release()
			var parts [2]outerPart
			stored := [2][]byte{}
			for p := range parts {
				w, _ := halfMatrix(randomValues(rng, nrows*k), k)
				scratch := make([]float32, nrows*k)
				parts[p] = outerPartOf(w, 0, nrows, k, &scratch)
				stored[p] = parts[p].stored
			}
			type call struct {
				part, i0, tile int
				pf, pfw        uintptr
			}
			var calls []call
			var partOf = map[*float32][2]int{}
			for p := range parts {
				for i0 := 0; i0 < nrows; i0 += outerMR {
					partOf[&parts[p].wp[i0*parts[p].ldw]] = [2]int{p, i0}
				}
			}
			tiles := uintptr(unsafe.Pointer(&px.tiles[0]))
			kern := func(a *[outerMR]*float32, b *float32, kk int, cc *float32, ldc, rows, cols int, idx *int32, pf, pfw *byte) {
				pi := partOf[a[0]]
				calls = append(calls, call{pi[0], pi[1], int((uintptr(unsafe.Pointer(b)) - tiles) / uintptr(4*k*outerNR)),
					uintptr(unsafe.Pointer(pf)), uintptr(unsafe.Pointer(pfw))})
			}
			outerFill(kern, px, parts[:], nrows, 0, c.tokens, nil, func(int, int, *outerStaged) {}, nil)
			in := func(p uintptr, b []byte) bool {
				lo := uintptr(unsafe.Pointer(&b[0]))
				return p >= lo && p < lo+uintptr(len(b))
			}
			inW := func(p uintptr) bool { return in(p, stored[0]) || in(p, stored[1]) }
			stride := parts[0].stride
			for _, cl := range calls {
				if inW(cl.pf) {
					t.Fatalf("part %d block %d tile %d: the tile stream points into W's stored rows", cl.part, cl.i0, cl.tile)
				}
				switch {
				case !c.wantNext || cl.tile != 0:
					if inW(cl.pfw) {
						t.Fatalf("part %d block %d tile %d: W stream into W's stored rows", cl.part, cl.i0, cl.tile)
					}
				case cl.i0+outerMR < nrows:
					if want := uintptr(unsafe.Pointer(&stored[cl.part][(cl.i0+outerMR)*stride])); cl.pfw != want {
						t.Fatalf("part %d block %d: W stream at %#x, want the next block's rows at %#x", cl.part, cl.i0, cl.pfw, want)
					}
				case cl.part == 0:
					if want := uintptr(unsafe.Pointer(&stored[1][0])); cl.pfw != want {
						t.Fatalf("part 0's last block: W stream at %#x, want part 1's first rows at %#x", cl.pfw, want)
					}
				default:
					if cl.pfw != cl.pf {
						t.Fatalf("the last block: W stream at %#x, want the tile stream's %#x", cl.pfw, cl.pf)
					}
				}
			}
			if len(calls) == 0 {
				t.Fatal("no kernel calls")
			}
		})
	}
}
