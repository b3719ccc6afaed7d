//go:build !purego

#include "textflag.h"

// FMA6 multiplies the W vector in Z30 by the six X rows in Z24–Z29 into the
// accumulators of W column q: Z(q), Z(4+q), …, Z(20+q).
#define FMA6(a0, a1, a2, a3, a4, a5) \
	VFMADD231PS Z30, Z24, a0; \
	VFMADD231PS Z30, Z25, a1; \
	VFMADD231PS Z30, Z26, a2; \
	VFMADD231PS Z30, Z27, a3; \
	VFMADD231PS Z30, Z28, a4; \
	VFMADD231PS Z30, Z29, a5

// STEP runs one 16-float group at byte offset SI: six X rows, then the four
// W rows one after another, each used by six FMAs.
#define STEP \
	VMOVUPS (AX)(SI*1), Z24; \
	VMOVUPS (BX)(SI*1), Z25; \
	VMOVUPS (CX)(SI*1), Z26; \
	VMOVUPS (DX)(SI*1), Z27; \
	VMOVUPS (R8)(SI*1), Z28; \
	VMOVUPS (R9)(SI*1), Z29; \
	VMOVUPS (R10)(SI*1), Z30; \
	FMA6(Z0, Z4, Z8, Z12, Z16, Z20); \
	VMOVUPS (R11)(SI*1), Z30; \
	FMA6(Z1, Z5, Z9, Z13, Z17, Z21); \
	VMOVUPS (R12)(SI*1), Z30; \
	FMA6(Z2, Z6, Z10, Z14, Z18, Z22); \
	VMOVUPS (R13)(SI*1), Z30; \
	FMA6(Z3, Z7, Z11, Z15, Z19, Z23)

// FOLD adds the upper 8 lanes of a 16-lane accumulator to its lower 8 (ZMM
// forms only: AVX-512F without VL).
#define FOLD(z) \
	VEXTRACTF64X4 $1, z, Y31; \
	VADDPS Z31, z, z

// REDUCE4 folds the 8 lanes of the 4 accumulators of one Y row into 4 sums
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)), as gemm_amd64.s, and stores them at
// off(DI).
#define REDUCE4(a0, a1, a2, a3, x0, x1, off) \
	VHADDPS a1, a0, a0; \
	VHADDPS a3, a2, a2; \
	VHADDPS a2, a0, a0; \
	VEXTRACTF128 $1, a0, x1; \
	VADDPS x1, x0, x0; \
	VMOVUPS x0, off(DI)

// func dot6x4AVX512(xs *[6]*float32, ws *[4]*float32, k int, c *[24]float32)
//
// c[4r+q] = Σ_k xs[r][k]·ws[q][k] for r < 6, q < 4. Accumulator Z(4r+q)
// holds 16 lane sums: lane l the products k ≡ l mod 16 in k order, each
// added by a fused multiply-add. At the end lane l+8 is added to lane l, and
// the 8 lanes are folded as the AVX2 kernel folds them. The last k mod 16
// floats are read with zero-masked loads: nothing past a row's end is
// touched. Rows may repeat (ragged blocks).
TEXT ·dot6x4AVX512(SB), NOSPLIT, $0-32
	MOVQ xs+0(FP), SI
	MOVQ 0(SI), AX
	MOVQ 8(SI), BX
	MOVQ 16(SI), CX
	MOVQ 24(SI), DX
	MOVQ 32(SI), R8
	MOVQ 40(SI), R9
	MOVQ ws+8(FP), SI
	MOVQ 0(SI), R10
	MOVQ 8(SI), R11
	MOVQ 16(SI), R12
	MOVQ 24(SI), R13
	MOVQ k+16(FP), DI

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

	// R15 = byte length of the whole 16-float groups; SI walks it.
	MOVQ DI, R15
	ANDQ $-16, R15
	SHLQ $2, R15
	XORQ SI, SI
	CMPQ SI, R15
	JGE  tail

loop:
	STEP
	ADDQ $64, SI
	CMPQ SI, R15
	JLT  loop

tail:
	// K1 = the first k mod 16 lanes.
	ANDQ $15, DI
	JZ   reduce
	MOVQ $1, R15
	MOVQ DI, CX
	SHLQ CX, R15
	DECQ R15
	KMOVW R15, K1
	// CX was x row 2: reload it.
	MOVQ xs+0(FP), CX
	MOVQ 16(CX), CX
	VMOVUPS.Z (AX)(SI*1), K1, Z24
	VMOVUPS.Z (BX)(SI*1), K1, Z25
	VMOVUPS.Z (CX)(SI*1), K1, Z26
	VMOVUPS.Z (DX)(SI*1), K1, Z27
	VMOVUPS.Z (R8)(SI*1), K1, Z28
	VMOVUPS.Z (R9)(SI*1), K1, Z29
	VMOVUPS.Z (R10)(SI*1), K1, Z30
	FMA6(Z0, Z4, Z8, Z12, Z16, Z20)
	VMOVUPS.Z (R11)(SI*1), K1, Z30
	FMA6(Z1, Z5, Z9, Z13, Z17, Z21)
	VMOVUPS.Z (R12)(SI*1), K1, Z30
	FMA6(Z2, Z6, Z10, Z14, Z18, Z22)
	VMOVUPS.Z (R13)(SI*1), K1, Z30
	FMA6(Z3, Z7, Z11, Z15, Z19, Z23)

reduce:
	MOVQ c+24(FP), DI
	FOLD(Z0)
	FOLD(Z1)
	FOLD(Z2)
	FOLD(Z3)
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1, 0)
	FOLD(Z4)
	FOLD(Z5)
	FOLD(Z6)
	FOLD(Z7)
	REDUCE4(Y4, Y5, Y6, Y7, X4, X5, 16)
	FOLD(Z8)
	FOLD(Z9)
	FOLD(Z10)
	FOLD(Z11)
	REDUCE4(Y8, Y9, Y10, Y11, X8, X9, 32)
	FOLD(Z12)
	FOLD(Z13)
	FOLD(Z14)
	FOLD(Z15)
	REDUCE4(Y12, Y13, Y14, Y15, X12, X13, 48)
	FOLD(Z16)
	FOLD(Z17)
	FOLD(Z18)
	FOLD(Z19)
	VMOVAPS Z16, Z0
	VMOVAPS Z17, Z1
	VMOVAPS Z18, Z2
	VMOVAPS Z19, Z3
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1, 64)
	FOLD(Z20)
	FOLD(Z21)
	FOLD(Z22)
	FOLD(Z23)
	VMOVAPS Z20, Z0
	VMOVAPS Z21, Z1
	VMOVAPS Z22, Z2
	VMOVAPS Z23, Z3
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1, 80)
	VZEROUPPER
	RET

// REDUCE4R folds the 8 lanes of 4 accumulators into 4 sums in x0, as
// REDUCE4 does, without storing them.
#define REDUCE4R(a0, a1, a2, a3, x0, x1) \
	VHADDPS a1, a0, a0; \
	VHADDPS a3, a2, a2; \
	VHADDPS a2, a0, a0; \
	VEXTRACTF128 $1, a0, x1; \
	VADDPS x1, x0, x0

// func gemm6x4AVX512(xs *[6]*float32, w *float32, ldw, blocks, k int, y *float32, ldy, rows, acc int)
//
// For each of blocks blocks of 4 W rows (w, w+ldw, …; the next block 4·ldw
// further), the 6×4 block of sums that dot6x4AVX512 computes, rounded the
// same way, stored straight into y (row r at y + r·ldy, the block's 4
// columns after the previous block's) for the first rows rows (1 to 6; the
// X rows past them repeat a real row and are dropped); with acc ≠ 0 the
// sums are added to y instead (the blocks of a K split). The argument slots
// w and y are advanced in place from block to block.
TEXT ·gemm6x4AVX512(SB), NOSPLIT, $0-72
block:
	MOVQ xs+0(FP), SI
	MOVQ 0(SI), AX
	MOVQ 8(SI), BX
	MOVQ 16(SI), CX
	MOVQ 24(SI), DX
	MOVQ 32(SI), R8
	MOVQ 40(SI), R9
	MOVQ w+8(FP), R10
	MOVQ ldw+16(FP), SI
	SHLQ $2, SI
	LEAQ (R10)(SI*1), R11
	LEAQ (R11)(SI*1), R12
	LEAQ (R12)(SI*1), R13
	MOVQ k+32(FP), DI

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

	MOVQ DI, R15
	ANDQ $-16, R15
	SHLQ $2, R15
	XORQ SI, SI
	CMPQ SI, R15
	JGE  gtail

gloop:
	STEP
	ADDQ $64, SI
	CMPQ SI, R15
	JLT  gloop

gtail:
	ANDQ $15, DI
	JZ   greduce
	MOVQ $1, R15
	MOVQ DI, CX
	SHLQ CX, R15
	DECQ R15
	KMOVW R15, K1
	MOVQ xs+0(FP), CX
	MOVQ 16(CX), CX
	VMOVUPS.Z (AX)(SI*1), K1, Z24
	VMOVUPS.Z (BX)(SI*1), K1, Z25
	VMOVUPS.Z (CX)(SI*1), K1, Z26
	VMOVUPS.Z (DX)(SI*1), K1, Z27
	VMOVUPS.Z (R8)(SI*1), K1, Z28
	VMOVUPS.Z (R9)(SI*1), K1, Z29
	VMOVUPS.Z (R10)(SI*1), K1, Z30
	FMA6(Z0, Z4, Z8, Z12, Z16, Z20)
	VMOVUPS.Z (R11)(SI*1), K1, Z30
	FMA6(Z1, Z5, Z9, Z13, Z17, Z21)
	VMOVUPS.Z (R12)(SI*1), K1, Z30
	FMA6(Z2, Z6, Z10, Z14, Z18, Z22)
	VMOVUPS.Z (R13)(SI*1), K1, Z30
	FMA6(Z3, Z7, Z11, Z15, Z19, Z23)

greduce:
	MOVQ y+40(FP), DI
	MOVQ ldy+48(FP), SI
	SHLQ $2, SI
	MOVQ rows+56(FP), R15
	FOLD(Z0)
	FOLD(Z1)
	FOLD(Z2)
	FOLD(Z3)
	REDUCE4R(Y0, Y1, Y2, Y3, X0, X1)
	CMPQ acc+64(FP), $0
	JEQ  gstore0
	VADDPS (DI), X0, X0 // a later K block: y + sums
gstore0:
	VMOVUPS X0, (DI)
	FOLD(Z4)
	FOLD(Z5)
	FOLD(Z6)
	FOLD(Z7)
	CMPQ R15, $1
	JLE  gnext
	ADDQ SI, DI
	REDUCE4R(Y4, Y5, Y6, Y7, X4, X5)
	CMPQ acc+64(FP), $0
	JEQ  gstore1
	VADDPS (DI), X4, X4 // a later K block: y + sums
gstore1:
	VMOVUPS X4, (DI)
	FOLD(Z8)
	FOLD(Z9)
	FOLD(Z10)
	FOLD(Z11)
	CMPQ R15, $2
	JLE  gnext
	ADDQ SI, DI
	REDUCE4R(Y8, Y9, Y10, Y11, X8, X9)
	CMPQ acc+64(FP), $0
	JEQ  gstore2
	VADDPS (DI), X8, X8 // a later K block: y + sums
gstore2:
	VMOVUPS X8, (DI)
	FOLD(Z12)
	FOLD(Z13)
	FOLD(Z14)
	FOLD(Z15)
	CMPQ R15, $3
	JLE  gnext
	ADDQ SI, DI
	REDUCE4R(Y12, Y13, Y14, Y15, X12, X13)
	CMPQ acc+64(FP), $0
	JEQ  gstore3
	VADDPS (DI), X12, X12 // a later K block: y + sums
gstore3:
	VMOVUPS X12, (DI)
	FOLD(Z16)
	FOLD(Z17)
	FOLD(Z18)
	FOLD(Z19)
	VMOVAPS Z16, Z0
	VMOVAPS Z17, Z1
	VMOVAPS Z18, Z2
	VMOVAPS Z19, Z3
	CMPQ R15, $4
	JLE  gnext
	ADDQ SI, DI
	REDUCE4R(Y0, Y1, Y2, Y3, X0, X1)
	CMPQ acc+64(FP), $0
	JEQ  gstore4
	VADDPS (DI), X0, X0 // a later K block: y + sums
gstore4:
	VMOVUPS X0, (DI)
	FOLD(Z20)
	FOLD(Z21)
	FOLD(Z22)
	FOLD(Z23)
	VMOVAPS Z20, Z0
	VMOVAPS Z21, Z1
	VMOVAPS Z22, Z2
	VMOVAPS Z23, Z3
	CMPQ R15, $5
	JLE  gnext
	ADDQ SI, DI
	REDUCE4R(Y0, Y1, Y2, Y3, X0, X1)
	CMPQ acc+64(FP), $0
	JEQ  gstore5
	VADDPS (DI), X0, X0 // a later K block: y + sums
gstore5:
	VMOVUPS X0, (DI)

gnext:
	MOVQ ldw+16(FP), SI
	SHLQ $4, SI
	ADDQ SI, w+8(FP)
	ADDQ $16, y+40(FP)
	DECQ blocks+24(FP)
	JNZ  block
	VZEROUPPER
	RET

// func cvtF16AVX512(dst *float32, src *uint16, n int)
//
// dst[i] = float32(src[i]) for IEEE binary16 src (VCVTPH2PS is exact), 16
// at a time, the last n mod 16 with masked loads and stores.
TEXT ·cvtF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), DX
	MOVQ DX, CX
	SHRQ $4, CX
	JZ   f16tail
f16loop:
	VCVTPH2PS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  f16loop
f16tail:
	ANDQ $15, DX
	JZ   f16done
	MOVQ DX, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	VMOVDQU16.Z (SI), K1, Y1
	VCVTPH2PS Y1, Z0
	VMOVUPS Z0, K1, (DI)
f16done:
	VZEROUPPER
	RET

// func cvtBF16AVX512(dst *float32, src *uint16, n int)
//
// dst[i] = the float32 whose upper 16 bits are src[i] (bfloat16 is exact in
// float32): zero-extend to 32 bits and shift left by 16.
TEXT ·cvtBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), DX
	MOVQ DX, CX
	SHRQ $4, CX
	JZ   bf16tail
bf16loop:
	VPMOVZXWD (SI), Z0
	VPSLLD $16, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  bf16loop
bf16tail:
	ANDQ $15, DX
	JZ   bf16done
	MOVQ DX, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	VMOVDQU16.Z (SI), K1, Y1
	VPMOVZXWD Y1, Z0
	VPSLLD $16, Z0, Z0
	VMOVUPS Z0, K1, (DI)
bf16done:
	VZEROUPPER
	RET
