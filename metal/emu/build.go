package emu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/laya-metal/laya/metal"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/laya-metal/laya/metal/emu/internal/rt"
	"github.com/laya-metal/laya/metal/internal/mslpp"
)

// library is a set of translated .metal sources and their compiled form:
// a shared object (normal mode) or an ASan runner executable.
type library struct {
	kernels map[string]*mslpp.Kernel
	// variants are the definitions of a kernel in different #if branches
	// of one source, when there are several.
	variants  map[string][]*mslpp.Kernel
	constants map[string][]mslpp.FunctionConstant // by source name
	unitOf    map[string]string                   // kernel name -> source name
	path      string                              // .so or runner executable
	symbolize string                              // llvm-symbolizer, for ASan reports
}

// Compile flags. -ffloat16-excess-precision=none makes every half operation
// round to half as the GPU does (spec Part 1, "Half precision"); without it
// clang computes _Float16 expressions in float. The bfloat flag does the same
// for bfloat (__bf16). -fwrapv makes signed integer overflow wrap, as GPU
// integer arithmetic does, instead of being undefined behaviour that the
// optimiser may turn into a 64-bit result.
var compileFlags = []string{
	"-x", "c++", "-std=c++17", "-O1", "-g", "-fPIC", "-fno-exceptions", "-fvisibility=hidden", "-fwrapv",
	"-w", "-Xclang", "-ffloat16-excess-precision=none", "-Xclang", "-fbfloat16-excess-precision=none",
}

var defineRe = regexp.MustCompile(`^[A-Za-z_]\w*(=.*)?$`)

var asanFlags = []string{"-fsanitize=address", "-fno-omit-frame-pointer", "-DMSLEMU_UCONTEXT", "-DMSLEMU_ASAN"}

type clangInfo struct {
	path, version string
}

var clangCache sync.Map // requested name -> clangInfo

func findClang(name string) (clangInfo, error) {
	names := []string{"clang-19", "clang"}
	if name != "" {
		names = []string{name}
	}
	if c, ok := clangCache.Load(strings.Join(names, ",")); ok {
		return c.(clangInfo), nil
	}
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			continue
		}
		out, err := exec.Command(p, "--version").Output()
		if err != nil {
			continue
		}
		v := strings.SplitN(string(out), "\n", 2)[0]
		var major int
		if i := strings.Index(v, "version "); i >= 0 {
			fmt.Sscanf(v[i+len("version "):], "%d", &major)
		}
		if major < 16 {
			return clangInfo{}, fmt.Errorf("%w (found %q)", ErrNoClang, v)
		}
		c := clangInfo{path: p, version: v}
		clangCache.Store(strings.Join(names, ","), c)
		return c, nil
	}
	return clangInfo{}, fmt.Errorf("%w (looked for %s in PATH)", ErrNoClang, strings.Join(names, ", "))
}

func hash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// writeAtomic writes path unless it exists; concurrent test processes may
// race on the same cache entry, so the file appears by rename.
func writeAtomic(path string, data []byte) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// buildLibrary translates and compiles sources, reusing cached objects.
func buildLibrary(ctx context.Context, opts Options) (*library, error) {
	clang, err := findClang(opts.Clang)
	if err != nil {
		return nil, err
	}
	srcs := opts.Sources
	if srcs == nil {
		if srcs, err = metal.KernelSources(); err != nil {
			return nil, fmt.Errorf("metal: reading package kernels: %w", err)
		}
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("%w: no kernel sources", metal.ErrShaderCompile)
	}
	cache := opts.CacheDir
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cache = filepath.Join(base, "laya-metal", "msl-emu")
	}

	// The runtime sources go to a directory named by their hash: clang
	// needs them on disk for -I, and the hash keys every object built on them.
	var rtParts []string
	rtFS, err := fs.Sub(rt.Files, "src")
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(rtFS, ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, _ := fs.ReadFile(rtFS, e.Name())
		rtParts = append(rtParts, e.Name(), string(b))
	}
	flags := append([]string(nil), compileFlags...)
	if opts.ASan {
		flags = append(flags, asanFlags...)
	}
	for _, d := range opts.Defines {
		if !defineRe.MatchString(d) {
			return nil, fmt.Errorf("%w: define %q: want NAME or NAME=VALUE", metal.ErrShaderCompile, d)
		}
		flags = append(flags, "-D"+d)
	}
	key := hash(append(append(rtParts, clang.version, runtime.GOOS, runtime.GOARCH), flags...)...)
	inc := filepath.Join(cache, "rt-"+key)
	if err := os.MkdirAll(inc, 0o755); err != nil {
		return nil, fmt.Errorf("metal: emulator cache: %w", err)
	}
	for _, e := range entries {
		b, _ := fs.ReadFile(rtFS, e.Name())
		if err := writeAtomic(filepath.Join(inc, e.Name()), b); err != nil {
			return nil, fmt.Errorf("metal: emulator cache: %w", err)
		}
	}

	lib := &library{kernels: map[string]*mslpp.Kernel{}, variants: map[string][]*mslpp.Kernel{}, constants: map[string][]mslpp.FunctionConstant{}, unitOf: map[string]string{}}
	byName := map[string]metal.KernelSource{}
	for _, s := range srcs {
		byName[s.Name] = s
	}
	includer := newIncluder(byName)
	type unit struct{ name, cpp, obj string }
	units := []unit{{name: rt.Runtime, obj: filepath.Join(inc, "runtime.o")}}
	if opts.ASan {
		units = append(units, unit{name: rt.Runner, obj: filepath.Join(inc, "runner.o")})
	}
	for _, s := range srcs {
		u, err := mslpp.Translate(mslpp.Source{Name: s.Name, Text: s.Text}, includer)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", metal.ErrShaderCompile, err)
		}
		for i := range u.Kernels {
			k := &u.Kernels[i]
			if o, dup := lib.kernels[k.Name]; dup {
				if o.Guard == k.Guard || lib.unitOf[k.Name] != s.Name {
					return nil, fmt.Errorf("%w: kernel %s is defined in %s:%d and %s:%d", metal.ErrShaderCompile, k.Name, o.File, o.Line, k.File, k.Line)
				}
				// Branches of #if: which one exists is known once loaded.
				if len(lib.variants[k.Name]) == 0 {
					lib.variants[k.Name] = []*mslpp.Kernel{o}
				}
				lib.variants[k.Name] = append(lib.variants[k.Name], k)
				continue
			}
			lib.kernels[k.Name] = k
			lib.unitOf[k.Name] = s.Name
		}
		lib.constants[s.Name] = u.Constants
		units = append(units, unit{name: s.Name, cpp: u.CPP, obj: filepath.Join(cache, "k-"+hash(key, u.CPP)+".o")})
	}

	// Compile what the cache lacks, up to GOMAXPROCS at a time.
	var wg sync.WaitGroup
	errs := make([]error, len(units))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, u := range units {
		if _, err := os.Stat(u.obj); err == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			src := filepath.Join(inc, u.name)
			var stdin []byte
			if u.cpp != "" {
				src = "-"
				stdin = []byte(u.cpp)
			}
			errs[i] = runClang(ctx, clang.path, u.obj, stdin, append(append([]string{}, flags...), "-I", inc, "-c", src)...)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%w: %s:\n%w", metal.ErrShaderCompile, u.name, errs[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	var objs []string
	for _, u := range units {
		objs = append(objs, u.obj)
	}
	linkFlags := []string{"-lpthread", "-lm"}
	if runtime.GOOS == "darwin" {
		linkFlags = append(linkFlags, "-lc++")
	} else {
		linkFlags = append(linkFlags, "-lstdc++")
	}
	if opts.ASan {
		lib.path = filepath.Join(cache, "runner-"+hash(append(objs, key)...))
		linkFlags = append(linkFlags, "-fsanitize=address")
		lib.symbolize = findSymbolizer(clang.path)
	} else {
		lib.path = filepath.Join(cache, "lib-"+hash(append(objs, key)...)+".so")
		linkFlags = append(linkFlags, "-shared")
	}
	if _, err := os.Stat(lib.path); err != nil {
		if err := runClang(ctx, clang.path, lib.path, nil, append(objs, linkFlags...)...); err != nil {
			return nil, fmt.Errorf("%w: linking: %w", metal.ErrShaderCompile, err)
		}
	}
	return lib, nil
}

// runClang runs clang with "-o out" into a temporary name, then renames it.
func runClang(ctx context.Context, clang, out string, stdin []byte, args ...string) error {
	tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
	cmd := exec.CommandContext(ctx, clang, append(args, "-o", tmp)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s%w", stderr.String(), err)
	}
	return os.Rename(tmp, out)
}

func findSymbolizer(clang string) string {
	if real, err := filepath.EvalSymlinks(clang); err == nil {
		p := filepath.Join(filepath.Dir(real), "llvm-symbolizer")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, n := range []string{"llvm-symbolizer-19", "llvm-symbolizer"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// newIncluder resolves a local #include against the given sources by name,
// then against the including file's directory on disk and its ancestors.
func newIncluder(byName map[string]metal.KernelSource) mslpp.Includer {
	return func(from, name string) (mslpp.Source, error) {
		if s, ok := byName[name]; ok {
			return mslpp.Source{Name: s.Name, Text: s.Text}, nil
		}
		// MLX includes "mlx/backend/metal/kernels/utils.h" from headers deep
		// inside that tree, relying on -I at the repository root; trying
		// the including file's directory and then each of its ancestors
		// finds such a root without being told.
		var firstErr error
		for dir := filepath.Dir(from); ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, name)
			if s, ok := byName[p]; ok {
				return mslpp.Source{Name: s.Name, Text: s.Text}, nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				return mslpp.Source{Name: p, Text: string(b)}, nil
			}
			if firstErr == nil {
				firstErr = err
			}
			if parent := filepath.Dir(dir); parent == dir || filepath.IsAbs(name) {
				break
			}
		}
		return mslpp.Source{}, firstErr
	}
}

// KernelInfo describes one kernel entry point of a .metal source as the
// emulator reads it: what a host must bind to dispatch it.
type KernelInfo struct {
	// Name is the name to ask Pipeline for (a host_name when one is given).
	Name string
	File string
	Line int
	// MaxThreadsPerThreadgroup is the kernel's
	// [[max_total_threads_per_threadgroup(N)]], or 0.
	MaxThreadsPerThreadgroup int
	Params                   []KernelParam
	// Constants are the function constants of the kernel's source.
	Constants []FunctionConstantInfo
	// Condition is the preprocessor conditionals around the kernel, one
	// directive a line ("#if defined(HAS_BF16)\n"), or empty: the kernel
	// exists only when they hold (see Options.Defines).
	Condition string
}

// KernelParam is one kernel parameter.
type KernelParam struct {
	Name string
	Type string // as written, without attributes
	// Binding is "buffer(I)", "threadgroup(I)" or the builtin attribute
	// (thread_position_in_grid...).
	Binding string
	// Index is the buffer or threadgroup index, or -1 for a builtin.
	Index int
	// ByValue is true for a reference parameter (constant Params& p): the
	// host usually passes it with Arg.Bytes.
	ByValue bool
	// FunctionConstant names the constant that makes the parameter
	// optional, or is empty.
	FunctionConstant string
}

// FunctionConstantInfo is one [[function_constant(Index)]] declaration.
type FunctionConstantInfo struct {
	Name  string
	Type  string
	Index int
}

// ParseKernels reads the kernels of .metal sources without compiling them
// (no clang needed). Local #includes resolve as for Open. Errors
// wrap metal.ErrShaderCompile and name the file and line.
func ParseKernels(srcs []metal.KernelSource) ([]KernelInfo, error) {
	byName := map[string]metal.KernelSource{}
	for _, s := range srcs {
		byName[s.Name] = s
	}
	var out []KernelInfo
	for _, s := range srcs {
		u, err := mslpp.Translate(mslpp.Source{Name: s.Name, Text: s.Text}, newIncluder(byName))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", metal.ErrShaderCompile, err)
		}
		var consts []FunctionConstantInfo
		for _, c := range u.Constants {
			consts = append(consts, FunctionConstantInfo{Name: c.Name, Type: c.Type, Index: c.Index})
		}
		for _, k := range u.Kernels {
			ki := KernelInfo{Name: k.Name, File: k.File, Line: k.Line, MaxThreadsPerThreadgroup: k.MaxThreads, Constants: consts, Condition: k.Guard}
			for _, p := range k.Params {
				kp := KernelParam{Name: p.Name, Type: p.Type, Index: p.Index, FunctionConstant: p.FunctionConstant}
				switch p.Kind {
				case mslpp.Buffer:
					kp.Binding = fmt.Sprintf("buffer(%d)", p.Index)
				case mslpp.BufferRef:
					kp.Binding, kp.ByValue = fmt.Sprintf("buffer(%d)", p.Index), true
				case mslpp.Threadgroup:
					kp.Binding = fmt.Sprintf("threadgroup(%d)", p.Index)
				case mslpp.Builtin:
					kp.Binding, kp.Index = p.Builtin, -1
				}
				ki.Params = append(ki.Params, kp)
			}
			out = append(out, ki)
		}
	}
	return out, nil
}
