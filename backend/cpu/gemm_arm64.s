//go:build !purego

#include "textflag.h"

// func dot3x4NEON(x0, x1, x2, w0, w1, w2, w3 *float32, groups int, tail *[7][8]float32, c *[12]float32)
//
// The lanes are those of the AVX2 kernel (gemm_amd64.s), each accumulator
// split over two V registers so that both GOARCHes round alike: output
// (r, q) keeps lanes 0–3 in V(8r+2q) and lanes 4–7 in V(8r+2q+1), which
// takes V0–V23; the X rows live in V24–V29 and each W row passes through
// V30–V31. After groups 8-float groups, a non-nil tail (x0, x1, x2, w0…w3
// tails, zero-padded) runs through the same loop as one more group.
//
// The fold uses FADDP (pairwise add), which the Go assembler does not know,
// so it is spelled as WORD: 0x6e20d400 | Vm<<16 | Vn<<5 | Vd (Arm ARM,
// FADDP (vector), Q=1 sz=0). Three rounds of pairwise adds give exactly the
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) tree of the AVX2 kernel's VHADDPS.
TEXT ·dot3x4NEON(SB), NOSPLIT, $0-80
	MOVD x0+0(FP), R0
	MOVD x1+8(FP), R1
	MOVD x2+16(FP), R2
	MOVD w0+24(FP), R3
	MOVD w1+32(FP), R4
	MOVD w2+40(FP), R5
	MOVD w3+48(FP), R6
	MOVD groups+56(FP), R7
	MOVD tail+64(FP), R8
	MOVD c+72(FP), R9
	VEOR   V0.B16, V0.B16, V0.B16
	VEOR   V1.B16, V1.B16, V1.B16
	VEOR   V2.B16, V2.B16, V2.B16
	VEOR   V3.B16, V3.B16, V3.B16
	VEOR   V4.B16, V4.B16, V4.B16
	VEOR   V5.B16, V5.B16, V5.B16
	VEOR   V6.B16, V6.B16, V6.B16
	VEOR   V7.B16, V7.B16, V7.B16
	VEOR   V8.B16, V8.B16, V8.B16
	VEOR   V9.B16, V9.B16, V9.B16
	VEOR   V10.B16, V10.B16, V10.B16
	VEOR   V11.B16, V11.B16, V11.B16
	VEOR   V12.B16, V12.B16, V12.B16
	VEOR   V13.B16, V13.B16, V13.B16
	VEOR   V14.B16, V14.B16, V14.B16
	VEOR   V15.B16, V15.B16, V15.B16
	VEOR   V16.B16, V16.B16, V16.B16
	VEOR   V17.B16, V17.B16, V17.B16
	VEOR   V18.B16, V18.B16, V18.B16
	VEOR   V19.B16, V19.B16, V19.B16
	VEOR   V20.B16, V20.B16, V20.B16
	VEOR   V21.B16, V21.B16, V21.B16
	VEOR   V22.B16, V22.B16, V22.B16
	VEOR   V23.B16, V23.B16, V23.B16
	CBZ    R7, tail

loop:
	VLD1.P 32(R0), [V24.S4, V25.S4]
	VLD1.P 32(R1), [V26.S4, V27.S4]
	VLD1.P 32(R2), [V28.S4, V29.S4]
	VLD1.P 32(R3), [V30.S4, V31.S4]
	VFMLA  V30.S4, V24.S4, V0.S4
	VFMLA  V31.S4, V25.S4, V1.S4
	VFMLA  V30.S4, V26.S4, V8.S4
	VFMLA  V31.S4, V27.S4, V9.S4
	VFMLA  V30.S4, V28.S4, V16.S4
	VFMLA  V31.S4, V29.S4, V17.S4
	VLD1.P 32(R4), [V30.S4, V31.S4]
	VFMLA  V30.S4, V24.S4, V2.S4
	VFMLA  V31.S4, V25.S4, V3.S4
	VFMLA  V30.S4, V26.S4, V10.S4
	VFMLA  V31.S4, V27.S4, V11.S4
	VFMLA  V30.S4, V28.S4, V18.S4
	VFMLA  V31.S4, V29.S4, V19.S4
	VLD1.P 32(R5), [V30.S4, V31.S4]
	VFMLA  V30.S4, V24.S4, V4.S4
	VFMLA  V31.S4, V25.S4, V5.S4
	VFMLA  V30.S4, V26.S4, V12.S4
	VFMLA  V31.S4, V27.S4, V13.S4
	VFMLA  V30.S4, V28.S4, V20.S4
	VFMLA  V31.S4, V29.S4, V21.S4
	VLD1.P 32(R6), [V30.S4, V31.S4]
	VFMLA  V30.S4, V24.S4, V6.S4
	VFMLA  V31.S4, V25.S4, V7.S4
	VFMLA  V30.S4, V26.S4, V14.S4
	VFMLA  V31.S4, V27.S4, V15.S4
	VFMLA  V30.S4, V28.S4, V22.S4
	VFMLA  V31.S4, V29.S4, V23.S4
	SUBS   $1, R7, R7
	BNE    loop

tail:
	// One more pass of the loop over the padded tail rows, 32 bytes apart;
	// clearing R8 makes it the last.
	CBZ    R8, fold
	MOVD   R8, R0
	ADD    $32, R8, R1
	ADD    $64, R8, R2
	ADD    $96, R8, R3
	ADD    $128, R8, R4
	ADD    $160, R8, R5
	ADD    $192, R8, R6
	MOVD   $1, R7
	MOVD   ZR, R8
	B      loop

fold:
	// Round 1: V(o) = [l0+l1, l2+l3, l4+l5, l6+l7] of output o = 4r+q.
	WORD   $0x6e21d400 // FADDP V0.S4, V0.S4, V1.S4
	WORD   $0x6e23d441 // FADDP V1.S4, V2.S4, V3.S4
	WORD   $0x6e25d482 // FADDP V2.S4, V4.S4, V5.S4
	WORD   $0x6e27d4c3 // FADDP V3.S4, V6.S4, V7.S4
	WORD   $0x6e29d504 // FADDP V4.S4, V8.S4, V9.S4
	WORD   $0x6e2bd545 // FADDP V5.S4, V10.S4, V11.S4
	WORD   $0x6e2dd586 // FADDP V6.S4, V12.S4, V13.S4
	WORD   $0x6e2fd5c7 // FADDP V7.S4, V14.S4, V15.S4
	WORD   $0x6e31d608 // FADDP V8.S4, V16.S4, V17.S4
	WORD   $0x6e33d649 // FADDP V9.S4, V18.S4, V19.S4
	WORD   $0x6e35d68a // FADDP V10.S4, V20.S4, V21.S4
	WORD   $0x6e37d6cb // FADDP V11.S4, V22.S4, V23.S4
	// Round 2: V(p) = the two half sums of outputs 2p and 2p+1.
	WORD   $0x6e21d400 // FADDP V0.S4, V0.S4, V1.S4
	WORD   $0x6e23d441 // FADDP V1.S4, V2.S4, V3.S4
	WORD   $0x6e25d482 // FADDP V2.S4, V4.S4, V5.S4
	WORD   $0x6e27d4c3 // FADDP V3.S4, V6.S4, V7.S4
	WORD   $0x6e29d504 // FADDP V4.S4, V8.S4, V9.S4
	WORD   $0x6e2bd545 // FADDP V5.S4, V10.S4, V11.S4
	// Round 3: V(r) = the sums of row r, outputs 4r…4r+3.
	WORD   $0x6e21d400 // FADDP V0.S4, V0.S4, V1.S4
	WORD   $0x6e23d441 // FADDP V1.S4, V2.S4, V3.S4
	WORD   $0x6e25d482 // FADDP V2.S4, V4.S4, V5.S4
	VST1   [V0.S4, V1.S4, V2.S4], (R9)
	RET
