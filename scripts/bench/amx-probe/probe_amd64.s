//go:build linux && amd64

#include "textflag.h"

// LDTILECFG (DI), TILERELEASE, TILEZERO tmm0–3, TILELOADD (SI or R8)(DX*1) into
// tmm4–7, TDPBF16PS tmm0–3 += tmm4/5 · tmm6/7, TILESTORED tmm0–3 at (DI)(DX*1).

#define LDTILECFG_DI BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x07
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0
#define TILEZERO0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0
#define TILEZERO1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8
#define TILEZERO2 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0
#define TILEZERO3 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8
// tileloadd (SI)(DX*1) -> tmm4/tmm5 ; (R8)(DX*1) -> tmm6/tmm7
#define LOAD4_SI BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x16
#define LOAD5_SI BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x16
#define LOAD6_R8 BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x10
#define LOAD7_R8 BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x3c; BYTE $0x10
// tmm0 += tmm4*tmm6, tmm1 += tmm4*tmm7, tmm2 += tmm5*tmm6, tmm3 += tmm5*tmm7
#define DP046 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4
#define DP147 BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc
#define DP256 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5
#define DP357 BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd
// tilestored tmmN -> (DI)(DX*1)
#define STORE0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x17
#define STORE1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x0c; BYTE $0x17
#define STORE2 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x17
#define STORE3 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x1c; BYTE $0x17

// func amxBlock(cfg *byte, a, b *byte, steps int, c *float32, ldc int, hot int)
//
// C (32×32 float32, four 16×16 tiles: tile (i, j) at c + 16·i·ldc + 16·j)
// = Σ over steps of A_s·B_s, by TDPBF16PS. cfg is the 64-byte tile
// configuration (tileConfig). a holds per step two A tiles (16 rows × 32
// bf16, 1 KiB each, contiguous), b per step two B tiles in the VNNI layout
// (16 rows of 16 column pairs: row r, column n holds B[2r][n], B[2r+1][n]).
// hot ≠ 0 loads the first step's tiles once and repeats them (the unit's
// peak); else every step loads its own four tiles (a GEMM's stream). The
// AMX instructions are spelled in BYTEs (the Go assembler has no AMX
// mnemonics); each encoding is llvm-mc's, checked by disassembling the
// binary, and the result by main's reference.
TEXT ·amxBlock(SB), NOSPLIT, $0-56
	MOVQ cfg+0(FP), DI
	LDTILECFG_DI
	TILEZERO0
	TILEZERO1
	TILEZERO2
	TILEZERO3
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), R8
	MOVQ steps+24(FP), CX
	MOVQ hot+48(FP), R9
	MOVQ $64, DX
	MOVQ $1024, R10
	TESTQ R9, R9
	JNZ hot
loop:
	LOAD4_SI
	ADDQ R10, SI
	LOAD6_R8
	ADDQ R10, R8
	DP046
	LOAD7_R8
	ADDQ R10, R8
	DP147
	LOAD5_SI
	ADDQ R10, SI
	DP256
	DP357
	DECQ CX
	JNZ loop
	JMP store
hot:
	LOAD4_SI
	LOAD5_SI
	LOAD6_R8
	LOAD7_R8
hotloop:
	DP046
	DP147
	DP256
	DP357
	DECQ CX
	JNZ hotloop
store:
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), DX
	SHLQ $2, DX
	STORE0
	ADDQ $64, DI
	STORE1
	SUBQ $64, DI
	MOVQ DX, R11
	SHLQ $4, R11
	ADDQ R11, DI
	STORE2
	ADDQ $64, DI
	STORE3
	TILERELEASE
	RET

// func fmaLoop(n int)
//
// n rounds of 24 independent ZMM FMAs (the FMA units' peak; the outer GEMM
// micro-kernel's 24 accumulators).
TEXT ·fmaLoop(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	VXORPS Z0, Z0, Z0
	VMOVAPS Z0, Z1
	VMOVAPS Z0, Z2
	VMOVAPS Z0, Z3
	VMOVAPS Z0, Z4
	VMOVAPS Z0, Z5
	VMOVAPS Z0, Z6
	VMOVAPS Z0, Z7
	VMOVAPS Z0, Z8
	VMOVAPS Z0, Z9
	VMOVAPS Z0, Z10
	VMOVAPS Z0, Z11
	VMOVAPS Z0, Z12
	VMOVAPS Z0, Z13
	VMOVAPS Z0, Z14
	VMOVAPS Z0, Z15
	VMOVAPS Z0, Z16
	VMOVAPS Z0, Z17
	VMOVAPS Z0, Z18
	VMOVAPS Z0, Z19
	VMOVAPS Z0, Z20
	VMOVAPS Z0, Z21
	VMOVAPS Z0, Z22
	VMOVAPS Z0, Z23
	VMOVAPS Z0, Z24
	VMOVAPS Z0, Z25
loop:
	VFMADD231PS Z24, Z25, Z0
	VFMADD231PS Z24, Z25, Z1
	VFMADD231PS Z24, Z25, Z2
	VFMADD231PS Z24, Z25, Z3
	VFMADD231PS Z24, Z25, Z4
	VFMADD231PS Z24, Z25, Z5
	VFMADD231PS Z24, Z25, Z6
	VFMADD231PS Z24, Z25, Z7
	VFMADD231PS Z24, Z25, Z8
	VFMADD231PS Z24, Z25, Z9
	VFMADD231PS Z24, Z25, Z10
	VFMADD231PS Z24, Z25, Z11
	VFMADD231PS Z24, Z25, Z12
	VFMADD231PS Z24, Z25, Z13
	VFMADD231PS Z24, Z25, Z14
	VFMADD231PS Z24, Z25, Z15
	VFMADD231PS Z24, Z25, Z16
	VFMADD231PS Z24, Z25, Z17
	VFMADD231PS Z24, Z25, Z18
	VFMADD231PS Z24, Z25, Z19
	VFMADD231PS Z24, Z25, Z20
	VFMADD231PS Z24, Z25, Z21
	VFMADD231PS Z24, Z25, Z22
	VFMADD231PS Z24, Z25, Z23
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET
