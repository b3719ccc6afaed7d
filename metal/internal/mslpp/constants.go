package mslpp

import (
	"fmt"
	"math"

	"github.com/laya-metal/laya/internal/half"
)

// intRanges are the MSL integer types a function constant may have, with
// their ranges.
var intRanges = map[string][2]float64{
	"char": {math.MinInt8, math.MaxInt8}, "int8_t": {math.MinInt8, math.MaxInt8},
	"uchar": {0, math.MaxUint8}, "uint8_t": {0, math.MaxUint8},
	"short": {math.MinInt16, math.MaxInt16}, "int16_t": {math.MinInt16, math.MaxInt16},
	"ushort": {0, math.MaxUint16}, "uint16_t": {0, math.MaxUint16},
	"int": {math.MinInt32, math.MaxInt32}, "int32_t": {math.MinInt32, math.MaxInt32},
	"uint": {0, math.MaxUint32}, "uint32_t": {0, math.MaxUint32}, "unsigned int": {0, math.MaxUint32},
	"long": {math.MinInt64, math.MaxInt64}, "int64_t": {math.MinInt64, math.MaxInt64},
	"ulong": {0, math.MaxUint64}, "uint64_t": {0, math.MaxUint64}, "size_t": {0, math.MaxUint64},
}

// ConstantBits encodes v in the function constant's declared MSL type,
// little-endian in the low bytes (the emulator's binder copies them; the CUDA
// device writes them as a literal).
func ConstantBits(typ string, v any) (uint64, error) {
	var i int64
	var u uint64
	var f float64
	isInt, isUint := false, false
	switch x := v.(type) {
	case bool:
		if typ != "bool" {
			return 0, fmt.Errorf("bool value for a %s constant", typ)
		}
		if x {
			return 1, nil
		}
		return 0, nil
	case int:
		i, isInt = int64(x), true
	case int8:
		i, isInt = int64(x), true
	case int16:
		i, isInt = int64(x), true
	case int32:
		i, isInt = int64(x), true
	case int64:
		i, isInt = x, true
	case uint8:
		i, isInt = int64(x), true
	case uint16:
		i, isInt = int64(x), true
	case uint32:
		i, isInt = int64(x), true
	case uint64:
		u, isUint = x, true
	case float32:
		f = float64(x)
	case float64:
		f = x
	default:
		return 0, fmt.Errorf("value %v of type %T (want bool, an integer or a float)", v, v)
	}
	if r, ok := intRanges[typ]; ok {
		switch {
		case isUint:
			if float64(u) > r[1] {
				return 0, fmt.Errorf("%v does not fit %s", v, typ)
			}
			return u, nil
		case isInt:
			if float64(i) < r[0] || float64(i) > r[1] {
				return 0, fmt.Errorf("%v does not fit %s", v, typ)
			}
			return uint64(i), nil // two's complement; the binder copies the low bytes
		}
		return 0, fmt.Errorf("%T value %v for a %s constant", v, v, typ)
	}
	if isInt {
		f = float64(i)
	} else if isUint {
		f = float64(u)
	}
	switch typ {
	case "float":
		return uint64(math.Float32bits(float32(f))), nil
	case "half":
		return uint64(half.Float32ToFloat16(float32(f))), nil
	case "bfloat":
		return uint64(half.Float32ToBFloat16(float32(f))), nil
	case "bool":
		return 0, fmt.Errorf("%T value for a bool constant", v)
	}
	return 0, fmt.Errorf("constants of type %s are not supported (bool, integer types, float, half, bfloat)", typ)
}
