package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/internal/cli"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// multi is a repeatable flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// runFlags is the command line of msl-emu run, as written.
type runFlags struct {
	file, kernel, groups, threads, schedule, clang string
	asan                                           bool
	bufs, bytesArgs, tgMem, consts, outs, dumps    multi
	defines                                        multi
}

// bufArg is the contents of one --buffer or --bytes index.
type bufArg struct {
	idx  int
	data []byte
}

// dumpReq is one buffer to write out after the run: to path, or printed as
// values of typ.
type dumpReq struct {
	idx  int
	typ  string
	path string
}

// runPlan is a checked command line: everything the dispatch needs, known
// before anything is compiled.
type runPlan struct {
	opts            emu.Options
	kernel          string
	groups, threads metal.Size3
	constants       []metal.Constant
	buffers, bytes  []bufArg
	threadgroupMem  []metal.Arg
	dumps           []dumpReq
}

func runKernel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	p, err := planRun(f)
	if err != nil {
		return err
	}
	return execute(ctx, p, stdout)
}

// parseRunFlags reads run's command line; FILE may come before or after
// the flags.
func parseRunFlags(args []string, stderr io.Writer) (runFlags, error) {
	var f runFlags
	fs := flag.NewFlagSet("msl-emu run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	fs.StringVar(&f.kernel, "kernel", "", "kernel `NAME`")
	fs.StringVar(&f.groups, "groups", "1", "threadgroups per grid, X,Y,Z")
	fs.StringVar(&f.threads, "threadgroup", "", "threads per threadgroup, X,Y,Z")
	fs.StringVar(&f.schedule, "schedule", "forward", "forward, reverse or shuffle:SEED")
	fs.BoolVar(&f.asan, "asan", false, "build with AddressSanitizer")
	fs.StringVar(&f.clang, "clang", "", "compiler `PATH`")
	fs.Var(&f.bufs, "buffer", "I=SPEC")
	fs.Var(&f.bytesArgs, "bytes", "I=SPEC")
	fs.Var(&f.tgMem, "threadgroup-mem", "I=N")
	fs.Var(&f.consts, "constant", "C=[T:]V")
	fs.Var(&f.outs, "out", "I=FILE")
	fs.Var(&f.dumps, "dump", "I=TYPE")
	fs.Var(&f.defines, "D", "NAME[=VALUE]")
	rest := args
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		f.file, rest = rest[0], rest[1:]
	}
	if err := cli.ParseFlags(fs, rest); err != nil {
		return f, err
	}
	if f.file == "" && fs.NArg() == 1 {
		f.file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return f, usagef("unexpected arguments %q", fs.Args())
	}
	if f.file == "" || f.kernel == "" || f.threads == "" {
		return f, usagef("run needs FILE.metal, --kernel and --threadgroup")
	}
	return f, nil
}

var defineRe = regexp.MustCompile(`^[A-Za-z_]\w*(=.*)?$`)

// planRun checks the whole command line against the source's kernels
// before anything is compiled.
func planRun(f runFlags) (runPlan, error) {
	p := runPlan{kernel: f.kernel}
	var err error
	if p.groups, err = parseSize(f.groups); err != nil {
		return p, usagef("--groups: %w", err)
	}
	if p.threads, err = parseSize(f.threads); err != nil {
		return p, usagef("--threadgroup: %w", err)
	}
	sched, err := emu.ParseSchedule(f.schedule)
	if err != nil {
		return p, cli.Usage(err)
	}
	for _, d := range f.defines {
		if !defineRe.MatchString(d) {
			return p, usagef("-D %q: want NAME or NAME=VALUE", d)
		}
	}
	srcs, err := runSource(f.file, f.asan)
	if err != nil {
		return p, err
	}
	p.opts = emu.Options{Sources: srcs, Schedule: sched, ASan: f.asan, Clang: f.clang, Defines: f.defines}
	info, err := findKernel(srcs, f.file, f.kernel)
	if err != nil {
		return p, err
	}
	if p.constants, err = parseConstants(f.consts, info); err != nil {
		return p, err
	}
	if p.buffers, err = parseBufArgs("--buffer", f.bufs); err != nil {
		return p, err
	}
	if p.bytes, err = parseBufArgs("--bytes", f.bytesArgs); err != nil {
		return p, err
	}
	if p.threadgroupMem, err = parseThreadgroupMem(f.tgMem); err != nil {
		return p, err
	}
	p.dumps, err = parseDumps(f.outs, f.dumps, p.buffers)
	return p, err
}

// runSource reads FILE for run. Under --asan the file is named by its
// absolute path: AddressSanitizer's report resolves a relative name against
// the directory the cached object was first compiled in, which may be
// another one (or gone), while an absolute name is the file itself.
func runSource(file string, asan bool) ([]metal.KernelSource, error) {
	srcs, err := readSource(file)
	if err != nil || !asan {
		return srcs, err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	srcs[0].Name = abs
	return srcs, nil
}

// findKernel returns the declaration of kernel in srcs.
func findKernel(srcs []metal.KernelSource, file, kernel string) (*emu.KernelInfo, error) {
	infos, err := emu.ParseKernels(srcs)
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range infos {
		if infos[i].Name == kernel {
			return &infos[i], nil
		}
		names = append(names, infos[i].Name)
	}
	return nil, usagef("%s: unknown kernel %q (kernels: %s)", file, kernel, strings.Join(names, ", "))
}

// parseConstants reads every --constant, checking an explicit type against
// the kernel's declaration.
func parseConstants(consts []string, info *emu.KernelInfo) ([]metal.Constant, error) {
	var constants []metal.Constant
	for _, c := range consts {
		key, spec, ok := strings.Cut(c, "=")
		if !ok {
			return nil, usagef("--constant %s: want INDEX=VALUE or NAME=VALUE", c)
		}
		idx, err := constantIndex(key, info.Constants)
		if err != nil {
			return nil, usagef("--constant %s: %w", c, err)
		}
		v, err := parseConstant(spec)
		if err != nil {
			return nil, usagef("--constant %s: %w", c, err)
		}
		if typ, _, ok := strings.Cut(spec, ":"); ok {
			for _, d := range info.Constants {
				if d.Index == idx && canonicalType(d.Type) != canonicalType(typ) {
					return nil, usagef("--constant %s: %s is declared %s %s", c, d.Name, d.Type, d.Name)
				}
			}
		}
		constants = append(constants, metal.Constant{Index: idx, Value: v})
	}
	return constants, nil
}

// parseBufArgs reads the I=SPEC values of flag (--buffer or --bytes).
func parseBufArgs(flag string, values []string) ([]bufArg, error) {
	var out []bufArg
	for _, b := range values {
		idx, spec, err := splitIndex(b)
		if err != nil {
			return nil, usagef("%s %s: %w", flag, b, err)
		}
		data, err := parseData(spec)
		if err != nil {
			return nil, usagef("%s %s: %w", flag, b, err)
		}
		out = append(out, bufArg{idx, data})
	}
	return out, nil
}

// parseThreadgroupMem reads the I=N values of --threadgroup-mem.
func parseThreadgroupMem(values []string) ([]metal.Arg, error) {
	var args []metal.Arg
	for _, m := range values {
		idx, spec, err := splitIndex(m)
		if err != nil {
			return nil, usagef("--threadgroup-mem %s: %w", m, err)
		}
		n, err := strconv.Atoi(spec)
		if err != nil || n <= 0 {
			return nil, usagef("--threadgroup-mem %s: want a positive byte count", m)
		}
		args = append(args, metal.Arg{Index: idx, ThreadgroupBytes: n})
	}
	return args, nil
}

// parseDumps reads --out and --dump; each must name a bound --buffer.
func parseDumps(outs, dumps []string, buffers []bufArg) ([]dumpReq, error) {
	var reqs []dumpReq
	sorted := append([]string(nil), outs...)
	sort.Strings(sorted)
	for _, o := range sorted {
		idx, path, err := splitIndex(o)
		if err != nil {
			return nil, usagef("--out %s: %w", o, err)
		}
		if path == "-" {
			reqs = append(reqs, dumpReq{idx, "f32", ""})
		} else {
			reqs = append(reqs, dumpReq{idx, "", path})
		}
	}
	for _, o := range dumps {
		idx, typ, err := splitIndex(o)
		if err != nil {
			return nil, usagef("--dump %s: %w", o, err)
		}
		if _, ok := elemTypes[typ]; !ok && typ != "hex" {
			return nil, usagef("--dump %s: type %q: want f32, f16, bf16, i8..i64, u8..u64 or hex", o, typ)
		}
		reqs = append(reqs, dumpReq{idx, typ, ""})
	}
	for _, r := range reqs {
		found := false
		for _, b := range buffers {
			found = found || b.idx == r.idx
		}
		if !found {
			return nil, usagef("--out/--dump of buffer %d: no --buffer %d", r.idx, r.idx)
		}
	}
	return reqs, nil
}

// execute compiles the source, dispatches the kernel once, waits for it and
// writes the requested buffers.
func execute(ctx context.Context, p runPlan, stdout io.Writer) error {
	dev, err := emu.Open(p.opts)
	if err != nil {
		return err
	}
	defer dev.Close()
	pipe, err := dev.Pipeline(p.kernel, p.constants...)
	if err != nil {
		return err
	}
	args := append([]metal.Arg(nil), p.threadgroupMem...)
	buffers := map[int]metal.Buffer{}
	for _, b := range p.buffers {
		buf, err := dev.NewBufferWithBytes(b.data)
		if err != nil {
			return fmt.Errorf("--buffer %d: %w", b.idx, err)
		}
		defer buf.Release()
		buffers[b.idx] = buf
		args = append(args, metal.Arg{Index: b.idx, Buffer: buf})
	}
	for _, b := range p.bytes {
		args = append(args, metal.Arg{Index: b.idx, Bytes: b.data})
	}
	cb, err := dev.NewCommandBuffer()
	if err != nil {
		return err
	}
	if err := cb.Dispatch(pipe, p.groups, p.threads, args...); err != nil {
		if errors.Is(err, metal.ErrInvalidDispatch) {
			return cli.Usage(err)
		}
		return err
	}
	if err := cb.Commit(); err != nil {
		return err
	}
	if _, err := cb.Wait(ctx); err != nil {
		return err
	}
	return writeDumps(stdout, p.dumps, buffers)
}

// writeDumps writes each requested buffer to its file or prints it.
func writeDumps(stdout io.Writer, dumps []dumpReq, buffers map[int]metal.Buffer) error {
	for _, r := range dumps {
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
