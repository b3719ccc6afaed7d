//go:build !purego

#include "textflag.h"

// tailMask<> is 8 all-ones words then 8 zero words: the 8 words at word
// offset 8−r form a VMASKMOVPS mask whose first r lanes are set.
DATA tailMask<>+0(SB)/8, $0xffffffffffffffff
DATA tailMask<>+8(SB)/8, $0xffffffffffffffff
DATA tailMask<>+16(SB)/8, $0xffffffffffffffff
DATA tailMask<>+24(SB)/8, $0xffffffffffffffff
DATA tailMask<>+32(SB)/8, $0
DATA tailMask<>+40(SB)/8, $0
DATA tailMask<>+48(SB)/8, $0
DATA tailMask<>+56(SB)/8, $0
GLOBL tailMask<>(SB), RODATA|NOPTR, $64

// FMA3 multiplies the X rows in Y12–Y14 by the W vector in Y15 into the
// accumulators of column q: Y(q), Y(4+q), Y(8+q).
#define FMA3(a0, a1, a2) \
	VFMADD231PS Y15, Y12, a0; \
	VFMADD231PS Y15, Y13, a1; \
	VFMADD231PS Y15, Y14, a2

// REDUCE4 folds the 8 lanes of the 4 accumulators of one Y row into 4 sums
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) and stores them at off(DI).
#define REDUCE4(a0, a1, a2, a3, x0, x1, off) \
	VHADDPS a1, a0, a0; \
	VHADDPS a3, a2, a2; \
	VHADDPS a2, a0, a0; \
	VEXTRACTF128 $1, a0, x1; \
	VADDPS x1, x0, x0; \
	VMOVUPS x0, off(DI)

// func dot3x4AVX2(x0, x1, x2, w0, w1, w2, w3 *float32, k int, c *[12]float32)
//
// Accumulator Y(4r+q) holds 8 lane sums of x_r·w_q.
TEXT ·dot3x4AVX2(SB), NOSPLIT, $0-72
	MOVQ x0+0(FP), AX
	MOVQ x1+8(FP), BX
	MOVQ x2+16(FP), CX
	MOVQ w0+24(FP), R8
	MOVQ w1+32(FP), R9
	MOVQ w2+40(FP), R10
	MOVQ w3+48(FP), R11
	MOVQ k+56(FP), DX
	MOVQ c+64(FP), DI

	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

	// R12 = byte length of the whole 8-float groups; SI walks it.
	MOVQ DX, R12
	ANDQ $-8, R12
	SHLQ $2, R12
	XORQ SI, SI
	CMPQ SI, R12
	JGE  tail

loop:
	VMOVUPS (AX)(SI*1), Y12
	VMOVUPS (BX)(SI*1), Y13
	VMOVUPS (CX)(SI*1), Y14
	VMOVUPS (R8)(SI*1), Y15
	FMA3(Y0, Y4, Y8)
	VMOVUPS (R9)(SI*1), Y15
	FMA3(Y1, Y5, Y9)
	VMOVUPS (R10)(SI*1), Y15
	FMA3(Y2, Y6, Y10)
	VMOVUPS (R11)(SI*1), Y15
	FMA3(Y3, Y7, Y11)
	ADDQ $32, SI
	CMPQ SI, R12
	JLT  loop

tail:
	// The last k mod 8 floats: masked loads read only those (never past
	// the row's end) and fill the other lanes with zeros. Y15 holds the
	// mask for each load and then the loaded W vector, so it is reloaded
	// from R13 before every W row.
	ANDQ $7, DX
	JZ   reduce
	NEGQ DX
	ADDQ $8, DX
	LEAQ tailMask<>(SB), R13
	LEAQ (R13)(DX*4), R13
	VMOVUPS    (R13), Y15
	VMASKMOVPS (AX)(SI*1), Y15, Y12
	VMASKMOVPS (BX)(SI*1), Y15, Y13
	VMASKMOVPS (CX)(SI*1), Y15, Y14
	VMASKMOVPS (R8)(SI*1), Y15, Y15
	FMA3(Y0, Y4, Y8)
	VMOVUPS    (R13), Y15
	VMASKMOVPS (R9)(SI*1), Y15, Y15
	FMA3(Y1, Y5, Y9)
	VMOVUPS    (R13), Y15
	VMASKMOVPS (R10)(SI*1), Y15, Y15
	FMA3(Y2, Y6, Y10)
	VMOVUPS    (R13), Y15
	VMASKMOVPS (R11)(SI*1), Y15, Y15
	FMA3(Y3, Y7, Y11)

reduce:
	REDUCE4(Y0, Y1, Y2, Y3, X0, X1, 0)
	REDUCE4(Y4, Y5, Y6, Y7, X4, X5, 16)
	REDUCE4(Y8, Y9, Y10, Y11, X8, X9, 32)
	VZEROUPPER
	RET
