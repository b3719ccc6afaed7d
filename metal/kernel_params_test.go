package metal_test

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/laya-metal/laya/kernels"
	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// The Go mirrors of the kernels' parameter structs (kernel_params.go) must
// have the layout the .metal files declare: a probe kernel appended to each
// real .metal file writes sizeof and offsetof of every field of its structs,
// compiled and run by the emulator (the same clang layout rules as the Metal
// compiler for 32- and 64-bit scalars), and the numbers are compared with
// unsafe.Sizeof/Offsetof (through reflect) of the Go structs.

// mslField is one field of an MSL struct: its type and name.
type mslField struct{ typ, name string }

// mslStructFields parses the fields of struct name in src (one "type name;"
// per line, as the kernels write them).
func mslStructFields(src, name string) ([]mslField, error) {
	re := regexp.MustCompile(`(?s)struct\s+` + name + `\s*\{(.*?)\};`)
	m := re.FindStringSubmatch(src)
	if m == nil {
		return nil, fmt.Errorf("struct %s not found", name)
	}
	var fields []mslField
	for _, line := range strings.Split(m[1], "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(strings.TrimSuffix(line, ";"))
		if len(f) != 2 || !strings.HasSuffix(line, ";") {
			return nil, fmt.Errorf("struct %s: cannot read field %q (write one \"type name;\" per line)", name, line)
		}
		fields = append(fields, mslField{f[0], f[1]})
	}
	return fields, nil
}

// probeSource appends a kernel laya_param_probe to src that writes, for each
// struct in order, sizeof then the offset of each field.
func probeSource(src string, structs []reflect.Type, fields [][]mslField) string {
	var b strings.Builder
	b.WriteString(src)
	b.WriteString("\nkernel void laya_param_probe(device uint* out [[buffer(0)]], uint tid [[thread_position_in_grid]]) {\n  if (tid != 0) {\n    return;\n  }\n")
	i := 0
	for s, t := range structs {
		fmt.Fprintf(&b, "  out[%d] = uint(sizeof(%s));\n", i, t.Name())
		i++
		for _, f := range fields[s] {
			fmt.Fprintf(&b, "  out[%d] = uint(__builtin_offsetof(%s, %s));\n", i, t.Name(), f.name)
			i++
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// checkLayout compares the probe's output with the Go structs: the fields
// by name and order (msl tags), then sizes and offsets.
func checkLayout(structs []reflect.Type, fields [][]mslField, probe []uint32) error {
	var errs []string
	i := 0
	for s, t := range structs {
		if t.NumField() != len(fields[s]) {
			errs = append(errs, fmt.Sprintf("%s: Go has %d fields, MSL %d", t.Name(), t.NumField(), len(fields[s])))
		}
		if got := probe[i]; int(t.Size()) != int(got) {
			errs = append(errs, fmt.Sprintf("%s: sizeof is %d in MSL, %d in Go", t.Name(), got, t.Size()))
		}
		i++
		for j, f := range fields[s] {
			if j < t.NumField() {
				gf := t.Field(j)
				if tag := gf.Tag.Get("msl"); tag != f.name {
					errs = append(errs, fmt.Sprintf("%s field %d: MSL %s, Go %s tagged %q", t.Name(), j, f.name, gf.Name, tag))
				}
				if int(gf.Offset) != int(probe[i]) {
					errs = append(errs, fmt.Sprintf("%s.%s: offset %d in MSL, %d in Go", t.Name(), f.name, probe[i], gf.Offset))
				}
			}
			i++
		}
	}
	if errs != nil {
		return fmt.Errorf("parameter layout drift:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// runLayoutProbe compiles src (named file) with a probe for structs and
// compares the layouts.
func runLayoutProbe(t *testing.T, file, src string, structs []reflect.Type) error {
	t.Helper()
	fields := make([][]mslField, len(structs))
	n := 0
	for s, st := range structs {
		f, err := mslStructFields(src, st.Name())
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		fields[s] = f
		n += 1 + len(f)
	}
	probe := probeSource(src, structs, fields)
	d := openEmu(t, emu.Options{Sources: []KernelSource{{Name: file, Text: probe}}}, "params:"+file+fmt.Sprint(len(probe), hashString(probe)))
	p, err := d.Pipeline("laya_param_probe")
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	out, err := d.NewBuffer(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t, d, func(cb CommandBuffer) error {
		return cb.Dispatch(p, Size3{1, 1, 1}, Size3{1, 1, 1}, Arg{Index: 0, Buffer: out})
	}); err != nil {
		return err
	}
	got := make([]uint32, n)
	for i := range got {
		got[i] = binary.LittleEndian.Uint32(out.Bytes()[4*i:])
	}
	return checkLayout(structs, fields, got)
}

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// structsByFile groups paramStructs by .metal file, in order.
func structsByFile() ([]string, map[string][]reflect.Type) {
	var files []string
	by := map[string][]reflect.Type{}
	for _, ps := range paramStructs {
		if by[ps.File()] == nil {
			files = append(files, ps.File())
		}
		by[ps.File()] = append(by[ps.File()], reflect.TypeOf(ps.Zero()))
	}
	return files, by
}

func TestParamStructsMatchMetal(t *testing.T) {
	files, by := structsByFile()
	for _, file := range files {
		src, err := kernels.Source(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := runLayoutProbe(t, file, src, by[file]); err != nil {
			t.Error(err)
		}
	}
	// Every struct a kernel takes by `constant X&` is mirrored.
	mirrored := map[string]bool{}
	for _, ps := range paramStructs {
		mirrored[reflect.TypeOf(ps.Zero()).Name()] = true
	}
	names, err := fs.Glob(kernels.FS(), "*.metal")
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`constant\s+(\w+)\s*&`)
	for _, name := range names {
		src, _ := kernels.Source(name)
		for _, m := range param.FindAllStringSubmatch(src, -1) {
			switch m[1] {
			case "uint", "int", "float", "bool":
				continue
			}
			if !mirrored[m[1]] {
				t.Errorf("%s: parameter struct %s has no Go mirror in kernel_params.go (paramStructs)", name, m[1])
			}
		}
	}
}

// A deliberate drift must fail: a field widened, reordered or added on the
// MSL side is reported.
func TestParamStructDriftFails(t *testing.T) {
	src, err := kernels.Source("layernorm.metal")
	if err != nil {
		t.Fatal(err)
	}
	structs := []reflect.Type{reflect.TypeOf(LayerNormParams{})}
	for _, c := range []struct{ name, from, to string }{
		{"widened", "uint cols;", "ulong cols;"},
		{"reordered", "uint cols;\n  float eps;", "float eps;\n  uint cols;"},
		{"added", "float eps;", "float eps;\n  uint extra;"},
	} {
		drifted := strings.Replace(src, c.from, c.to, 1)
		if drifted == src {
			t.Fatalf("%s: %q not in layernorm.metal", c.name, c.from)
		}
		if err := runLayoutProbe(t, "layernorm.metal", drifted, structs); err == nil {
			t.Errorf("%s: drift not detected", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}
