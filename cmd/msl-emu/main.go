// Command msl-emu runs one Metal compute kernel by hand on the CPU with the
// MSL emulator (package metal), like dispatchThreadgroups on a Mac.
//
// Run "msl-emu -h" for the flags and a full example.
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
	"sort"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

const usageText = `msl-emu runs one Metal kernel on the CPU with the MSL emulator.

Usage:
  msl-emu run FILE.metal --kernel NAME --groups X,Y,Z --threadgroup X,Y,Z [flags]

Flags:
  --kernel NAME          kernel function to run
  --groups X,Y,Z         threadgroups per grid (Y and Z default to 1)
  --threadgroup X,Y,Z    threads per threadgroup (at most 1024 in all)
  --buffer I=SPEC        [[buffer(I)]] device buffer; repeatable. SPEC is
                           @FILE          raw little-endian bytes of a file
                           zeros:N        N zero bytes
                           f32:1,2.5,-3   float32 values (also f16:, u32:, i32:)
  --bytes I=SPEC         [[buffer(I)]] constant data passed by value (setBytes),
                         same SPEC forms, e.g. --bytes 3=u32:128
  --threadgroup-mem I=N  [[threadgroup(I)]] argument of N bytes
  --constant I=T:V       [[function_constant(I)]], T is bool, int, uint or float
  --out I=FILE           write buffer I to FILE after the run (raw bytes;
                         FILE "-" prints it as float32 values)
  --schedule S           forward (default), reverse or shuffle:SEED
  --asan                 build with AddressSanitizer: out-of-bounds device
                         accesses are reported with the .metal line
  --clang PATH           compiler (default clang-19, then clang)

A detected kernel bug (divergent barrier, return before a barrier, threadgroup
memory over 32 KiB, out-of-bounds access under --asan) is printed and the exit
status is 1.

Example: add two vectors of 4 floats with kernels/elementwise.metal:

  msl-emu run kernels/elementwise.metal --kernel vector_add \
      --groups 1 --threadgroup 32 \
      --buffer 0=f32:1,2,3,4 --buffer 1=f32:10,20,30,40 --buffer 2=zeros:16 \
      --bytes 3=u32:4 --out 2=-
  prints: 11 22 33 44
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "msl-emu:", err)
		}
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(1)
	}
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// run is the whole command, callable from tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usageText)
		if len(args) == 0 {
			return errors.New("missing command: run")
		}
		return flag.ErrHelp
	}
	if args[0] != "run" {
		return fmt.Errorf("unknown command %q (want run; -h for help)", args[0])
	}
	fs := flag.NewFlagSet("msl-emu run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	var bufs, bytesArgs, tgMem, consts, outs multi
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
	// The file may come before or after the flags.
	var file string
	rest := args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		file, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if file == "" || *kernel == "" || *threads == "" {
		return errors.New("run needs FILE.metal, --kernel and --threadgroup (-h for help)")
	}
	gsize, err := parseSize(*groups)
	if err != nil {
		return fmt.Errorf("--groups: %w", err)
	}
	tsize, err := parseSize(*threads)
	if err != nil {
		return fmt.Errorf("--threadgroup: %w", err)
	}
	sched, err := metal.ParseSchedule(*schedule)
	if err != nil {
		return err
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	dev, err := metal.OpenEmulator(metal.EmulatorOptions{
		Sources:  []metal.KernelSource{{Name: file, Text: string(text)}},
		Schedule: sched, ASan: *asan, Clang: *clang,
	})
	if err != nil {
		return err
	}
	defer dev.Close()

	var constants []metal.Constant
	for _, c := range consts {
		idx, spec, err := splitIndex(c)
		if err != nil {
			return fmt.Errorf("--constant %s: %w", c, err)
		}
		v, err := parseConstant(spec)
		if err != nil {
			return fmt.Errorf("--constant %s: %w", c, err)
		}
		constants = append(constants, metal.Constant{Index: idx, Value: v})
	}
	pipe, err := dev.Pipeline(*kernel, constants...)
	if err != nil {
		return err
	}

	var dargs []metal.Arg
	buffers := map[int]metal.Buffer{}
	for _, b := range bufs {
		idx, spec, err := splitIndex(b)
		if err != nil {
			return fmt.Errorf("--buffer %s: %w", b, err)
		}
		data, err := parseData(spec)
		if err != nil {
			return fmt.Errorf("--buffer %s: %w", b, err)
		}
		buf, err := dev.NewBufferWithBytes(data)
		if err != nil {
			return fmt.Errorf("--buffer %s: %w", b, err)
		}
		defer buf.Release()
		buffers[idx] = buf
		dargs = append(dargs, metal.Arg{Index: idx, Buffer: buf})
	}
	for _, b := range bytesArgs {
		idx, spec, err := splitIndex(b)
		if err != nil {
			return fmt.Errorf("--bytes %s: %w", b, err)
		}
		data, err := parseData(spec)
		if err != nil {
			return fmt.Errorf("--bytes %s: %w", b, err)
		}
		dargs = append(dargs, metal.Arg{Index: idx, Bytes: data})
	}
	for _, m := range tgMem {
		idx, spec, err := splitIndex(m)
		if err != nil {
			return fmt.Errorf("--threadgroup-mem %s: %w", m, err)
		}
		n, err := strconv.Atoi(spec)
		if err != nil || n <= 0 {
			return fmt.Errorf("--threadgroup-mem %s: want a positive byte count", m)
		}
		dargs = append(dargs, metal.Arg{Index: idx, ThreadgroupBytes: n})
	}
	cb, err := dev.NewCommandBuffer()
	if err != nil {
		return err
	}
	if err := cb.Dispatch(pipe, gsize, tsize, dargs...); err != nil {
		return err
	}
	if err := cb.Commit(); err != nil {
		return err
	}
	if _, err := cb.Wait(ctx); err != nil {
		return err
	}

	sort.Strings(outs)
	for _, o := range outs {
		idx, path, err := splitIndex(o)
		if err != nil {
			return fmt.Errorf("--out %s: %w", o, err)
		}
		buf, ok := buffers[idx]
		if !ok {
			return fmt.Errorf("--out %s: no --buffer %d", o, idx)
		}
		if path == "-" {
			data := buf.Bytes()
			vals := make([]string, 0, len(data)/4)
			for i := 0; i+4 <= len(data); i += 4 {
				vals = append(vals, strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))), 'g', -1, 32))
			}
			fmt.Fprintln(stdout, strings.Join(vals, " "))
			continue
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out %s: %w", o, err)
		}
	}
	return nil
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

// parseData reads @FILE, zeros:N or TYPE:v1,v2,... as little-endian bytes.
func parseData(spec string) ([]byte, error) {
	if path, ok := strings.CutPrefix(spec, "@"); ok {
		b, err := os.ReadFile(path)
		if err == nil && len(b) == 0 {
			err = fmt.Errorf("%s is empty", path)
		}
		return b, err
	}
	typ, list, ok := strings.Cut(spec, ":")
	if !ok {
		return nil, fmt.Errorf("%q: want @FILE, zeros:N or f32:/f16:/u32:/i32: values", spec)
	}
	if typ == "zeros" {
		n, err := strconv.Atoi(list)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("zeros:%s: want a positive byte count", list)
		}
		return make([]byte, n), nil
	}
	var out []byte
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		switch typ {
		case "f32":
			v, err := strconv.ParseFloat(f, 32)
			if err != nil {
				return nil, fmt.Errorf("f32 value %q: %w", f, err)
			}
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(v)))
		case "f16":
			v, err := strconv.ParseFloat(f, 32)
			if err != nil {
				return nil, fmt.Errorf("f16 value %q: %w", f, err)
			}
			out = binary.LittleEndian.AppendUint16(out, weights.Float32ToFloat16(float32(v)))
		case "u32":
			v, err := strconv.ParseUint(f, 0, 32)
			if err != nil {
				return nil, fmt.Errorf("u32 value %q: %w", f, err)
			}
			out = binary.LittleEndian.AppendUint32(out, uint32(v))
		case "i32":
			v, err := strconv.ParseInt(f, 0, 32)
			if err != nil {
				return nil, fmt.Errorf("i32 value %q: %w", f, err)
			}
			out = binary.LittleEndian.AppendUint32(out, uint32(int32(v)))
		default:
			return nil, fmt.Errorf("type %q: want f32, f16, u32, i32 or zeros", typ)
		}
	}
	return out, nil
}

func parseConstant(spec string) (any, error) {
	typ, v, ok := strings.Cut(spec, ":")
	if !ok {
		return nil, errors.New("want TYPE:VALUE (bool:true, int:-3, uint:7, float:0.5)")
	}
	switch typ {
	case "bool":
		return strconv.ParseBool(v)
	case "int":
		n, err := strconv.ParseInt(v, 0, 32)
		return int32(n), err
	case "uint":
		n, err := strconv.ParseUint(v, 0, 32)
		return uint32(n), err
	case "float":
		f, err := strconv.ParseFloat(v, 32)
		return float32(f), err
	}
	return nil, fmt.Errorf("type %q: want bool, int, uint or float", typ)
}
