// fakecublaslt.cpp: the cuBLASLt entry points the cuda backend loads
// (cublaslt.go: loadCUBLASLt), on the kernel emulator. It is part of
// fakecuda.cpp's unit (included at its end): its device memory, streams,
// captures, the sticky error and cuemu_skip_work are the driver's. The
// library is found as cuBLASLt through a libcublasLt.so link beside
// libcuemu.so (emu_internal_test.go), which the loader resolves to this
// same library, so that both see the one emulated GPU.
//
// The semantics are cublasLt.h's (CUDA 12 and 13; the enum values are the
// header's, as cublaslt.go's const block lists them):
//
//   - cublasLtMatmul is D = epilogue(alpha·op(A)·op(B) + beta·C), column-
//     major, per batch, for fp16 or bf16 A and B (or fp32), C and D of one
//     type, fp32 or A's, CUBLAS_COMPUTE_32F with fp32 alpha and beta read
//     from the host when the call is issued (CUBLASLT_POINTER_MODE_HOST).
//     As on cuBLAS, beta 0 reads no C. The products accumulate in float32
//     in k order and D is rounded once, at the end.
//   - Epilogues DEFAULT, RELU, BIAS and RELU_BIAS: "Bias vector length must
//     match matrix D rows ... broadcasted to all columns and added before
//     applying final postprocessing"; its type is CUBLASLT_MATMUL_DESC_
//     BIAS_DATA_TYPE, by default D's.
//   - A batch (CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, the same in every
//     layout) moves each matrix by its STRIDED_BATCH_OFFSET elements, 0 for
//     one that does not move.
//   - An attribute set with a size that is not its type's, or an attribute
//     this library does not know, is CUBLAS_STATUS_INVALID_VALUE; so is a
//     problem whose layouts disagree.
//   - The heuristic (cublasLtMatmulAlgoGetHeuristic) offers a few distinct
//     algorithms, best guess first, each assuming the alignments the
//     preference allows (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, 256
//     by default; the leading dimensions, which it sees, may lower them)
//     and the bias pointer's; one of them split in two along k where the
//     preference's reduction schemes allow one. A call whose pointers (or
//     batch strides) are less aligned than its algorithm assumed is refused
//     (CUBLAS_STATUS_NOT_SUPPORTED) rather than misread, as is anything
//     this library does not implement (other epilogues, pointer modes,
//     orders, types).
//   - Split K (CUBLASLT_ALGO_CONFIG_SPLITK_NUM, REDUCTION_SCHEME) computes
//     each part's sum in float32 and meets them as the scheme says:
//     COMPUTE_TYPE in float32 in the workspace, OUTPUT_TYPE rounded to D's
//     type in the workspace, INPLACE added into D in D's type. The
//     workspace must hold what cublasLtMatmulAlgoCheck reports, or the call
//     is CUBLAS_STATUS_INVALID_VALUE.
//
// Every call on an algorithm checks it is one of this library's: a
// cublasLtMatmulAlgo_t from elsewhere (or for other types) is refused.
// With CUEMU_TRACE set, each GEMM's shape, algorithm and time go to stderr
// as it runs.

namespace fake {

// cuBLASLt's enum values (cublasLt.h).
enum : int {
	LT_DESC_COMPUTE_TYPE = 0,
	LT_DESC_SCALE_TYPE = 1,
	LT_DESC_POINTER_MODE = 2,
	LT_DESC_TRANSA = 3,
	LT_DESC_TRANSB = 4,
	LT_DESC_TRANSC = 5,
	LT_DESC_EPILOGUE = 7,
	LT_DESC_BIAS_POINTER = 8,
	LT_DESC_BIAS_BATCH_STRIDE = 10,
	LT_DESC_SM_COUNT_TARGET = 15,
	LT_DESC_BIAS_DATA_TYPE = 26,

	LT_LAYOUT_TYPE = 0,
	LT_LAYOUT_ORDER = 1,
	LT_LAYOUT_ROWS = 2,
	LT_LAYOUT_COLS = 3,
	LT_LAYOUT_LD = 4,
	LT_LAYOUT_BATCH_COUNT = 5,
	LT_LAYOUT_BATCH_OFFSET = 6,
	LT_LAYOUT_PLANE_OFFSET = 7,

	LT_PREF_SEARCH_MODE = 0,
	LT_PREF_MAX_WORKSPACE = 1,
	LT_PREF_REDUCTION_MASK = 3,
	LT_PREF_ALIGN_A = 5, // B, C, D: 6, 7, 8
	LT_PREF_MAX_WAVES = 9,
	LT_PREF_IMPL_MASK = 12,

	LT_CAP_SPLITK = 0,
	LT_CAP_REDUCTION_MASK = 1,
	LT_CAP_CTA_SWIZZLING = 2,
	LT_CAP_STRIDED_BATCH = 3,
	LT_CAP_OUT_OF_PLACE = 4,
	LT_CAP_POINTER_MODE_MASK = 11,
	LT_CAP_EPILOGUE_MASK = 12,
	LT_CAP_ALIGN_A = 16, // B, C, D: 17, 18, 19

	LT_CONFIG_ID = 0,
	LT_CONFIG_TILE_ID = 1,
	LT_CONFIG_SPLITK = 2,
	LT_CONFIG_REDUCTION = 3,
	LT_CONFIG_CTA_SWIZZLING = 4,

	LT_REDUCTION_NONE = 0,
	LT_REDUCTION_INPLACE = 1,
	LT_REDUCTION_COMPUTE = 2,
	LT_REDUCTION_OUTPUT = 4,
	LT_REDUCTION_MASK = 7,

	LT_EPILOGUE_DEFAULT = 1,
	LT_EPILOGUE_RELU = 2,
	LT_EPILOGUE_BIAS = 4,
	LT_EPILOGUE_RELU_BIAS = 6,
};

struct LtHandle {
	int unused;
};
std::set<LtHandle*> ltHandles;

struct LtDesc {
	int32_t compute, scale;
	int32_t pointerMode = 0;
	int32_t transa = 0, transb = 0, transc = 0;
	uint32_t epilogue = LT_EPILOGUE_DEFAULT;
	u64 bias = 0;
	int64_t biasStride = 0;
	int32_t smTarget = 0;
	int32_t biasType = -1; // D's
};
std::set<LtDesc*> ltDescs;

struct LtLayout {
	uint32_t type;
	int32_t order = 0; // CUBLASLT_ORDER_COL
	u64 rows, cols;
	int64_t ld;
	int32_t batch = 1;
	int64_t stride = 0, plane = 0;
};
std::set<LtLayout*> ltLayouts;

struct LtPref {
	uint32_t search = 0;
	u64 maxWorkspace = 0;
	uint32_t reductionMask = LT_REDUCTION_MASK;
	uint32_t align[4] = {256, 256, 256, 256};
	float maxWaves = 0;
	u64 implMask = ~0ull;
};
std::set<LtPref*> ltPrefs;

// handOut records obj, made by a Create call, among the live objects of its
// kind and gives it to the caller; takeBack is the Destroy that ends it,
// refused with status (naming call and what) for one live does not hold.
template <class T>
int handOut(std::set<T*>& live, void** out, T* obj) {
	live.insert(obj);
	*out = obj;
	return BLAS_SUCCESS;
}
template <class T>
int takeBack(std::set<T*>& live, void* p, int status, const char* call, const char* what) {
	if (!live.erase((T*)p)) return refuse(status, "%s: no %s %p", call, what, p);
	delete (T*)p;
	return BLAS_SUCCESS;
}

// LtAlgoKind is one of the algorithms the heuristic offers: they compute
// the same products, and differ in what they support.
struct LtAlgoKind {
	int32_t id;
	uint32_t tile; // cublasLtMatmulTile_t, reported only
	int32_t splitK;
	uint32_t reductionMask;
};
const LtAlgoKind ltKinds[] = {
    {0, 20 /* 128x128 */, 1, LT_REDUCTION_MASK},
    {1, 15 /* 64x64 */, 1, LT_REDUCTION_INPLACE},
    {2, 11 /* 32x32 */, 0, 0},
};

// LtAlgo is what this library keeps in a cublasLtMatmulAlgo_t's 64 bytes.
struct LtAlgo {
	uint32_t magic;
	int32_t id;
	uint32_t splitK, reduction, tile, swizzle;
	uint16_t align[5];  // bytes the heuristic assumed: A, B, C, D, the bias
	uint8_t types[6];   // compute, scale, A, B, C, D
};
static_assert(sizeof(LtAlgo) <= 64, "cublasLtMatmulAlgo_t is 64 bytes");
constexpr uint32_t ltMagic = 0x544c4d45; // "EMLT"

// ltAlgo reads the algorithm at p: null where it is not this library's.
bool ltAlgo(const void* p, LtAlgo* a) {
	if (!p) return false;
	memcpy(a, p, sizeof *a);
	return a->magic == ltMagic && a->id >= 0 && a->id < (int)(sizeof ltKinds / sizeof ltKinds[0]);
}

// ltAlign is the largest power of two up to 256 dividing v.
uint32_t ltAlign(u64 v) {
	v |= 256;
	return (uint32_t)(v & -v);
}

// LtProblem is a matmul as its descriptor and layouts describe it.
struct LtProblem {
	int m, n, k, batch;
	int ta, tb;
	int at, ct;   // A's and B's type, C's and D's
	int biasType; // when the epilogue adds one
	uint32_t epilogue;
	const LtLayout *A, *B, *C, *D;
	u64 bias;
	int64_t biasStride;
	uint8_t types[6];
};

// ltProblem checks desc and the layouts against each other and against
// what this library implements, and describes the matmul in p.
int ltProblem(const char* call, void* desc, void* ha, void* hb, void* hc, void* hd, LtProblem* p) {
	LtDesc* d = (LtDesc*)desc;
	const LtLayout *A = (LtLayout*)ha, *B = (LtLayout*)hb, *C = (LtLayout*)hc, *D = (LtLayout*)hd;
	if (!ltDescs.count(d)) return refuse(BLAS_INVALID_VALUE, "%s: no matmul descriptor %p", call, desc);
	for (const LtLayout* l : {A, B, C, D})
		if (!ltLayouts.count((LtLayout*)l)) return refuse(BLAS_INVALID_VALUE, "%s: no matrix layout %p", call, l);
	if (d->compute != compute32F || d->scale != R32F)
		return refuse(BLAS_NOT_SUPPORTED, "%s: compute type %d, scale type %d (CUBLAS_COMPUTE_32F, CUDA_R_32F only here)", call,
		              d->compute, d->scale);
	if (d->pointerMode != 0) return refuse(BLAS_NOT_SUPPORTED, "%s: pointer mode %d (host only here)", call, d->pointerMode);
	if (d->transc != 0) return refuse(BLAS_NOT_SUPPORTED, "%s: TRANSC %d (cublasLt.h: only CUBLAS_OP_N)", call, d->transc);
	for (int t : {d->transa, d->transb})
		if (t < 0 || t > 2) return refuse(BLAS_INVALID_VALUE, "%s: operation %d", call, t);
	for (const LtLayout* l : {A, B, C, D}) {
		if (l->order != 0 || l->plane != 0)
			return refuse(BLAS_NOT_SUPPORTED, "%s: order %d, plane offset %lld (column-major only here)", call, l->order,
			              (long long)l->plane);
		if (l->rows > INT32_MAX || l->cols > INT32_MAX || l->ld < (int64_t)std::max<u64>(1, l->rows) || l->batch < 1 ||
		    l->stride < 0)
			return refuse(BLAS_INVALID_VALUE, "%s: a layout of %llu×%llu, ld %lld, batch %d of stride %lld", call,
			              (unsigned long long)l->rows, (unsigned long long)l->cols, (long long)l->ld, l->batch, (long long)l->stride);
	}
	bool sameIn = A->type == B->type && (A->type == R32F || A->type == R16F || A->type == R16BF);
	if (!sameIn || C->type != D->type || (D->type != R32F && D->type != A->type))
		return refuse(BLAS_NOT_SUPPORTED, "%s: types A %u B %u C %u D %u", call, A->type, B->type, C->type, D->type);
	// op(X) is X or its transpose; CUBLAS_OP_C is T for real types.
	p->ta = d->transa != 0;
	p->tb = d->transb != 0;
	p->m = (int)D->rows;
	p->n = (int)D->cols;
	p->k = (int)(p->ta ? A->rows : A->cols);
	int am = (int)(p->ta ? A->cols : A->rows), bk = (int)(p->tb ? B->cols : B->rows), bn = (int)(p->tb ? B->rows : B->cols);
	if (am != p->m || bk != p->k || bn != p->n || C->rows != D->rows || C->cols != D->cols)
		return refuse(BLAS_INVALID_VALUE, "%s: op(A) %d×%d, op(B) %d×%d, C %llu×%llu, D %d×%d do not make a product", call, am, p->k, bk,
		              bn, (unsigned long long)C->rows, (unsigned long long)C->cols, p->m, p->n);
	if (A->batch != D->batch || B->batch != D->batch || C->batch != D->batch)
		return refuse(BLAS_INVALID_VALUE, "%s: batch counts %d %d %d %d differ", call, A->batch, B->batch, C->batch, D->batch);
	p->batch = D->batch;
	p->epilogue = d->epilogue;
	if (p->epilogue != LT_EPILOGUE_DEFAULT && p->epilogue != LT_EPILOGUE_RELU && p->epilogue != LT_EPILOGUE_BIAS &&
	    p->epilogue != LT_EPILOGUE_RELU_BIAS)
		return refuse(BLAS_NOT_SUPPORTED, "%s: epilogue %u (DEFAULT, RELU, BIAS and RELU_BIAS only here)", call, p->epilogue);
	p->biasType = d->biasType == -1 ? (int)D->type : d->biasType;
	if ((p->epilogue & LT_EPILOGUE_BIAS) && p->biasType != R32F && p->biasType != (int)A->type)
		return refuse(BLAS_NOT_SUPPORTED, "%s: bias of type %d with %u operands", call, p->biasType, A->type);
	p->at = (int)A->type;
	p->ct = (int)D->type;
	p->A = A, p->B = B, p->C = C, p->D = D;
	p->bias = d->bias;
	p->biasStride = d->biasStride;
	int types[6] = {d->compute, d->scale, (int)A->type, (int)B->type, (int)C->type, (int)D->type};
	for (int i = 0; i < 6; i++) p->types[i] = (uint8_t)types[i];
	return BLAS_SUCCESS;
}

// ltWorkspace is the workspace (bytes) a's split of p needs.
u64 ltWorkspace(const LtProblem& p, const LtAlgo& a) {
	u64 parts = (u64)a.splitK * (u64)p.m * (u64)p.n * (u64)p.batch;
	if (a.splitK <= 1) return 0;
	switch (a.reduction) {
	case LT_REDUCTION_COMPUTE:
		return parts * 4;
	case LT_REDUCTION_OUTPUT:
		return parts * typeSize(p.ct);
	}
	return 0;
}

// ltCheck is cublasLtMatmulAlgoCheck's verdict on a for p.
int ltCheck(const char* call, const LtProblem& p, const LtAlgo& a) {
	if (memcmp(a.types, p.types, sizeof a.types) != 0)
		return refuse(BLAS_INVALID_VALUE, "%s: the algorithm was made for other types", call);
	const LtAlgoKind& kind = ltKinds[a.id];
	if (a.splitK == 0 || a.splitK > (uint32_t)std::max(p.k, 1))
		return refuse(BLAS_INVALID_VALUE, "%s: k %d in %u parts", call, p.k, a.splitK);
	if (a.splitK > 1 && (!kind.splitK || a.reduction == LT_REDUCTION_NONE || (a.reduction & ~kind.reductionMask) ||
	                     (a.reduction != LT_REDUCTION_INPLACE && a.reduction != LT_REDUCTION_COMPUTE && a.reduction != LT_REDUCTION_OUTPUT)))
		return refuse(BLAS_NOT_SUPPORTED, "%s: algorithm %d split in %u with reduction scheme %u (supports split K %d, schemes %#x)", call,
		              a.id, a.splitK, a.reduction, kind.splitK, kind.reductionMask);
	return BLAS_SUCCESS;
}

// ltFits reports whether every matrix of layout l at ptr lies in device
// memory.
bool ltFits(const void* ptr, const LtLayout* l, int batch) {
	return fits(Operand{ptr, (int)l->type, l->ld, (long long)l->rows, (long long)l->cols, l->stride}, batch);
}

// setAttr copies an attribute's value from buf: cublasLt.h's setters
// refuse a null buf or a size other than the attribute's type's.
template <class T>
int setAttr(const char* call, int attr, T* v, const void* buf, size_t n) {
	if (!buf || n != sizeof(T))
		return refuse(BLAS_INVALID_VALUE, "%s: attribute %d of %zu bytes, its type has %zu", call, attr, buf ? n : 0, sizeof(T));
	memcpy(v, buf, sizeof(T));
	return BLAS_SUCCESS;
}

// getAttr writes an attribute's value to buf: with n 0 only its size to
// written; else n must be its type's size.
template <class T>
int getAttr(const char* call, int attr, T v, void* buf, size_t n, size_t* written) {
	if (n == 0) {
		if (!written) return refuse(BLAS_INVALID_VALUE, "%s: attribute %d: no buffer and nowhere to write its size", call, attr);
		*written = sizeof(T);
		return BLAS_SUCCESS;
	}
	if (!buf || n != sizeof(T))
		return refuse(BLAS_INVALID_VALUE, "%s: attribute %d into %zu bytes, its type has %zu", call, attr, buf ? n : 0, sizeof(T));
	memcpy(buf, &v, sizeof(T));
	if (written) *written = sizeof(T);
	return BLAS_SUCCESS;
}

int unknownAttr(const char* call, int attr) { return refuse(BLAS_INVALID_VALUE, "%s: attribute %d unknown here", call, attr); }

// cublasLtMatmulHeuristicResult_t.
struct LtHeuristic {
	unsigned char algo[64];
	size_t workspace;
	int state;
	float waves;
	int reserved[4];
};
static_assert(sizeof(LtHeuristic) == 96, "cublasLt.h's layout");

// ltAxpy adds x·b to acc, m elements: the emulator's cuBLASLt spends its
// time here. Its arrays are float vectors, every access aligned: UBSan's
// check of each would take most of the time, and the elements, each a sum
// of its own, are added side by side (vectorised), each still in k order.
__attribute__((no_sanitize("alignment"))) void ltAxpy(float* __restrict acc, const float* __restrict x, float b, int m) {
#pragma clang loop vectorize(enable)
	for (int i = 0; i < m; i++) acc[i] += x[i] * b;
}

// ltMatmul runs p with algorithm a: D from C, the bias and the workspace
// ws, as ltCheck accepted them.
void ltMatmul(const LtProblem& p, const LtAlgo& a, float alpha, float beta, const void* A, const void* B, const void* C, void* D,
              const void* bias, void* ws) {
	const int m = p.m, n = p.n, k = p.k, parts = (int)a.splitK;
	const size_t mn = (size_t)m * n;
	Operand oa{A, p.at, p.A->ld, (long long)p.A->rows, (long long)p.A->cols, p.A->stride};
	Operand ob{B, p.at, p.B->ld, (long long)p.B->rows, (long long)p.B->cols, p.B->stride};
	// Each part's share of k, the last taking what is left.
	const int chunk = (k + parts - 1) / parts;
	std::vector<float> opA, opB, opAt((size_t)k * m), sums(parts * mn), partial(parts);
	for (int q = 0; q < p.batch; q++) {
		loadOps(opA, opB, oa, p.ta, ob, p.tb, m, n, k, q);
		// Each part's sums, column by column of D: every element's in k
		// order, the rows of a column side by side (independent sums, which
		// the CPU overlaps: a sum at a time waits on each add).
		for (int i = 0; i < m; i++)
			for (int l = 0; l < k; l++) opAt[(size_t)l * m + i] = opA[(size_t)i * k + l];
		for (int s = 0; s < parts; s++)
			for (int j = 0; j < n; j++) {
				float* acc = &sums[s * mn + (size_t)j * m];
				std::fill(acc, acc + m, 0.0f);
				for (int l = s * chunk; l < std::min(k, (s + 1) * chunk); l++) ltAxpy(acc, &opAt[(size_t)l * m], opB[(size_t)j * k + l], m);
			}
		const char* pc = (const char*)C + q * p.C->stride * (long long)typeSize(p.ct);
		char* pd = (char*)D + q * p.D->stride * (long long)typeSize(p.ct);
		const char* pbias = (const char*)bias + q * p.biasStride * (long long)typeSize(p.biasType);
		for (int j = 0; j < n; j++)
			for (int i = 0; i < m; i++) {
				for (int s = 0; s < parts; s++) partial[s] = sums[s * mn + i + (size_t)j * m];
				size_t ci = i + (size_t)j * p.C->ld, di = i + (size_t)j * p.D->ld;
				float c = beta != 0 ? beta * load(pc, p.ct, ci) : 0;
				float v;
				if (parts == 1) {
					v = alpha * partial[0] + c;
				} else if (a.reduction == LT_REDUCTION_INPLACE) {
					// Each part adds its share into D, in D's type.
					store(pd, p.ct, di, alpha * partial[0] + c);
					for (int s = 1; s < parts; s++) store(pd, p.ct, di, load(pd, p.ct, di) + alpha * partial[s]);
					v = load(pd, p.ct, di);
				} else {
					// The parts go through the workspace, in float32 or in D's
					// type, and a reduction adds them up in float32.
					int wt = a.reduction == LT_REDUCTION_COMPUTE ? R32F : p.ct;
					size_t at = (size_t)q * parts * mn + i + (size_t)j * m;
					for (int s = 0; s < parts; s++) store(ws, wt, at + s * mn, wt == R32F ? partial[s] : alpha * partial[s]);
					float r = 0;
					for (int s = 0; s < parts; s++) r += load(ws, wt, at + s * mn);
					v = (wt == R32F ? alpha * r : r) + c;
				}
				if (p.epilogue & LT_EPILOGUE_BIAS) v += load(pbias, p.biasType, i);
				// A NaN stays NaN, so that a poisoned read shows.
				if ((p.epilogue & LT_EPILOGUE_RELU) && v < 0) v = 0;
				store(pd, p.ct, di, v);
			}
	}
}

} // namespace fake

CUEMU_API int cublasLtCreate(void** h) {
	std::lock_guard<std::mutex> lock(mu);
	if (!h) return BLAS_INVALID_VALUE;
	if (!initialized || !current) return BLAS_NOT_INITIALIZED;
	return handOut(ltHandles, h, new LtHandle{});
}

CUEMU_API int cublasLtDestroy(void* h) {
	std::lock_guard<std::mutex> lock(mu);
	return takeBack(ltHandles, h, BLAS_NOT_INITIALIZED, "cublasLtDestroy", "handle");
}

CUEMU_API int cublasLtMatmulDescCreate(void** desc, int compute, int scale) {
	std::lock_guard<std::mutex> lock(mu);
	if (!desc) return BLAS_INVALID_VALUE;
	return handOut(ltDescs, desc, new LtDesc{compute, scale});
}

CUEMU_API int cublasLtMatmulDescDestroy(void* desc) {
	std::lock_guard<std::mutex> lock(mu);
	return takeBack(ltDescs, desc, BLAS_INVALID_VALUE, "cublasLtMatmulDescDestroy", "descriptor");
}

CUEMU_API int cublasLtMatmulDescSetAttribute(void* desc, int attr, const void* buf, size_t n) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatmulDescSetAttribute";
	LtDesc* d = (LtDesc*)desc;
	if (!ltDescs.count(d)) return refuse(BLAS_INVALID_VALUE, "%s: no descriptor %p", call, desc);
	switch (attr) {
	case LT_DESC_COMPUTE_TYPE:
		return setAttr(call, attr, &d->compute, buf, n);
	case LT_DESC_SCALE_TYPE:
		return setAttr(call, attr, &d->scale, buf, n);
	case LT_DESC_POINTER_MODE:
		return setAttr(call, attr, &d->pointerMode, buf, n);
	case LT_DESC_TRANSA:
		return setAttr(call, attr, &d->transa, buf, n);
	case LT_DESC_TRANSB:
		return setAttr(call, attr, &d->transb, buf, n);
	case LT_DESC_TRANSC:
		return setAttr(call, attr, &d->transc, buf, n);
	case LT_DESC_EPILOGUE:
		return setAttr(call, attr, &d->epilogue, buf, n);
	case LT_DESC_BIAS_POINTER:
		return setAttr(call, attr, &d->bias, buf, n);
	case LT_DESC_BIAS_BATCH_STRIDE:
		return setAttr(call, attr, &d->biasStride, buf, n);
	case LT_DESC_SM_COUNT_TARGET:
		return setAttr(call, attr, &d->smTarget, buf, n);
	case LT_DESC_BIAS_DATA_TYPE:
		return setAttr(call, attr, &d->biasType, buf, n);
	}
	return unknownAttr(call, attr);
}

CUEMU_API int cublasLtMatrixLayoutCreate(void** layout, unsigned type, u64 rows, u64 cols, int64_t ld) {
	std::lock_guard<std::mutex> lock(mu);
	if (!layout) return BLAS_INVALID_VALUE;
	return handOut(ltLayouts, layout, new LtLayout{type, 0, rows, cols, ld});
}

CUEMU_API int cublasLtMatrixLayoutDestroy(void* layout) {
	std::lock_guard<std::mutex> lock(mu);
	return takeBack(ltLayouts, layout, BLAS_INVALID_VALUE, "cublasLtMatrixLayoutDestroy", "layout");
}

CUEMU_API int cublasLtMatrixLayoutSetAttribute(void* layout, int attr, const void* buf, size_t n) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatrixLayoutSetAttribute";
	LtLayout* l = (LtLayout*)layout;
	if (!ltLayouts.count(l)) return refuse(BLAS_INVALID_VALUE, "%s: no layout %p", call, layout);
	switch (attr) {
	case LT_LAYOUT_TYPE:
		return setAttr(call, attr, &l->type, buf, n);
	case LT_LAYOUT_ORDER:
		return setAttr(call, attr, &l->order, buf, n);
	case LT_LAYOUT_ROWS:
		return setAttr(call, attr, &l->rows, buf, n);
	case LT_LAYOUT_COLS:
		return setAttr(call, attr, &l->cols, buf, n);
	case LT_LAYOUT_LD:
		return setAttr(call, attr, &l->ld, buf, n);
	case LT_LAYOUT_BATCH_COUNT:
		return setAttr(call, attr, &l->batch, buf, n);
	case LT_LAYOUT_BATCH_OFFSET:
		return setAttr(call, attr, &l->stride, buf, n);
	case LT_LAYOUT_PLANE_OFFSET:
		return setAttr(call, attr, &l->plane, buf, n);
	}
	return unknownAttr(call, attr);
}

CUEMU_API int cublasLtMatmulPreferenceCreate(void** pref) {
	std::lock_guard<std::mutex> lock(mu);
	if (!pref) return BLAS_INVALID_VALUE;
	return handOut(ltPrefs, pref, new LtPref{});
}

CUEMU_API int cublasLtMatmulPreferenceDestroy(void* pref) {
	std::lock_guard<std::mutex> lock(mu);
	return takeBack(ltPrefs, pref, BLAS_INVALID_VALUE, "cublasLtMatmulPreferenceDestroy", "preference");
}

CUEMU_API int cublasLtMatmulPreferenceSetAttribute(void* pref, int attr, const void* buf, size_t n) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatmulPreferenceSetAttribute";
	LtPref* p = (LtPref*)pref;
	if (!ltPrefs.count(p)) return refuse(BLAS_INVALID_VALUE, "%s: no preference %p", call, pref);
	switch (attr) {
	case LT_PREF_SEARCH_MODE:
		return setAttr(call, attr, &p->search, buf, n);
	case LT_PREF_MAX_WORKSPACE:
		return setAttr(call, attr, &p->maxWorkspace, buf, n);
	case LT_PREF_REDUCTION_MASK:
		return setAttr(call, attr, &p->reductionMask, buf, n);
	case LT_PREF_ALIGN_A:
	case LT_PREF_ALIGN_A + 1:
	case LT_PREF_ALIGN_A + 2:
	case LT_PREF_ALIGN_A + 3:
		return setAttr(call, attr, &p->align[attr - LT_PREF_ALIGN_A], buf, n);
	case LT_PREF_MAX_WAVES:
		return setAttr(call, attr, &p->maxWaves, buf, n);
	case LT_PREF_IMPL_MASK:
		return setAttr(call, attr, &p->implMask, buf, n);
	}
	return unknownAttr(call, attr);
}

CUEMU_API int cublasLtMatmulAlgoGetHeuristic(void* h, void* desc, void* a, void* b, void* c, void* d, void* pref, int requested,
                                             LtHeuristic* results, int* count) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatmulAlgoGetHeuristic";
	if (!ltHandles.count((LtHandle*)h)) return refuse(BLAS_NOT_INITIALIZED, "%s: no handle %p", call, h);
	LtPref* pr = (LtPref*)pref;
	if (!ltPrefs.count(pr)) return refuse(BLAS_INVALID_VALUE, "%s: no preference %p", call, pref);
	if (requested <= 0 || !results || !count)
		return refuse(BLAS_INVALID_VALUE, "%s: %d results requested into %p, count to %p", call, requested, results, count);
	*count = 0;
	LtProblem p;
	if (int r = ltProblem(call, desc, a, b, c, d, &p)) return r;
	if (pr->search != 0) return refuse(BLAS_NOT_SUPPORTED, "%s: search mode %u (best fit only here)", call, pr->search);
	// The alignments each algorithm assumes: the preference's (it cannot
	// see the pointers), no more than the leading dimensions give, which
	// it sees; the bias pointer's from the descriptor, as cublasLt.h says
	// the heuristic reads it.
	LtAlgo base{ltMagic};
	const LtLayout* ls[4] = {p.A, p.B, p.C, p.D};
	for (int i = 0; i < 4; i++) {
		uint32_t want = pr->align[i];
		if (want == 0 || (want & (want - 1)))
			return refuse(BLAS_INVALID_VALUE, "%s: a minimum alignment of %u bytes", call, want);
		base.align[i] = (uint16_t)std::min(std::min(want, 256u), ltAlign((u64)ls[i]->ld * typeSize(ls[i]->type)));
	}
	base.align[4] = (uint16_t)ltAlign(p.bias);
	memcpy(base.types, p.types, sizeof base.types);
	std::vector<LtAlgo> cands;
	for (const LtAlgoKind& kind : ltKinds) {
		LtAlgo x = base;
		x.id = kind.id;
		x.tile = kind.tile;
		x.splitK = 1;
		cands.push_back(x);
	}
	// The first algorithm again with k in two, in the first of the schemes
	// the preference and the algorithm allow whose workspace the
	// preference allows: float32 parts first.
	for (uint32_t scheme : {LT_REDUCTION_COMPUTE, LT_REDUCTION_OUTPUT, LT_REDUCTION_INPLACE}) {
		LtAlgo x = cands[0];
		x.splitK = 2;
		x.reduction = scheme;
		if ((scheme & pr->reductionMask & ltKinds[0].reductionMask) && p.k >= 64 && ltWorkspace(p, x) <= pr->maxWorkspace) {
			cands.insert(cands.begin() + 2, x);
			break;
		}
	}
	for (const LtAlgo& x : cands) {
		if (*count == requested) break;
		u64 ws = ltWorkspace(p, x);
		if (ws > pr->maxWorkspace) continue;
		LtHeuristic& r = results[(*count)++];
		memset(&r, 0, sizeof r);
		memcpy(r.algo, &x, sizeof x);
		r.workspace = ws;
		r.state = BLAS_SUCCESS;
		r.waves = 1;
	}
	if (*count == 0) return refuse(BLAS_NOT_SUPPORTED, "%s: no algorithm within %llu bytes of workspace", call, (unsigned long long)pr->maxWorkspace);
	return BLAS_SUCCESS;
}

CUEMU_API int cublasLtMatmulAlgoCheck(void* h, void* desc, void* a, void* b, void* c, void* d, const void* algo, LtHeuristic* result) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatmulAlgoCheck";
	if (!ltHandles.count((LtHandle*)h)) return refuse(BLAS_NOT_INITIALIZED, "%s: no handle %p", call, h);
	LtAlgo x;
	if (!ltAlgo(algo, &x)) return refuse(BLAS_INVALID_VALUE, "%s: not an algorithm of this library", call);
	if (!result) return BLAS_INVALID_VALUE;
	LtProblem p;
	if (int r = ltProblem(call, desc, a, b, c, d, &p)) return r;
	if (int r = ltCheck(call, p, x)) return r;
	// cublasLt.h: "algo field is never updated" (algo may point into it).
	result->workspace = ltWorkspace(p, x);
	result->state = BLAS_SUCCESS;
	result->waves = 1;
	return BLAS_SUCCESS;
}

CUEMU_API int cublasLtMatmulAlgoCapGetAttribute(const void* algo, int attr, void* buf, size_t n, size_t* written) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatmulAlgoCapGetAttribute";
	LtAlgo x;
	if (!ltAlgo(algo, &x)) return refuse(BLAS_INVALID_VALUE, "%s: not an algorithm of this library", call);
	const LtAlgoKind& kind = ltKinds[x.id];
	switch (attr) {
	case LT_CAP_SPLITK:
		return getAttr(call, attr, (int32_t)kind.splitK, buf, n, written);
	case LT_CAP_REDUCTION_MASK:
		return getAttr(call, attr, (uint32_t)kind.reductionMask, buf, n, written);
	case LT_CAP_CTA_SWIZZLING:
		return getAttr(call, attr, (uint32_t)1, buf, n, written);
	case LT_CAP_STRIDED_BATCH:
	case LT_CAP_OUT_OF_PLACE:
		return getAttr(call, attr, (int32_t)1, buf, n, written);
	case LT_CAP_POINTER_MODE_MASK:
		return getAttr(call, attr, (uint32_t)1, buf, n, written); // CUBLASLT_POINTER_MODE_MASK_HOST
	case LT_CAP_EPILOGUE_MASK:
		return getAttr(call, attr, (uint32_t)(LT_EPILOGUE_DEFAULT | LT_EPILOGUE_RELU | LT_EPILOGUE_BIAS), buf, n, written);
	case LT_CAP_ALIGN_A:
	case LT_CAP_ALIGN_A + 1:
	case LT_CAP_ALIGN_A + 2:
	case LT_CAP_ALIGN_A + 3:
		return getAttr(call, attr, (uint32_t)x.align[attr - LT_CAP_ALIGN_A], buf, n, written);
	}
	return unknownAttr(call, attr);
}

CUEMU_API int cublasLtMatmulAlgoConfigGetAttribute(const void* algo, int attr, void* buf, size_t n, size_t* written) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatmulAlgoConfigGetAttribute";
	LtAlgo x;
	if (!ltAlgo(algo, &x)) return refuse(BLAS_INVALID_VALUE, "%s: not an algorithm of this library", call);
	switch (attr) {
	case LT_CONFIG_ID:
		return getAttr(call, attr, (int32_t)x.id, buf, n, written);
	case LT_CONFIG_TILE_ID:
		return getAttr(call, attr, x.tile, buf, n, written);
	case LT_CONFIG_SPLITK:
		return getAttr(call, attr, x.splitK, buf, n, written);
	case LT_CONFIG_REDUCTION:
		return getAttr(call, attr, x.reduction, buf, n, written);
	case LT_CONFIG_CTA_SWIZZLING:
		return getAttr(call, attr, x.swizzle, buf, n, written);
	}
	return unknownAttr(call, attr);
}

CUEMU_API int cublasLtMatmulAlgoConfigSetAttribute(void* algo, int attr, const void* buf, size_t n) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatmulAlgoConfigSetAttribute";
	LtAlgo x;
	if (!ltAlgo(algo, &x)) return refuse(BLAS_INVALID_VALUE, "%s: not an algorithm of this library", call);
	int r;
	switch (attr) {
	case LT_CONFIG_TILE_ID:
		r = setAttr(call, attr, &x.tile, buf, n);
		break;
	case LT_CONFIG_SPLITK:
		r = setAttr(call, attr, &x.splitK, buf, n);
		break;
	case LT_CONFIG_REDUCTION:
		r = setAttr(call, attr, &x.reduction, buf, n);
		break;
	case LT_CONFIG_CTA_SWIZZLING:
		r = setAttr(call, attr, &x.swizzle, buf, n);
		if (r == BLAS_SUCCESS && x.swizzle > 1) r = refuse(BLAS_INVALID_VALUE, "%s: CTA swizzling %u", call, x.swizzle);
		break;
	case LT_CONFIG_ID:
		// Read-only: cublasLtMatmulAlgoInit sets it.
	default:
		return unknownAttr(call, attr);
	}
	if (r == BLAS_SUCCESS) memcpy(algo, &x, sizeof x);
	return r;
}

CUEMU_API int cublasLtMatmul(void* h, void* desc, const void* alphap, const void* A, void* ha, const void* B, void* hb, const void* betap,
                             const void* C, void* hc, void* D, void* hd, const void* algo, void* ws, size_t wsBytes, void* hs) {
	std::lock_guard<std::mutex> lock(mu);
	const char* call = "cublasLtMatmul";
	if (!ltHandles.count((LtHandle*)h)) return refuse(BLAS_NOT_INITIALIZED, "%s: no handle %p", call, h);
	// A context CUDA gave up on fails the kernels cuBLASLt would launch.
	if (sticky) return refuse(BLAS_EXECUTION_FAILED, "%s: the context has failed (CUDA error %d)", call, sticky);
	LtProblem p;
	if (int r = ltProblem(call, desc, ha, hb, hc, hd, &p)) return r;
	LtAlgo x;
	if (!algo) return refuse(BLAS_NOT_SUPPORTED, "%s: no algorithm (the library's own choice is not emulated)", call);
	if (!ltAlgo(algo, &x)) return refuse(BLAS_INVALID_VALUE, "%s: not an algorithm of this library", call);
	if (int r = ltCheck(call, p, x)) return r;
	if (!alphap || !betap) return refuse(BLAS_INVALID_VALUE, "%s: alpha %p, beta %p", call, alphap, betap);
	float alpha = *(const float*)alphap, beta = *(const float*)betap;
	u64 need = ltWorkspace(p, x);
	if (wsBytes < need) return refuse(BLAS_INVALID_VALUE, "%s: %zu bytes of workspace, the algorithm needs %llu", call, wsBytes, (unsigned long long)need);
	if (need > 0 && !inDevice((uintptr_t)ws, need))
		return refuse(BLAS_EXECUTION_FAILED, "%s: %llu bytes of workspace at %p leave device memory", call, (unsigned long long)need, ws);
	const void* bias = (const void*)(uintptr_t)p.bias;
	bool withBias = p.epilogue & LT_EPILOGUE_BIAS;
	if (withBias && !bias) return refuse(BLAS_INVALID_VALUE, "%s: a bias epilogue without CUBLASLT_MATMUL_DESC_BIAS_POINTER", call);
	// The alignments the algorithm was chosen for, of each matrix and of
	// the next one in its batch.
	struct {
		const char* name;
		const void* ptr;
		const LtLayout* l;
	} mats[4] = {{"A", A, p.A}, {"B", B, p.B}, {"C", C, p.C}, {"D", D, p.D}};
	for (int i = 0; i < 4; i++) {
		u64 stride = p.batch > 1 ? (u64)mats[i].l->stride * typeSize(mats[i].l->type) : 0;
		if (ltAlign((uintptr_t)mats[i].ptr | stride) < x.align[i])
			return refuse(BLAS_NOT_SUPPORTED, "%s: %s at %p (batch stride %llu bytes) for an algorithm chosen for %u-byte alignment", call,
			              mats[i].name, mats[i].ptr, (unsigned long long)stride, x.align[i]);
	}
	if (withBias && ltAlign(p.bias | (p.batch > 1 ? (u64)p.biasStride * typeSize(p.biasType) : 0)) < x.align[4])
		return refuse(BLAS_NOT_SUPPORTED, "%s: the bias at %p for an algorithm chosen for %u-byte alignment", call, bias, x.align[4]);
	for (int i = 0; i < 4; i++)
		if (!ltFits(mats[i].ptr, mats[i].l, p.batch))
			return refuse(BLAS_EXECUTION_FAILED, "%s: %s leaves device memory (m %d n %d k %d, batch %d)", call, mats[i].name, p.m, p.n, p.k,
			              p.batch);
	if (withBias && !fits(Operand{bias, p.biasType, p.m, p.m, 1, p.biasStride}, p.batch))
		return refuse(BLAS_EXECUTION_FAILED, "%s: the bias (%d elements) leaves device memory", call, p.m);
	Stream* s = stream(hs);
	if (!s) return refuse(BLAS_INVALID_VALUE, "%s: no stream %p", call, hs);
	// The descriptors' values are taken now: they may go once the call
	// returns, before a captured graph runs it.
	LtLayout la = *p.A, lb = *p.B, lc = *p.C, lo = *p.D;
	return issue(s, [=]() mutable {
		if (skipWork) return;
		LtProblem q = p;
		q.A = &la, q.B = &lb, q.C = &lc, q.D = &lo;
		auto t0 = std::chrono::steady_clock::now();
		ltMatmul(q, x, alpha, beta, A, B, C, D, bias, ws);
		if (trace)
			fprintf(stderr, "cuemu: cublasLtMatmul m %d n %d k %d batch %d, algorithm %d in %u parts %.3f ms\n", q.m, q.n, q.k, q.batch, x.id,
			        x.splitK, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
	});
}
