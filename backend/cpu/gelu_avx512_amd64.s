//go:build !purego

#include "textflag.h"

// Constants of the AVX-512 GELU (the scheme in gelu_amd64.go's comment),
// each float64 repeated in 8 lanes (one ZMM load for the VMOVUPDs that
// start a Horner chain). The arithmetic instructions read
// their constant operand as an embedded broadcast (.BCST: 8 bytes, the
// first lane) instead of the whole 64 bytes: the same values, so the same
// results, faster: a ZMM FMA with a 64-byte memory operand issues less
// often than one with an 8-byte broadcast (BenchmarkGelu/wide; measurements:
// docs/perf-log.md). Offsets
// 384 + 64k, k = 0 … 17, hold erfcx's series as monomial coefficients a_k in
// s = (z − mid)/half, converted exactly (300-bit arithmetic) from the
// Chebyshev coefficients and rounded once. No generator is kept:
// TestGeluAVX512Constants recomputes the series from erfc and holds these
// 18 words to it (checkGeluKernelSeries); every other constant is held by
// the results, which TestGeluSIMD compares with the float64 GELU. The two
// erfcx evaluations of each loop are Horner's rule on them.
DATA geluK<>+0(SB)/8, $0x7fffffffffffffff
DATA geluK<>+8(SB)/8, $0x7fffffffffffffff
DATA geluK<>+16(SB)/8, $0x7fffffffffffffff
DATA geluK<>+24(SB)/8, $0x7fffffffffffffff
DATA geluK<>+32(SB)/8, $0x7fffffffffffffff
DATA geluK<>+40(SB)/8, $0x7fffffffffffffff
DATA geluK<>+48(SB)/8, $0x7fffffffffffffff
DATA geluK<>+56(SB)/8, $0x7fffffffffffffff
DATA geluK<>+64(SB)/8, $0x3fe6a09e667f3bcc
DATA geluK<>+72(SB)/8, $0x3fe6a09e667f3bcc
DATA geluK<>+80(SB)/8, $0x3fe6a09e667f3bcc
DATA geluK<>+88(SB)/8, $0x3fe6a09e667f3bcc
DATA geluK<>+96(SB)/8, $0x3fe6a09e667f3bcc
DATA geluK<>+104(SB)/8, $0x3fe6a09e667f3bcc
DATA geluK<>+112(SB)/8, $0x3fe6a09e667f3bcc
DATA geluK<>+120(SB)/8, $0x3fe6a09e667f3bcc
DATA geluK<>+128(SB)/8, $0x4025000000000000
DATA geluK<>+136(SB)/8, $0x4025000000000000
DATA geluK<>+144(SB)/8, $0x4025000000000000
DATA geluK<>+152(SB)/8, $0x4025000000000000
DATA geluK<>+160(SB)/8, $0x4025000000000000
DATA geluK<>+168(SB)/8, $0x4025000000000000
DATA geluK<>+176(SB)/8, $0x4025000000000000
DATA geluK<>+184(SB)/8, $0x4025000000000000
DATA geluK<>+192(SB)/8, $0x4008000000000000
DATA geluK<>+200(SB)/8, $0x4008000000000000
DATA geluK<>+208(SB)/8, $0x4008000000000000
DATA geluK<>+216(SB)/8, $0x4008000000000000
DATA geluK<>+224(SB)/8, $0x4008000000000000
DATA geluK<>+232(SB)/8, $0x4008000000000000
DATA geluK<>+240(SB)/8, $0x4008000000000000
DATA geluK<>+248(SB)/8, $0x4008000000000000
DATA geluK<>+256(SB)/8, $0xbfcc71c71c71c71c
DATA geluK<>+264(SB)/8, $0xbfcc71c71c71c71c
DATA geluK<>+272(SB)/8, $0xbfcc71c71c71c71c
DATA geluK<>+280(SB)/8, $0xbfcc71c71c71c71c
DATA geluK<>+288(SB)/8, $0xbfcc71c71c71c71c
DATA geluK<>+296(SB)/8, $0xbfcc71c71c71c71c
DATA geluK<>+304(SB)/8, $0xbfcc71c71c71c71c
DATA geluK<>+312(SB)/8, $0xbfcc71c71c71c71c
DATA geluK<>+320(SB)/8, $0x3ff4924924924924
DATA geluK<>+328(SB)/8, $0x3ff4924924924924
DATA geluK<>+336(SB)/8, $0x3ff4924924924924
DATA geluK<>+344(SB)/8, $0x3ff4924924924924
DATA geluK<>+352(SB)/8, $0x3ff4924924924924
DATA geluK<>+360(SB)/8, $0x3ff4924924924924
DATA geluK<>+368(SB)/8, $0x3ff4924924924924
DATA geluK<>+376(SB)/8, $0x3ff4924924924924
DATA geluK<>+384(SB)/8, $0x3fd0fd540053f1d3
DATA geluK<>+392(SB)/8, $0x3fd0fd540053f1d3
DATA geluK<>+400(SB)/8, $0x3fd0fd540053f1d3
DATA geluK<>+408(SB)/8, $0x3fd0fd540053f1d3
DATA geluK<>+416(SB)/8, $0x3fd0fd540053f1d3
DATA geluK<>+424(SB)/8, $0x3fd0fd540053f1d3
DATA geluK<>+432(SB)/8, $0x3fd0fd540053f1d3
DATA geluK<>+440(SB)/8, $0x3fd0fd540053f1d3
DATA geluK<>+448(SB)/8, $0xbfd6f3ad8988aad6
DATA geluK<>+456(SB)/8, $0xbfd6f3ad8988aad6
DATA geluK<>+464(SB)/8, $0xbfd6f3ad8988aad6
DATA geluK<>+472(SB)/8, $0xbfd6f3ad8988aad6
DATA geluK<>+480(SB)/8, $0xbfd6f3ad8988aad6
DATA geluK<>+488(SB)/8, $0xbfd6f3ad8988aad6
DATA geluK<>+496(SB)/8, $0xbfd6f3ad8988aad6
DATA geluK<>+504(SB)/8, $0xbfd6f3ad8988aad6
DATA geluK<>+512(SB)/8, $0x3fcca12e4deff36b
DATA geluK<>+520(SB)/8, $0x3fcca12e4deff36b
DATA geluK<>+528(SB)/8, $0x3fcca12e4deff36b
DATA geluK<>+536(SB)/8, $0x3fcca12e4deff36b
DATA geluK<>+544(SB)/8, $0x3fcca12e4deff36b
DATA geluK<>+552(SB)/8, $0x3fcca12e4deff36b
DATA geluK<>+560(SB)/8, $0x3fcca12e4deff36b
DATA geluK<>+568(SB)/8, $0x3fcca12e4deff36b
DATA geluK<>+576(SB)/8, $0xbfbb4f09eec0d623
DATA geluK<>+584(SB)/8, $0xbfbb4f09eec0d623
DATA geluK<>+592(SB)/8, $0xbfbb4f09eec0d623
DATA geluK<>+600(SB)/8, $0xbfbb4f09eec0d623
DATA geluK<>+608(SB)/8, $0xbfbb4f09eec0d623
DATA geluK<>+616(SB)/8, $0xbfbb4f09eec0d623
DATA geluK<>+624(SB)/8, $0xbfbb4f09eec0d623
DATA geluK<>+632(SB)/8, $0xbfbb4f09eec0d623
DATA geluK<>+640(SB)/8, $0x3fa307358448236a
DATA geluK<>+648(SB)/8, $0x3fa307358448236a
DATA geluK<>+656(SB)/8, $0x3fa307358448236a
DATA geluK<>+664(SB)/8, $0x3fa307358448236a
DATA geluK<>+672(SB)/8, $0x3fa307358448236a
DATA geluK<>+680(SB)/8, $0x3fa307358448236a
DATA geluK<>+688(SB)/8, $0x3fa307358448236a
DATA geluK<>+696(SB)/8, $0x3fa307358448236a
DATA geluK<>+704(SB)/8, $0xbf80e47a42326f1d
DATA geluK<>+712(SB)/8, $0xbf80e47a42326f1d
DATA geluK<>+720(SB)/8, $0xbf80e47a42326f1d
DATA geluK<>+728(SB)/8, $0xbf80e47a42326f1d
DATA geluK<>+736(SB)/8, $0xbf80e47a42326f1d
DATA geluK<>+744(SB)/8, $0xbf80e47a42326f1d
DATA geluK<>+752(SB)/8, $0xbf80e47a42326f1d
DATA geluK<>+760(SB)/8, $0xbf80e47a42326f1d
DATA geluK<>+768(SB)/8, $0x3f40f2050cdcd555
DATA geluK<>+776(SB)/8, $0x3f40f2050cdcd555
DATA geluK<>+784(SB)/8, $0x3f40f2050cdcd555
DATA geluK<>+792(SB)/8, $0x3f40f2050cdcd555
DATA geluK<>+800(SB)/8, $0x3f40f2050cdcd555
DATA geluK<>+808(SB)/8, $0x3f40f2050cdcd555
DATA geluK<>+816(SB)/8, $0x3f40f2050cdcd555
DATA geluK<>+824(SB)/8, $0x3f40f2050cdcd555
DATA geluK<>+832(SB)/8, $0x3f33d85ed9fee38e
DATA geluK<>+840(SB)/8, $0x3f33d85ed9fee38e
DATA geluK<>+848(SB)/8, $0x3f33d85ed9fee38e
DATA geluK<>+856(SB)/8, $0x3f33d85ed9fee38e
DATA geluK<>+864(SB)/8, $0x3f33d85ed9fee38e
DATA geluK<>+872(SB)/8, $0x3f33d85ed9fee38e
DATA geluK<>+880(SB)/8, $0x3f33d85ed9fee38e
DATA geluK<>+888(SB)/8, $0x3f33d85ed9fee38e
DATA geluK<>+896(SB)/8, $0xbf12b23c126aaaab
DATA geluK<>+904(SB)/8, $0xbf12b23c126aaaab
DATA geluK<>+912(SB)/8, $0xbf12b23c126aaaab
DATA geluK<>+920(SB)/8, $0xbf12b23c126aaaab
DATA geluK<>+928(SB)/8, $0xbf12b23c126aaaab
DATA geluK<>+936(SB)/8, $0xbf12b23c126aaaab
DATA geluK<>+944(SB)/8, $0xbf12b23c126aaaab
DATA geluK<>+952(SB)/8, $0xbf12b23c126aaaab
DATA geluK<>+960(SB)/8, $0xbee824c716471c72
DATA geluK<>+968(SB)/8, $0xbee824c716471c72
DATA geluK<>+976(SB)/8, $0xbee824c716471c72
DATA geluK<>+984(SB)/8, $0xbee824c716471c72
DATA geluK<>+992(SB)/8, $0xbee824c716471c72
DATA geluK<>+1000(SB)/8, $0xbee824c716471c72
DATA geluK<>+1008(SB)/8, $0xbee824c716471c72
DATA geluK<>+1016(SB)/8, $0xbee824c716471c72
DATA geluK<>+1024(SB)/8, $0x3ed679689b1c71c8
DATA geluK<>+1032(SB)/8, $0x3ed679689b1c71c8
DATA geluK<>+1040(SB)/8, $0x3ed679689b1c71c8
DATA geluK<>+1048(SB)/8, $0x3ed679689b1c71c8
DATA geluK<>+1056(SB)/8, $0x3ed679689b1c71c8
DATA geluK<>+1064(SB)/8, $0x3ed679689b1c71c8
DATA geluK<>+1072(SB)/8, $0x3ed679689b1c71c8
DATA geluK<>+1080(SB)/8, $0x3ed679689b1c71c8
DATA geluK<>+1088(SB)/8, $0x3ea7983e95555555
DATA geluK<>+1096(SB)/8, $0x3ea7983e95555555
DATA geluK<>+1104(SB)/8, $0x3ea7983e95555555
DATA geluK<>+1112(SB)/8, $0x3ea7983e95555555
DATA geluK<>+1120(SB)/8, $0x3ea7983e95555555
DATA geluK<>+1128(SB)/8, $0x3ea7983e95555555
DATA geluK<>+1136(SB)/8, $0x3ea7983e95555555
DATA geluK<>+1144(SB)/8, $0x3ea7983e95555555
DATA geluK<>+1152(SB)/8, $0xbe9a71a580000000
DATA geluK<>+1160(SB)/8, $0xbe9a71a580000000
DATA geluK<>+1168(SB)/8, $0xbe9a71a580000000
DATA geluK<>+1176(SB)/8, $0xbe9a71a580000000
DATA geluK<>+1184(SB)/8, $0xbe9a71a580000000
DATA geluK<>+1192(SB)/8, $0xbe9a71a580000000
DATA geluK<>+1200(SB)/8, $0xbe9a71a580000000
DATA geluK<>+1208(SB)/8, $0xbe9a71a580000000
DATA geluK<>+1216(SB)/8, $0xbe734d4dc71c71c7
DATA geluK<>+1224(SB)/8, $0xbe734d4dc71c71c7
DATA geluK<>+1232(SB)/8, $0xbe734d4dc71c71c7
DATA geluK<>+1240(SB)/8, $0xbe734d4dc71c71c7
DATA geluK<>+1248(SB)/8, $0xbe734d4dc71c71c7
DATA geluK<>+1256(SB)/8, $0xbe734d4dc71c71c7
DATA geluK<>+1264(SB)/8, $0xbe734d4dc71c71c7
DATA geluK<>+1272(SB)/8, $0xbe734d4dc71c71c7
DATA geluK<>+1280(SB)/8, $0x3e5d95238e38e38e
DATA geluK<>+1288(SB)/8, $0x3e5d95238e38e38e
DATA geluK<>+1296(SB)/8, $0x3e5d95238e38e38e
DATA geluK<>+1304(SB)/8, $0x3e5d95238e38e38e
DATA geluK<>+1312(SB)/8, $0x3e5d95238e38e38e
DATA geluK<>+1320(SB)/8, $0x3e5d95238e38e38e
DATA geluK<>+1328(SB)/8, $0x3e5d95238e38e38e
DATA geluK<>+1336(SB)/8, $0x3e5d95238e38e38e
DATA geluK<>+1344(SB)/8, $0x3e422a0e38e38e39
DATA geluK<>+1352(SB)/8, $0x3e422a0e38e38e39
DATA geluK<>+1360(SB)/8, $0x3e422a0e38e38e39
DATA geluK<>+1368(SB)/8, $0x3e422a0e38e38e39
DATA geluK<>+1376(SB)/8, $0x3e422a0e38e38e39
DATA geluK<>+1384(SB)/8, $0x3e422a0e38e38e39
DATA geluK<>+1392(SB)/8, $0x3e422a0e38e38e39
DATA geluK<>+1400(SB)/8, $0x3e422a0e38e38e39
DATA geluK<>+1408(SB)/8, $0xbe17d38e38e38e39
DATA geluK<>+1416(SB)/8, $0xbe17d38e38e38e39
DATA geluK<>+1424(SB)/8, $0xbe17d38e38e38e39
DATA geluK<>+1432(SB)/8, $0xbe17d38e38e38e39
DATA geluK<>+1440(SB)/8, $0xbe17d38e38e38e39
DATA geluK<>+1448(SB)/8, $0xbe17d38e38e38e39
DATA geluK<>+1456(SB)/8, $0xbe17d38e38e38e39
DATA geluK<>+1464(SB)/8, $0xbe17d38e38e38e39
DATA geluK<>+1472(SB)/8, $0xbe08a38e38e38e39
DATA geluK<>+1480(SB)/8, $0xbe08a38e38e38e39
DATA geluK<>+1488(SB)/8, $0xbe08a38e38e38e39
DATA geluK<>+1496(SB)/8, $0xbe08a38e38e38e39
DATA geluK<>+1504(SB)/8, $0xbe08a38e38e38e39
DATA geluK<>+1512(SB)/8, $0xbe08a38e38e38e39
DATA geluK<>+1520(SB)/8, $0xbe08a38e38e38e39
DATA geluK<>+1528(SB)/8, $0xbe08a38e38e38e39
// Offset 1536: the clamp of a², 10.5² (gelu_amd64.go: past a ≈ 26.6 e^(−a²)
// would be a float64 denormal, a microcode assist per lane).
DATA geluK<>+1536(SB)/8, $0x405b900000000000
DATA geluK<>+1544(SB)/8, $0x405b900000000000
DATA geluK<>+1552(SB)/8, $0x405b900000000000
DATA geluK<>+1560(SB)/8, $0x405b900000000000
DATA geluK<>+1568(SB)/8, $0x405b900000000000
DATA geluK<>+1576(SB)/8, $0x405b900000000000
DATA geluK<>+1584(SB)/8, $0x405b900000000000
DATA geluK<>+1592(SB)/8, $0x405b900000000000
DATA geluK<>+1600(SB)/8, $0xbff71547652b82fe
DATA geluK<>+1608(SB)/8, $0xbff71547652b82fe
DATA geluK<>+1616(SB)/8, $0xbff71547652b82fe
DATA geluK<>+1624(SB)/8, $0xbff71547652b82fe
DATA geluK<>+1632(SB)/8, $0xbff71547652b82fe
DATA geluK<>+1640(SB)/8, $0xbff71547652b82fe
DATA geluK<>+1648(SB)/8, $0xbff71547652b82fe
DATA geluK<>+1656(SB)/8, $0xbff71547652b82fe
DATA geluK<>+1664(SB)/8, $0x3fe62e42fee00000
DATA geluK<>+1672(SB)/8, $0x3fe62e42fee00000
DATA geluK<>+1680(SB)/8, $0x3fe62e42fee00000
DATA geluK<>+1688(SB)/8, $0x3fe62e42fee00000
DATA geluK<>+1696(SB)/8, $0x3fe62e42fee00000
DATA geluK<>+1704(SB)/8, $0x3fe62e42fee00000
DATA geluK<>+1712(SB)/8, $0x3fe62e42fee00000
DATA geluK<>+1720(SB)/8, $0x3fe62e42fee00000
DATA geluK<>+1728(SB)/8, $0x3dea39ef35793c76
DATA geluK<>+1736(SB)/8, $0x3dea39ef35793c76
DATA geluK<>+1744(SB)/8, $0x3dea39ef35793c76
DATA geluK<>+1752(SB)/8, $0x3dea39ef35793c76
DATA geluK<>+1760(SB)/8, $0x3dea39ef35793c76
DATA geluK<>+1768(SB)/8, $0x3dea39ef35793c76
DATA geluK<>+1776(SB)/8, $0x3dea39ef35793c76
DATA geluK<>+1784(SB)/8, $0x3dea39ef35793c76
DATA geluK<>+1792(SB)/8, $0x3ff0000000000000
DATA geluK<>+1800(SB)/8, $0x3ff0000000000000
DATA geluK<>+1808(SB)/8, $0x3ff0000000000000
DATA geluK<>+1816(SB)/8, $0x3ff0000000000000
DATA geluK<>+1824(SB)/8, $0x3ff0000000000000
DATA geluK<>+1832(SB)/8, $0x3ff0000000000000
DATA geluK<>+1840(SB)/8, $0x3ff0000000000000
DATA geluK<>+1848(SB)/8, $0x3ff0000000000000
DATA geluK<>+1856(SB)/8, $0x3ff0000000000000
DATA geluK<>+1864(SB)/8, $0x3ff0000000000000
DATA geluK<>+1872(SB)/8, $0x3ff0000000000000
DATA geluK<>+1880(SB)/8, $0x3ff0000000000000
DATA geluK<>+1888(SB)/8, $0x3ff0000000000000
DATA geluK<>+1896(SB)/8, $0x3ff0000000000000
DATA geluK<>+1904(SB)/8, $0x3ff0000000000000
DATA geluK<>+1912(SB)/8, $0x3ff0000000000000
DATA geluK<>+1920(SB)/8, $0x3fe0000000000000
DATA geluK<>+1928(SB)/8, $0x3fe0000000000000
DATA geluK<>+1936(SB)/8, $0x3fe0000000000000
DATA geluK<>+1944(SB)/8, $0x3fe0000000000000
DATA geluK<>+1952(SB)/8, $0x3fe0000000000000
DATA geluK<>+1960(SB)/8, $0x3fe0000000000000
DATA geluK<>+1968(SB)/8, $0x3fe0000000000000
DATA geluK<>+1976(SB)/8, $0x3fe0000000000000
DATA geluK<>+1984(SB)/8, $0x3fc5555555555555
DATA geluK<>+1992(SB)/8, $0x3fc5555555555555
DATA geluK<>+2000(SB)/8, $0x3fc5555555555555
DATA geluK<>+2008(SB)/8, $0x3fc5555555555555
DATA geluK<>+2016(SB)/8, $0x3fc5555555555555
DATA geluK<>+2024(SB)/8, $0x3fc5555555555555
DATA geluK<>+2032(SB)/8, $0x3fc5555555555555
DATA geluK<>+2040(SB)/8, $0x3fc5555555555555
DATA geluK<>+2048(SB)/8, $0x3fa5555555555555
DATA geluK<>+2056(SB)/8, $0x3fa5555555555555
DATA geluK<>+2064(SB)/8, $0x3fa5555555555555
DATA geluK<>+2072(SB)/8, $0x3fa5555555555555
DATA geluK<>+2080(SB)/8, $0x3fa5555555555555
DATA geluK<>+2088(SB)/8, $0x3fa5555555555555
DATA geluK<>+2096(SB)/8, $0x3fa5555555555555
DATA geluK<>+2104(SB)/8, $0x3fa5555555555555
DATA geluK<>+2112(SB)/8, $0x3f81111111111111
DATA geluK<>+2120(SB)/8, $0x3f81111111111111
DATA geluK<>+2128(SB)/8, $0x3f81111111111111
DATA geluK<>+2136(SB)/8, $0x3f81111111111111
DATA geluK<>+2144(SB)/8, $0x3f81111111111111
DATA geluK<>+2152(SB)/8, $0x3f81111111111111
DATA geluK<>+2160(SB)/8, $0x3f81111111111111
DATA geluK<>+2168(SB)/8, $0x3f81111111111111
DATA geluK<>+2176(SB)/8, $0x3f56c16c16c16c17
DATA geluK<>+2184(SB)/8, $0x3f56c16c16c16c17
DATA geluK<>+2192(SB)/8, $0x3f56c16c16c16c17
DATA geluK<>+2200(SB)/8, $0x3f56c16c16c16c17
DATA geluK<>+2208(SB)/8, $0x3f56c16c16c16c17
DATA geluK<>+2216(SB)/8, $0x3f56c16c16c16c17
DATA geluK<>+2224(SB)/8, $0x3f56c16c16c16c17
DATA geluK<>+2232(SB)/8, $0x3f56c16c16c16c17
DATA geluK<>+2240(SB)/8, $0x3f2a01a01a01a01a
DATA geluK<>+2248(SB)/8, $0x3f2a01a01a01a01a
DATA geluK<>+2256(SB)/8, $0x3f2a01a01a01a01a
DATA geluK<>+2264(SB)/8, $0x3f2a01a01a01a01a
DATA geluK<>+2272(SB)/8, $0x3f2a01a01a01a01a
DATA geluK<>+2280(SB)/8, $0x3f2a01a01a01a01a
DATA geluK<>+2288(SB)/8, $0x3f2a01a01a01a01a
DATA geluK<>+2296(SB)/8, $0x3f2a01a01a01a01a
DATA geluK<>+2304(SB)/8, $0x3efa01a01a01a01a
DATA geluK<>+2312(SB)/8, $0x3efa01a01a01a01a
DATA geluK<>+2320(SB)/8, $0x3efa01a01a01a01a
DATA geluK<>+2328(SB)/8, $0x3efa01a01a01a01a
DATA geluK<>+2336(SB)/8, $0x3efa01a01a01a01a
DATA geluK<>+2344(SB)/8, $0x3efa01a01a01a01a
DATA geluK<>+2352(SB)/8, $0x3efa01a01a01a01a
DATA geluK<>+2360(SB)/8, $0x3efa01a01a01a01a
DATA geluK<>+2368(SB)/8, $0x3ec71de3a556c734
DATA geluK<>+2376(SB)/8, $0x3ec71de3a556c734
DATA geluK<>+2384(SB)/8, $0x3ec71de3a556c734
DATA geluK<>+2392(SB)/8, $0x3ec71de3a556c734
DATA geluK<>+2400(SB)/8, $0x3ec71de3a556c734
DATA geluK<>+2408(SB)/8, $0x3ec71de3a556c734
DATA geluK<>+2416(SB)/8, $0x3ec71de3a556c734
DATA geluK<>+2424(SB)/8, $0x3ec71de3a556c734
DATA geluK<>+2432(SB)/8, $0x3e927e4fb7789f5c
DATA geluK<>+2440(SB)/8, $0x3e927e4fb7789f5c
DATA geluK<>+2448(SB)/8, $0x3e927e4fb7789f5c
DATA geluK<>+2456(SB)/8, $0x3e927e4fb7789f5c
DATA geluK<>+2464(SB)/8, $0x3e927e4fb7789f5c
DATA geluK<>+2472(SB)/8, $0x3e927e4fb7789f5c
DATA geluK<>+2480(SB)/8, $0x3e927e4fb7789f5c
DATA geluK<>+2488(SB)/8, $0x3e927e4fb7789f5c
DATA geluK<>+2496(SB)/8, $0x3e5ae64567f544e4
DATA geluK<>+2504(SB)/8, $0x3e5ae64567f544e4
DATA geluK<>+2512(SB)/8, $0x3e5ae64567f544e4
DATA geluK<>+2520(SB)/8, $0x3e5ae64567f544e4
DATA geluK<>+2528(SB)/8, $0x3e5ae64567f544e4
DATA geluK<>+2536(SB)/8, $0x3e5ae64567f544e4
DATA geluK<>+2544(SB)/8, $0x3e5ae64567f544e4
DATA geluK<>+2552(SB)/8, $0x3e5ae64567f544e4
DATA geluK<>+2560(SB)/8, $0x3ff20dd750429b6d
DATA geluK<>+2568(SB)/8, $0x3ff20dd750429b6d
DATA geluK<>+2576(SB)/8, $0x3ff20dd750429b6d
DATA geluK<>+2584(SB)/8, $0x3ff20dd750429b6d
DATA geluK<>+2592(SB)/8, $0x3ff20dd750429b6d
DATA geluK<>+2600(SB)/8, $0x3ff20dd750429b6d
DATA geluK<>+2608(SB)/8, $0x3ff20dd750429b6d
DATA geluK<>+2616(SB)/8, $0x3ff20dd750429b6d
DATA geluK<>+2624(SB)/8, $0xbfd812746b0379e7
DATA geluK<>+2632(SB)/8, $0xbfd812746b0379e7
DATA geluK<>+2640(SB)/8, $0xbfd812746b0379e7
DATA geluK<>+2648(SB)/8, $0xbfd812746b0379e7
DATA geluK<>+2656(SB)/8, $0xbfd812746b0379e7
DATA geluK<>+2664(SB)/8, $0xbfd812746b0379e7
DATA geluK<>+2672(SB)/8, $0xbfd812746b0379e7
DATA geluK<>+2680(SB)/8, $0xbfd812746b0379e7
DATA geluK<>+2688(SB)/8, $0x3fbce2f21a042be2
DATA geluK<>+2696(SB)/8, $0x3fbce2f21a042be2
DATA geluK<>+2704(SB)/8, $0x3fbce2f21a042be2
DATA geluK<>+2712(SB)/8, $0x3fbce2f21a042be2
DATA geluK<>+2720(SB)/8, $0x3fbce2f21a042be2
DATA geluK<>+2728(SB)/8, $0x3fbce2f21a042be2
DATA geluK<>+2736(SB)/8, $0x3fbce2f21a042be2
DATA geluK<>+2744(SB)/8, $0x3fbce2f21a042be2
DATA geluK<>+2752(SB)/8, $0xbf9b82ce31288b51
DATA geluK<>+2760(SB)/8, $0xbf9b82ce31288b51
DATA geluK<>+2768(SB)/8, $0xbf9b82ce31288b51
DATA geluK<>+2776(SB)/8, $0xbf9b82ce31288b51
DATA geluK<>+2784(SB)/8, $0xbf9b82ce31288b51
DATA geluK<>+2792(SB)/8, $0xbf9b82ce31288b51
DATA geluK<>+2800(SB)/8, $0xbf9b82ce31288b51
DATA geluK<>+2808(SB)/8, $0xbf9b82ce31288b51
DATA geluK<>+2816(SB)/8, $0x3f7565bcd0e6a53f
DATA geluK<>+2824(SB)/8, $0x3f7565bcd0e6a53f
DATA geluK<>+2832(SB)/8, $0x3f7565bcd0e6a53f
DATA geluK<>+2840(SB)/8, $0x3f7565bcd0e6a53f
DATA geluK<>+2848(SB)/8, $0x3f7565bcd0e6a53f
DATA geluK<>+2856(SB)/8, $0x3f7565bcd0e6a53f
DATA geluK<>+2864(SB)/8, $0x3f7565bcd0e6a53f
DATA geluK<>+2872(SB)/8, $0x3f7565bcd0e6a53f
DATA geluK<>+2880(SB)/8, $0xbf4c02db40040b85
DATA geluK<>+2888(SB)/8, $0xbf4c02db40040b85
DATA geluK<>+2896(SB)/8, $0xbf4c02db40040b85
DATA geluK<>+2904(SB)/8, $0xbf4c02db40040b85
DATA geluK<>+2912(SB)/8, $0xbf4c02db40040b85
DATA geluK<>+2920(SB)/8, $0xbf4c02db40040b85
DATA geluK<>+2928(SB)/8, $0xbf4c02db40040b85
DATA geluK<>+2936(SB)/8, $0xbf4c02db40040b85
DATA geluK<>+2944(SB)/8, $0x3f1f9a326f9b89b7
DATA geluK<>+2952(SB)/8, $0x3f1f9a326f9b89b7
DATA geluK<>+2960(SB)/8, $0x3f1f9a326f9b89b7
DATA geluK<>+2968(SB)/8, $0x3f1f9a326f9b89b7
DATA geluK<>+2976(SB)/8, $0x3f1f9a326f9b89b7
DATA geluK<>+2984(SB)/8, $0x3f1f9a326f9b89b7
DATA geluK<>+2992(SB)/8, $0x3f1f9a326f9b89b7
DATA geluK<>+3000(SB)/8, $0x3f1f9a326f9b89b7
DATA geluK<>+3008(SB)/8, $0xbeef4d25c3e0c2eb
DATA geluK<>+3016(SB)/8, $0xbeef4d25c3e0c2eb
DATA geluK<>+3024(SB)/8, $0xbeef4d25c3e0c2eb
DATA geluK<>+3032(SB)/8, $0xbeef4d25c3e0c2eb
DATA geluK<>+3040(SB)/8, $0xbeef4d25c3e0c2eb
DATA geluK<>+3048(SB)/8, $0xbeef4d25c3e0c2eb
DATA geluK<>+3056(SB)/8, $0xbeef4d25c3e0c2eb
DATA geluK<>+3064(SB)/8, $0xbeef4d25c3e0c2eb
DATA geluK<>+3072(SB)/8, $0x3ebb9e6c9dc651a2
DATA geluK<>+3080(SB)/8, $0x3ebb9e6c9dc651a2
DATA geluK<>+3088(SB)/8, $0x3ebb9e6c9dc651a2
DATA geluK<>+3096(SB)/8, $0x3ebb9e6c9dc651a2
DATA geluK<>+3104(SB)/8, $0x3ebb9e6c9dc651a2
DATA geluK<>+3112(SB)/8, $0x3ebb9e6c9dc651a2
DATA geluK<>+3120(SB)/8, $0x3ebb9e6c9dc651a2
DATA geluK<>+3128(SB)/8, $0x3ebb9e6c9dc651a2
DATA geluK<>+3136(SB)/8, $0xbe85f742ec43e71a
DATA geluK<>+3144(SB)/8, $0xbe85f742ec43e71a
DATA geluK<>+3152(SB)/8, $0xbe85f742ec43e71a
DATA geluK<>+3160(SB)/8, $0xbe85f742ec43e71a
DATA geluK<>+3168(SB)/8, $0xbe85f742ec43e71a
DATA geluK<>+3176(SB)/8, $0xbe85f742ec43e71a
DATA geluK<>+3184(SB)/8, $0xbe85f742ec43e71a
DATA geluK<>+3192(SB)/8, $0xbe85f742ec43e71a
DATA geluK<>+3200(SB)/8, $0x3e4fcc5720624c1c
DATA geluK<>+3208(SB)/8, $0x3e4fcc5720624c1c
DATA geluK<>+3216(SB)/8, $0x3e4fcc5720624c1c
DATA geluK<>+3224(SB)/8, $0x3e4fcc5720624c1c
DATA geluK<>+3232(SB)/8, $0x3e4fcc5720624c1c
DATA geluK<>+3240(SB)/8, $0x3e4fcc5720624c1c
DATA geluK<>+3248(SB)/8, $0x3e4fcc5720624c1c
DATA geluK<>+3256(SB)/8, $0x3e4fcc5720624c1c
DATA geluK<>+3264(SB)/8, $0xbe151d7181c5d36c
DATA geluK<>+3272(SB)/8, $0xbe151d7181c5d36c
DATA geluK<>+3280(SB)/8, $0xbe151d7181c5d36c
DATA geluK<>+3288(SB)/8, $0xbe151d7181c5d36c
DATA geluK<>+3296(SB)/8, $0xbe151d7181c5d36c
DATA geluK<>+3304(SB)/8, $0xbe151d7181c5d36c
DATA geluK<>+3312(SB)/8, $0xbe151d7181c5d36c
DATA geluK<>+3320(SB)/8, $0xbe151d7181c5d36c
DATA geluK<>+3328(SB)/8, $0x3ff0000000000000
DATA geluK<>+3336(SB)/8, $0x3ff0000000000000
DATA geluK<>+3344(SB)/8, $0x3ff0000000000000
DATA geluK<>+3352(SB)/8, $0x3ff0000000000000
DATA geluK<>+3360(SB)/8, $0x3ff0000000000000
DATA geluK<>+3368(SB)/8, $0x3ff0000000000000
DATA geluK<>+3376(SB)/8, $0x3ff0000000000000
DATA geluK<>+3384(SB)/8, $0x3ff0000000000000
DATA geluK<>+3392(SB)/8, $0x4000000000000000
DATA geluK<>+3400(SB)/8, $0x4000000000000000
DATA geluK<>+3408(SB)/8, $0x4000000000000000
DATA geluK<>+3416(SB)/8, $0x4000000000000000
DATA geluK<>+3424(SB)/8, $0x4000000000000000
DATA geluK<>+3432(SB)/8, $0x4000000000000000
DATA geluK<>+3440(SB)/8, $0x4000000000000000
DATA geluK<>+3448(SB)/8, $0x4000000000000000
DATA geluK<>+3456(SB)/8, $0x3fe0000000000000
DATA geluK<>+3464(SB)/8, $0x3fe0000000000000
DATA geluK<>+3472(SB)/8, $0x3fe0000000000000
DATA geluK<>+3480(SB)/8, $0x3fe0000000000000
DATA geluK<>+3488(SB)/8, $0x3fe0000000000000
DATA geluK<>+3496(SB)/8, $0x3fe0000000000000
DATA geluK<>+3504(SB)/8, $0x3fe0000000000000
DATA geluK<>+3512(SB)/8, $0x3fe0000000000000
DATA geluK<>+3520(SB)/8, $0x3fe0000000000000
DATA geluK<>+3528(SB)/8, $0x3fe0000000000000
DATA geluK<>+3536(SB)/8, $0x3fe0000000000000
DATA geluK<>+3544(SB)/8, $0x3fe0000000000000
DATA geluK<>+3552(SB)/8, $0x3fe0000000000000
DATA geluK<>+3560(SB)/8, $0x3fe0000000000000
DATA geluK<>+3568(SB)/8, $0x3fe0000000000000
DATA geluK<>+3576(SB)/8, $0x3fe0000000000000
GLOBL geluK<>(SB), RODATA|NOPTR, $3584

// GELU16 computes the GELU of the 16 float32 values at 0(SI) into Y0 (the
// first 8) and Y14 (the last 8), rounded once to float32, as gelu_amd64.go
// describes; both loops below run it. (erfc is taken as 0 where a > 10.5:
// a² was clamped there.) Z28 must be zero.
//
// Its six Horner chains (erfcx, e^(−a²) and erf's Taylor series, for each
// half) are independent, and each is a run of dependent FMAs: they are
// interleaved step by step, the exp and Taylor steps first in each round
// (the erfcx chain waits on the division), so that the scheduler always
// holds independent FMAs. Run one chain after the other, the loop is
// latency-bound; interleaving keeps the same instructions per lane, so the
// same bits (a hash of 4M outputs of both orders compared), in less time
// per value (BenchmarkGelu/slice; measurements: docs/perf-log.md).
#define GELU16 \
	VCVTPS2PD 0(SI), Z0; \
	VCVTPS2PD 32(SI), Z14; \
	VPANDQ.BCST geluK<>+0(SB), Z0, Z1; \
	VPANDQ.BCST geluK<>+0(SB), Z14, Z15; \
	VMULPD.BCST geluK<>+64(SB), Z1, Z1; \
	VMULPD.BCST geluK<>+64(SB), Z15, Z15; \
	VMULPD.BCST geluK<>+64(SB), Z0, Z13; \
	VMULPD.BCST geluK<>+64(SB), Z14, Z27; \
	VMINPD.BCST geluK<>+128(SB), Z1, Z2; \
	VMINPD.BCST geluK<>+128(SB), Z15, Z16; \
	VADDPD.BCST geluK<>+192(SB), Z2, Z6; \
	VADDPD.BCST geluK<>+192(SB), Z16, Z20; \
	VSUBPD.BCST geluK<>+192(SB), Z2, Z2; \
	VSUBPD.BCST geluK<>+192(SB), Z16, Z16; \
	VDIVPD Z6, Z2, Z2; \
	VDIVPD Z20, Z16, Z16; \
	VSUBPD.BCST geluK<>+256(SB), Z2, Z2; \
	VSUBPD.BCST geluK<>+256(SB), Z16, Z16; \
	VMULPD.BCST geluK<>+320(SB), Z2, Z2; \
	VMULPD.BCST geluK<>+320(SB), Z16, Z16; \
	VMULPD Z1, Z1, Z4; \
	VMULPD Z15, Z15, Z18; \
	VMINPD.BCST geluK<>+1536(SB), Z4, Z4; \
	VMINPD.BCST geluK<>+1536(SB), Z18, Z18; \
	VMULPD.BCST geluK<>+1600(SB), Z4, Z8; \
	VMULPD.BCST geluK<>+1600(SB), Z18, Z22; \
	VRNDSCALEPD $0, Z8, Z8; \
	VRNDSCALEPD $0, Z22, Z22; \
	VSUBPD Z4, Z28, Z9; \
	VSUBPD Z18, Z28, Z23; \
	VFNMADD231PD.BCST geluK<>+1664(SB), Z8, Z9; \
	VFNMADD231PD.BCST geluK<>+1664(SB), Z22, Z23; \
	VFNMADD231PD.BCST geluK<>+1728(SB), Z8, Z9; \
	VFNMADD231PD.BCST geluK<>+1728(SB), Z22, Z23; \
	VMULPD Z13, Z13, Z3; \
	VMULPD Z27, Z27, Z17; \
	VMOVUPD geluK<>+1472(SB), Z7; \
	VMOVUPD geluK<>+1472(SB), Z21; \
	VMOVUPD geluK<>+2496(SB), Z10; \
	VMOVUPD geluK<>+2496(SB), Z24; \
	VMOVUPD geluK<>+3264(SB), Z12; \
	VMOVUPD geluK<>+3264(SB), Z26; \
	VFMADD213PD.BCST geluK<>+2432(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+2432(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+3200(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+3200(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+1408(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+1408(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+2368(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+2368(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+3136(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+3136(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+1344(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+1344(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+2304(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+2304(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+3072(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+3072(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+1280(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+1280(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+2240(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+2240(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+3008(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+3008(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+1216(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+1216(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+2176(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+2176(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+2944(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+2944(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+1152(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+1152(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+2112(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+2112(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+2880(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+2880(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+1088(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+1088(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+2048(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+2048(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+2816(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+2816(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+1024(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+1024(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+1984(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+1984(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+2752(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+2752(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+960(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+960(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+1920(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+1920(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+2688(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+2688(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+896(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+896(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+1856(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+1856(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+2624(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+2624(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+832(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+832(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+1792(SB), Z9, Z10; \
	VFMADD213PD.BCST geluK<>+1792(SB), Z23, Z24; \
	VFMADD213PD.BCST geluK<>+2560(SB), Z3, Z12; \
	VFMADD213PD.BCST geluK<>+2560(SB), Z17, Z26; \
	VFMADD213PD.BCST geluK<>+768(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+768(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+704(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+704(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+640(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+640(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+576(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+576(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+512(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+512(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+448(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+448(SB), Z16, Z21; \
	VFMADD213PD.BCST geluK<>+384(SB), Z2, Z7; \
	VFMADD213PD.BCST geluK<>+384(SB), Z16, Z21; \
	VSCALEFPD Z8, Z10, Z10; \
	VSCALEFPD Z22, Z24, Z24; \
	VMULPD Z7, Z10, Z10; \
	VMULPD Z21, Z24, Z24; \
	VCMPPD.BCST $0x1e, geluK<>+128(SB), Z1, K4; \
	VCMPPD.BCST $0x1e, geluK<>+128(SB), Z15, K5; \
	VMOVAPD Z28, K4, Z10; \
	VMOVAPD Z28, K5, Z24; \
	VMOVUPD geluK<>+3392(SB), Z11; \
	VMOVUPD geluK<>+3392(SB), Z25; \
	VSUBPD Z10, Z11, Z11; \
	VSUBPD Z24, Z25, Z25; \
	VCMPPD $1, Z28, Z0, K2; \
	VCMPPD $1, Z28, Z14, K6; \
	VBLENDMPD Z10, Z11, K2, Z11; \
	VBLENDMPD Z24, Z25, K6, Z25; \
	VFMADD213PD.BCST geluK<>+3328(SB), Z13, Z12; \
	VFMADD213PD.BCST geluK<>+3328(SB), Z27, Z26; \
	VCMPPD.BCST $1, geluK<>+3520(SB), Z1, K3; \
	VCMPPD.BCST $1, geluK<>+3520(SB), Z15, K7; \
	VBLENDMPD Z12, Z11, K3, Z11; \
	VBLENDMPD Z26, Z25, K7, Z25; \
	VMULPD.BCST geluK<>+3456(SB), Z0, Z0; \
	VMULPD.BCST geluK<>+3456(SB), Z14, Z14; \
	VMULPD Z11, Z0, Z0; \
	VMULPD Z25, Z14, Z14; \
	VCVTPD2PS Z0, Y0; \
	VCVTPD2PS Z14, Y14

// func geluAVX512(dst, src *float32, n int)
//
// dst[i] = gelu(src[i]) for i < n, n a multiple of 16 (see gelu_amd64.go).
TEXT ·geluAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   geluAVX512done
	VPXORQ Z28, Z28, Z28
geluAVX512loop:
	GELU16
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y14, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  geluAVX512loop
geluAVX512done:
	VZEROUPPER
	RET

// func gegluAVX512(dst, value, gate *float32, n int)
//
// dst[i] = float32(gelu(value[i])) · gate[i] for i < n, n a multiple of 16.
TEXT ·gegluAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ value+8(FP), SI
	MOVQ gate+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   gegluAVX512done
	VPXORQ Z28, Z28, Z28
gegluAVX512loop:
	GELU16
	VMULPS 0(DX), Y0, Y0
	VMULPS 32(DX), Y14, Y14
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y14, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  gegluAVX512loop
gegluAVX512done:
	VZEROUPPER
	RET


// func geluConstAVX512(off int) float64
//
// The first lane of the constant at byte offset off of geluK (tests).
TEXT ·geluConstAVX512(SB), NOSPLIT, $0-16
	MOVQ off+0(FP), AX
	MOVQ $geluK<>(SB), BX
	MOVQ (BX)(AX*1), CX
	MOVQ CX, ret+8(FP)
	RET
