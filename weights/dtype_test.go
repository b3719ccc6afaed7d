package weights

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestFloat16RoundTripAndBulk(t *testing.T) {
	raw := make([]byte, 2*65536)
	for i := range 65536 {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(i))
	}
	bulk := make([]float32, 65536)
	convertToFloat32(bulk, raw, F16)
	for i := range 65536 {
		h := uint16(i)
		f := Float16ToFloat32(h)
		if math.Float32bits(bulk[i]) != math.Float32bits(f) {
			t.Fatalf("bulk[%#04x] = %#08x, scalar %#08x", h, math.Float32bits(bulk[i]), math.Float32bits(f))
		}
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := Float32ToFloat16(f); back != h {
			t.Fatalf("round trip %#04x → %v → %#04x", h, f, back)
		}
	}
}

func TestTensorFloat32AllDTypes(t *testing.T) {
	values := []float32{0, 1, -2.5, 0.0009765625, 65504}
	for _, dtype := range []DType{F32, F16, BF16} {
		tensor := &Tensor{Name: "x", DType: dtype, Shape: []int{len(values)}, Raw: EncodeFloat32(nil, values, dtype)}
		got := tensor.Float32()
		into := make([]float32, len(values))
		if err := tensor.Float32Into(into); err != nil {
			t.Fatal(err)
		}
		for i, v := range values {
			want := v
			if dtype == BF16 {
				want = BFloat16ToFloat32(Float32ToBFloat16(v))
			}
			if got[i] != want || into[i] != want {
				t.Errorf("%v: element %d = %v / %v, want %v", dtype, i, got[i], into[i], want)
			}
		}
		if err := tensor.Float32Into(make([]float32, 2)); err == nil {
			t.Errorf("%v: Float32Into with a short destination succeeded", dtype)
		}
	}
}

func BenchmarkFloat16ToFloat32Bulk(b *testing.B) {
	const n = 1 << 20
	raw := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(i*7919))
	}
	dst := make([]float32, n)
	b.SetBytes(2 * n)
	for b.Loop() {
		convertToFloat32(dst, raw, F16)
	}
}

func BenchmarkBFloat16ToFloat32Bulk(b *testing.B) {
	const n = 1 << 20
	raw := make([]byte, 2*n)
	dst := make([]float32, n)
	b.SetBytes(2 * n)
	for b.Loop() {
		convertToFloat32(dst, raw, BF16)
	}
}
