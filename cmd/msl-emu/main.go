// Command msl-emu runs one Metal compute kernel by hand on the CPU with the
// MSL emulator (package metal), like dispatchThreadgroups on a Mac, and lists
// what a .metal file's kernels expect to be bound.
//
// Run "msl-emu -h" for the flags and a full example. Exit status: 0 when the
// kernel ran, 1 for a compile error or a kernel fault the emulator caught, 2
// for a usage error.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/internal/half"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

const usageText = `msl-emu runs one Metal kernel on the CPU with the MSL emulator.

Usage:
  msl-emu run FILE.metal --kernel NAME --groups X,Y,Z --threadgroup X,Y,Z [flags]
  msl-emu list FILE.metal     print each kernel and the arguments it binds

Flags of run:
  --kernel NAME          kernel to run (a [[host_name]] for template instances)
  --groups X,Y,Z         threadgroups per grid (Y and Z default to 1)
  --threadgroup X,Y,Z    threads per threadgroup (at most 1024 in all)
  --buffer I=SPEC        [[buffer(I)]] device buffer; repeatable. SPEC is
                           @FILE            raw little-endian bytes of a file
                           zeros:N          N zero bytes
                           f32:1,2.5,-3     values of one type
                           u32:4,f32:0.5    a sequence: a TYPE: prefix switches
                                            the type of the values after it
                         types: f32 f16 bf16 i8 u8 i16 u16 i32 u32 i64 u64,
                         and pad:N for N zero bytes (struct padding)
  --bytes I=SPEC         [[buffer(I)]] data passed by value (setBytes, for
                         constant T& / constant Params& parameters), same
                         SPEC forms, e.g. --bytes 2=u32:4,f32:0.5
  --threadgroup-mem I=N  [[threadgroup(I)]] argument of N bytes
  --constant C=[T:]V     function constant C (its index, or its name in the
                         source) set to V: true/false, an integer or a float;
                         T (bool, int, uint, short, ushort, char, uchar, long,
                         ulong, float, half, bfloat) is optional and checked
                         against the declaration
  --out I=FILE           write buffer I to FILE after the run (raw bytes;
                         FILE "-" prints it as float32 values)
  --dump I=TYPE          print buffer I after the run as text, one value per
                         element: f32, f16, bf16, i32, u32, i16, u16, i8, u8,
                         i64, u64 or hex
  -D NAME[=VALUE]        preprocessor macro, as the host's
                         MTLCompileOptions.preprocessorMacros; repeatable
  --schedule S           forward (default), reverse or shuffle:SEED
  --asan                 build with AddressSanitizer: out-of-bounds device
                         accesses are reported with the .metal line
  --clang PATH           compiler (default clang-19, then clang)

Exit status: 0 when the kernel ran; 1 for a compile error or a kernel bug the
emulator caught (divergent barrier, return before a barrier, threadgroup
memory over 32 KiB, out-of-bounds access under --asan); 2 for a usage error.

Example: add two vectors of 4 floats with kernels/elementwise.metal:

  msl-emu run kernels/elementwise.metal --kernel vector_add \
      --groups 1 --threadgroup 32 \
      --buffer 0=f32:1,2,3,4 --buffer 1=f32:10,20,30,40 --buffer 2=zeros:16 \
      --bytes 3=u32:4 --dump 2=f32
  prints: 11 22 33 44
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and maps it to the documented exit status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "msl-emu:", err)
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// usageError is a mistake in the command line (exit status 2), as opposed
// to a problem of the kernel (1).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

var defineRe = regexp.MustCompile(`^[A-Za-z_]\w*(=.*)?$`)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// run is the whole command, callable from tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usageText)
		if len(args) == 0 {
			return usagef("missing command: run or list")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "run":
		return runKernel(ctx, args[1:], stdout, stderr)
	case "list":
		return listKernels(args[1:], stdout)
	}
	return usagef("unknown command %q (want run or list; -h for help)", args[0])
}

func readSource(file string) ([]metal.KernelSource, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, usageError{err}
	}
	return []metal.KernelSource{{Name: file, Text: string(text)}}, nil
}

func listKernels(args []string, stdout io.Writer) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return usagef("list needs one FILE.metal")
	}
	srcs, err := readSource(args[0])
	if err != nil {
		return err
	}
	infos, err := emu.ParseKernels(srcs)
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		fmt.Fprintf(stdout, "%s: no kernels\n", args[0])
		return nil
	}
	for _, k := range infos {
		fmt.Fprintf(stdout, "kernel %s (%s:%d)", k.Name, k.File, k.Line)
		if k.MaxThreadsPerThreadgroup > 0 {
			fmt.Fprintf(stdout, " max %d threads per threadgroup", k.MaxThreadsPerThreadgroup)
		}
		if k.Condition != "" {
			// The last directive names the branch; -D may select it.
			ds := strings.Split(strings.TrimSpace(k.Condition), "\n")
			fmt.Fprintf(stdout, " only under %s", strings.Join(ds, " / "))
		}
		fmt.Fprintln(stdout)
		for _, p := range k.Params {
			var how string
			switch {
			case p.Index < 0:
				how = "builtin"
			case strings.HasPrefix(p.Binding, "threadgroup"):
				how = fmt.Sprintf("--threadgroup-mem %d=BYTES", p.Index)
			case p.ByValue:
				how = fmt.Sprintf("--bytes %d=SPEC", p.Index)
			default:
				how = fmt.Sprintf("--buffer %d=SPEC", p.Index)
			}
			opt := ""
			if p.FunctionConstant != "" {
				opt = " (only when function constant " + p.FunctionConstant + " is true)"
			}
			fmt.Fprintf(stdout, "  [[%s]] %s %s: %s%s\n", p.Binding, p.Type, p.Name, how, opt)
		}
		for _, c := range k.Constants {
			fmt.Fprintf(stdout, "  [[function_constant(%d)]] %s %s: --constant %d=VALUE\n", c.Index, c.Type, c.Name, c.Index)
		}
	}
	return nil
}

func runKernel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("msl-emu run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	var bufs, bytesArgs, tgMem, consts, outs, dumps multi
	kernel := fs.String("kernel", "", "")
	groups := fs.String("groups", "1", "")
	threads := fs.String("threadgroup", "", "")
	schedule := fs.String("schedule", "forward", "")
	asan := fs.Bool("asan", false, "")
	clang := fs.String("clang", "", "")
	fs.Var(&bufs, "buffer", "")
	fs.Var(&bytesArgs, "bytes", "")
	fs.Var(&tgMem, "threadgroup-mem", "")
	fs.Var(&consts, "constant", "")
	fs.Var(&outs, "out", "")
	fs.Var(&dumps, "dump", "")
	var defines multi
	fs.Var(&defines, "D", "")
	// The file may come before or after the flags.
	var file string
	rest := args
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		file, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	if file == "" || *kernel == "" || *threads == "" {
		return usagef("run needs FILE.metal, --kernel and --threadgroup (-h for help)")
	}
	gsize, err := parseSize(*groups)
	if err != nil {
		return usagef("--groups: %w", err)
	}
	tsize, err := parseSize(*threads)
	if err != nil {
		return usagef("--threadgroup: %w", err)
	}
	sched, err := emu.ParseSchedule(*schedule)
	if err != nil {
		return usageError{err}
	}
	srcs, err := readSource(file)
	if err != nil {
		return err
	}

	// Everything the command line says is checked before compiling.
	infos, err := emu.ParseKernels(srcs)
	if err != nil {
		return err
	}
	var info *emu.KernelInfo
	for i := range infos {
		if infos[i].Name == *kernel {
			info = &infos[i]
		}
	}
	if info == nil {
		var names []string
		for _, k := range infos {
			names = append(names, k.Name)
		}
		return usagef("%s: unknown kernel %q (kernels: %s)", file, *kernel, strings.Join(names, ", "))
	}
	var constants []metal.Constant
	for _, c := range consts {
		key, spec, ok := strings.Cut(c, "=")
		if !ok {
			return usagef("--constant %s: want INDEX=VALUE or NAME=VALUE", c)
		}
		idx, err := constantIndex(key, info.Constants)
		if err != nil {
			return usagef("--constant %s: %w", c, err)
		}
		v, err := parseConstant(spec)
		if err != nil {
			return usagef("--constant %s: %w", c, err)
		}
		if typ, _, ok := strings.Cut(spec, ":"); ok {
			for _, d := range info.Constants {
				if d.Index == idx && canonicalType(d.Type) != canonicalType(typ) {
					return usagef("--constant %s: %s is declared %s %s", c, d.Name, d.Type, d.Name)
				}
			}
		}
		constants = append(constants, metal.Constant{Index: idx, Value: v})
	}
	type bufArg struct {
		idx  int
		data []byte
	}
	var bufData, byteData []bufArg
	for _, b := range bufs {
		idx, spec, err := splitIndex(b)
		if err != nil {
			return usagef("--buffer %s: %w", b, err)
		}
		data, err := parseData(spec)
		if err != nil {
			return usagef("--buffer %s: %w", b, err)
		}
		bufData = append(bufData, bufArg{idx, data})
	}
	for _, b := range bytesArgs {
		idx, spec, err := splitIndex(b)
		if err != nil {
			return usagef("--bytes %s: %w", b, err)
		}
		data, err := parseData(spec)
		if err != nil {
			return usagef("--bytes %s: %w", b, err)
		}
		byteData = append(byteData, bufArg{idx, data})
	}
	var dargs []metal.Arg
	for _, m := range tgMem {
		idx, spec, err := splitIndex(m)
		if err != nil {
			return usagef("--threadgroup-mem %s: %w", m, err)
		}
		n, err := strconv.Atoi(spec)
		if err != nil || n <= 0 {
			return usagef("--threadgroup-mem %s: want a positive byte count", m)
		}
		dargs = append(dargs, metal.Arg{Index: idx, ThreadgroupBytes: n})
	}
	type dumpReq struct {
		idx  int
		typ  string
		path string
	}
	var dumpReqs []dumpReq
	sort.Strings(outs)
	for _, o := range outs {
		idx, path, err := splitIndex(o)
		if err != nil {
			return usagef("--out %s: %w", o, err)
		}
		if path == "-" {
			dumpReqs = append(dumpReqs, dumpReq{idx, "f32", ""})
		} else {
			dumpReqs = append(dumpReqs, dumpReq{idx, "", path})
		}
	}
	for _, o := range dumps {
		idx, typ, err := splitIndex(o)
		if err != nil {
			return usagef("--dump %s: %w", o, err)
		}
		if _, ok := elemTypes[typ]; !ok && typ != "hex" {
			return usagef("--dump %s: type %q: want f32, f16, bf16, i8..i64, u8..u64 or hex", o, typ)
		}
		dumpReqs = append(dumpReqs, dumpReq{idx, typ, ""})
	}
	for _, r := range dumpReqs {
		found := false
		for _, b := range bufData {
			found = found || b.idx == r.idx
		}
		if !found {
			return usagef("--out/--dump of buffer %d: no --buffer %d", r.idx, r.idx)
		}
	}

	for _, d := range defines {
		if !defineRe.MatchString(d) {
			return usagef("-D %q: want NAME or NAME=VALUE", d)
		}
	}
	dev, err := emu.Open(emu.Options{Sources: srcs, Schedule: sched, ASan: *asan, Clang: *clang, Defines: defines})
	if err != nil {
		return err
	}
	defer dev.Close()
	pipe, err := dev.Pipeline(*kernel, constants...)
	if err != nil {
		return err
	}
	buffers := map[int]metal.Buffer{}
	for _, b := range bufData {
		buf, err := dev.NewBufferWithBytes(b.data)
		if err != nil {
			return fmt.Errorf("--buffer %d: %w", b.idx, err)
		}
		defer buf.Release()
		buffers[b.idx] = buf
		dargs = append(dargs, metal.Arg{Index: b.idx, Buffer: buf})
	}
	for _, b := range byteData {
		dargs = append(dargs, metal.Arg{Index: b.idx, Bytes: b.data})
	}
	cb, err := dev.NewCommandBuffer()
	if err != nil {
		return err
	}
	if err := cb.Dispatch(pipe, gsize, tsize, dargs...); err != nil {
		if errors.Is(err, metal.ErrInvalidDispatch) {
			return usageError{err}
		}
		return err
	}
	if err := cb.Commit(); err != nil {
		return err
	}
	if _, err := cb.Wait(ctx); err != nil {
		return err
	}
	for _, r := range dumpReqs {
		data := buffers[r.idx].Bytes()
		if r.path != "" {
			if err := os.WriteFile(r.path, data, 0o644); err != nil {
				return fmt.Errorf("--out %d: %w", r.idx, err)
			}
			continue
		}
		fmt.Fprintln(stdout, formatValues(data, r.typ))
	}
	return nil
}

// constantIndex resolves a --constant key: an index, or the name of a
// declared function constant.
func constantIndex(key string, decls []emu.FunctionConstantInfo) (int, error) {
	if n, err := strconv.Atoi(key); err == nil {
		if n < 0 || n > 65535 {
			return 0, fmt.Errorf("index %d must be 0..65535", n)
		}
		return n, nil
	}
	var names []string
	for _, c := range decls {
		if c.Name == key {
			return c.Index, nil
		}
		names = append(names, c.Name)
	}
	return 0, fmt.Errorf("no function constant named %q (declared: %s)", key, strings.Join(names, ", "))
}

func splitIndex(s string) (int, string, error) {
	i, rest, ok := strings.Cut(s, "=")
	if !ok {
		return 0, "", errors.New("want INDEX=VALUE")
	}
	n, err := strconv.Atoi(i)
	if err != nil || n < 0 || n > 31 {
		return 0, "", fmt.Errorf("index %q must be 0..31", i)
	}
	return n, rest, nil
}

func parseSize(s string) (metal.Size3, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 3 {
		return metal.Size3{}, fmt.Errorf("%q has more than 3 dimensions", s)
	}
	v := [3]int{1, 1, 1}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return metal.Size3{}, fmt.Errorf("%q: want X[,Y[,Z]] of non-negative integers", s)
		}
		v[i] = n
	}
	return metal.Size3{X: v[0], Y: v[1], Z: v[2]}, nil
}

// elemTypes are the element types of data specs and dumps, by size.
var elemTypes = map[string]int{
	"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
}

// parseData reads @FILE, zeros:N or a sequence of TYPE:v1,v2,... groups
// (u32:4,f32:0.5 is a u32 then a f32) as little-endian bytes.
func parseData(spec string) ([]byte, error) {
	if path, ok := strings.CutPrefix(spec, "@"); ok {
		b, err := os.ReadFile(path)
		if err == nil && len(b) == 0 {
			err = fmt.Errorf("%s is empty", path)
		}
		return b, err
	}
	if n, ok := strings.CutPrefix(spec, "zeros:"); ok {
		size, err := strconv.Atoi(n)
		if err != nil || size <= 0 {
			return nil, fmt.Errorf("zeros:%s: want a positive byte count", n)
		}
		return make([]byte, size), nil
	}
	var out []byte
	typ := ""
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if t, v, ok := strings.Cut(item, ":"); ok {
			typ, item = t, v
		}
		if typ == "" {
			return nil, fmt.Errorf("%q: want @FILE, zeros:N or TYPE:values (f32, f16, bf16, i8..i64, u8..u64, pad)", spec)
		}
		var err error
		if out, err = appendValue(out, typ, item); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q gives no bytes", spec)
	}
	return out, nil
}

func appendValue(out []byte, typ, s string) ([]byte, error) {
	le := binary.LittleEndian
	bad := func(err error) ([]byte, error) { return nil, fmt.Errorf("%s value %q: %w", typ, s, err) }
	switch typ {
	case "pad":
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("pad:%s: want a byte count", s)
		}
		return append(out, make([]byte, n)...), nil
	case "f32", "f16", "bf16":
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return bad(err)
		}
		switch typ {
		case "f32":
			return le.AppendUint32(out, math.Float32bits(float32(v))), nil
		case "f16":
			return le.AppendUint16(out, half.Float32ToFloat16(float32(v))), nil
		}
		return le.AppendUint16(out, half.Float32ToBFloat16(float32(v))), nil
	case "i8", "i16", "i32", "i64":
		size := elemTypes[typ]
		v, err := strconv.ParseInt(s, 0, 8*size)
		if err != nil {
			return bad(err)
		}
		return appendInt(out, uint64(v), size), nil
	case "u8", "u16", "u32", "u64":
		size := elemTypes[typ]
		v, err := strconv.ParseUint(s, 0, 8*size)
		if err != nil {
			return bad(err)
		}
		return appendInt(out, v, size), nil
	}
	return nil, fmt.Errorf("type %q: want f32, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64 or pad", typ)
}

func appendInt(out []byte, v uint64, size int) []byte {
	for i := 0; i < size; i++ {
		out = append(out, byte(v>>(8*i)))
	}
	return out
}

// formatValues prints data as space-separated values of typ.
func formatValues(data []byte, typ string) string {
	le := binary.LittleEndian
	if typ == "hex" {
		var vals []string
		for _, b := range data {
			vals = append(vals, fmt.Sprintf("%02x", b))
		}
		return strings.Join(vals, " ")
	}
	size := elemTypes[typ]
	vals := make([]string, 0, len(data)/size)
	for i := 0; i+size <= len(data); i += size {
		var s string
		switch typ {
		case "f32":
			s = strconv.FormatFloat(float64(math.Float32frombits(le.Uint32(data[i:]))), 'g', -1, 32)
		case "f16":
			s = strconv.FormatFloat(float64(half.Float16ToFloat32(le.Uint16(data[i:]))), 'g', -1, 32)
		case "bf16":
			s = strconv.FormatFloat(float64(half.BFloat16ToFloat32(le.Uint16(data[i:]))), 'g', -1, 32)
		case "i8":
			s = strconv.Itoa(int(int8(data[i])))
		case "u8":
			s = strconv.Itoa(int(data[i]))
		case "i16":
			s = strconv.Itoa(int(int16(le.Uint16(data[i:]))))
		case "u16":
			s = strconv.Itoa(int(le.Uint16(data[i:])))
		case "i32":
			s = strconv.Itoa(int(int32(le.Uint32(data[i:]))))
		case "u32":
			s = strconv.FormatUint(uint64(le.Uint32(data[i:])), 10)
		case "i64":
			s = strconv.FormatInt(int64(le.Uint64(data[i:])), 10)
		case "u64":
			s = strconv.FormatUint(le.Uint64(data[i:]), 10)
		}
		vals = append(vals, s)
	}
	return strings.Join(vals, " ")
}

// canonicalType maps the spellings of one MSL scalar type to one name.
func canonicalType(t string) string {
	switch t {
	case "int32_t":
		return "int"
	case "uint32_t", "unsigned int":
		return "uint"
	case "int16_t":
		return "short"
	case "uint16_t":
		return "ushort"
	case "int8_t":
		return "char"
	case "uint8_t":
		return "uchar"
	case "int64_t":
		return "long"
	case "uint64_t", "size_t":
		return "ulong"
	}
	return t
}

// parseConstant reads [TYPE:]VALUE. The value's Go type only carries what
// was written (bool, integer, float); the emulator converts it to the
// declared type and refuses values that do not fit.
func parseConstant(spec string) (any, error) {
	typ, v, ok := strings.Cut(spec, ":")
	if !ok {
		typ, v = "", spec
	}
	switch typ {
	case "bool":
		return strconv.ParseBool(v)
	case "int", "short", "char", "long", "int32_t", "int16_t", "int8_t", "int64_t":
		return strconv.ParseInt(v, 0, 64)
	case "uint", "ushort", "uchar", "ulong", "uint32_t", "uint16_t", "uint8_t", "uint64_t", "size_t":
		n, err := strconv.ParseUint(v, 0, 64)
		return n, err
	case "float", "half", "bfloat":
		return strconv.ParseFloat(v, 64)
	case "":
		if b, err := strconv.ParseBool(v); err == nil && (v == "true" || v == "false") {
			return b, nil
		}
		if n, err := strconv.ParseInt(v, 0, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f, nil
		}
		return nil, fmt.Errorf("value %q: want true, false, an integer or a float", v)
	}
	return nil, fmt.Errorf("type %q: want bool, int, uint, short, ushort, char, uchar, long, ulong, float, half or bfloat", typ)
}
