//go:build linux || darwin

package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/cpu"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

// Weights of an mmap'd checkpoint are read in place: backend.Loader hands
// the mapping to UploadMapped, which wraps it once; every float32 tensor
// and fp16 matrix then lives at its file offset inside that one buffer,
// and only fp16 vectors (widened) and bf16 are copied.
func TestLoaderWrapsMappingInPlace(t *testing.T) {
	runLoaderWrapsMapping(t, func(t *testing.T) *Backend { return New("metal-emu", emulator(t).Device()) }, nil)
}

// runLoaderWrapsMapping loads the tiny checkpoints through backend.Loader
// onto a backend from open and checks which weights alias the file mapping
// (float32 tensors and fp16 matrices at aligned offsets) and which are
// copies, that every in-place weight lives in one buffer wrapping the whole
// mapping, and that the backend's MappingReport agrees with no fallback.
// hostAddr, when set, gives a buffer's host address as the device itself
// reports it (Metal's contents), so the aliasing is checked through the
// device and not only through the Go slice the buffer keeps.
func runLoaderWrapsMapping(t *testing.T, open func(*testing.T) *Backend, hostAddr func(metal.Buffer) unsafe.Pointer) {
	for _, name := range []string{"tiny-en", "tiny-ml"} {
		t.Run(name, func(t *testing.T) {
			be := open(t)
			ckpt := oracletest.LoadCheckpoint(t, name)
			// The backend reads the mapping: it is closed first.
			t.Cleanup(func() { be.Close() })
			mapping := ckpt.Weights.Mapping()
			if mapping == nil {
				t.Fatal("checkpoint is not mapped")
			}
			loader := backend.NewLoader(be, ckpt)
			wrapped := map[metal.Buffer]bool{}
			inPlace, copied := 0, 0
			for _, spec := range ckpt.Expected() {
				src := ckpt.Tensor(spec.Name)
				var got backend.Tensor
				switch len(spec.Shape) {
				case 1:
					got = loader.Vector(spec.Name, spec.Shape[0])
				case 2:
					got = loader.Matrix(spec.Name, spec.Shape[0], spec.Shape[1])
				default:
					continue
				}
				if got == nil {
					t.Fatalf("%s: %v", spec.Name, loader.Err())
				}
				mt := got.(*tensor)
				host := mt.buf.Bytes()
				aliases := mt.off < len(host) && unsafe.Pointer(&host[mt.off]) == unsafe.Pointer(&src.Raw[0])
				matrix := len(spec.Shape) == 2 && spec.Shape[0] > 1
				wantInPlace := int(src.Offset)%src.DType.Size() == 0 &&
					(src.DType == weights.F32 || src.DType == weights.F16 && matrix)
				if aliases != wantInPlace {
					t.Errorf("%s (%s %v): aliases the mapping = %v, want %v", spec.Name, src.DType, spec.Shape, aliases, wantInPlace)
				}
				if aliases {
					inPlace++
					wrapped[mt.buf] = true
				} else {
					copied++
					// Copies hold float32: fp16 and bf16 vectors widened.
					want := weights.EncodeFloat32(nil, src.Float32(), weights.F32)
					if mt.elem == metal.ElemF16 {
						want = src.Raw
					}
					if !bytes.Equal(host[:len(want)], want) {
						t.Errorf("%s: the copy differs from the file's values", spec.Name)
					}
				}
			}
			if inPlace == 0 || len(wrapped) != 1 {
				t.Errorf("%d tensors in place in %d wrapped buffers, want some in exactly 1", inPlace, len(wrapped))
			}
			for buf := range wrapped {
				if unsafe.Pointer(&buf.Bytes()[0]) != unsafe.Pointer(&mapping[0]) || buf.Len() != len(mapping) {
					t.Errorf("the wrapped buffer is not the whole mapping")
				}
				if hostAddr != nil {
					if got := hostAddr(buf); got != unsafe.Pointer(&mapping[0]) {
						t.Errorf("the device reports the wrapped buffer at %p, the mapping is at %p: a copy", got, &mapping[0])
					}
				}
			}
			rep := be.Mapping()
			if rep.FallbackBytes != 0 || rep.Fallback != "" || rep.InPlaceBytes == 0 {
				t.Errorf("%v; want weights in place and no fallback", rep)
			}
			t.Logf("%d weights in place, %d copied; %v", inPlace, copied, rep)
		})
	}
}

// limitedDevice refuses buffers longer than max, as Metal does past
// maxBufferLength.
type limitedDevice struct {
	metal.Device
	max     int
	wrapped []int // lengths of the buffers it wrapped
}

var errTooLong = errors.New("test device: buffer longer than its limit")

func (d *limitedDevice) NewBufferWithBytes(data []byte) (metal.Buffer, error) {
	if len(data) > d.max {
		return nil, errTooLong
	}
	d.wrapped = append(d.wrapped, len(data))
	return d.Device.NewBufferWithBytes(data)
}

// writeWeights writes matrices of random values into a safetensors file
// and maps it.
func writeWeights(t testing.TB, headers []weights.TensorHeader) *weights.Safetensors {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = weights.WriteSafetensors(f, nil, headers, func(i int, w io.Writer) error {
		h := headers[i]
		_, err := w.Write(weights.EncodeFloat32(nil, random(h.Len(), uint64(30+i), -0.5, 0.5), h.DType))
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	st, err := weights.OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if st.Mapping() == nil {
		t.Fatal("file is not mapped")
	}
	return st
}

// A mapping larger than the device's buffer limit is wrapped in several
// ranges, each within the limit, and every weight still multiplies as its
// copy does on the CPU backend.
func TestUploadMappedSplitsLargeMapping(t *testing.T) {
	page := os.Getpagesize()
	var headers []weights.TensorHeader
	for i, dt := range []weights.DType{weights.F32, weights.F16, weights.F32, weights.F16, weights.F32} {
		// Each a bit over a page, so that tensors straddle page bounds.
		cols := 40
		rows := page/(cols*dt.Size()) + 3 + i
		headers = append(headers, weights.TensorHeader{Name: fmt.Sprintf("w%d", i), DType: dt, Shape: []int{rows, cols}})
	}
	st := writeWeights(t, headers)
	mapping := st.Mapping()
	dev := &limitedDevice{Device: emulator(t).Device(), max: 2 * page}
	if len(mapping) <= dev.max {
		t.Fatalf("mapping of %d bytes fits the %d-byte limit; the test needs more tensors", len(mapping), dev.max)
	}
	mb := New("metal-emu", dev)
	defer mb.Close()
	ref := cpu.New()
	defer ref.Close()
	ctx := context.Background()
	for _, h := range headers {
		src, _ := st.Tensor(h.Name)
		rows, cols := h.Shape[0], h.Shape[1]
		var outs [2][]float32
		for i, be := range []backend.Backend{ref, mb} {
			var w backend.Tensor
			var err error
			if mu, ok := be.(backend.MappedUploader); ok {
				w, err = mu.UploadMapped(h.Name, h.DType, rows, cols, mapping, int(src.Offset))
				// The cpu backend maps too (its views have no offset field).
				if mt, isMetal := w.(*tensor); err == nil && isMetal && mt.off == 0 && &mt.buf.Bytes()[0] != &mapping[src.Offset] {
					t.Errorf("%s was copied, not wrapped", h.Name)
				}
			} else {
				w, err = be.Upload(h.Name, h.DType, rows, cols, src.Raw)
			}
			if err != nil {
				t.Fatalf("%s on %s: %v", h.Name, be.Name(), err)
			}
			s := be.NewStream()
			dst := s.New(3, rows)
			s.Linear(dst, s.FromHost(3, cols, random(3*cols, 7, -1, 1)), w, nil, backend.GELU)
			outs[i] = make([]float32, 3*rows)
			if err := s.Read(ctx, dst, outs[i]); err != nil {
				t.Fatalf("%s on %s: %v", h.Name, be.Name(), err)
			}
			s.Close()
		}
		for j, want := range outs[0] {
			if d := math.Abs(float64(outs[1][j]-want)) / (1 + math.Abs(float64(want))); d > 2e-6 {
				t.Fatalf("%s: element %d: metal %v, cpu %v", h.Name, j, outs[1][j], want)
			}
		}
	}
	if len(dev.wrapped) < 2 {
		t.Errorf("wrapped %v, want several ranges", dev.wrapped)
	}
	for _, n := range dev.wrapped {
		if n > dev.max || n%page != 0 {
			t.Errorf("wrapped a range of %d bytes (limit %d, page %d)", n, dev.max, page)
		}
	}
}

// Offsets a kernel cannot bind (not a multiple of the element size) take
// the copying path, with the same values.
func TestUploadMappedCopies(t *testing.T) {
	st := writeWeights(t, []weights.TensorHeader{{Name: "w", DType: weights.F32, Shape: []int{8, 8}}})
	mapping := st.Mapping()
	src, _ := st.Tensor("w")
	mb := New("metal-emu", emulator(t).Device())
	defer mb.Close()
	cases := []struct {
		name       string
		rows, cols int
		offset     int
	}{
		{"misaligned matrix", 4, 8, int(src.Offset) + 2},
		{"misaligned vector", 1, 16, int(src.Offset) + 2},
	}
	for _, c := range cases {
		got, err := mb.UploadMapped(c.name, weights.F32, c.rows, c.cols, mapping, c.offset)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mt := got.(*tensor)
		want := mapping[c.offset : c.offset+4*c.rows*c.cols]
		if mt.off != 0 || &mt.buf.Bytes()[0] == &want[0] || !bytes.Equal(mt.buf.Bytes()[:len(want)], want) {
			t.Errorf("%s: want a copy of the bytes at %d", c.name, c.offset)
		}
	}
	if _, err := mb.UploadMapped("past the end", weights.F32, 8, 8, mapping, len(mapping)-8); !errors.Is(err, backend.ErrShape) {
		t.Errorf("tensor past the mapping: err = %v, want ErrShape", err)
	}
}

// The embedding tables (float32 and fp16) and float32 LayerNorm weights
// and biases are bound in place by the gather and LayerNorm: the backend's
// tensor aliases the file mapping and stays without a copy after use, and
// the results equal the CPU backend's on a copy of the same bytes. fp16
// norm weights widen to float32 copies.
func TestGatherAndLayerNormReadMappingInPlace(t *testing.T) {
	const cols = 40
	headers := []weights.TensorHeader{
		{Name: "tok32", DType: weights.F32, Shape: []int{37, cols}},
		{Name: "tok16", DType: weights.F16, Shape: []int{53, cols}},
		{Name: "norm32", DType: weights.F32, Shape: []int{cols}},
		{Name: "bias32", DType: weights.F32, Shape: []int{cols}},
		{Name: "norm16", DType: weights.F16, Shape: []int{cols}},
		{Name: "bias16", DType: weights.F16, Shape: []int{cols}},
	}
	st := writeWeights(t, headers)
	mapping := st.Mapping()
	mb := New("metal-emu", emulator(t).Device())
	defer mb.Close()
	ref := cpu.New()
	defer ref.Close()
	mapped, copied := map[string]*tensor{}, map[string]backend.Tensor{}
	for _, h := range headers {
		src, _ := st.Tensor(h.Name)
		rows := 1
		if len(h.Shape) == 2 {
			rows = h.Shape[0]
		}
		if int(src.Offset)%h.DType.Size() != 0 {
			t.Fatalf("%s at offset %d: the writer did not align it", h.Name, src.Offset)
		}
		got, err := mb.UploadMapped(h.Name, h.DType, rows, cols, mapping, int(src.Offset))
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		mt := got.(*tensor)
		host := mt.buf.Bytes()
		aliases := mt.off < len(host) && unsafe.Pointer(&host[mt.off]) == unsafe.Pointer(&mapping[src.Offset])
		if want := h.DType == weights.F32 || rows > 1; aliases != want {
			t.Errorf("%s (%s, %d×%d): aliases the mapping = %v, want %v", h.Name, h.DType, rows, cols, aliases, want)
		}
		if !aliases && (mt.elem != metal.ElemF32 || !bytes.Equal(host[:4*cols], weights.EncodeFloat32(nil, src.Float32(), weights.F32))) {
			t.Errorf("%s: the copy is not the file's values widened to float32", h.Name)
		}
		mapped[h.Name] = mt
		if copied[h.Name], err = ref.Upload(h.Name, h.DType, rows, cols, src.Raw); err != nil {
			t.Fatal(err)
		}
	}
	if mapped["tok32"].off == 0 && mapped["tok16"].off == 0 {
		t.Fatal("both tables start their wrapped buffer: the test would not see an offset dropped")
	}

	const rows = 6
	x := random(rows*cols, 5, -2, 2)
	index := []int32{36, 0, 17, 17, 5, 1}
	index16 := []int32{52, 3, 0, 40, 40, 9}
	type result struct {
		name string
		out  []float32
		tol  float64 // relative; 0: bit for bit
	}
	runOps := func(be backend.Backend, w func(string) backend.Tensor) []result {
		s := be.NewStream()
		defer s.Close()
		in := s.FromHost(rows, cols, x)
		outs := []result{{name: "gather f32"}, {name: "gather f16"},
			{name: "layerNorm f32", tol: 1e-6}, {name: "layerNorm f32 no bias", tol: 1e-6}, {name: "layerNorm f16", tol: 1e-6}}
		dsts := make([]backend.Tensor, len(outs))
		for i := range dsts {
			dsts[i] = s.New(rows, cols)
		}
		s.Gather(dsts[0], w("tok32"), index)
		s.Gather(dsts[1], w("tok16"), index16)
		s.LayerNorm(dsts[2], in, w("norm32"), w("bias32"), 1e-5)
		s.LayerNorm(dsts[3], in, w("norm32"), nil, 1e-5)
		s.LayerNorm(dsts[4], in, w("norm16"), w("bias16"), 1e-5)
		for i := range outs {
			outs[i].out = make([]float32, rows*cols)
			if err := s.Read(context.Background(), dsts[i], outs[i].out); err != nil {
				t.Fatalf("%s on %s: %v", outs[i].name, be.Name(), err)
			}
		}
		return outs
	}
	want := runOps(ref, func(name string) backend.Tensor { return copied[name] })
	got := runOps(mb, func(name string) backend.Tensor { return mapped[name] })
	for i, w := range want {
		for j, v := range w.out {
			if d := math.Abs(float64(got[i].out[j]-v)) / (1 + math.Abs(float64(v))); d > w.tol {
				t.Fatalf("%s: element %d: metal %v, cpu %v", w.name, j, got[i].out[j], v)
			}
		}
	}
	for name, mt := range mapped {
		if mt.denseBuf != nil || (mt.elem == metal.ElemF32 && mt.wide != nil) {
			t.Errorf("%s: copied on use", name)
		}
	}
}

// DeviceTime grows with every finished command buffer; with profiling on,
// each operation is timed by name, and the GeGLU after a Linear shows up
// fused into it.
func TestBackendTimeAndProfile(t *testing.T) {
	mb := New("metal-emu", emulator(t).Device())
	defer mb.Close()
	w, err := upload(mb, "wi", backend.F32, 64, 16, 1, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	wo, err := upload(mb, "wo", backend.F32, 16, 32, 2, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := func() []float32 {
		s := mb.NewStream()
		defer s.Close()
		x := s.FromHost(5, 16, random(80, 3, -1, 1))
		up, act, out := s.New(5, 64), s.New(5, 32), s.New(5, 16)
		s.Linear(up, x, w, nil, backend.Identity)
		s.GeGLU(act, up)
		s.Linear(out, act, wo, nil, backend.GELU)
		got := make([]float32, 80)
		if err := s.Read(context.Background(), out, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	before := mb.DeviceTime()
	plain := run()
	if mb.DeviceTime() <= before {
		t.Errorf("DeviceTime did not grow: %v, then %v", before, mb.DeviceTime())
	}
	mb.SetProfiling(true)
	profiled := run()
	mb.SetProfiling(false)
	for i := range plain {
		if plain[i] != profiled[i] {
			t.Fatalf("element %d: %v unprofiled, %v profiled", i, plain[i], profiled[i])
		}
	}
	got := map[string]int{}
	var names []string
	for _, ot := range mb.OpTimes() {
		got[ot.Op] = ot.Count
		names = append(names, ot.Op)
		if ot.Time <= 0 {
			t.Errorf("%s: time %v", ot.Op, ot.Time)
		}
	}
	if got["linear+geglu"] != 1 || got["linear+gelu"] != 1 || got["geglu"] != 0 || len(got) != 2 {
		t.Errorf("profiled ops %s, want linear+geglu and linear+gelu once each", strings.Join(names, ", "))
	}
}

// BenchmarkUploadWeights loads 64 MB of float32 matrices from a mapped file
// by copy (Upload) and in place (UploadMapped): the in-place load does no
// per-byte work, whatever the size.
func BenchmarkUploadWeights(b *testing.B) {
	const n, rows, cols = 16, 1024, 1024
	var headers []weights.TensorHeader
	for i := range n {
		headers = append(headers, weights.TensorHeader{Name: fmt.Sprintf("w%d", i), DType: weights.F32, Shape: []int{rows, cols}})
	}
	st := writeWeights(b, headers)
	mapping := st.Mapping()
	dev := emulator(b).Device()
	for _, mapped := range []bool{false, true} {
		b.Run(fmt.Sprintf("mapped=%v", mapped), func(b *testing.B) {
			b.SetBytes(n * rows * cols * 4)
			for b.Loop() {
				mb := New("metal-emu", dev)
				for _, h := range headers {
					src, _ := st.Tensor(h.Name)
					var err error
					if mapped {
						_, err = mb.UploadMapped(h.Name, h.DType, rows, cols, mapping, int(src.Offset))
					} else {
						_, err = mb.Upload(h.Name, h.DType, rows, cols, src.Raw)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				mb.Close()
			}
		})
	}
}

// mirroringDevice "wraps" host memory by copying it, as a discrete GPU's
// device does (metal-cuda keeps weights in device memory by default).
type mirroringDevice struct{ metal.Device }

func (d mirroringDevice) NewBufferNoCopy(data []byte) (metal.Buffer, error) {
	return copyingDevice(d).NewBufferWithBytes(data)
}

// A backend shared by checkpoints in turn must not read a new checkpoint
// through the buffers made of an old one mapped at the same address: the
// cache is keyed on address and length, and ForgetMapping (which
// laya.Agent.Close calls on a borrowed backend) drops what was made of a
// mapping, so the next upload at that address reads the new bytes.
func TestForgetMappingDropsStaleCopies(t *testing.T) {
	page := os.Getpagesize()
	rows, cols := 3, page/4 // a matrix of three pages
	store := make([]byte, 5*page)
	base := int((uintptr(page) - uintptr(unsafe.Pointer(&store[0]))%uintptr(page)) % uintptr(page))
	mapping := store[base : base+3*page]
	fill := func(seed uint64) []byte {
		raw := weights.EncodeFloat32(nil, random(rows*cols, seed, -1, 1), weights.F32)
		copy(mapping, raw)
		return raw
	}
	be := New("metal-emu", mirroringDevice{emulator(t).Device()})
	defer be.Close()
	read := func(m []byte) []byte {
		t.Helper()
		w, err := be.UploadMapped("w", weights.F32, rows, cols, m, 0)
		if err != nil {
			t.Fatal(err)
		}
		mt := w.(*tensor)
		return mt.buf.Bytes()[mt.off : mt.off+rows*cols*4]
	}
	first := fill(1)
	if !bytes.Equal(read(mapping), first) {
		t.Fatal("the first upload does not hold the mapping's bytes")
	}
	buffers := len(be.buffers)

	// The same address and length, new contents: only ForgetMapping tells.
	second := fill(2)
	be.ForgetMapping(mapping)
	if len(be.buffers) != buffers-1 {
		t.Errorf("ForgetMapping kept the wrapping buffer: %d buffers, want %d", len(be.buffers), buffers-1)
	}
	if !bytes.Equal(read(mapping), second) {
		t.Error("after ForgetMapping the upload still reads the old checkpoint's copy")
	}

	// The same address, another length: a different mapping without asking.
	third := fill(3)
	if !bytes.Equal(read(store[base:base+3*page+page]), third) {
		t.Error("a mapping of another length at the same address read the old copy")
	}
	be.ForgetMapping(store[base : base+page]) // never uploaded: nothing to do
}
