// The cuda backend's kernels, compiled at run time by NVRTC for the GPU's
// own architecture. Tensors are row-major float32 (fp16/bf16 only as GEMM
// operands, stored as raw 16-bit words so that no NVIDIA header is needed).
// Per-row metadata (positions, batch-row starts and lengths) comes from
// device arrays rather than launch parameters, so that one captured CUDA
// graph serves every request of the same shapes.

typedef unsigned short u16;
typedef unsigned long long u64;

#define ACT_IDENTITY 0
#define ACT_GELU 1
#define ACT_RELU 2

__device__ __forceinline__ float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

// block_sum and block_max reduce over the whole block (a multiple of 32
// threads) through sh (32 floats); every thread gets the result.
__device__ float block_sum(float v, float* sh) {
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_sum(v);
	__syncthreads();
	if (lane == 0) sh[w] = v;
	__syncthreads();
	v = lane < nw ? sh[lane] : 0.0f;
	v = warp_sum(v);
	return v;
}

__device__ float block_max(float v, float* sh) {
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0) sh[w] = v;
	__syncthreads();
	v = lane < nw ? sh[lane] : -3.402823466e38f;
	v = warp_max(v);
	return v;
}

// gelu is the exact erf form, as PyTorch's default "gelu", written with
// erfc so that the negative tail does not cancel, in double (as the cpu
// backend): float32 erfc of a rounded argument is off by several ulps in
// the tail, and H100/H200-class GPUs have the double rate to spare here.
__device__ __forceinline__ float gelu(float x) {
	double v = (double)x;
	return (float)(0.5 * v * erfc(-v * 0.70710678118654752));
}

__device__ __forceinline__ float activate(float x, int act) {
	if (act == ACT_GELU) return gelu(x);
	if (act == ACT_RELU) return x > 0.0f ? x : 0.0f;
	return x;
}

// to16 rounds v to fp16 (kind 1 or 3) or bf16 (kind 2), nearest even.
__device__ __forceinline__ u16 to16(float v, int kind) {
	u16 h;
	if (kind == 2)
		asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
	else
		asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
	return h;
}

// store16 writes v as a 16-bit GEMM operand at h[i]; kind 3 (FP16X2)
// also writes the fp16 rounding of what the first term missed at h[i+lo],
// so that two GEMMs on the terms give v to about 21 bits.
__device__ __forceinline__ void store16(u16* h, long long i, long long lo, float v, int kind) {
	u16 a = to16(v, kind);
	h[i] = a;
	if (kind == 3) {
		float back;
		asm("cvt.f32.f16 %0, %1;" : "=f"(back) : "h"(a));
		h[i + lo] = to16(v - back, 1);
	}
}

extern "C" __global__ void gather_rows(float* dst, const float* table, const int* index, int cols) {
	const float* src = table + (long long)index[blockIdx.x] * cols;
	float* out = dst + (long long)blockIdx.x * cols;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = src[c];
}

// layer_norm: one block a row; two passes over the row (mean, then the
// biased variance around it), as the reference computes them.
// Producers of GEMM inputs (layer_norm, geglu, attention) also write a
// 16-bit copy h of their output when h is set (kind: see to16), so that the
// GEMM that reads it needs no conversion of its own.
extern "C" __global__ void layer_norm(float* dst, const float* x, const float* w, const float* b, int cols, float eps, u16* h,
	int kind, long long lo) {
	__shared__ float sh[32];
	const float* row = x + (long long)blockIdx.x * cols;
	float* out = dst + (long long)blockIdx.x * cols;
	float s = 0.0f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) s += row[c];
	float mean = block_sum(s, sh) / cols;
	float v = 0.0f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) {
		float d = row[c] - mean;
		v += d * d;
	}
	float var = block_sum(v, sh) / cols;
	float inv = 1.0f / sqrtf(var + eps);
	for (int c = threadIdx.x; c < cols; c += blockDim.x) {
		float y = (row[c] - mean) * inv * w[c];
		if (b) y += b[c];
		out[c] = y;
		if (h) store16(h, (long long)blockIdx.x * cols + c, lo, y, kind);
	}
}

extern "C" __global__ void bias_act(float* y, const float* bias, long long n, int cols, int act) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float v = y[i];
		if (bias) v += bias[i % cols];
		y[i] = activate(v, act);
	}
}

extern "C" __global__ void add(float* dst, const float* a, const float* b, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		dst[i] = a[i] + b[i];
}

extern "C" __global__ void act_map(float* dst, const float* x, long long n, int act) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		dst[i] = activate(x[i], act);
}

// geglu's GELU is gelu (double) in fp32 runs and the float32 erfc form when
// its output feeds 16-bit GEMM operands anyway (fast != 0).
extern "C" __global__ void geglu(float* dst, const float* x, long long rows, int inner, u16* h, int kind, long long lo, int fast) {
	long long n = rows * inner;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		long long r = i / inner;
		int c = (int)(i - r * inner);
		const float* in = x + r * 2 * inner;
		float v = in[c];
		float g = fast ? 0.5f * v * erfcf(-v * 0.70710678118654752f) : gelu(v);
		float y = g * in[inner + c];
		dst[i] = y;
		if (h) store16(h, i, lo, y, kind);
	}
}

extern "C" __global__ void softmax_rows(float* dst, const float* x, int cols) {
	__shared__ float sh[32];
	const float* row = x + (long long)blockIdx.x * cols;
	float* out = dst + (long long)blockIdx.x * cols;
	float m = -3.402823466e38f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
	m = block_max(m, sh);
	float s = 0.0f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
	s = block_sum(s, sh);
	float inv = 1.0f / s;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) * inv;
}

// rope rotates q and k of row blockIdx.x in place; table holds, for each
// position, cos of the Dh/2 angles then their sin (computed on the host as
// the cpu backend does); pos[r] is the row's position.
extern "C" __global__ void rope(float* qkv, const float* table, const int* pos, int heads, int headDim) {
	int half = headDim / 2, width = heads * headDim;
	float* row = qkv + (long long)blockIdx.x * 3 * width;
	const float* cs = table + (long long)pos[blockIdx.x] * headDim;
	for (int t = threadIdx.x; t < 2 * heads * half; t += blockDim.x) {
		int part = t / (heads * half), rest = t - part * heads * half;
		int h = rest / half, j = rest - h * half;
		float* x = row + part * width + h * headDim;
		float c = cs[j], s = cs[half + j];
		float x0 = x[j], x1 = x[j + half];
		x[j] = x0 * c - x1 * s;
		x[j + half] = x1 * c + x0 * s;
	}
}

// attention: one block per (query row, head). meta holds three ints per
// row: the first row of its batch row, the batch row's real length and the
// row's position in it. Scores live in dynamic shared memory (window
// floats), then the query, then a reduction area of blockDim floats.
extern "C" __global__ void attention(float* dst, const float* qkv, const int* meta, int heads, int headDim, float scale,
	int sliding, int radius, int window, u16* hout, int kind, long long hlo) {
	extern __shared__ float smem[];
	__shared__ float sh[32];
	float* sc = smem;
	float* q = smem + window;
	float* red = q + headDim;
	int r = blockIdx.x, h = blockIdx.y, width = heads * headDim;
	int start = meta[3 * r], n = meta[3 * r + 1], i = meta[3 * r + 2];
	float* out = dst + (long long)r * width + h * headDim;
	long long ho = (long long)r * width + h * headDim;
	if (i >= n) {
		for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
			out[d] = 0.0f;
			if (hout) store16(hout, ho + d, hlo, 0.0f, kind);
		}
		return;
	}
	const float* base = qkv + (long long)start * 3 * width + h * headDim;
	for (int d = threadIdx.x; d < headDim; d += blockDim.x) q[d] = qkv[(long long)r * 3 * width + h * headDim + d];
	int lo = 0, hi = n;
	if (sliding) {
		lo = max(0, i - radius);
		hi = min(n, i + radius + 1);
	}
	int cnt = hi - lo;
	__syncthreads();
	// One warp per key: lanes split the head dimension.
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	for (int j = warp; j < cnt; j += nw) {
		const float* k = base + (long long)(lo + j) * 3 * width + width;
		float dot = 0.0f;
		for (int d = lane; d < headDim; d += 32) dot += q[d] * k[d];
		dot = warp_sum(dot);
		if (lane == 0) sc[j] = dot * scale;
	}
	__syncthreads();
	float m = -3.402823466e38f;
	for (int j = threadIdx.x; j < cnt; j += blockDim.x) m = fmaxf(m, sc[j]);
	m = block_max(m, sh);
	float s = 0.0f;
	for (int j = threadIdx.x; j < cnt; j += blockDim.x) {
		float e = expf(sc[j] - m);
		sc[j] = e;
		s += e;
	}
	s = block_sum(s, sh);
	__syncthreads();
	float inv = 1.0f / s;
	const float* v = base + 2 * width;
	if (headDim <= (int)blockDim.x) {
		int parts = blockDim.x / headDim, d = threadIdx.x % headDim, part = threadIdx.x / headDim;
		if (part < parts) {
			float acc = 0.0f;
			for (int j = part; j < cnt; j += parts) acc += sc[j] * v[(long long)(lo + j) * 3 * width + d];
			red[part * headDim + d] = acc;
		}
		__syncthreads();
		if (threadIdx.x < headDim) {
			float acc = 0.0f;
			for (int p = 0; p < parts; p++) acc += red[p * headDim + threadIdx.x];
			out[threadIdx.x] = acc * inv;
			if (hout) store16(hout, ho + threadIdx.x, hlo, acc * inv, kind);
		}
	} else {
		for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
			float acc = 0.0f;
			for (int j = 0; j < cnt; j++) acc += sc[j] * v[(long long)(lo + j) * 3 * width + d];
			out[d] = acc * inv;
			if (hout) store16(hout, ho + d, hlo, acc * inv, kind);
		}
	}
}

// act_features: one block per batch row b; meta holds, per row, the offset
// of its first logit and its count. The statistics are computed in double,
// as the reference states them.
extern "C" __global__ void act_features(float* dst, const float* cls, const float* logits, const int* meta, int d) {
	int b = blockIdx.x;
	float* out = dst + (long long)b * (d + 4);
	for (int c = threadIdx.x; c < d; c += blockDim.x) out[c] = cls[(long long)b * d + c];
	if (threadIdx.x != 0) return;
	const float* z = logits + meta[2 * b];
	int k = meta[2 * b + 1];
	double m = -1.0e300;
	for (int i = 0; i < k; i++) m = fmax(m, (double)z[i]);
	double s = 0.0;
	for (int i = 0; i < k; i++) s += exp((double)z[i] - m);
	double top1 = 0.0, top2 = 0.0, ent = 0.0;
	for (int i = 0; i < k; i++) {
		double p = exp((double)z[i] - m) / s;
		ent -= p * log(fmax(p, 1e-9));
		if (p > top1) {
			top2 = top1;
			top1 = p;
		} else if (p > top2) {
			top2 = p;
		}
	}
	double kk = (double)max(2, k);
	out[d] = (float)top1;
	out[d + 1] = (float)(top1 - top2);
	out[d + 2] = (float)(ent / log(kk));
	out[d + 3] = (float)(kk / 255.0);
}

// to_16 rounds float32 GEMM operands to 16 bits (kind: see store16; the
// second term of kind 3 goes n elements after the first).
extern "C" __global__ void to_16(u16* dst, const float* x, long long n, int kind) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		store16(dst, i, n, x[i], kind);
}

// pack_out copies the tensors a request reads into one area, so that one
// device-to-host copy brings them all back. table holds, per tensor, its
// address, its element count and its offset (elements) in out.
extern "C" __global__ void pack_out(float* out, const u64* table) {
	const float* src = (const float*)table[3 * blockIdx.x];
	long long n = (long long)table[3 * blockIdx.x + 1];
	float* o = out + table[3 * blockIdx.x + 2];
	for (long long i = threadIdx.x; i < n; i += blockDim.x) o[i] = src[i];
}

// attn_tiled: flash-style attention for head dims of 32, 64 or 128. One
// block of 8 warps per (tile of QT queries of one batch row, head): the
// tile's keys stream through shared memory KC at a time, coalesced, and
// each warp keeps an online softmax for its queries (lanes own keys for the
// scores and head dimensions for the output). tiles holds five ints per
// tile: its first row, the batch row's first row and real length, the
// tile's first position and its query count. Queries at or past the real
// length are padding: their output is zero.
#define QT 16
template <int DH>
__device__ void attn_tiled(float* dst, const float* qkv, const int* tiles, int heads, float scale, int sliding, int radius,
	u16* hout, int kind, long long hlo) {
	const int KC = DH <= 64 ? 64 : 32, NC = DH / 32, NK = KC / 32;
	__shared__ float K[KC][DH + 1];
	__shared__ __align__(16) float V[KC][DH];
	__shared__ __align__(16) float Q[QT][DH];
	const int* t = tiles + 5 * blockIdx.x;
	int r0 = t[0], start = t[1], n = t[2], pos0 = t[3], nq = t[4];
	int h = blockIdx.y, width = heads * DH, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (int i = threadIdx.x; i < nq * DH / 4; i += blockDim.x) {
		int qi = i / (DH / 4), d = (i - qi * (DH / 4)) * 4;
		*(float4*)&Q[qi][d] = *(const float4*)(qkv + (long long)(r0 + qi) * 3 * width + h * DH + d);
	}
	int klo = 0, khi = n;
	if (sliding) {
		klo = max(0, pos0 - radius);
		khi = min(n, pos0 + nq - 1 + radius + 1);
	}
	float m[QT / 8], l[QT / 8], acc[QT / 8][NC];
	for (int a = 0; a < QT / 8; a++) {
		m[a] = -3.402823466e38f;
		l[a] = 0.0f;
		for (int c = 0; c < NC; c++) acc[a][c] = 0.0f;
	}
	for (int kb = klo; kb < khi; kb += KC) {
		__syncthreads();
		// float4 loads, all issued before any is used: the loads' latency,
		// not their bandwidth, bounds this loop.
#pragma unroll
		for (int i0 = 0; i0 < KC * DH / 4; i0 += 256) {
			int i = i0 + threadIdx.x;
			int key = i / (DH / 4), d = (i - key * (DH / 4)) * 4, g = kb + key;
			float4 kv = make_float4(0.0f, 0.0f, 0.0f, 0.0f), vv = kv;
			if (g < khi) {
				const float* row = qkv + (long long)(start + g) * 3 * width + h * DH + d;
				kv = *(const float4*)(row + width);
				vv = *(const float4*)(row + 2 * width);
			}
			K[key][d] = kv.x;
			K[key][d + 1] = kv.y;
			K[key][d + 2] = kv.z;
			K[key][d + 3] = kv.w;
			*(float4*)&V[key][d] = vv;
		}
		__syncthreads();
		for (int a = 0; a < QT / 8; a++) {
			int qi = warp + 8 * a, pos = pos0 + qi;
			if (qi >= nq || pos >= n) continue;
			int lo = 0, hi = n;
			if (sliding) {
				lo = max(0, pos - radius);
				hi = min(n, pos + radius + 1);
			}
			float s[NK];
			bool ok[NK];
			float cmax = -3.402823466e38f;
			for (int kk = 0; kk < NK; kk++) {
				int key = lane + 32 * kk, g = kb + key;
				ok[kk] = g >= lo && g < hi;
				float dot = 0.0f;
				for (int d = 0; d < DH; d++) dot += Q[qi][d] * K[key][d];
				s[kk] = dot * scale;
				if (ok[kk]) cmax = fmaxf(cmax, s[kk]);
			}
			cmax = warp_max(cmax);
			float mn = fmaxf(m[a], cmax);
			float corr = expf(m[a] - mn);
			float p[NK], ps = 0.0f;
			for (int kk = 0; kk < NK; kk++) {
				p[kk] = ok[kk] ? expf(s[kk] - mn) : 0.0f;
				ps += p[kk];
			}
			l[a] = l[a] * corr + warp_sum(ps);
			m[a] = mn;
			for (int c = 0; c < NC; c++) acc[a][c] *= corr;
			for (int kk = 0; kk < NK; kk++) {
				for (int j = 0; j < 32; j++) {
					float pj = __shfl_sync(0xffffffffu, p[kk], j);
					for (int c = 0; c < NC; c++) acc[a][c] += pj * V[32 * kk + j][lane + 32 * c];
				}
			}
		}
	}
	for (int a = 0; a < QT / 8; a++) {
		int qi = warp + 8 * a, pos = pos0 + qi;
		if (qi >= nq) continue;
		long long o = (long long)(r0 + qi) * width + h * DH;
		for (int c = 0; c < NC; c++) {
			float y = pos < n ? acc[a][c] / l[a] : 0.0f;
			dst[o + lane + 32 * c] = y;
			if (hout) store16(hout, o + lane + 32 * c, hlo, y, kind);
		}
	}
}

extern "C" __global__ void attention32(float* dst, const float* qkv, const int* tiles, int heads, float scale, int sliding,
	int radius, u16* hout, int kind, long long hlo) {
	attn_tiled<32>(dst, qkv, tiles, heads, scale, sliding, radius, hout, kind, hlo);
}

extern "C" __global__ void attention64(float* dst, const float* qkv, const int* tiles, int heads, float scale, int sliding,
	int radius, u16* hout, int kind, long long hlo) {
	attn_tiled<64>(dst, qkv, tiles, heads, scale, sliding, radius, hout, kind, hlo);
}

extern "C" __global__ void attention128(float* dst, const float* qkv, const int* tiles, int heads, float scale, int sliding,
	int radius, u16* hout, int kind, long long hlo) {
	attn_tiled<128>(dst, qkv, tiles, heads, scale, sliding, radius, hout, kind, hlo);
}
