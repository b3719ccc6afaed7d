//go:build linux

package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
	"golang.org/x/sys/cpu"
)

// The kernel emulator: kernels.cu compiled as C++ for the CPU against
// testdata/emu/cuemu.h, every GPU thread a fiber (testdata/emu/cuemu_run.h),
// so that kernels run in `go test` without a GPU. It checks a kernel's indexing, fragments,
// synchronisation and split-K bookkeeping against a float64 reference;
// nothing of speed, and nothing of what only the hardware decides (the
// order of a tensor core's sums, the memory model beyond what one block, or
// one thread block cluster, at a time shows). It needs clang++ (clang-19,
// as the kernels' compile check).

// emuArg is a kernel argument: a value as launcher passes it, or the
// address of an emulator buffer plus a byte offset.
type emuArg struct {
	buf   int // the buffer's index, where isBuf
	off   int64
	val   uint64
	isBuf bool
}

func emuVal(v uint64) emuArg         { return emuArg{val: v} }
func emuBuf(i int, off int64) emuArg { return emuArg{buf: i, off: off, isBuf: true} }
func emuInt(v int) emuArg            { return emuVal(i32(v)) }
func emuF32(v float32) emuArg        { return emuVal(f32(v)) }

type emuLaunch struct {
	name          string
	grid          [3]int
	threads, smem int
	cluster       int // blocks a cluster along x (0: no clusters)
	args          []emuArg
}

// emuBuild is one build of the emulator, made once per test process and
// kept in the user cache directory, keyed by its sources, the compiler and
// its flags, between runs.
type emuBuild struct {
	once sync.Once
	path string
	err  error
}

var emuProgram, emuLibrary emuBuild

// emuTuned are runner builds with kernels.cu's tunables set, by their
// defines (emuRunnerTuned).
var (
	emuTunedMu sync.Mutex
	emuTuned   = map[string]*emuBuild{}
	// emuTunedLibs are emuLibTuned's builds by their defines.
	emuTunedLibs = map[string]*emuBuild{}
)

// emuRunner is the emulator as a program (runner.cpp) that runs launches
// from a file (emuRun).
func emuRunner(t testing.TB) string {
	t.Helper()
	return emuProgram.get(t, "runner.cpp", false)
}

// emuLib is the emulator as a fake CUDA stack (fakecuda.cpp): one shared
// library with the driver, NVRTC, cuBLAS and cuBLASLt entry points the
// backend loads, and a libcublasLt.so link to it beside it (emuLinkLt).
func emuLib(t testing.TB) string {
	t.Helper()
	return emuLibrary.get(t, "fakecuda.cpp", true)
}

// emuLibTuned is emuLib built with defines (NAME=VALUE): the kernels an
// Open with Options.Defines of the same tunables compiles; its NVRTC
// refuses a program asking for other ones.
func emuLibTuned(t testing.TB, defines ...string) string {
	t.Helper()
	if len(defines) == 0 {
		return emuLib(t)
	}
	return tunedBuild(emuTunedLibs, defines).get(t, "fakecuda.cpp", true, defines...)
}

// tunedBuild is builds' entry for defines, made on first use.
func tunedBuild(builds map[string]*emuBuild, defines []string) *emuBuild {
	key := strings.Join(defines, " ")
	emuTunedMu.Lock()
	defer emuTunedMu.Unlock()
	b := builds[key]
	if b == nil {
		b = new(emuBuild)
		builds[key] = b
	}
	return b
}

// emuSym is the address of one of libcuemu.so's own controls (the
// library the backend has loaded, or loads the same way).
func emuSym(t testing.TB, lib, name string) uintptr {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := purego.Dlsym(h, name)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

func (e *emuBuild) get(t testing.TB, main string, shared bool, defines ...string) string {
	t.Helper()
	// Read here so that go test's cache, which records the environment a
	// test reads through os.Getenv, reruns the tests when they change: the
	// emulator reads them itself.
	os.Getenv("CUEMU_SEED")
	os.Getenv("CUEMU_TRACE")
	clang, err := exec.LookPath("clang++-19")
	if err != nil {
		t.Skipf("clang++-19 not installed: the kernel emulator needs it (%v)", err)
	}
	e.once.Do(func() { e.path, e.err = buildEmu(clang, main, shared, defines...) })
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.path
}

var (
	externShared = regexp.MustCompile(`extern __shared__ (\w+) (\w+)\[\];`)
	staticShared = regexp.MustCompile(`__shared__ (\w+) (\w+)((\[[^\]]*\])?);`)
)

// kernelDecl matches a kernel's declaration in kernels.cu preprocessed with
// __global__ marked.
var kernelDecl = regexp.MustCompile(`extern "C" __laya_global__ void (\w+)\(([^)]*)\)`)

// buildEmu compiles kernels.cu for the CPU against cuemu.h with main
// (testdata/emu): a program, or with shared a shared library; defines
// (NAME=VALUE) set its tunables.
func buildEmu(clang, main string, shared bool, defines ...string) (string, error) {
	// Every file of testdata/emu: main includes some of the others.
	files, err := filepath.Glob("testdata/emu/*")
	if err != nil {
		return "", err
	}
	var srcs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		srcs = append(srcs, f, string(b))
	}
	src := externShared.ReplaceAllString(kernelSource, "$1* $2 = ($1*)cuemu::dyn_smem;")
	src = staticShared.ReplaceAllString(src, "static $1 $2$3; cuemu::shared_static(&$2, sizeof $2);")
	// UBSan's alignment check refuses a vector load or store (float4, uint2,
	// ...) at an address the GPU would fault on.
	flags := []string{"-std=c++20", "-O1", "-pthread", "-w", "-fwrapv", "-fsanitize=alignment", "-fno-sanitize-recover=alignment"}
	if runtime.GOARCH == "amd64" && cpu.X86.HasFMA {
		// fmaf inline instead of a call into libm (mma16816 makes sixteen
		// for each output element): about a tenth of the emulated goldens'
		// time. No contraction, so that a*b+c still rounds twice, as it
		// did without FMA instructions.
		flags = append(flags, "-mfma", "-ffp-contract=off")
	}
	for _, d := range defines {
		flags = append(flags, "-D"+d)
	}
	if shared {
		// The tunables it was built with, as the backend's NVRTC options
		// name them (defineFlags), which its NVRTC compares with a
		// program's: a kernel cache key that names other tunables than the
		// library runs must not compile.
		var o Options
		for _, d := range defines {
			if err := o.parseDefine(d); err != nil {
				return "", err
			}
		}
		flags = append(flags, fmt.Sprintf("-DCUEMU_DEFINES=%q", strings.Join(defineFlags(o.Defines), " ")))
		// The library's own entry points only (the kernels are extern "C"
		// too, with names as common as add), the UBSan runtime as a shared
		// library found where clang keeps it, and the FNV-1a hash of the
		// kernels.cu it runs, which its NVRTC compiles and no other.
		arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
		rt, err := exec.Command(clang, "-print-file-name=libclang_rt.ubsan_standalone-"+arch+".so").Output()
		if err != nil {
			return "", fmt.Errorf("cuemu: finding the UBSan runtime: %v", err)
		}
		if _, err := os.Stat(strings.TrimSpace(string(rt))); err != nil {
			// LLVM's per-target layout: clang prints the bare name, and the
			// runtime lies in its runtime directory.
			dir, err := exec.Command(clang, "-print-runtime-dir").Output()
			if err != nil {
				return "", fmt.Errorf("cuemu: finding the UBSan runtime: %v", err)
			}
			rt = []byte(filepath.Join(strings.TrimSpace(string(dir)), "libclang_rt.ubsan_standalone.so"))
		}
		h := fnv.New64a()
		h.Write([]byte(kernelSource))
		script, err := filepath.Abs("testdata/emu/libcuemu.map")
		if err != nil {
			return "", err
		}
		flags = append(flags, "-shared", "-fPIC", "-fvisibility=hidden", "-shared-libsan", "-Wl,--version-script="+script,
			"-Wl,-rpath,"+filepath.Dir(strings.TrimSpace(string(rt))), fmt.Sprintf("-DCUEMU_SOURCE_HASH=%#xull", h.Sum64()))
	}
	// The kernels and their parameters, from the source preprocessed with
	// __global__ marked (the tensor-core attention kernels are macros).
	pre := exec.Command(clang, "-x", "c++", "-std=c++20", "-E", "-P", "-DLAYA_CUDA_EMU", "-D__global__=__laya_global__",
		"-D__launch_bounds__(...)=", "-D__device__=", "-D__forceinline__=", "-")
	pre.Stdin = strings.NewReader(src)
	var preOut, preErr bytes.Buffer
	pre.Stdout, pre.Stderr = &preOut, &preErr
	if err := pre.Run(); err != nil {
		return "", fmt.Errorf("cuemu: preprocessing kernels.cu: %v\n%s", err, preErr.String())
	}
	// The table: each kernel's name, its parameter count (a launch reads
	// that many 8-byte argument slots) and a wrapper taking them.
	var table strings.Builder
	table.WriteString("struct cuemu_kernel { const char* name; unsigned nargs; void (*call)(const u64*); };\nstatic const cuemu_kernel cuemu_kernels[] = {\n")
	n := 0
	for _, m := range kernelDecl.FindAllStringSubmatch(preOut.String(), -1) {
		var args []string
		for i, p := range strings.Split(m[2], ",") {
			p = strings.TrimSpace(p)
			typ := strings.TrimSpace(p[:strings.LastIndexAny(p, " *&")+1])
			args = append(args, fmt.Sprintf("cuemu_arg<%s>(a[%d])", typ, i))
		}
		fmt.Fprintf(&table, "\t{\"%s\", %d, [](const u64* a) { %s(%s); }},\n", m[1], len(args), m[1], strings.Join(args, ", "))
		n++
	}
	table.WriteString("};\n")
	if n == 0 {
		return "", fmt.Errorf("cuemu: no kernels found in kernels.cu")
	}
	unit := "#include \"cuemu.h\"\n" +
		"template <class T> T cuemu_arg(u64 v) { T t; memcpy(&t, &v, sizeof t); return t; }\n" +
		"#line 1 \"kernels.cu\"\n" + src + "\n" + table.String() + "#include \"" + main + "\"\n"
	// The cache key is everything the build reads: the generated unit, the
	// headers and main it includes, the flags and the compiler.
	version, _ := exec.Command(clang, "--version").Output()
	sum := sha256.Sum256([]byte(strings.Join(append(srcs, main, unit, string(version), strings.Join(flags, " ")), "\x00")))
	name := "cuemu"
	if shared {
		name = "libcuemu.so"
	}
	// The user's cache directory keeps builds between runs; without one
	// (or where it cannot be written) a private temporary directory, not
	// kept: a shared, predictable path would run what another user left.
	dir, cached := "", false
	if base, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(base, "laya-metal", "cuemu", hex.EncodeToString(sum[:8]))
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return emuLinkLt(filepath.Join(dir, name), shared)
		}
		cached = os.MkdirAll(dir, 0o755) == nil
	}
	if !cached {
		var err error
		if dir, err = os.MkdirTemp("", "cuemu-"); err != nil {
			return "", err
		}
	}
	incl, err := filepath.Abs("testdata/emu")
	if err != nil {
		return "", err
	}
	// Unique names for the unit and the output, renamed into place: builds
	// of the same sources in two test processes do not overwrite each
	// other's files.
	unitFile, err := os.CreateTemp(dir, strings.TrimSuffix(main, ".cpp")+"-unit-*.cpp")
	if err != nil {
		return "", err
	}
	defer os.Remove(unitFile.Name())
	if _, err := unitFile.WriteString(unit); err != nil {
		unitFile.Close()
		return "", err
	}
	if err := unitFile.Close(); err != nil {
		return "", err
	}
	out, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return "", err
	}
	out.Close()
	cmd := exec.Command(clang, append(flags, "-I", incl, "-o", out.Name(), unitFile.Name())...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("cuemu: compiling the emulator: %v\n%s", err, msg)
	}
	bin := filepath.Join(dir, name)
	if err := os.Rename(out.Name(), bin); err != nil {
		os.Remove(out.Name())
		return "", err
	}
	return emuLinkLt(bin, shared)
}

// emuLinkLt puts a libcublasLt.so beside the shared library lib, a link to
// it: the backend takes the cuBLASLt beside a cuBLAS named by path, under
// the names ltSearch gives a path without a version (libcublasLt.so
// first), and the loader resolves the link to the library already loaded
// as the driver, so that its cuBLASLt shares the emulated GPU. A copy would
// load as a second library with a GPU of its own.
func emuLinkLt(lib string, shared bool) (string, error) {
	if !shared {
		return lib, nil
	}
	link := filepath.Join(filepath.Dir(lib), "libcublasLt.so")
	if target, err := os.Readlink(link); err == nil && target == filepath.Base(lib) {
		return lib, nil
	}
	// Made aside and renamed into place: another test process may be
	// making the same link.
	tmp := fmt.Sprintf("%s.tmp-%d", link, os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(lib), tmp); err != nil {
		return "", fmt.Errorf("cuemu: linking cuBLASLt to the emulator: %v", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("cuemu: linking cuBLASLt to the emulator: %v", err)
	}
	return lib, nil
}

// emuRunnerTuned is the emulator as a program with kernels.cu's tunables
// set (NAME=VALUE each), built once per set.
func emuRunnerTuned(t testing.TB, defines ...string) string {
	t.Helper()
	return tunedBuild(emuTuned, defines).get(t, "runner.cpp", false, defines...)
}

// emuRun runs launches on buffers (copied) and returns the buffers after
// them.
func emuRun(t *testing.T, bufs [][]byte, launches ...emuLaunch) [][]byte {
	t.Helper()
	return emuRunOn(t, emuRunner(t), bufs, launches...)
}

// emuRunOn is emuRun on the emulator program bin (emuRunnerTuned's).
func emuRunOn(t *testing.T, bin string, bufs [][]byte, launches ...emuLaunch) [][]byte {
	t.Helper()
	var in bytes.Buffer
	w := func(v any) { binary.Write(&in, binary.LittleEndian, v) }
	w(uint32(len(bufs)))
	for _, b := range bufs {
		w(uint64(len(b)))
		in.Write(b)
	}
	w(uint32(len(launches)))
	for _, l := range launches {
		w(uint32(len(l.name)))
		in.WriteString(l.name)
		w([6]uint32{uint32(l.grid[0]), uint32(l.grid[1]), uint32(l.grid[2]), uint32(l.threads), uint32(l.smem), uint32(max(l.cluster, 1))})
		w(uint32(len(l.args)))
		for _, a := range l.args {
			if a.isBuf {
				w(uint32(1))
				w(uint32(a.buf))
				w(uint64(a.off))
			} else {
				w(uint32(0))
				w(a.val)
			}
		}
	}
	dir := t.TempDir()
	inPath, outPath := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.WriteFile(inPath, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, inPath, outPath).CombinedOutput(); err != nil {
		t.Fatalf("cuemu: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	res := make([][]byte, len(bufs))
	for i := range res {
		n := binary.LittleEndian.Uint64(raw)
		res[i] = raw[8 : 8+n]
		raw = raw[8+n:]
	}
	return res
}
