//go:build !purego

#include "textflag.h"

// func cvtF16NEON(dst *float32, src *uint16, n int)
//
// dst[i] = float32(src[i]) for IEEE binary16 src, n a multiple of 8: FCVTL
// and FCVTL2 widen the low and high four halves of a 16-byte load (exact).
// The Go assembler does not know FCVTL, so it is spelled as WORD:
// 0x0e217800 | Q<<30 | Vn<<5 | Vd (Arm ARM, FCVTL{2}, sz=0: half to single).
TEXT ·cvtF16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $3, R2, R2
	CBZ  R2, f16done
f16loop:
	VLD1.P 16(R1), [V0.H8]
	WORD $0x0e217801 // FCVTL  V1.4S, V0.4H
	WORD $0x4e217802 // FCVTL2 V2.4S, V0.8H
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS $1, R2, R2
	BNE  f16loop
f16done:
	RET

// func cvtBF16NEON(dst *float32, src *uint16, n int)
//
// dst[i] = the float32 whose upper 16 bits are src[i], n a multiple of 8:
// ZIP1/ZIP2 with a zero register put each half in the upper half of a
// 32-bit lane.
TEXT ·cvtBF16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $3, R2, R2
	CBZ  R2, bf16done
	VEOR V3.B16, V3.B16, V3.B16
bf16loop:
	VLD1.P 16(R1), [V0.H8]
	VZIP1 V0.H8, V3.H8, V1.H8
	VZIP2 V0.H8, V3.H8, V2.H8
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS $1, R2, R2
	BNE  bf16loop
bf16done:
	RET
