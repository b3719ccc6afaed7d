// The 16×16 float32 transpose shared by the Xᵀ packing
// (gemm_outer_avx512_amd64.s) and the Kᵀ packing (attn_avx512_amd64.s): 16
// rows in 16 ZMM registers, PT4 on each group of four, then LANES4 per e
// gathers the 128-bit lanes into output rows e, 4+e, 8+e, 12+e. Each
// element is moved, never computed.

// PT4 transposes the 4×4 blocks inside each 128-bit lane of rows r0…r3:
// afterwards lane ℓ of r_e holds rows 0–3 of column 4ℓ+e (the classic 4×4
// SSE transpose: unpack pairs of rows, then shuffle pairs of pairs, on four
// column groups at once). Z24–Z27 are scratch.
#define PT4(r0, r1, r2, r3) \
	VUNPCKLPS r1, r0, Z24; \
	VUNPCKHPS r1, r0, Z25; \
	VUNPCKLPS r3, r2, Z26; \
	VUNPCKHPS r3, r2, Z27; \
	VSHUFPS $0x44, Z26, Z24, r0; \
	VSHUFPS $0xEE, Z26, Z24, r1; \
	VSHUFPS $0x44, Z27, Z25, r2; \
	VSHUFPS $0xEE, Z27, Z25, r3

// LANES4 gathers, for one e, the 128-bit lanes of the four row groups'
// u0…u3 (input rows 0–3, 4–7, 8–11, 12–15, after PT4, of columns 4ℓ+e)
// into the output rows e, 4+e, 8+e, 12+e: Z28, Z29, Z30, Z31 (a 4×4
// transpose of lanes). Z24–Z27 are scratch.
#define LANES4(u0, u1, u2, u3) \
	VSHUFF32X4 $0x44, u1, u0, Z24; \
	VSHUFF32X4 $0xEE, u1, u0, Z25; \
	VSHUFF32X4 $0x44, u3, u2, Z26; \
	VSHUFF32X4 $0xEE, u3, u2, Z27; \
	VSHUFF32X4 $0x88, Z26, Z24, Z28; \
	VSHUFF32X4 $0xDD, Z26, Z24, Z29; \
	VSHUFF32X4 $0x88, Z27, Z25, Z30; \
	VSHUFF32X4 $0xDD, Z27, Z25, Z31
