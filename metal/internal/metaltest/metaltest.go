// Package metaltest holds the helpers shared by the tests of package metal
// (its kernels on the emulator) and of package metal/emu (the emulator
// itself): opening a cached emulator device, filling and reading buffers,
// reproducible inputs and a tolerance check. It is a regular package, in the
// style of testing/fstest, because test files cannot be shared between
// packages.
package metaltest

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/laya-metal/laya/internal/half"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// The emulator tests compile kernels with clang-19 (installed by .ci/run);
// compiled objects are cached, so only the first run pays for clang.

var devices sync.Map // key -> metal.Device

// OpenEmu returns the emulator device for opts, opened once per key and
// schedule in this test process. Without clang it fails the test on Linux
// (CI installs clang-19 and must run the emulator tests) and skips it on
// darwin, where the GPU tests run instead.
func OpenEmu(t testing.TB, opts emu.Options, key string) metal.Device {
	t.Helper()
	key += "|" + opts.Schedule.String()
	if d, ok := devices.Load(key); ok {
		return d.(metal.Device)
	}
	d, err := emu.Open(opts)
	if errors.Is(err, emu.ErrNoClang) && runtime.GOOS == "darwin" {
		// Linux CI installs clang-19 and must run these; a Mac has the GPU
		// tests (device_kernels_darwin_test.go) instead.
		t.Skipf("emulator tests need clang 16+: %v", err)
	}
	if err != nil {
		t.Fatalf("emu.Open: %v", err)
	}
	devices.Store(key, d)
	return d
}

// TestSource reads one .metal file as the only source of a device.
func TestSource(t testing.TB, file string) []metal.KernelSource {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return []metal.KernelSource{{Name: file, Text: string(b)}}
}

// F32Buffer is a new buffer holding vs as float32.
func F32Buffer(t testing.TB, d metal.Device, vs []float32) metal.Buffer {
	t.Helper()
	b, err := d.NewBuffer(4 * len(vs))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b.Bytes()[4*i:], math.Float32bits(v))
	}
	return b
}

// F16Buffer is a new buffer holding vs rounded to half.
func F16Buffer(t testing.TB, d metal.Device, vs []float32) metal.Buffer {
	t.Helper()
	b, err := d.NewBuffer(2 * len(vs))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		binary.LittleEndian.PutUint16(b.Bytes()[2*i:], half.Float32ToFloat16(v))
	}
	return b
}

// U32Buffer is a new buffer holding vs as uint32.
func U32Buffer(t testing.TB, d metal.Device, vs []int) metal.Buffer {
	t.Helper()
	b, err := d.NewBuffer(4 * len(vs))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b.Bytes()[4*i:], uint32(v))
	}
	return b
}

// U32s packs setBytes arguments as a kernel's uint fields.
func U32s(vs ...int) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

// ReadF32 reads the first n float32 of b.
func ReadF32(b metal.Buffer, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b.Bytes()[4*i:]))
	}
	return out
}

// Pseudo gives reproducible values in [lo, hi).
func Pseudo(n int, seed uint64, lo, hi float32) []float32 {
	out := make([]float32, n)
	s := seed
	for i := range out {
		s = s*6364136223846793005 + 1442695040888963407
		out[i] = lo + (hi-lo)*float32(s>>40)/float32(1<<24)
	}
	return out
}

// Run encodes one command buffer, commits it and waits; an encode error
// fails the test, the returned error is the command buffer's.
func Run(t testing.TB, d metal.Device, encode func(cb metal.CommandBuffer) error) error {
	t.Helper()
	cb, err := d.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if err := encode(cb); err != nil {
		t.Fatalf("encode: %v", err)
	}
	if err := cb.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = cb.Wait(context.Background())
	return err
}

// MaxErr is the largest |got-want| / (abs + rel·|want|) and where it is: ≤ 1
// passes.
func MaxErr(got []float32, want []float64, abs, rel float64) (float64, int) {
	worst, at := 0.0, -1
	for i := range want {
		e := math.Abs(float64(got[i])-want[i]) / (abs + rel*math.Abs(want[i]))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if e > worst {
			worst, at = e, i
		}
	}
	return worst, at
}

// WantInvalidDispatch encodes one dispatch that must be refused before any
// GPU work (metal.ErrInvalidDispatch), then finishes the command buffer
// cleanly.
func WantInvalidDispatch(t *testing.T, d metal.Device, name string, encode func(metal.CommandBuffer) error) {
	t.Helper()
	cb, err := d.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if err := encode(cb); !errors.Is(err, metal.ErrInvalidDispatch) {
		t.Errorf("%s: err = %v, want ErrInvalidDispatch", name, err)
	}
	cb.Commit()
	cb.Wait(context.Background())
}
