package weights

import (
	"encoding/binary"
	"fmt"
	"github.com/laya-metal/laya/internal/half"
	"math"
	"sync"
)

// DType is the element type of a stored tensor.
type DType uint8

// The dtypes a Laya checkpoint may store. Upstream ships F16 (the English
// checkpoint also keeps the F32 temperature buffer), laya-mlx exports F16,
// and a re-saved checkpoint may be F32 or BF16.
const (
	F32 DType = iota + 1
	F16
	BF16
)

// String returns the safetensors spelling ("F32", "F16", "BF16").
func (d DType) String() string {
	switch d {
	case F32:
		return "F32"
	case F16:
		return "F16"
	case BF16:
		return "BF16"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size is the width of one element in bytes (0 for an unknown dtype).
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case F16, BF16:
		return 2
	}
	return 0
}

// ParseDType maps a safetensors dtype string to a DType.
func ParseDType(s string) (DType, error) {
	switch s {
	case "F32":
		return F32, nil
	case "F16":
		return F16, nil
	case "BF16":
		return BF16, nil
	}
	return 0, fmt.Errorf("weights: %w %q (supported: F32, F16, BF16)", ErrUnsupportedDType, s)
}

// Float16ToFloat32 converts one IEEE 754 binary16 value exactly (see
// package internal/half, which holds the one implementation).
func Float16ToFloat32(h uint16) float32 { return half.Float16ToFloat32(h) }

// BFloat16ToFloat32 converts one bfloat16 value exactly.
func BFloat16ToFloat32(b uint16) float32 { return half.BFloat16ToFloat32(b) }

// Float32ToFloat16 rounds to nearest-even, handling subnormals, overflow to
// inf and NaN (kept quiet). Used by the synthetic writer.
func Float32ToFloat16(f float32) uint16 { return half.Float32ToFloat16(f) }

// Float32ToBFloat16 rounds to nearest-even, keeping NaN quiet.
func Float32ToBFloat16(f float32) uint16 { return half.Float32ToBFloat16(f) }

// f16Table holds all 65536 conversions (256 KiB), built on first use: a
// table lookup beats per-element branching in the bulk loop (measured
// 3.1 ns vs 4.2 ns per element) and is exact by construction.
var (
	f16TableOnce sync.Once
	f16Table     *[65536]float32
)

func float16Table() *[65536]float32 {
	f16TableOnce.Do(func() {
		t := new([65536]float32)
		for i := range t {
			t[i] = Float16ToFloat32(uint16(i))
		}
		f16Table = t
	})
	return f16Table
}

// DecodeFloat32 widens little-endian F32, F16 or BF16 data into dst, exactly.
// src must hold len(dst) elements of dtype.
func DecodeFloat32(dst []float32, src []byte, dtype DType) error {
	switch dtype {
	case F32, F16, BF16:
	default:
		return fmt.Errorf("weights: %w: %v", ErrUnsupportedDType, dtype)
	}
	if len(src) != len(dst)*dtype.Size() {
		return fmt.Errorf("weights: %d bytes of %v for %d elements", len(src), dtype, len(dst))
	}
	convertToFloat32(dst, src, dtype)
	return nil
}

// convertToFloat32 decodes len(dst) little-endian elements of src.
// The caller guarantees len(src) == len(dst)*dtype.Size().
func convertToFloat32(dst []float32, src []byte, dtype DType) {
	switch dtype {
	case F32:
		src = src[:len(dst)*4]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[i*4:]))
		}
	case F16:
		table := float16Table()
		src = src[:len(dst)*2]
		for i := range dst {
			dst[i] = table[binary.LittleEndian.Uint16(src[i*2:])]
		}
	case BF16:
		src = src[:len(dst)*2]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[i*2:])) << 16)
		}
	}
}
