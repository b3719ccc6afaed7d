//go:build !purego

#include "textflag.h"

// The AVX-512 element-wise kernels of ops_amd64.go: LayerNorm's statistics
// and normalisation, the residual add, RoPE. Each processes 16 float32 a
// step and its last n mod 16 values under a mask, touching nothing past
// them.

// TAILMASK sets K1 to the low (CX & 15) lanes, K2 to K1's upper 8, K3 to
// all 16, and DX to CX / 16, CX to CX & 15. Clobbers AX.
#define TAILMASK \
	MOVQ CX, DX; \
	SHRQ $4, DX; \
	ANDQ $15, CX; \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K1; \
	KSHIFTRW $8, K1, K2; \
	KXNORW K3, K3, K3

// FOLDPD folds the 8 float64 lanes of z (x, y its low parts) into X0's low
// lane; clobbers Z1.
#define FOLDPD(z, y, x) \
	VEXTRACTF64X4 $1, z, Y1; \
	VADDPD Y1, y, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD X1, X0, X0; \
	VPERMILPD $1, X0, X1; \
	VADDSD X1, X0, X0

// func layerNormStatsAVX512(x *float32, n int) (mean, sq float64)
//
// mean = Σ x / n and sq = Σ (x − mean)², both in float64 (16 lane sums,
// folded at the end), for n ≥ 1.
TEXT ·layerNormStatsAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VCVTSI2SDQ CX, X9, X9 // n as float64
	TAILMASK
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	MOVQ SI, DI
	MOVQ DX, BX
	TESTQ BX, BX
	JZ   sumrest

sumloop:
	VMOVUPS (DI), Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VCVTPS2PD Y4, Z4
	VCVTPS2PD Y5, Z5
	VADDPD Z4, Z2, Z2
	VADDPD Z5, Z3, Z3
	ADDQ $64, DI
	DECQ BX
	JNZ  sumloop

sumrest:
	VMOVUPS.Z (DI), K1, Z4 // zeros past the end add nothing
	VEXTRACTF64X4 $1, Z4, Y5
	VCVTPS2PD Y4, Z4
	VCVTPS2PD Y5, Z5
	VADDPD Z4, Z2, Z2
	VADDPD Z5, Z3, Z3
	VADDPD Z3, Z2, Z2
	FOLDPD(Z2, Y2, X2)
	VDIVSD X9, X0, X0
	VMOVSD X0, mean+16(FP)
	VBROADCASTSD X0, Z8 // the mean

	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	MOVQ SI, DI
	MOVQ DX, BX
	TESTQ BX, BX
	JZ   sqrest

sqloop:
	VMOVUPS (DI), Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VCVTPS2PD Y4, Z4
	VCVTPS2PD Y5, Z5
	VSUBPD Z8, Z4, Z4
	VSUBPD Z8, Z5, Z5
	VFMADD231PD Z4, Z4, Z2
	VFMADD231PD Z5, Z5, Z3
	ADDQ $64, DI
	DECQ BX
	JNZ  sqloop

sqrest:
	VMOVUPS.Z (DI), K1, Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VCVTPS2PD Y4, Z4
	VCVTPS2PD Y5, Z5
	VSUBPD.Z Z8, Z4, K1, Z4 // lanes past the end: 0, not −mean
	VSUBPD.Z Z8, Z5, K2, Z5
	VFMADD231PD Z4, Z4, Z2
	VFMADD231PD Z5, Z5, Z3
	VADDPD Z3, Z2, Z2
	FOLDPD(Z2, Y2, X2)
	VMOVSD X0, sq+24(FP)
	VZEROUPPER
	RET

// NORM16 sets Z4 to float32((x − mean)·rstd·w) for the 16 values of x at
// (DI) and of w at (R8), loaded under mask k (K3: all 16, K1: the tail).
#define NORM16(k) \
	VMOVUPS.Z (DI), k, Z4; \
	VMOVUPS.Z (R8), k, Z6; \
	VEXTRACTF64X4 $1, Z4, Y5; \
	VEXTRACTF64X4 $1, Z6, Y7; \
	VCVTPS2PD Y4, Z4; \
	VCVTPS2PD Y5, Z5; \
	VCVTPS2PD Y6, Z6; \
	VCVTPS2PD Y7, Z7; \
	VSUBPD Z8, Z4, Z4; \
	VSUBPD Z8, Z5, Z5; \
	VMULPD Z9, Z4, Z4; \
	VMULPD Z9, Z5, Z5; \
	VMULPD Z6, Z4, Z4; \
	VMULPD Z7, Z5, Z5; \
	VCVTPD2PS Z4, Y4; \
	VCVTPD2PS Z5, Y5; \
	VINSERTF64X4 $1, Y5, Z4, Z4


// func layerNormApplyAVX512(out, in, w, b *float32, n int, mean, rstd float64)
//
// out[i] = float32((in[i] − mean)·rstd·w[i]) (in float64, one rounding),
// then + b[i] in float32 when b is not nil: ops.go's layerNormRow exactly.
TEXT ·layerNormApplyAVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), R10
	MOVQ in+8(FP), DI
	MOVQ w+16(FP), R8
	MOVQ b+24(FP), R9
	MOVQ n+32(FP), CX
	VBROADCASTSD mean+40(FP), Z8
	VBROADCASTSD rstd+48(FP), Z9
	TAILMASK
	TESTQ R9, R9
	JZ   nobias
	TESTQ DX, DX
	JZ   biasrest

biasloop:
	NORM16(K3)
	VADDPS (R9), Z4, Z4
	VMOVUPS Z4, (R10)
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	DECQ DX
	JNZ  biasloop

biasrest:
	TESTQ CX, CX
	JZ   done
	NORM16(K1)
	VMOVUPS.Z (R9), K1, Z6
	VADDPS Z6, Z4, Z4
	VMOVUPS Z4, K1, (R10)
	JMP  done

nobias:
	TESTQ DX, DX
	JZ   nobiasrest

nobiasloop:
	NORM16(K3)
	VMOVUPS Z4, (R10)
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $64, R10
	DECQ DX
	JNZ  nobiasloop

nobiasrest:
	TESTQ CX, CX
	JZ   done
	NORM16(K1)
	VMOVUPS Z4, K1, (R10)

done:
	VZEROUPPER
	RET

// func addAVX512(dst, a, b *float32, n int)
//
// dst[i] = a[i] + b[i]; dst may be a or b.
TEXT ·addAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), R10
	MOVQ a+8(FP), DI
	MOVQ b+16(FP), SI
	MOVQ n+24(FP), CX
	TAILMASK
	TESTQ DX, DX
	JZ   addrest

addloop:
	VMOVUPS (DI), Z4
	VADDPS (SI), Z4, Z4
	VMOVUPS Z4, (R10)
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $64, R10
	DECQ DX
	JNZ  addloop

addrest:
	TESTQ CX, CX
	JZ   adddone
	VMOVUPS.Z (DI), K1, Z4
	VMOVUPS.Z (SI), K1, Z5
	VADDPS Z5, Z4, Z4
	VMOVUPS Z4, K1, (R10)

adddone:
	VZEROUPPER
	RET

// ROT16 rotates the 16 pairs at lo (DI), hi (DI)(R11*1) by cos (SI) and
// sin (SI)(R11*1), loaded and stored under mask k (K3: all, K1: the tail):
//   lo' = fl(fl(lo·cos) − fl(hi·sin)), hi' = fl(fl(hi·cos) + fl(lo·sin)),
// ropeRow's float32 operations, unfused.
#define ROT16(k) \
	VMOVUPS.Z (DI), k, Z0; \
	VMOVUPS.Z (DI)(R11*1), k, Z1; \
	VMOVUPS.Z (SI), k, Z2; \
	VMOVUPS.Z (SI)(R11*1), k, Z3; \
	VMULPS Z2, Z0, Z4; \
	VMULPS Z3, Z1, Z5; \
	VSUBPS Z5, Z4, Z4; \
	VMULPS Z2, Z1, Z6; \
	VMULPS Z3, Z0, Z7; \
	VADDPS Z7, Z6, Z6; \
	VMOVUPS Z4, k, (DI); \
	VMOVUPS Z6, k, (DI)(R11*1)


// func ropeAVX512(x, cs *float32, heads, headDim int)
//
// Rotates heads heads of headDim values at x, one after another: values j
// and half+j of each by the angle whose cos is cs[j] and sin cs[half+j]
// (half = headDim/2).
TEXT ·ropeAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), R8
	MOVQ cs+8(FP), R9
	MOVQ heads+16(FP), R12
	MOVQ headDim+24(FP), R13
	MOVQ R13, CX
	SHRQ $1, CX
	MOVQ CX, R11
	SHLQ $2, R11 // half, bytes
	SHLQ $2, R13 // headDim, bytes
	TAILMASK     // DX: whole blocks of 16 per half, K1: the rest
	TESTQ R12, R12
	JZ   ropedone

head:
	MOVQ R8, DI
	MOVQ R9, SI
	MOVQ DX, BX
	TESTQ BX, BX
	JZ   roperest

ropeloop:
	ROT16(K3)
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ BX
	JNZ  ropeloop

roperest:
	TESTQ CX, CX
	JZ   nexthead
	ROT16(K1)

nexthead:
	ADDQ R13, R8
	DECQ R12
	JNZ  head

ropedone:
	VZEROUPPER
	RET
