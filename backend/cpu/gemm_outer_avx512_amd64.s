//go:build !purego

#include "textflag.h"
#include "transpose_amd64.h"

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

// STEP2 is STEP for the first 2 column vectors only.
#define STEP2(aoff, boff) \
	VMOVUPS boff(DI), Z24; \
	VMOVUPS boff+64(DI), Z25; \
	VBROADCASTSS aoff(AX)(SI*1), Z27; \
	VFMADD231PS Z24, Z27, Z0; \
	VFMADD231PS Z25, Z27, Z1; \
	VBROADCASTSS aoff(BX)(SI*1), Z28; \
	VFMADD231PS Z24, Z28, Z3; \
	VFMADD231PS Z25, Z28, Z4; \
	VBROADCASTSS aoff(CX)(SI*1), Z27; \
	VFMADD231PS Z24, Z27, Z6; \
	VFMADD231PS Z25, Z27, Z7; \
	VBROADCASTSS aoff(DX)(SI*1), Z28; \
	VFMADD231PS Z24, Z28, Z9; \
	VFMADD231PS Z25, Z28, Z10; \
	VBROADCASTSS aoff(R8)(SI*1), Z27; \
	VFMADD231PS Z24, Z27, Z12; \
	VFMADD231PS Z25, Z27, Z13; \
	VBROADCASTSS aoff(R9)(SI*1), Z28; \
	VFMADD231PS Z24, Z28, Z15; \
	VFMADD231PS Z25, Z28, Z16; \
	VBROADCASTSS aoff(R10)(SI*1), Z27; \
	VFMADD231PS Z24, Z27, Z18; \
	VFMADD231PS Z25, Z27, Z19; \
	VBROADCASTSS aoff(R11)(SI*1), Z28; \
	VFMADD231PS Z24, Z28, Z21; \
	VFMADD231PS Z25, Z28, Z22

// STEP1 is STEP for the first column vector only.
#define STEP1(aoff, boff) \
	VMOVUPS boff(DI), Z24; \
	VBROADCASTSS aoff(AX)(SI*1), Z27; \
	VFMADD231PS Z24, Z27, Z0; \
	VBROADCASTSS aoff(BX)(SI*1), Z28; \
	VFMADD231PS Z24, Z28, Z3; \
	VBROADCASTSS aoff(CX)(SI*1), Z27; \
	VFMADD231PS Z24, Z27, Z6; \
	VBROADCASTSS aoff(DX)(SI*1), Z28; \
	VFMADD231PS Z24, Z28, Z9; \
	VBROADCASTSS aoff(R8)(SI*1), Z27; \
	VFMADD231PS Z24, Z27, Z12; \
	VBROADCASTSS aoff(R9)(SI*1), Z28; \
	VFMADD231PS Z24, Z28, Z15; \
	VBROADCASTSS aoff(R10)(SI*1), Z27; \
	VFMADD231PS Z24, Z27, Z18; \
	VBROADCASTSS aoff(R11)(SI*1), Z28; \
	VFMADD231PS Z24, Z28, Z21

// STORE3 stores row r's accumulators at (DI), 64(DI), 128(DI) with the
// column masks K1–K3 (masked-off lanes are not written and cannot fault).
#define STORE3(a0, a1, a2) \
	VMOVUPS a0, K1, (DI); \
	VMOVUPS a1, K2, 64(DI); \
	VMOVUPS a2, K3, 128(DI)

// PT4 and LANES4: transpose_amd64.h.

// TRANS8 transposes the 8 accumulators r0…r7 of one 16-column vector (row
// i of C in r_i, lane j = column j) in 128-bit lanes: afterwards lane ℓ of
// r_e holds C rows 0–3 of column 4ℓ+e and lane ℓ of r_{4+e} rows 4–7 of
// it (e < 4): PT4 on each half.
#define TRANS8(r0, r1, r2, r3, r4, r5, r6, r7) \
	PT4(r0, r1, r2, r3); \
	PT4(r4, r5, r6, r7)

// PAIR gathers column e and e+8 (sel 0x88) or e+4 and e+12 (sel 0xDD) of
// the transposed lo (rows 0–3) and hi (rows 4–7) into q: the first
// column's 8 rows in q's low 256 bits, the second's in the high 256.
#define PAIR(sel, lo, hi, q) \
	VSHUFF32X4 sel, hi, lo, q; \
	VSHUFF32X4 $0xD8, q, q, q

// PUT stores the 8 rows of column j (at byte offsets 4j of the idx table
// in SI and 2j of the column-mask table in BX) from the low (off 0, mask
// K7) or high (off −32, mask K6: lanes 8–15 land on the row's first 8
// floats) half of q into c + 4·idx[j] (DI), masked to the valid rows of a
// valid column: masked-off lanes write nothing and cannot fault.
#define PUT(q, j, kmask, off, r) \
	MOVLQSX (4*(j))(SI), r; \
	KMOVW (2*(j))(BX), K1; \
	KANDW kmask, K1, K1; \
	VMOVUPS q, K1, off(DI)(r*4)

// TSTORE16 transposes one 16-column vector v (accumulators r0…r7) and
// stores its 16 columns, column base j0 = 16v.
#define TSTORE16(j0, r0, r1, r2, r3, r4, r5, r6, r7) \
	TRANS8(r0, r1, r2, r3, r4, r5, r6, r7); \
	PAIR($0x88, r0, r4, Z24); \
	PAIR($0x88, r1, r5, Z25); \
	PAIR($0x88, r2, r6, Z26); \
	PAIR($0x88, r3, r7, Z27); \
	PAIR($0xDD, r0, r4, Z28); \
	PAIR($0xDD, r1, r5, Z29); \
	PAIR($0xDD, r2, r6, Z30); \
	PAIR($0xDD, r3, r7, Z31); \
	PUT(Z24, j0+0, K7, 0, R8); \
	PUT(Z24, j0+8, K6, -32, R9); \
	PUT(Z25, j0+1, K7, 0, R10); \
	PUT(Z25, j0+9, K6, -32, R11); \
	PUT(Z26, j0+2, K7, 0, R8); \
	PUT(Z26, j0+10, K6, -32, R9); \
	PUT(Z27, j0+3, K7, 0, R10); \
	PUT(Z27, j0+11, K6, -32, R11); \
	PUT(Z28, j0+4, K7, 0, R8); \
	PUT(Z28, j0+12, K6, -32, R9); \
	PUT(Z29, j0+5, K7, 0, R10); \
	PUT(Z29, j0+13, K6, -32, R11); \
	PUT(Z30, j0+6, K7, 0, R8); \
	PUT(Z30, j0+14, K6, -32, R9); \
	PUT(Z31, j0+7, K7, 0, R10); \
	PUT(Z31, j0+15, K6, -32, R11)

// outerColMask<>: 48 uint16 all-ones then 48 zeros; the 48 entries from
// entry 48 − cols on are the column masks of a block of cols columns.
DATA outerColMask<>+0(SB)/8, $-1
DATA outerColMask<>+8(SB)/8, $-1
DATA outerColMask<>+16(SB)/8, $-1
DATA outerColMask<>+24(SB)/8, $-1
DATA outerColMask<>+32(SB)/8, $-1
DATA outerColMask<>+40(SB)/8, $-1
DATA outerColMask<>+48(SB)/8, $-1
DATA outerColMask<>+56(SB)/8, $-1
DATA outerColMask<>+64(SB)/8, $-1
DATA outerColMask<>+72(SB)/8, $-1
DATA outerColMask<>+80(SB)/8, $-1
DATA outerColMask<>+88(SB)/8, $-1
DATA outerColMask<>+96(SB)/8, $0
DATA outerColMask<>+104(SB)/8, $0
DATA outerColMask<>+112(SB)/8, $0
DATA outerColMask<>+120(SB)/8, $0
DATA outerColMask<>+128(SB)/8, $0
DATA outerColMask<>+136(SB)/8, $0
DATA outerColMask<>+144(SB)/8, $0
DATA outerColMask<>+152(SB)/8, $0
DATA outerColMask<>+160(SB)/8, $0
DATA outerColMask<>+168(SB)/8, $0
DATA outerColMask<>+176(SB)/8, $0
DATA outerColMask<>+184(SB)/8, $0
GLOBL outerColMask<>(SB), RODATA|NOPTR, $192

// func gemm8x48AVX512(a *[8]*float32, b *float32, k int, c *float32, ldc, rows, cols int, idx *int32, pf, pfw *byte)
//
// C[i][j] = Σ_kk a[i][kk]·b[kk·48+j] for i < rows (1…8), j < cols (1…48),
// k ≥ 1: each sum starts at 0 and takes one fused multiply-add per kk, in
// kk order. The a rows past rows must still point at k readable floats
// (they are computed and dropped). b is a packed tile: k rows of 48 floats.
// With idx == nil C is stored row-major, row i at c + i·ldc; else it is
// stored transposed: C[i][j] at c[i + idx[j]] (idx holds 48 int32 offsets,
// all read; nothing is written through those past cols). Only C's rows <
// rows and columns < cols are written.
//
// pf, pfw: the loops of four k issue one PREFETCHT1 of each stream, of the
// 64-byte lines from pf on and from pfw on (k/4 lines of each in all), so
// that a caller can bring the next group's B tiles and the next block's W
// rows into L2 while this block computes, one line per 48 FMAs instead of
// a burst; a prefetch never faults, wherever the pointers point.
TEXT ·gemm8x48AVX512(SB), NOSPLIT, $0-80
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
	MOVQ pf+64(FP), R14
	MOVQ pfw+72(FP), R15

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

	// A block of at most 32 (16) columns runs only the FMAs of its 2 (1)
	// column vectors: the last tile of a ragged M wastes at most 15
	// columns, not 47. The accumulators left out stay zero and are never
	// stored (the column masks exclude them); the order of each sum is the
	// same in every loop.
	XORQ SI, SI
	MOVQ cols+48(FP), R13
	CMPQ R13, $16
	JLE  one
	CMPQ R13, $32
	JLE  two

	MOVQ R12, R13
	SHRQ $2, R13
	JZ   rem

loop4:
	PREFETCHT1 (R14)
	ADDQ $64, R14
	PREFETCHT1 (R15)
	ADDQ $64, R15
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
	JMP  store

two:
	MOVQ R12, R13
	SHRQ $2, R13
	JZ   rem2

loop42:
	PREFETCHT1 (R14)
	ADDQ $64, R14
	PREFETCHT1 (R15)
	ADDQ $64, R15
	STEP2(0, 0)
	STEP2(4, 192)
	STEP2(8, 384)
	STEP2(12, 576)
	ADDQ $16, SI
	ADDQ $768, DI
	DECQ R13
	JNZ  loop42

rem2:
	ANDQ $3, R12
	JZ   store

loop12:
	STEP2(0, 0)
	ADDQ $4, SI
	ADDQ $192, DI
	DECQ R12
	JNZ  loop12
	JMP  store

one:
	MOVQ R12, R13
	SHRQ $2, R13
	JZ   rem1

loop41:
	PREFETCHT1 (R14)
	ADDQ $64, R14
	PREFETCHT1 (R15)
	ADDQ $64, R15
	STEP1(0, 0)
	STEP1(4, 192)
	STEP1(8, 384)
	STEP1(12, 576)
	ADDQ $16, SI
	ADDQ $768, DI
	DECQ R13
	JNZ  loop41

rem1:
	ANDQ $3, R12
	JZ   store

loop11:
	STEP1(0, 0)
	ADDQ $4, SI
	ADDQ $192, DI
	DECQ R12
	JNZ  loop11
	JMP  store

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
	// A register transpose, not a scatter: 16 scattered lanes cost more
	// than the 32 shuffles and 16 stores per 16 columns here (a scatter
	// per accumulator measured 20 % of the kernel at K = 1024).
	// K7 = the valid rows, K6 = the same in lanes 8–15; BX = the column
	// masks of cols columns.
	MOVQ R15, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K7
	KSHIFTLW $8, K7, K6
	LEAQ outerColMask<>+96(SB), BX
	MOVQ cols+48(FP), AX
	SHLQ $1, AX
	SUBQ AX, BX
	TSTORE16(0, Z0, Z3, Z6, Z9, Z12, Z15, Z18, Z21)
	TSTORE16(16, Z1, Z4, Z7, Z10, Z13, Z16, Z19, Z22)
	TSTORE16(32, Z2, Z5, Z8, Z11, Z14, Z17, Z20, Z23)

done:
	VZEROUPPER
	RET

// func prefetchL2(p *byte, n int)
//
// PREFETCHT1 (into L2 and beyond) of each 64-byte line that [p, p+n)
// touches; n ≥ 1. A prefetch never faults.
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ -1(AX)(CX*1), CX
	ANDQ $-64, AX
pfloop:
	PREFETCHT1 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLE  pfloop
	RET

// func packXAVX512(dst *float32, src *float32, idx *int32, k, cols int)
//
// dst[kk·48 + j] = src[idx[j] + kk] for kk < k, j < cols, and 0 for
// cols ≤ j < 48: one 16-lane gather per 16 tokens per k, from rows that
// stay in L1 across consecutive k. The lanes past cols are masked off (not
// read) and keep the zero the register was cleared to.
TEXT ·packXAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ idx+16(FP), AX
	MOVQ k+24(FP), DX
	VMOVDQU32 (AX), Z24
	VMOVDQU32 64(AX), Z25
	VMOVDQU32 128(AX), Z26
	MOVQ cols+32(FP), CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	SHRQ $16, AX
	KMOVW AX, K3
packloop:
	KMOVW K1, K4
	VPXORD Z0, Z0, Z0
	VGATHERDPS (SI)(Z24*4), K4, Z0
	KMOVW K2, K5
	VPXORD Z1, Z1, Z1
	VGATHERDPS (SI)(Z25*4), K5, Z1
	KMOVW K3, K6
	VPXORD Z2, Z2, Z2
	VGATHERDPS (SI)(Z26*4), K6, Z2
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	ADDQ $4, SI
	ADDQ $192, DI
	DECQ DX
	JNZ  packloop
	VZEROUPPER
	RET

// func packXTAVX512(dst *float32, src *float32, idx *int32, k16 int)
//
// packXAVX512 for a full tile (48 tokens) and 16·k16 k, by in-register
// transposes instead of gathers: per 16 k and 16 tokens, 16 row loads, a
// 16×16 transpose (64 shuffles) and 16 stores, against 16 gathers of 16
// lanes (the gathers took ~3 % of a ten-question request's CPU time). Each element is moved, never computed, so the tiles
// are the same bits either way (TestPackTile).

// PTLOAD loads token i's 16 floats at k offset SI: its row offset (floats)
// is idx entry i of the block at AX.
#define PTLOAD(i, zr) \
	MOVLQSX (i*4)(AX), R8; \
	VMOVUPS (SI)(R8*4), zr

// PTLANES stores, for one e, the output rows e, 4+e, 8+e, 12+e of the
// transposed block (LANES4) as k rows of the tile, at byte offset boff.
#define PTLANES(e, u0, u1, u2, u3, boff) \
	LANES4(u0, u1, u2, u3); \
	VMOVUPS Z28, (e*192+boff)(DI); \
	VMOVUPS Z29, ((4+e)*192+boff)(DI); \
	VMOVUPS Z30, ((8+e)*192+boff)(DI); \
	VMOVUPS Z31, ((12+e)*192+boff)(DI)

// PTBLOCK packs tokens 16b…16b+15 (idx block at AX) for the 16 k at SI
// into byte offset boff of each of the 16 k rows at DI.
#define PTBLOCK(boff) \
	PTLOAD(0, Z0); PTLOAD(1, Z1); PTLOAD(2, Z2); PTLOAD(3, Z3); \
	PTLOAD(4, Z4); PTLOAD(5, Z5); PTLOAD(6, Z6); PTLOAD(7, Z7); \
	PTLOAD(8, Z8); PTLOAD(9, Z9); PTLOAD(10, Z10); PTLOAD(11, Z11); \
	PTLOAD(12, Z12); PTLOAD(13, Z13); PTLOAD(14, Z14); PTLOAD(15, Z15); \
	PT4(Z0, Z1, Z2, Z3); \
	PT4(Z4, Z5, Z6, Z7); \
	PT4(Z8, Z9, Z10, Z11); \
	PT4(Z12, Z13, Z14, Z15); \
	PTLANES(0, Z0, Z4, Z8, Z12, boff); \
	PTLANES(1, Z1, Z5, Z9, Z13, boff); \
	PTLANES(2, Z2, Z6, Z10, Z14, boff); \
	PTLANES(3, Z3, Z7, Z11, Z15, boff)

TEXT ·packXTAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ idx+16(FP), BX
	MOVQ k16+24(FP), DX
ptloop:
	MOVQ BX, AX
	PTBLOCK(0)
	ADDQ $64, AX
	PTBLOCK(64)
	ADDQ $64, AX
	PTBLOCK(128)
	ADDQ $64, SI
	ADDQ $3072, DI
	DECQ DX
	JNZ  ptloop
	VZEROUPPER
	RET
