// Package half converts between float32 and the two 16-bit float formats
// of checkpoints and kernels, IEEE 754 binary16 (half) and bfloat16, with
// the rounding the GPU uses (nearest-even, NaN kept quiet). It is the one
// implementation: weights (checkpoint decoding), the MSL emulator (function
// constants) and the kernel tests all call it.
package half

import "math"

// Float16ToFloat32 converts one IEEE 754 binary16 value exactly: every f16
// (subnormals, ±inf, NaN payloads) has an exact float32 image.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // inf or NaN: keep the payload in the top mantissa bits
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0:
		// Subnormal (or zero): mant·2^-24 is exact in float32.
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	// Rebias the exponent from 15 to 127.
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// BFloat16ToFloat32 converts one bfloat16 value: it is the top half of a
// float32, so the conversion is exact for every input.
func BFloat16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// Float32ToFloat16 rounds to nearest-even, handling subnormals, overflow to
// inf and NaN (kept quiet). Used by the synthetic writer.
func Float32ToFloat16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	abs := u & 0x7fffffff
	switch {
	case abs > 0x7f800000: // NaN
		return sign | 0x7e00 | uint16(abs>>13)&0x3ff
	case abs >= 0x477ff000: // rounds to ≥ 65520 → inf
		return sign | 0x7c00
	case abs >= 0x38800000: // normal half (≥ 2^-14)
		// Add the rounding bias on the full float32 pattern so a mantissa
		// carry bumps the exponent, then rebias 127 → 15.
		r := abs + 0xfff + (abs>>13)&1
		return sign | uint16((r-0x38000000)>>13)
	case abs >= 0x33000000: // subnormal half, value ≥ 2^-25
		exp := abs >> 23
		mant := abs&0x7fffff | 0x800000
		shift := 126 - exp // 14 + (113 - exp) minus the implicit 13
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	return sign // underflow to ±0
}

// Float32ToBFloat16 rounds to nearest-even, keeping NaN quiet (a NaN's
// payload could otherwise round to infinity).
func Float32ToBFloat16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
