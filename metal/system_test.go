package metal

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// sysTestBuffer is a Buffer of a given length for argument checks.
type sysTestBuffer struct{ n int }

func (b sysTestBuffer) Bytes() []byte { return make([]byte, b.n) }
func (b sysTestBuffer) Len() int      { return b.n }
func (b sysTestBuffer) Release()      {}

func TestSystemNoCopyLength(t *testing.T) {
	const page = 16384
	tests := []struct {
		name       string
		base       uintptr
		n, c, page int
		wantLen    int
		wantOK     bool
	}{
		{"whole pages", 0x100000, 2 * page, 2 * page, page, 2 * page, true},
		{"partial last page within cap", 0x100000, page + 1, 2 * page, page, 2 * page, true},
		{"partial last page beyond cap", 0x100000, page + 1, page + 1, page, 0, false},
		{"misaligned base", 0x100000 + 4096, page, 2 * page, page, 0, false},
		{"4 KiB aligned is not 16 KiB aligned", 0x101000, page, page, page, 0, false},
		{"4 KiB pages", 0x101000, 10, 4096, 4096, 4096, true},
		{"empty", 0x100000, 0, page, page, 0, false},
		{"page not a power of two", 0x100000, 3000, 3000, 3000, 0, false},
		{"page zero", 0x100000, 10, 10, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NoCopyLength(tt.base, tt.n, tt.c, tt.page)
			if got != tt.wantLen || ok != tt.wantOK {
				t.Errorf("NoCopyLength(%#x, %d, %d, %d) = %d, %v; want %d, %v", tt.base, tt.n, tt.c, tt.page, got, ok, tt.wantLen, tt.wantOK)
			}
		})
	}
}

func TestSystemCheckGrid(t *testing.T) {
	tests := []struct {
		name            string
		groups, threads Size3
		max             int
		wantEmpty       bool
		wantErr         string
	}{
		{"1d", Size3{10, 1, 1}, Size3{256, 1, 1}, 1024, false, ""},
		{"3d at limit", Size3{2, 3, 4}, Size3{8, 8, 16}, 1024, false, ""},
		{"over limit", Size3{1, 1, 1}, Size3{32, 32, 2}, 1024, false, "2048 threads exceeds the pipeline's limit of 1024"},
		{"register-heavy pipeline", Size3{1, 1, 1}, Size3{1024, 1, 1}, 768, false, "exceeds"},
		{"zero groups is empty", Size3{0, 1, 1}, Size3{32, 1, 1}, 1024, true, ""},
		{"zero threads", Size3{1, 1, 1}, Size3{32, 0, 1}, 1024, false, "every extent must be at least 1"},
		{"negative groups", Size3{-1, 1, 1}, Size3{32, 1, 1}, 1024, false, "negative"},
		{"overflowing product", Size3{1, 1, 1}, Size3{1 << 30, 1 << 30, 1 << 30}, 1024, false, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			empty, err := checkGrid(tt.groups, tt.threads, tt.max)
			if tt.wantErr == "" {
				if err != nil || empty != tt.wantEmpty {
					t.Fatalf("checkGrid = %v, %v; want %v, nil", empty, err, tt.wantEmpty)
				}
				return
			}
			if !errors.Is(err, ErrInvalidDispatch) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkGrid err = %v; want ErrInvalidDispatch containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSystemClassifyArg(t *testing.T) {
	buf := sysTestBuffer{64}
	tests := []struct {
		name    string
		arg     Arg
		want    argKind
		wantErr string
	}{
		{"buffer", Arg{Index: 0, Buffer: buf}, argBuffer, ""},
		{"buffer with offset", Arg{Index: 30, Buffer: buf, Offset: 60}, argBuffer, ""},
		{"offset at end", Arg{Index: 1, Buffer: buf, Offset: 64}, 0, "offset 64 outside its 64-byte buffer"},
		{"negative offset", Arg{Index: 1, Buffer: buf, Offset: -4}, 0, "offset -4"},
		{"zero-size buffer", Arg{Index: 1, Buffer: sysTestBuffer{0}}, argBuffer, ""},
		{"bytes", Arg{Index: 2, Bytes: make([]byte, 4)}, argBytes, ""},
		// Apple documents setBytes for data smaller than 4 KB.
		{"bytes at limit", Arg{Index: 2, Bytes: make([]byte, 4095)}, argBytes, ""},
		{"bytes of 4 KB", Arg{Index: 2, Bytes: make([]byte, 4096)}, 0, "4096 bytes of inline constants"},
		{"empty bytes", Arg{Index: 2, Bytes: []byte{}}, 0, "0 bytes of inline constants"},
		{"threadgroup", Arg{Index: 0, ThreadgroupBytes: 100}, argThreadgroup, ""},
		{"negative threadgroup", Arg{Index: 0, ThreadgroupBytes: -1}, 0, "negative threadgroup memory"},
		{"nothing", Arg{Index: 3}, 0, "binds nothing"},
		{"two kinds", Arg{Index: 3, Buffer: buf, Bytes: []byte{1}}, 0, "more than one"},
		{"index too large", Arg{Index: 31, Buffer: buf}, 0, "index 31 outside"},
		{"negative index", Arg{Index: -1, Buffer: buf}, 0, "index -1 outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := classifyArg(&tt.arg)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("classifyArg = %v, %v; want %v", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrInvalidDispatch) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("classifyArg err = %v; want ErrInvalidDispatch containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSystemThreadgroupLength(t *testing.T) {
	for _, tt := range []struct{ in, want int }{{0, 0}, {1, 16}, {16, 16}, {17, 32}, {4100, 4112}} {
		if got := threadgroupLength(tt.in); got != tt.want {
			t.Errorf("threadgroupLength(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestSystemMTLSizeLayout pins MTLSize to the C layout {NSUInteger width,
// height, depth}: 24 bytes, fields at 0, 8, 16. The arm64 dispatch path hands
// Metal a pointer to it.
func TestSystemMTLSizeLayout(t *testing.T) {
	var s mtlSize
	if unsafe.Sizeof(s) != 24 || unsafe.Offsetof(s.Width) != 0 || unsafe.Offsetof(s.Height) != 8 || unsafe.Offsetof(s.Depth) != 16 {
		t.Fatalf("mtlSize: size %d, offsets %d/%d/%d; want 24, 0/8/16",
			unsafe.Sizeof(s), unsafe.Offsetof(s.Width), unsafe.Offsetof(s.Height), unsafe.Offsetof(s.Depth))
	}
	got := toMTLSize(Size3{7, 5, 3})
	words := (*[3]uint64)(unsafe.Pointer(&got))
	if *words != [3]uint64{7, 5, 3} {
		t.Errorf("toMTLSize(7,5,3) in memory = %v", *words)
	}
}

func TestSystemEncodeConstants(t *testing.T) {
	vals, key, err := encodeConstants("gemm", []Constant{
		{Index: 3, Value: float32(1.5)},
		{Index: 0, Value: true},
		{Index: 2, Value: uint32(0xdeadbeef)},
		{Index: 1, Value: int32(-2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []constantValue{
		{0, mtlDataTypeBool, []byte{1}},
		{1, mtlDataTypeInt, []byte{0xfe, 0xff, 0xff, 0xff}},
		{2, mtlDataTypeUInt, []byte{0xef, 0xbe, 0xad, 0xde}},
		{3, mtlDataTypeFloat, []byte{0, 0, 0xc0, 0x3f}}, // 1.5f = 0x3fc00000
	}
	if len(vals) != len(want) {
		t.Fatalf("got %d values, want %d", len(vals), len(want))
	}
	for i := range want {
		if vals[i].index != want[i].index || vals[i].dataType != want[i].dataType || string(vals[i].bytes) != string(want[i].bytes) {
			t.Errorf("value %d = %+v, want %+v", i, vals[i], want[i])
		}
	}
	// MTLDataType numbers from MTLDataType.h.
	if mtlDataTypeFloat != 3 || mtlDataTypeInt != 29 || mtlDataTypeUInt != 33 || mtlDataTypeBool != 53 {
		t.Error("MTLDataType constants drifted from MTLDataType.h")
	}
	_, sameKey, _ := encodeConstants("gemm", []Constant{
		{Index: 0, Value: true}, {Index: 1, Value: int32(-2)}, {Index: 2, Value: uint32(0xdeadbeef)}, {Index: 3, Value: float32(1.5)},
	})
	if sameKey != key {
		t.Errorf("key depends on argument order: %q vs %q", key, sameKey)
	}
	distinct := map[string]bool{key: true}
	for _, cs := range [][]Constant{
		nil,
		{{Index: 0, Value: false}},
		{{Index: 0, Value: int32(1)}},
		{{Index: 0, Value: uint32(1)}}, // same bits as int32(1), other type
		{{Index: 1, Value: int32(1)}},
	} {
		_, k, err := encodeConstants("gemm", cs)
		if err != nil {
			t.Fatal(err)
		}
		if distinct[k] {
			t.Errorf("key %q for %v collides", k, cs)
		}
		distinct[k] = true
	}
	if _, k, _ := encodeConstants("softmax", nil); distinct[k] {
		t.Errorf("kernel name not in key %q", k)
	}

	for _, bad := range []struct {
		cs   []Constant
		want string
	}{
		{[]Constant{{Index: 0, Value: 1}}, "has Go type int"},
		{[]Constant{{Index: 0, Value: 1.0}}, "has Go type float64"},
		{[]Constant{{Index: 0, Value: true}, {Index: 0, Value: false}}, "given twice"},
		{[]Constant{{Index: -1, Value: true}}, "out of range"},
	} {
		if _, _, err := encodeConstants("k", bad.cs); !errors.Is(err, ErrPipeline) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("encodeConstants(%v) err = %v, want ErrPipeline containing %q", bad.cs, err, bad.want)
		}
	}
}

func TestSystemLanguageVersion(t *testing.T) {
	// MTLLanguageVersion3_1 = (3 << 16) + 1 = 196609 (MTLLibrary.h).
	if got := (MSLVersion{3, 1}).mtlLanguageVersion(); got != 196609 {
		t.Errorf("MSL 3.1 encodes as %d, want 196609", got)
	}
	if got := mslVersionOf(196610); got != (MSLVersion{3, 2}) {
		t.Errorf("196610 decodes as %v, want 3.2", got)
	}
	tests := []struct {
		in      MSLVersion
		want    MSLVersion
		wantErr bool
	}{
		{MSLVersion{}, MSLVersion{3, 1}, false},
		{MSLVersion{3, 2}, MSLVersion{3, 2}, false},
		{MSLVersion{4, 0}, MSLVersion{4, 0}, false},
		{MSLVersion{2, 4}, MSLVersion{}, true},
		{MSLVersion{3, 0}, MSLVersion{}, true},
	}
	for _, tt := range tests {
		got, err := SystemOptions{LanguageVersion: tt.in}.resolvedLanguageVersion()
		if tt.wantErr {
			if !errors.Is(err, ErrShaderCompile) {
				t.Errorf("version %v: err = %v, want ErrShaderCompile", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("version %v resolves to %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestSystemHostClock(t *testing.T) {
	wall := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c := hostClock{wall: wall, host: 1000}
	if got := c.at(1000.25); !got.Equal(wall.Add(250 * time.Millisecond)) {
		t.Errorf("at(1000.25) = %v", got)
	}
	if got := c.at(999); !got.Equal(wall.Add(-time.Second)) {
		t.Errorf("at(999) = %v", got)
	}
	if got := c.at(0); !got.IsZero() {
		t.Errorf("at(0) = %v, want zero time", got)
	}
	tm := Timing{GPUStart: c.at(1000.5), GPUEnd: c.at(1000.5015)}
	if d := tm.GPUTime(); d < 1499*time.Microsecond || d > 1501*time.Microsecond {
		t.Errorf("GPUTime = %v, want 1.5ms", d)
	}
}

func TestSystemOpenOnOtherOS(t *testing.T) {
	if _, err := OpenSystemDefault(); err == nil {
		t.Skip("a Metal device opened: this is a Mac; TestDevice covers it")
	} else if isDarwin {
		t.Skipf("on darwin the error is a real one: %v", err)
	} else if !errors.Is(err, ErrNoMetal) {
		t.Fatalf("OpenSystemDefault err = %v, want ErrNoMetal", err)
	}
}

func TestSystemSourceMap(t *testing.T) {
	files, err := SystemOptions{}.sourceMap()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kernels/elementwise.metal", "kernels/softmax.metal", "kernels/gemm.metal"} {
		if !strings.Contains(files[want], "kernel void") {
			t.Errorf("default sources lack %s", want)
		}
	}
	// The embedded kernels must be ready for the Metal runtime compiler:
	// every quoted include resolvable among them.
	units, err := prepareUnits(files)
	if err != nil {
		t.Fatalf("package kernels is not compilable by newLibraryWithSource: %v", err)
	}
	if len(units) == 0 {
		t.Fatal("no compile units from package kernels")
	}
	_, err = SystemOptions{Sources: []KernelSource{{Name: "a.metal"}, {Name: "a.metal"}}}.sourceMap()
	if !errors.Is(err, ErrShaderCompile) || !strings.Contains(err.Error(), `"a.metal" given twice`) {
		t.Errorf("duplicate source: err = %v", err)
	}
}
