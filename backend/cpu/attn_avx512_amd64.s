//go:build !purego

#include "textflag.h"
#include "transpose_amd64.h"

// The AVX-512 attention kernels (attn_amd64.go): an outer-product tile for
// both products of a head, and the softmax of one score row.

// Offsets of attnTileArgs' fields (TestAttnTileArgsLayout checks them
// against unsafe.Offsetof).
#define ARG_A 0
#define ARG_B 48
#define ARG_LDB 56
#define ARG_K 64
#define ARG_C 72
#define ARG_LDC 80
#define ARG_ROWS 88
#define ARG_SCALE 96
#define ARG_MASK 120

// ROW4 multiplies the broadcast A value of one row, loaded from (r)(DI*1)
// into t, by the four B vectors Z24–Z27 into that row's accumulators.
#define ROW4(r, t, a0, a1, a2, a3) \
	VBROADCASTSS (r)(DI*1), t; \
	VFMADD231PS Z24, t, a0; \
	VFMADD231PS Z25, t, a1; \
	VFMADD231PS Z26, t, a2; \
	VFMADD231PS Z27, t, a3

// ROW2 is ROW4 for the first two B vectors only (Z24, Z25).
#define ROW2(r, t, a0, a1) \
	VBROADCASTSS (r)(DI*1), t; \
	VFMADD231PS Z24, t, a0; \
	VFMADD231PS Z25, t, a1

// STORE4 scales one row's four accumulators by the float32 at soff(R14)
// and stores them at (R12) under the column masks K1–K4.
#define STORE4(soff, a0, a1, a2, a3) \
	VBROADCASTSS soff(R14), Z28; \
	VMULPS Z28, a0, a0; \
	VMULPS Z28, a1, a1; \
	VMULPS Z28, a2, a2; \
	VMULPS Z28, a3, a3; \
	VMOVUPS a0, K1, (R12); \
	VMOVUPS a1, K2, 64(R12); \
	VMOVUPS a2, K3, 128(R12); \
	VMOVUPS a3, K4, 192(R12)

// func attnTileAVX512(args *attnTileArgs)
//
// C[r][c] = scale[r] · Σ_k A_r[k]·B[k][c] for r < rows, c in the columns of
// mask (four 16-lane vectors: 64 columns at most). Accumulator Z(4r+v) holds
// columns 16v … 16v+15 of row r; each step k broadcasts A_r[k] and adds its
// products with B's row k by fused multiply-adds, so every output is one
// float32 FMA chain in k order, rounded once more by the scale. B rows are
// read with zero-masked loads and C stored with masked stores: nothing
// outside the mask is touched (and when it holds 32 columns or fewer, the
// upper two vectors are not computed). Missing rows repeat a row pointer and
// are not stored.
TEXT ·attnTileAVX512(SB), NOSPLIT, $0-8
	MOVQ args+0(FP), R14
	MOVQ ARG_A+0(R14), AX
	MOVQ ARG_A+8(R14), BX
	MOVQ ARG_A+16(R14), CX
	MOVQ ARG_A+24(R14), DX
	MOVQ ARG_A+32(R14), R8
	MOVQ ARG_A+40(R14), R9
	MOVQ ARG_B(R14), SI
	MOVQ ARG_LDB(R14), R10
	SHLQ $2, R10
	MOVQ ARG_K(R14), R11
	MOVQ ARG_C(R14), R12
	MOVQ ARG_LDC(R14), R13
	SHLQ $2, R13
	KMOVW ARG_MASK+0(R14), K1
	KMOVW ARG_MASK+2(R14), K2
	KMOVW ARG_MASK+4(R14), K3
	KMOVW ARG_MASK+6(R14), K4

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

	XORQ DI, DI
	TESTQ R11, R11
	JLE  store
	KORTESTW K4, K3
	JZ   loop2 // 32 columns at most: half the loads and FMAs

loop:
	VMOVUPS.Z (SI), K1, Z24
	VMOVUPS.Z 64(SI), K2, Z25
	VMOVUPS.Z 128(SI), K3, Z26
	VMOVUPS.Z 192(SI), K4, Z27
	ROW4(AX, Z28, Z0, Z1, Z2, Z3)
	ROW4(BX, Z29, Z4, Z5, Z6, Z7)
	ROW4(CX, Z30, Z8, Z9, Z10, Z11)
	ROW4(DX, Z31, Z12, Z13, Z14, Z15)
	ROW4(R8, Z28, Z16, Z17, Z18, Z19)
	ROW4(R9, Z29, Z20, Z21, Z22, Z23)
	ADDQ R10, SI
	ADDQ $4, DI
	DECQ R11
	JNZ  loop
	JMP  store

loop2:
	VMOVUPS.Z (SI), K1, Z24
	VMOVUPS.Z 64(SI), K2, Z25
	ROW2(AX, Z28, Z0, Z1)
	ROW2(BX, Z29, Z4, Z5)
	ROW2(CX, Z30, Z8, Z9)
	ROW2(DX, Z31, Z12, Z13)
	ROW2(R8, Z28, Z16, Z17)
	ROW2(R9, Z29, Z20, Z21)
	ADDQ R10, SI
	ADDQ $4, DI
	DECQ R11
	JNZ  loop2

store:
	MOVQ ARG_ROWS(R14), R11
	STORE4(ARG_SCALE+0, Z0, Z1, Z2, Z3)
	DECQ R11
	JLE  done
	ADDQ R13, R12
	STORE4(ARG_SCALE+4, Z4, Z5, Z6, Z7)
	DECQ R11
	JLE  done
	ADDQ R13, R12
	STORE4(ARG_SCALE+8, Z8, Z9, Z10, Z11)
	DECQ R11
	JLE  done
	ADDQ R13, R12
	STORE4(ARG_SCALE+12, Z12, Z13, Z14, Z15)
	DECQ R11
	JLE  done
	ADDQ R13, R12
	STORE4(ARG_SCALE+16, Z16, Z17, Z18, Z19)
	DECQ R11
	JLE  done
	ADDQ R13, R12
	STORE4(ARG_SCALE+20, Z20, Z21, Z22, Z23)

done:
	VZEROUPPER
	RET

// Constants of the softmax's exp, float64: expNonPositive's (exp.go).
DATA expK<>+0(SB)/8, $0xc062c00000000000 // clamp: e^-150 rounds to float32 0
DATA expK<>+8(SB)/8, $0x3ff71547652b82fe // log2 e
DATA expK<>+16(SB)/8, $0x3fe62e42fee00000 // ln 2, high part (fdlibm)
DATA expK<>+24(SB)/8, $0x3dea39ef35793c76 // ln 2, low part
DATA expK<>+32(SB)/8, $0x3e5ae64567f544e4 // 1/11!
DATA expK<>+40(SB)/8, $0x3e927e4fb7789f5c // 1/10!
DATA expK<>+48(SB)/8, $0x3ec71de3a556c734 // 1/9!
DATA expK<>+56(SB)/8, $0x3efa01a01a01a01a // 1/8!
DATA expK<>+64(SB)/8, $0x3f2a01a01a01a01a // 1/7!
DATA expK<>+72(SB)/8, $0x3f56c16c16c16c17 // 1/6!
DATA expK<>+80(SB)/8, $0x3f81111111111111 // 1/5!
DATA expK<>+88(SB)/8, $0x3fa5555555555555 // 1/4!
DATA expK<>+96(SB)/8, $0x3fc5555555555555 // 1/3!
DATA expK<>+104(SB)/8, $0x3fe0000000000000 // 1/2!
DATA expK<>+112(SB)/8, $0x3ff0000000000000 // 1/1! and 1/0!
GLOBL expK<>(SB), RODATA|NOPTR, $120

// EXP8 sets x (8 float64 lanes, ≤ 0) to e^x as expNonPositive does:
// n = round(x·log2 e), r = (x − n·ln2Hi) − n·ln2Lo, p the degree-11 Taylor
// polynomial of e^r by Horner's rule (fused multiply-adds), times 2ⁿ by
// VSCALEFPD. x is clamped at −150 first, so 2ⁿ stays a normal float64.
// n and p are the scratch registers. Constants: Z11 −150, Z12 log2 e,
// Z13 ln2Hi, Z14 ln2Lo, Z15 … Z25 the coefficients 1/11! … 1/1!.
#define EXP8(x, n, p) \
	VMAXPD Z11, x, x; \
	VMULPD Z12, x, n; \
	VRNDSCALEPD $0, n, n; \
	VFNMADD231PD Z13, n, x; \
	VFNMADD231PD Z14, n, x; \
	VMOVAPD Z15, p; \
	VFMADD213PD Z16, x, p; \
	VFMADD213PD Z17, x, p; \
	VFMADD213PD Z18, x, p; \
	VFMADD213PD Z19, x, p; \
	VFMADD213PD Z20, x, p; \
	VFMADD213PD Z21, x, p; \
	VFMADD213PD Z22, x, p; \
	VFMADD213PD Z23, x, p; \
	VFMADD213PD Z24, x, p; \
	VFMADD213PD Z25, x, p; \
	VFMADD213PD Z25, x, p; \
	VSCALEFPD n, p, x

// EXP16 replaces the 16 float32 scores in Z1 by exp(score − max) (max in
// Z10), rounded to float32, and leaves the two float64 halves of the
// unrounded values in Z2 (lanes 0–7) and Z3 (lanes 8–15).
#define EXP16 \
	VSUBPS Z10, Z1, Z1; \
	VEXTRACTF64X4 $1, Z1, Y3; \
	VCVTPS2PD Y1, Z2; \
	VCVTPS2PD Y3, Z3; \
	EXP8(Z2, Z4, Z5); \
	EXP8(Z3, Z6, Z7); \
	VCVTPD2PS Z2, Y1; \
	VCVTPD2PS Z3, Y4; \
	VINSERTF64X4 $1, Y4, Z1, Z1

// func softmaxExpAVX512(row *float32, n int) float64
//
// For n ≥ 1: m = max(row[:n]); row[j] = float32(e^(row[j]−m)) (the
// subtraction in float32, the exp in float64 as expNonPositive); returns
// Σ_j e^(row[j]−m) in float64 (the unrounded exps, in 16 lane sums folded at
// the end). The last n mod 16 values go through masked loads and stores:
// nothing past row[n−1] is touched.
TEXT ·softmaxExpAVX512(SB), NOSPLIT, $0-24
	MOVQ row+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ CX, DX
	SHRQ $4, DX          // whole blocks of 16
	ANDQ $15, CX         // the rest
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1         // the rest's lanes
	KSHIFTRW $8, K1, K2  // … of the upper half

	// The max, 16 lanes, then folded.
	MOVL $0xff800000, AX // −Inf
	VPBROADCASTD AX, Z10
	MOVQ SI, DI
	MOVQ DX, BX
	TESTQ BX, BX
	JZ   maxrest

maxloop:
	VMAXPS (DI), Z10, Z10
	ADDQ $64, DI
	DECQ BX
	JNZ  maxloop

maxrest:
	VMAXPS (DI), Z10, K1, Z10
	VEXTRACTF64X4 $1, Z10, Y11
	VMAXPS Y11, Y10, Y10
	VEXTRACTF128 $1, Y10, X11
	VMAXPS X11, X10, X10
	VPERMILPS $0x4e, X10, X11
	VMAXPS X11, X10, X10
	VPERMILPS $0xb1, X10, X11
	VMAXPS X11, X10, X10
	VBROADCASTSS X10, Z10

	// The constants.
	MOVQ $expK<>(SB), AX
	VBROADCASTSD 0(AX), Z11
	VBROADCASTSD 8(AX), Z12
	VBROADCASTSD 16(AX), Z13
	VBROADCASTSD 24(AX), Z14
	VBROADCASTSD 32(AX), Z15
	VBROADCASTSD 40(AX), Z16
	VBROADCASTSD 48(AX), Z17
	VBROADCASTSD 56(AX), Z18
	VBROADCASTSD 64(AX), Z19
	VBROADCASTSD 72(AX), Z20
	VBROADCASTSD 80(AX), Z21
	VBROADCASTSD 88(AX), Z22
	VBROADCASTSD 96(AX), Z23
	VBROADCASTSD 104(AX), Z24
	VBROADCASTSD 112(AX), Z25
	VPXORQ Z30, Z30, Z30 // sums, lanes 0–7
	VPXORQ Z31, Z31, Z31 // sums, lanes 8–15

	MOVQ SI, DI
	TESTQ DX, DX
	JZ   exprest

exploop:
	VMOVUPS (DI), Z1
	EXP16
	VMOVUPS Z1, (DI)
	VADDPD Z2, Z30, Z30
	VADDPD Z3, Z31, Z31
	ADDQ $64, DI
	DECQ DX
	JNZ  exploop

exprest:
	TESTQ CX, CX
	JZ   sum
	VMOVUPS.Z (DI), K1, Z1
	EXP16
	VMOVUPS Z1, K1, (DI)
	VADDPD Z2, Z30, K1, Z30
	VADDPD Z3, Z31, K2, Z31

sum:
	VADDPD Z31, Z30, Z8
	VEXTRACTF64X4 $1, Z8, Y9
	VADDPD Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPD X9, X8, X8
	VPERMILPD $1, X8, X9
	VADDSD X9, X8, X8
	VMOVSD X8, ret+16(FP)
	VZEROUPPER
	RET

// Lane numbers 0 … 15, int32.
DATA laneK<>+0(SB)/8, $0x0000000100000000
DATA laneK<>+8(SB)/8, $0x0000000300000002
DATA laneK<>+16(SB)/8, $0x0000000500000004
DATA laneK<>+24(SB)/8, $0x0000000700000006
DATA laneK<>+32(SB)/8, $0x0000000900000008
DATA laneK<>+40(SB)/8, $0x0000000b0000000a
DATA laneK<>+48(SB)/8, $0x0000000d0000000c
DATA laneK<>+56(SB)/8, $0x0000000f0000000e
GLOBL laneK<>(SB), RODATA|NOPTR, $64

// func packKTAVX512(kt *float32, ldk int, k *float32, stride, n, dh int)
//
// kt[d·ldk + j] = k[j·stride + d] for j < n, d < dh: Kᵀ of one head, 16
// keys at a time, each row d of Kᵀ one gather of the 16 keys' d-th values
// (the last n mod 16 keys under a mask: nothing past them is read or
// written). stride·16·4 must fit an int32 (checked by the caller).
TEXT ·packKTAVX512(SB), NOSPLIT, $0-48
	MOVQ kt+0(FP), DI
	MOVQ ldk+8(FP), R8
	SHLQ $2, R8          // ldk, bytes
	MOVQ k+16(FP), SI
	MOVQ stride+24(FP), R9
	MOVQ n+32(FP), R13   // keys left
	MOVQ dh+40(FP), R10
	VPBROADCASTD R9, Z1
	MOVQ $laneK<>(SB), AX
	VPMULLD (AX), Z1, Z1 // lane l: l·stride
	SHLQ $6, R9          // 16 keys, bytes
	TESTQ R13, R13
	JLE  packdone

packblock:
	MOVQ $16, CX
	CMPQ R13, CX
	CMOVQLT R13, CX
	MOVL $1, BX
	SHLL CX, BX
	DECL BX
	KMOVW BX, K2         // the block's keys
	MOVQ SI, R11         // k + j·stride, then + d
	MOVQ DI, R12         // kt + j, then + d·ldk
	MOVQ R10, DX

packrow:
	KMOVW K2, K1
	VGATHERDPS (R11)(Z1*4), K1, Z2
	VMOVUPS Z2, K2, (R12)
	ADDQ $4, R11
	ADDQ R8, R12
	DECQ DX
	JNZ  packrow

	ADDQ R9, SI
	ADDQ $64, DI
	SUBQ $16, R13
	JG   packblock

packdone:
	VZEROUPPER
	RET

// func packKTTAVX512(kt *float32, ldk int, k *float32, stride, n16, dh16 int)
//
// kt[d·ldk + j] = k[j·stride + d] for the 16·n16 keys j and 16·dh16 dims d,
// by 16×16 in-register transposes (transpose_amd64.h) instead of a gather
// per Kᵀ row: per 16 keys and 16 dims, 16 row loads, the transpose and 16
// stores (packKT sends the last keys, below 16, and head dims that are not
// a multiple of 16 to the gathers). Each element is moved, never
// computed: the same bits as the gathers (TestPackKT).
// KTLOAD loads the next key's 16 dims (at R11, a key row R9 bytes on).
#define KTLOAD(z) \
	VMOVUPS (R11), z; \
	ADDQ R9, R11

// KTSTORE stores, for one e, the transposed block's rows e, 4+e, 8+e, 12+e
// (LANES4) as Kᵀ rows R12, R12 + 4, + 8 and + 12 rows (R14 = 4 rows, R15 =
// 12), then moves R12 one Kᵀ row on.
#define KTSTORE(u0, u1, u2, u3) \
	LANES4(u0, u1, u2, u3); \
	VMOVUPS Z28, (R12); \
	VMOVUPS Z29, (R12)(R14*1); \
	VMOVUPS Z30, (R12)(R14*2); \
	VMOVUPS Z31, (R12)(R15*1); \
	ADDQ R8, R12

TEXT ·packKTTAVX512(SB), NOSPLIT, $0-48
	MOVQ kt+0(FP), DI
	MOVQ ldk+8(FP), R8
	SHLQ $2, R8           // a Kᵀ row, bytes
	MOVQ k+16(FP), SI
	MOVQ stride+24(FP), R9
	SHLQ $2, R9           // a key row, bytes
	MOVQ n16+32(FP), R13
	MOVQ R8, R14
	SHLQ $2, R14          // 4 Kᵀ rows
	LEAQ (R14)(R14*2), R15 // 12 Kᵀ rows

ktkeys:
	MOVQ dh16+40(FP), DX
	MOVQ SI, BX           // the 16 keys' row starts, + 16 dims a block
	MOVQ DI, CX           // Kᵀ row 16·block, these keys' columns

ktdims:
	MOVQ BX, R11
	KTLOAD(Z0); KTLOAD(Z1); KTLOAD(Z2); KTLOAD(Z3)
	KTLOAD(Z4); KTLOAD(Z5); KTLOAD(Z6); KTLOAD(Z7)
	KTLOAD(Z8); KTLOAD(Z9); KTLOAD(Z10); KTLOAD(Z11)
	KTLOAD(Z12); KTLOAD(Z13); KTLOAD(Z14); KTLOAD(Z15)
	PT4(Z0, Z1, Z2, Z3)
	PT4(Z4, Z5, Z6, Z7)
	PT4(Z8, Z9, Z10, Z11)
	PT4(Z12, Z13, Z14, Z15)
	MOVQ CX, R12
	KTSTORE(Z0, Z4, Z8, Z12)
	KTSTORE(Z1, Z5, Z9, Z13)
	KTSTORE(Z2, Z6, Z10, Z14)
	KTSTORE(Z3, Z7, Z11, Z15)
	ADDQ $64, BX          // the next 16 dims
	LEAQ (CX)(R14*4), CX  // 16 Kᵀ rows on
	DECQ DX
	JNZ  ktdims

	MOVQ R9, AX
	SHLQ $4, AX
	ADDQ AX, SI           // the next 16 keys
	ADDQ $64, DI          // their 16 columns
	DECQ R13
	JNZ  ktkeys
	VZEROUPPER
	RET
