// A chain of GEMMs of few rows in one persistent kernel: the measurement
// behind "could one kernel for the whole encoder beat a kernel a GEMM?"
// (gemm_chain.py runs it against the same chain on cuBLAS; on an H100 it
// took 2.16 times cuBLAS's time: docs/cuda-perf-log.md). Not the
// backend's code: NVRTC compiles this file as it stands.
//
// The grid is T clusters of CL blocks, one block a multiprocessor, all
// resident at once. A GEMM y = x·Wᵀ (x: 96 rows of fp16, k wide; W: n × k)
// splits n over the clusters (tile t takes n8-tiles [t·N8/T, (t+1)·N8/T))
// and k over a cluster's blocks (rank s takes k's 64-wide
// pieces [s·K64/CL, (s+1)·K64/CL)). Each block multiplies its piece on
// tensor cores (mma.sync m16n8k16, float32 sums), the cluster's blocks add
// their float32 products through distributed shared memory, each block a
// share of the rows, and write y as fp16. A grid-wide barrier separates one
// GEMM from the next, which reads the y before it.
//
// With DATAFLOW the grid-wide barrier gives way to a counter a (GEMM,
// tile): a cluster's blocks each add one once their rows of the tile are
// written, and a block of the next GEMM waits only for the tiles that
// cover its piece of k (one or two), so that GEMMs overlap where their
// data allow (every GEMM writes a y of its own: nothing is overwritten).
//
// What a kernel a GEMM cannot do: a block's piece of the next GEMM's
// weight is copied into its shared memory (one bulk copy, counted in by an
// mbarrier) while the block still works on this GEMM and waits at the
// barrier; only x's piece, from L2, is loaded after it.
//
// The weights are stored for this: each block's piece contiguous, rows of
// its k-piece, the 16-byte chunk c of row r at c ^ (r % 8) (so that
// ldmatrix's eight rows fall in distinct banks without padding); x's
// piece lands in shared memory the same way.
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#ifndef CL
#define CL 8 // blocks a cluster: k's pieces (NVRTC -DCL=N: 2, 4 or 8)
#endif
#define WARPS 12    // 3 row groups of 32 × 4 column groups
#define NW 11       // n8-tiles a warp at most (a block's tile over 4 column groups)
#define ROWS 96     // x's rows (93 tokens padded to the m16 tiles)
#define SKIP_MMA 1  // flags: leave out the products
#define SKIP_ADD 2  //        leave out the cluster's adding and y's writes
#define DATAFLOW 4  //        wait for the tiles of y a block reads, not for the whole grid
#define L2AHEAD 8   //        ask L2 for the piece of the GEMM after next (cp.async.bulk.prefetch.L2)

// A phase is a GEMM (kind 0) or only a barrier (kind 1, standing in for a
// step of the encoder that is not a GEMM).
struct Phase {
	const u16* w; // the packed weight
	const u16* x; // fp16 [ROWS][ldx]
	u16* y;       // fp16 [ROWS][ldy]
	int k, n, ldx, ldy;
	int woff;  // bytes: the weight's slot in shared memory
	int gi;    // GEMM index (its mbarrier and parity), -1 for kind 1
	int next;  // the next GEMM's phase, -1 at the end
	int rr;    // rows the cluster adds a round (the products' buffer)
	int kind;
	int pad;
};

// The instruction wrappers below are backend/cuda/kernels.cu's (smem_addr,
// ldsm4a, mma16816, cp_async16a, the cluster and mbarrier ones), written
// again so that this file compiles alone: NVRTC would otherwise build the
// backend's every kernel with it.
__device__ __forceinline__ u32 smem_addr(const void* p) {
	u32 a;
	asm("{\n\t.reg .u64 g;\n\tcvta.to.shared.u64 g, %1;\n\tcvt.u32.u64 %0, g;\n\t}" : "=r"(a) : "l"(p));
	return a;
}
__device__ __forceinline__ void ldsm4(u32* r, u32 a) {
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
		: "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		: "r"(a)
		: "memory");
}
__device__ __forceinline__ void mma(float* c, const u32* a, u32 b0, u32 b1) {
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
		: "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void cp16(u32 s, const void* g) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }
__device__ __forceinline__ u32 ctarank() {
	u32 r;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return r;
}
__device__ __forceinline__ void cluster_sync() {
	asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
__device__ __forceinline__ u32 mapa(u32 a, u32 rank) {
	u32 r;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
	return r;
}
__device__ __forceinline__ float4 ldc4(u32 a) {
	float4 v;
	asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
	return v;
}
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(u32 bar, u32 bytes) {
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try(u32 bar, u32 parity) {
	u32 ok;
	asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
		: "=r"(ok)
		: "r"(bar), "r"(parity)
		: "memory");
	return ok != 0;
}
__device__ __forceinline__ void bulk(u32 dst, const void* src, u32 bytes, u32 bar) {
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst), "l"(src),
		"r"(bytes), "r"(bar)
		: "memory");
}
// A wait that has not ended in two seconds never will (a copy of the wrong
// size, blocks that are not all resident): trap, so that the host sees an
// error instead of a hung GPU.
__device__ __forceinline__ u64 now_ns() {
	u64 t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
__device__ __forceinline__ void give_up(u64 t0) {
	if (now_ns() - t0 > 2000000000ull) asm volatile("trap;");
}
__device__ __forceinline__ u32 pack2(float x, float y) {
	u32 r;
	asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(x), "f"(y));
	return r;
}

// Geometry of block (tile, s) in a GEMM of n × k: its n8-tiles [n0, n1)
// and k's 64-wide pieces [k0, k1); off: its packed piece's first element.
struct Piece {
	int n0, n1, k0, k1;
	long long off;
};
__device__ __forceinline__ Piece piece(int n, int k, int tile, int tiles, int s) {
	Piece p;
	int n8 = n / 8, k64 = k / 64;
	p.n0 = tile * n8 / tiles;
	p.n1 = (tile + 1) * n8 / tiles;
	p.k0 = s * k64 / CL;
	p.k1 = (s + 1) * k64 / CL;
	p.off = (long long)p.n0 * 8 * k + (long long)(p.n1 - p.n0) * 8 * p.k0 * 64;
	return p;
}

// The weight's piece of phase q into its slot: one thread, a bulk copy a
// 32 KB, counted against mbarrier bar.
__device__ void issue_weight(const Phase& q, u32 base, u32 bars, int tile, int tiles, u32 s) {
	Piece p = piece(q.n, q.k, tile, tiles, s);
	u32 bytes = (u32)((p.n1 - p.n0) * 8 * (p.k1 - p.k0) * 64 * 2);
	u32 bar = bars + 8 * (q.gi & 1);
	// The slot was last read by ldmatrix (the generic proxy) two GEMMs
	// ago: order those reads before the bulk copy's writes.
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	mbar_expect(bar, bytes);
	const char* src = (const char*)(q.w + p.off);
	for (u32 o = 0; o < bytes; o += 32768) bulk(base + q.woff + o, src + o, bytes - o < 32768 ? bytes - o : 32768, bar);
}

__device__ __forceinline__ void grid_arrive(u32* ctr) {
	__syncthreads();
	if (threadIdx.x == 0) {
		asm volatile("fence.acq_rel.gpu;" ::: "memory");
		asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(ctr) : "memory");
	}
}
__device__ __forceinline__ void grid_wait(u32* ctr, u32 target) {
	if (threadIdx.x == 0) {
		u32 v;
		u64 t0 = now_ns();
		do {
			give_up(t0);
			asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ctr) : "memory");
		} while (v < target);
		asm volatile("fence.acq_rel.gpu;" ::: "memory");
	}
	__syncthreads();
}

// tile_wait: thread 0 waits until every tile of GEMM phase p (n wide, its
// counters at ctr + p·tiles) that covers columns [c0, c1) has its CL
// blocks' rows; tile_done: this block's rows of tile t of phase p are
// written.
__device__ __forceinline__ void tile_wait(u32* ctr, int p, int n, int tiles, int c0, int c1) {
	if (threadIdx.x == 0) {
		int n8 = n / 8;
		for (int t = 0; t < tiles; t++) {
			int lo = t * n8 / tiles * 8, hi = (t + 1) * n8 / tiles * 8;
			if (hi <= c0 || lo >= c1) continue;
			u32 v;
			u64 t0 = now_ns();
			do {
				give_up(t0);
				asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ctr + p * tiles + t) : "memory");
			} while (v < CL);
		}
		asm volatile("fence.acq_rel.gpu;" ::: "memory");
	}
	__syncthreads();
}
__device__ __forceinline__ void tile_done(u32* ctr, int p, int tiles, int t) {
	__syncthreads();
	if (threadIdx.x == 0) {
		asm volatile("fence.acq_rel.gpu;" ::: "memory");
		asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(ctr + p * tiles + t) : "memory");
	}
}

extern "C" __global__ void __launch_bounds__(WARPS * 32, 1) chain(const Phase* ph, int nph, u32* ctr, int xoff, int flags) {
	extern __shared__ __align__(1024) unsigned char sm[];
	const u32 base = smem_addr(sm), xs = base + xoff;
	float* part = (float*)(sm + xoff); // the products, over x's piece once it is used
	const u32 bars = base + xoff - 16;  // two mbarriers below x's piece
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, tq = lane & 3;
	const int tiles = gridDim.x / CL, tile = blockIdx.x / CL;
	const u32 s = ctarank();
	const int mg = warp >> 2, ng = warp & 3; // rows 32mg.., column group ng
	if (tid == 0) {
		mbar_init(bars, 1);
		mbar_init(bars + 8, 1);
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (tid == 0 && ph[0].kind == 0) issue_weight(ph[0], base, bars, tile, tiles, s);
	for (int p = 0; p < nph; p++) {
		const Phase q = ph[p];
		if (q.kind == 0 && q.next >= 0 && tid == 0) {
			const Phase& nq = ph[q.next];
			issue_weight(nq, base, bars, tile, tiles, s);
			if ((flags & L2AHEAD) && nq.next >= 0) {
				const Phase& fq = ph[nq.next];
				Piece f = piece(fq.n, fq.k, tile, tiles, s);
				u32 bytes = (u32)((f.n1 - f.n0) * 8 * (f.k1 - f.k0) * 64 * 2);
				const char* src = (const char*)(fq.w + f.off);
				for (u32 o = 0; o < bytes; o += 32768)
					asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src + o), "r"(bytes - o < 32768 ? bytes - o : 32768)
						: "memory");
			}
		}
		Piece pc = piece(q.n, q.k, tile, tiles, s);
		if (p > 0) {
			if (flags & DATAFLOW)
				tile_wait(ctr, p - 1, ph[p - 1].n, tiles, pc.k0 * 64, pc.k1 * 64);
			else
				grid_wait(ctr, (u32)p * gridDim.x);
		}
		if (q.kind == 0) {
			const int ks = (pc.k1 - pc.k0) * 64, chunks = ks / 8, rowb = ks * 2;
			// x's piece: 96 rows of ks, chunk c of row r at c ^ (r % 8).
			for (int i = tid; i < ROWS * chunks; i += WARPS * 32) {
				int r = i / chunks, c = i - r * chunks;
				cp16(xs + r * rowb + ((c ^ (r & 7)) << 4), q.x + (long long)r * q.ldx + pc.k0 * 64 + c * 8);
			}
			cp_wait();
			const u32 bar = bars + 8 * (q.gi & 1), parity = (q.gi >> 1) & 1;
			for (u64 t0 = now_ns(); !mbar_try(bar, parity);) give_up(t0);
			__syncthreads();
			const int tn = pc.n1 - pc.n0;           // the block's n8-tiles
			const int j0 = ng * tn / 4, cw = (ng + 1) * tn / 4 - j0; // this warp's
			float acc[2][NW][4];
#pragma unroll
			for (int m = 0; m < 2; m++)
#pragma unroll
				for (int j = 0; j < NW; j++) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.0f;
			if (!(flags & SKIP_MMA)) {
				// Lane l gives row (l % 8) of matrix l / 8; every row this
				// lane names is ≡ l (mod 8), so its swizzle is l % 8.
				const int sw = lane & 7, mi = lane >> 3;
				u32 arow[2], brow[NW / 2 + 1];
#pragma unroll
				for (int m = 0; m < 2; m++) arow[m] = xs + (32 * mg + 16 * m + (mi & 1) * 8 + sw) * rowb;
#pragma unroll
				for (int jj = 0; jj < NW / 2 + 1; jj++) {
					int j = 2 * jj + (mi >> 1);
					j = j < cw ? j : cw - 1; // past the warp's tiles: read one it has (not used)
					brow[jj] = base + q.woff + ((j0 + j) * 8 + sw) * rowb;
				}
				for (int kk = 0; kk < ks / 16; kk++) {
					u32 a[2][4];
#pragma unroll
					for (int m = 0; m < 2; m++) ldsm4(a[m], arow[m] + (((2 * kk + (mi >> 1)) ^ sw) << 4));
#pragma unroll
					for (int jj = 0; jj < NW / 2 + 1; jj++) {
						if (2 * jj >= cw) break;
						u32 b[4];
						ldsm4(b, brow[jj] + (((2 * kk + (mi & 1)) ^ sw) << 4));
#pragma unroll
						for (int m = 0; m < 2; m++) {
							mma(acc[m][2 * jj], a[m], b[0], b[1]);
							if (2 * jj + 1 < cw) mma(acc[m][2 * jj + 1], a[m], b[2], b[3]);
						}
					}
				}
			}
			if (!(flags & SKIP_ADD)) {
				const int ntc = tn * 8, stride = ntc + 4; // floats; +4: a fragment's 8 rows in distinct banks
				for (int r0 = 0; r0 < ROWS; r0 += q.rr) {
					__syncthreads(); // x's piece (round 0) or the last round's products are read
#pragma unroll
					for (int m = 0; m < 2; m++)
#pragma unroll
						for (int h = 0; h < 2; h++) {
							int row = 32 * mg + 16 * m + 8 * h + g - r0;
							if (row < 0 || row >= q.rr) continue;
#pragma unroll
							for (int j = 0; j < NW; j++)
								if (j < cw)
									*(float2*)(part + row * stride + (j0 + j) * 8 + 2 * tq) =
										make_float2(acc[m][j][2 * h], acc[m][j][2 * h + 1]);
						}
					cluster_sync();
					// This block adds rows [s·rr/CL, (s+1)·rr/CL) of the round
					// over the cluster's blocks, in rank order.
					const int per = q.rr / CL, c4 = ntc / 4;
					for (int i = tid; i < per * c4; i += WARPS * 32) {
						int rl = i / c4, c = i - rl * c4, row = s * per + rl;
						u32 a = smem_addr(part + row * stride + 4 * c);
						float4 t = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
						for (u32 b = 0; b < CL; b++) {
							float4 v = ldc4(mapa(a, b));
							t.x += v.x;
							t.y += v.y;
							t.z += v.z;
							t.w += v.w;
						}
						*(uint2*)(q.y + (long long)(r0 + row) * q.ldy + pc.n0 * 8 + 4 * c) = make_uint2(pack2(t.x, t.y), pack2(t.z, t.w));
					}
					cluster_sync(); // every block's products read before they are overwritten
				}
			}
		}
		if (flags & DATAFLOW)
			tile_done(ctr, p, tiles, tile);
		else
			grid_arrive(ctr);
	}
}
