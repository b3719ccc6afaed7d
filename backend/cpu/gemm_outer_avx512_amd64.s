//go:build !purego

#include "textflag.h"

// The outer-product micro-kernel (see gemm_outer.go): an 8×48 block of C in
// the 24 ZMM accumulators Z0–Z23 (row i of C, columns 16v…16v+15, in
// Z(3i+v)), the three 16-float vectors of one B row in Z24–Z26, and the A
// scalars broadcast into Z27/Z28 (two, alternating, so consecutive rows'
// broadcasts do not wait on each other's FMAs).

// FMA3 adds the broadcast A scalar in s times the B row to row r's three
// accumulators.
#define FMA3(s, a0, a1, a2) \
	VFMADD231PS Z24, s, a0; \
	VFMADD231PS Z25, s, a1; \
	VFMADD231PS Z26, s, a2

// STEP runs one k: the B row at boff(DI) (48 floats), and the A scalar at
// aoff(row)(SI*1) of each of the 8 A rows. Every accumulator receives one
// fused multiply-add per k, in k order.
#define STEP(aoff, boff) \
	VMOVUPS boff(DI), Z24; \
	VMOVUPS boff+64(DI), Z25; \
	VMOVUPS boff+128(DI), Z26; \
	VBROADCASTSS aoff(AX)(SI*1), Z27; \
	FMA3(Z27, Z0, Z1, Z2); \
	VBROADCASTSS aoff(BX)(SI*1), Z28; \
	FMA3(Z28, Z3, Z4, Z5); \
	VBROADCASTSS aoff(CX)(SI*1), Z27; \
	FMA3(Z27, Z6, Z7, Z8); \
	VBROADCASTSS aoff(DX)(SI*1), Z28; \
	FMA3(Z28, Z9, Z10, Z11); \
	VBROADCASTSS aoff(R8)(SI*1), Z27; \
	FMA3(Z27, Z12, Z13, Z14); \
	VBROADCASTSS aoff(R9)(SI*1), Z28; \
	FMA3(Z28, Z15, Z16, Z17); \
	VBROADCASTSS aoff(R10)(SI*1), Z27; \
	FMA3(Z27, Z18, Z19, Z20); \
	VBROADCASTSS aoff(R11)(SI*1), Z28; \
	FMA3(Z28, Z21, Z22, Z23)

// STORE3 stores row r's accumulators at (DI), 64(DI), 128(DI) with the
// column masks K1–K3 (masked-off lanes are not written and cannot fault).
#define STORE3(a0, a1, a2) \
	VMOVUPS a0, K1, (DI); \
	VMOVUPS a1, K2, 64(DI); \
	VMOVUPS a2, K3, 128(DI)

// SCATTER3 stores row r's accumulators transposed: lane j of column vector
// v goes to (DI) + 4·idx[16v+j], idx in Z24–Z26, for the lanes of K1–K3. A
// scatter clears its mask, so each uses a copy (K4–K6).
#define SCATTER3(a0, a1, a2) \
	KMOVW K1, K4; \
	VSCATTERDPS a0, K4, (DI)(Z24*4); \
	KMOVW K2, K5; \
	VSCATTERDPS a1, K5, (DI)(Z25*4); \
	KMOVW K3, K6; \
	VSCATTERDPS a2, K6, (DI)(Z26*4)

// func gemm8x48AVX512(a *[8]*float32, b *float32, k int, c *float32, ldc, rows, cols int, idx *int32)
//
// C[i][j] = Σ_kk a[i][kk]·b[kk·48+j] for i < rows (1…8), j < cols (1…48),
// k ≥ 1: each sum starts at 0 and takes one fused multiply-add per kk, in
// kk order. The a rows past rows must still point at k readable floats
// (they are computed and dropped). b is a packed tile: k rows of 48 floats.
// With idx == nil C is stored row-major, row i at c + i·ldc; else it is
// stored transposed: C[i][j] at c[i + idx[j]] (idx holds 48 int32 offsets;
// those past cols are not read as destinations). Only C's rows < rows and
// columns < cols are written.
TEXT ·gemm8x48AVX512(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ 0(SI), AX
	MOVQ 8(SI), BX
	MOVQ 16(SI), CX
	MOVQ 24(SI), DX
	MOVQ 32(SI), R8
	MOVQ 40(SI), R9
	MOVQ 48(SI), R10
	MOVQ 56(SI), R11
	MOVQ b+8(FP), DI
	MOVQ k+16(FP), R12

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

	XORQ SI, SI
	MOVQ R12, R13
	SHRQ $2, R13
	JZ   rem

loop4:
	STEP(0, 0)
	STEP(4, 192)
	STEP(8, 384)
	STEP(12, 576)
	ADDQ $16, SI
	ADDQ $768, DI
	DECQ R13
	JNZ  loop4

rem:
	ANDQ $3, R12
	JZ   store

loop1:
	STEP(0, 0)
	ADDQ $4, SI
	ADDQ $192, DI
	DECQ R12
	JNZ  loop1

store:
	// K1–K3 = the first cols columns: bits of (1<<cols)−1, 16 per vector.
	MOVQ cols+48(FP), CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	SHRQ $16, AX
	KMOVW AX, K3
	MOVQ c+24(FP), DI
	MOVQ rows+40(FP), R15
	MOVQ idx+56(FP), SI
	TESTQ SI, SI
	JNZ  transposed

	MOVQ ldc+32(FP), SI
	SHLQ $2, SI
	STORE3(Z0, Z1, Z2)
	CMPQ R15, $1
	JLE  done
	ADDQ SI, DI
	STORE3(Z3, Z4, Z5)
	CMPQ R15, $2
	JLE  done
	ADDQ SI, DI
	STORE3(Z6, Z7, Z8)
	CMPQ R15, $3
	JLE  done
	ADDQ SI, DI
	STORE3(Z9, Z10, Z11)
	CMPQ R15, $4
	JLE  done
	ADDQ SI, DI
	STORE3(Z12, Z13, Z14)
	CMPQ R15, $5
	JLE  done
	ADDQ SI, DI
	STORE3(Z15, Z16, Z17)
	CMPQ R15, $6
	JLE  done
	ADDQ SI, DI
	STORE3(Z18, Z19, Z20)
	CMPQ R15, $7
	JLE  done
	ADDQ SI, DI
	STORE3(Z21, Z22, Z23)
	JMP  done

transposed:
	VMOVDQU32 (SI), Z24
	VMOVDQU32 64(SI), Z25
	VMOVDQU32 128(SI), Z26
	SCATTER3(Z0, Z1, Z2)
	CMPQ R15, $1
	JLE  done
	ADDQ $4, DI
	SCATTER3(Z3, Z4, Z5)
	CMPQ R15, $2
	JLE  done
	ADDQ $4, DI
	SCATTER3(Z6, Z7, Z8)
	CMPQ R15, $3
	JLE  done
	ADDQ $4, DI
	SCATTER3(Z9, Z10, Z11)
	CMPQ R15, $4
	JLE  done
	ADDQ $4, DI
	SCATTER3(Z12, Z13, Z14)
	CMPQ R15, $5
	JLE  done
	ADDQ $4, DI
	SCATTER3(Z15, Z16, Z17)
	CMPQ R15, $6
	JLE  done
	ADDQ $4, DI
	SCATTER3(Z18, Z19, Z20)
	CMPQ R15, $7
	JLE  done
	ADDQ $4, DI
	SCATTER3(Z21, Z22, Z23)

done:
	VZEROUPPER
	RET
