package cuda_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/backend/backendtest"
	"github.com/laya-metal/laya/backend/cuda"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/cudadrv/cudatest"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/internal/forwardtest"
	"github.com/laya-metal/laya/internal/half"
	"github.com/laya-metal/laya/internal/oracletest"
	"github.com/laya-metal/laya/weights"
)

// open opens the backend or skips the test where this machine has no CUDA
// driver or GPU (CI); any other failure is a failure.
func open(t testing.TB, opts cuda.Options) backend.Backend {
	t.Helper()
	be, err := cuda.Open(opts)
	cudatest.Check(t, err)
	return be
}

func TestRegistered(t *testing.T) {
	be, err := backend.Open(cuda.Name)
	cudatest.Check(t, err)
	defer be.Close()
	if be.Name() != cuda.Name {
		t.Errorf("Name() = %q", be.Name())
	}
}

// A driver that cannot be loaded is ErrNoCUDA, with the library named:
// what CI (no GPU) and a GPU-less server see.
func TestNoDriver(t *testing.T) {
	_, err := cuda.Open(cuda.Options{Driver: "/nonexistent/libcuda.so.1"})
	if !errors.Is(err, cuda.ErrNoCUDA) {
		t.Fatalf("err = %v, want ErrNoCUDA", err)
	}
	if err := cuda.SelfTest(context.Background(), cuda.Options{Driver: "/nonexistent/libcuda.so.1"}); !errors.Is(err, cuda.ErrNoCUDA) {
		t.Errorf("SelfTest: err = %v, want ErrNoCUDA", err)
	}
}

// Open refuses options out of range before it looks for a GPU: set in
// the struct they are not read by ParseOptions.
func TestOpenRefusesBadOptions(t *testing.T) {
	for _, o := range []cuda.Options{{QueriesPerWarp: 3}, {AttentionWarps: 12}, {MMAWarps: 16}, {Bucket: -1}, {Precision: cuda.FP16X2 + 1},
		{Refine: -1}, {Refine: float32(math.NaN())}, {RefineTokens: -5}, {ClusterRows: -1}, {ClusterRows: cuda.MaxMMARows + 1}, {ClusterCols: 48}, {ClusterCols: 256},
		{WGRows: -1}, {WGRows: cuda.MaxMMARows + 1}, {WGSplits: -1}, {WGSplits: 9}, {WGRing: 2}, {WGRing: 9}} {
		be, err := cuda.Open(o)
		if err == nil {
			be.Close()
			t.Errorf("Open(%+v) opened", o)
			continue
		}
		if errors.Is(err, cuda.ErrNoCUDA) || !strings.Contains(err.Error(), "cuda: options:") {
			t.Errorf("Open(%+v): %v, want the options refused", o, err)
		}
	}
}

func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		in   string
		want cuda.Options
		bad  bool
	}{
		{"", cuda.Options{}, false},
		{"precision=fp16, device=1", cuda.Options{Precision: cuda.FP16, Device: 1}, false},
		{"precision=BF16,graphs=off,maxgraphs=8", cuda.Options{Precision: cuda.BF16, NoGraphs: true, MaxGraphs: 8}, false},
		{"bucket=1, attnqpw=4", cuda.Options{Bucket: 1, QueriesPerWarp: 4}, false},
		{"bucket=-2", cuda.Options{}, true},
		{"attnqpw=3", cuda.Options{}, true},
		{"attnwarps=16", cuda.Options{AttentionWarps: 16}, false},
		{"attnwarps=12", cuda.Options{}, true},
		{"attn=simt,mmawarps=8", cuda.Options{SIMTAttention: true, MMAWarps: 8}, false},
		{"attn=simt,attn=mma,graphs=off,graphs=on", cuda.Options{}, false},
		{"small=off", cuda.Options{NoSmallLinear: true}, false},
		{"gatherfold=off", cuda.Options{NoGatherFold: true}, false},
		{"small=off,graphs=off,small=on", cuda.Options{NoGraphs: true}, false},
		{"precision=bf16,small=off", cuda.Options{Precision: cuda.BF16, NoSmallLinear: true}, false},
		{"small=no", cuda.Options{}, true},
		{"small", cuda.Options{}, true},
		{"attn=tensor", cuda.Options{}, true},
		{"mmawarps=1", cuda.Options{MMAWarps: 1}, false},
		{"attnsplit=on", cuda.Options{AttentionSplit: true}, false},
		{"attnrows=8", cuda.Options{RowWarps: 8}, false},
		{"attnrows=8,attnrows=off", cuda.Options{RowWarps: -1}, false},
		{"attnrows=2", cuda.Options{}, true},
		{"attnrows=on", cuda.Options{}, true},
		{"attnreg=off", cuda.Options{NoRegAttention: true}, false},
		{"submit=16,splits=3", cuda.Options{SubmitOps: 16, SubmitSplits: 3}, false},
		{"splits=7", cuda.Options{}, true},
		{"splits=-1", cuda.Options{}, true},
		{"mmawarps=3", cuda.Options{}, true},
		{"gemm=blas,tune=off", cuda.Options{GEMMBLAS: true, NoTune: true}, false},
		{"gemm=blas,gemm=lt,tune=off,tune=on", cuda.Options{}, false},
		{"precision=fp16,tune=off", cuda.Options{Precision: cuda.FP16, NoTune: true}, false},
		{"gemm=cublas", cuda.Options{}, true},
		{"gemm=", cuda.Options{}, true},
		{"tune=yes", cuda.Options{}, true},
		{"tunecands=64", cuda.Options{TuneCandidates: 64}, false},
		{"splitk=on", cuda.Options{SplitK: true}, false},
		{"mmarows=256,mmaln=off", cuda.Options{MMARows: 256, MMANoLN: true}, false},
		{"clrows=128", cuda.Options{ClusterRows: 128}, false},
		{"clrows=-1", cuda.Options{}, true},
		{"clrows=128,clcols=64", cuda.Options{ClusterRows: 128, ClusterCols: 64}, false},
		{"wgrows=128,wgsplits=4", cuda.Options{WGRows: 128, WGSplits: 4}, false},
		{"wgrows=300", cuda.Options{}, true},
		{"wgrows=128,wgring=3", cuda.Options{WGRows: 128, WGRing: 3}, false},
		{"wgring=2", cuda.Options{}, true},
		{"wgrows=128,wgtma=on", cuda.Options{WGRows: 128, WGTMA: true}, false},
		{"wgtma=yes", cuda.Options{}, true},
		{"wgsplits=9", cuda.Options{}, true},
		{"clcols=96", cuda.Options{}, true},
		// The registered backend's defaults, and LAYA_CUDA after them.
		{fmt.Sprintf("precision=%v,refine=%g,kbatch=%d,kbatch=0", cuda.DefaultPrecision, cuda.DefaultRefine, cuda.DefaultKBatchRows),
			cuda.Options{Precision: cuda.DefaultPrecision, Refine: cuda.DefaultRefine}, false},
		{fmt.Sprintf("precision=%v,refine=%g,kbatch=%d", cuda.DefaultPrecision, cuda.DefaultRefine, cuda.DefaultKBatchRows),
			cuda.Options{Precision: cuda.DefaultPrecision, Refine: cuda.DefaultRefine, KBatchRows: cuda.DefaultKBatchRows}, false},
		{"kbatch=-1", cuda.Options{}, true},
		{"kcat=256", cuda.Options{KCatRows: 256}, false},
		{"kcat=-1", cuda.Options{}, true},
		{"mmaln=off,mmaln=on", cuda.Options{}, false},
		{"submit=off", cuda.Options{SubmitOps: -1}, false},
		{"submit=16", cuda.Options{SubmitOps: 16}, false},
		{"submit=0", cuda.Options{}, true},
		{"submit=on", cuda.Options{}, true},
		{"pdl=off", cuda.Options{NoPDL: true}, false},
		{"pdl=off,pdl=on", cuda.Options{}, false},
		{"pdl=yes", cuda.Options{}, true},
		{"mmaln=no", cuda.Options{}, true},
		{"splitk=on,splitk=off", cuda.Options{}, false},
		{"driver=/opt/cuda/libcuda.so.1,nvrtc=/opt/cuda/libnvrtc.so,cublas=/opt/cuda/libcublas.so",
			cuda.Options{Driver: "/opt/cuda/libcuda.so.1", NVRTC: "/opt/cuda/libnvrtc.so", CUBLAS: "/opt/cuda/libcublas.so"}, false},
		{"driver=", cuda.Options{}, true},
		{"splitk=2", cuda.Options{}, true},
		{"tunecands=129", cuda.Options{}, true},
		{"tunecands=-1", cuda.Options{}, true},
		{"precision=fp16x2,attnterms=1", cuda.Options{Precision: cuda.FP16X2, AttentionTerms: 1}, false},
		{"attnterms=3", cuda.Options{}, true},
		{"cache=off", cuda.Options{KernelCache: "off"}, false},
		{"cache=/tmp/k,precision=fp16", cuda.Options{KernelCache: "/tmp/k", Precision: cuda.FP16}, false},
		{"cache=", cuda.Options{}, true},
		{"tunecache=off", cuda.Options{TuneCache: "off"}, false},
		{"cache=off,tunecache=/tmp/t", cuda.Options{KernelCache: "off", TuneCache: "/tmp/t"}, false},
		{"tunecache=", cuda.Options{}, true},
		{"precision=fp16x2,refine=0.05,refinetokens=128", cuda.Options{Precision: cuda.FP16X2, Refine: 0.05, RefineTokens: 128}, false},
		{"refine=0.1,refine=off", cuda.Options{}, false},
		{"refine=0", cuda.Options{}, true},
		{"refine=-0.1", cuda.Options{}, true},
		{"refine=NaN", cuda.Options{}, true},
		{"refine=inf", cuda.Options{}, true},
		{"refine=", cuda.Options{}, true},
		{"refinetokens=-1", cuda.Options{}, true},
		{"batchrows=32,batchtokens=4096", cuda.Options{BatchRows: 32, BatchTokens: 4096}, false},
		{"batchrows=-1", cuda.Options{}, true},
		{"tuneshare=on", cuda.Options{}, true},
		{"batchtokens=-8", cuda.Options{}, true},
		{"precision=fp8", cuda.Options{}, true},
		{"graphs=maybe", cuda.Options{}, true},
		{"device=x", cuda.Options{}, true},
		{"fast", cuda.Options{}, true},
		{"define=ATTN_MMA_MINB=2,define=LMMA_MINB=3", cuda.Options{Defines: map[string]int{"ATTN_MMA_MINB": 2, "LMMA_MINB": 3}}, false},
		{"define=ATTN_MMA_UNROLL=1,define=ATTN_MMA_UNROLL=2", cuda.Options{Defines: map[string]int{"ATTN_MMA_UNROLL": 2}}, false},
		{"define=ATTN_MMA_MINB=9", cuda.Options{}, true},
		{"define=ATTN_MMA_MINB=0", cuda.Options{}, true},
		{"define=NO_SUCH=1", cuda.Options{}, true},
		{"define=ATTN_MINB", cuda.Options{}, true},
		{"define=ATTN_MINB=x", cuda.Options{}, true},
		{"define=", cuda.Options{}, true},
	} {
		got, err := cuda.ParseOptions(c.in)
		if (err != nil) != c.bad || !c.bad && !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseOptions(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}

// The kernels type-check with clang's CUDA front end against the stand-ins
// for what NVRTC declares implicitly, so CI catches a broken kernel source
// without a GPU or CUDA toolkit.
// Every tunable (cuda.KernelTunables) at its least and greatest value
// compiles too.
func TestKernelsCompileWithClang(t *testing.T) {
	clang, includes := clangCUDA(t)
	sets := [][]string{nil, nil, nil}
	for _, tu := range cuda.KernelTunables {
		sets[1] = append(sets[1], fmt.Sprintf("-D%s=%d", tu.Name, tu.Min))
		sets[2] = append(sets[2], fmt.Sprintf("-D%s=%d", tu.Name, tu.Max))
	}
	for _, defines := range sets {
		cmd := exec.Command(clang, slices.Concat([]string{"-x", "cuda", "--cuda-gpu-arch=sm_90", "--cuda-device-only", "-nocudainc", "-nocudalib",
			"-fsyntax-only", "-std=c++17"}, defines, includes, []string{"kernels.cu"})...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("clang-19 rejects kernels.cu with %q: %v\n%s", defines, err, out)
		}
	}
}

// cuda.KernelTunables lists the tunables kernels.cu's "Tunables" section
// defines (an #ifndef NAME / #define NAME VALUE pair each), with the same
// defaults, and no other.
func TestKernelTunablesMirrorSource(t *testing.T) {
	src, err := os.ReadFile("kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(src), "// ---- Tunables ----")
	if !ok {
		t.Fatal("kernels.cu has no Tunables section")
	}
	section, _, _ = strings.Cut(section, "\n// ---- ")
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`#ifndef (\w+)\n#define (\w+) (-?\d+)\n#endif`).FindAllStringSubmatch(section, -1) {
		if m[1] != m[2] {
			t.Errorf("#ifndef %s defines %s", m[1], m[2])
		}
		v, _ := strconv.Atoi(m[3])
		got[m[1]] = v
	}
	want := map[string]int{}
	for _, tu := range cuda.KernelTunables {
		want[tu.Name] = tu.Def
		if tu.Def < tu.Min || tu.Def > tu.Max {
			t.Errorf("%s: default %d outside %d to %d", tu.Name, tu.Def, tu.Min, tu.Max)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kernels.cu's tunables and defaults %v, KernelTunables %v", got, want)
	}
}

// clangCUDA is clang-19 (or skips the test) and the -include flags of the
// stand-ins for what NVRTC declares implicitly.
func clangCUDA(t *testing.T) (string, []string) {
	clang, err := exec.LookPath("clang-19")
	if err != nil {
		t.Skipf("clang-19 not installed: the CUDA checks need it (%v)", err)
	}
	var includes []string
	for _, h := range []string{"../../metal/cuda/testdata/cuda_stub.h", "testdata/nvrtc_extra.h"} {
		abs, err := filepath.Abs(h)
		if err != nil {
			t.Fatal(err)
		}
		includes = append(includes, "-include", abs)
	}
	return clang, includes
}

// The kernels' PTX, inline assembly included, assembles with NVIDIA's ptxas
// for the oldest GPU the backend accepts (sm_80) and for the first with
// programmatic dependent launch (sm_90), so an instruction, operand type or
// state space that only a GPU's NVRTC would refuse fails CI instead of Open.
// clang-19 writes the PTX (NVRTC's own front end is not here); ptxas is the
// one LAYA_PTXAS names, else the one on PATH (CI takes it from Debian's
// nvidia-cuda-toolkit). Relocatable assembly (-c) leaves the libm calls
// (-fno-builtin keeps them calls) to a link that never happens, and the
// launch bounds are dropped: clang leaves big device functions uninlined, and
// ptxas refuses an entry whose register cap is below its callee's, which
// says nothing of the instructions.
func TestKernelsAssembleWithPtxas(t *testing.T) {
	clang, includes := clangCUDA(t)
	ptxas := os.Getenv("LAYA_PTXAS")
	if ptxas == "" {
		var err error
		if ptxas, err = exec.LookPath("ptxas"); err != nil {
			t.Skip("no ptxas: set LAYA_PTXAS or put one on PATH (Debian non-free's nvidia-cuda-toolkit has one)")
		}
	}
	dir := t.TempDir()
	noBounds := filepath.Join(dir, "no_launch_bounds.h")
	if err := os.WriteFile(noBounds, []byte("#undef __launch_bounds__\n#define __launch_bounds__(...)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs("kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	// What each target's PTX must hold, so that a primitive compiled out
	// (a wrong __CUDA_ARCH__ test, an emulator-only branch) cannot pass
	// unassembled.
	for _, c := range []struct {
		arch       string
		want, none []string
	}{
		{"sm_80", []string{"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned", "cp.async.cg.shared.global", "cp.async.wait_all", "ld.global.cg",
			"cvt.rn.f16x2.f32", "cvt.rn.bf16.f32"}, []string{"griddepcontrol"}},
		{"sm_90", []string{"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned", "cp.async.cg.shared.global", "cp.async.wait_all", "ld.global.cg",
			"cvt.rn.f16x2.f32", "cvt.rn.bf16.f32", "griddepcontrol.wait", "griddepcontrol.launch_dependents"}, []string{"wgmma", "cp.async.bulk"}},
		// sm_90a: linear_wg's warpgroup products and tma_probe's copies, architecture-specific.
		{"sm_90a", []string{"wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16", "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16",
			"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
			"wgmma.wait_group.sync.aligned", "fence.proxy.async.shared::cta", "mapa.shared::cluster",
			// tma_probe's bulk tensor copy and mbarriers.
			"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", "mbarrier.init.shared::cta.b64",
			"mbarrier.arrive.expect_tx.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64", "fence.mbarrier_init.release.cluster",
			"mbarrier.inval.shared::cta.b64"}, nil},
	} {
		t.Run(c.arch, func(t *testing.T) {
			t.Parallel()
			ptx := filepath.Join(dir, c.arch+".ptx")
			cmd := exec.Command(clang, append([]string{"-x", "cuda", "--cuda-gpu-arch=" + c.arch, "--cuda-device-only", "-nocudainc",
				"-nocudalib", "-O3", "-fno-builtin", "-S", "-o", ptx, "-std=c++17"}, slices.Concat(includes, []string{"-include", noBounds, src})...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("clang-19 cannot write kernels.cu's PTX for %s: %v\n%s", c.arch, err, out)
			}
			text, err := os.ReadFile(ptx)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(text), w) {
					t.Errorf("%s PTX has no %q", c.arch, w)
				}
			}
			for _, w := range c.none {
				if strings.Contains(string(text), w) {
					t.Errorf("%s PTX has %q, which needs a newer GPU", c.arch, w)
				}
			}
			cmd = exec.Command(ptxas, "-c", "-arch="+c.arch, "-O0", "-o", filepath.Join(dir, c.arch+".cubin"), ptx)
			if out, err := cmd.CombinedOutput(); err != nil {
				lines := strings.SplitAfter(string(out), "\n")
				if len(lines) > 40 {
					lines = append(lines[:40], fmt.Sprintf("... and %d more lines\n", len(lines)-40))
				}
				t.Fatalf("ptxas (%s) refuses kernels.cu's PTX for %s: %v\n%s", ptxas, c.arch, err, strings.Join(lines, ""))
			}
		})
	}
}

// testOptions are the options LAYA_CUDA_TEST_OPTIONS gives (ParseOptions'
// form; the precision is the test's), so that the goldens run on a GPU with
// other kernels chosen (attnqpw, attnwarps, bucket).
func testOptions(t *testing.T) cuda.Options {
	o, err := cuda.ParseOptions(os.Getenv("LAYA_CUDA_TEST_OPTIONS"))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

var precisions = []cuda.Precision{cuda.FP32, cuda.FP16, cuda.BF16, cuda.FP16X2}

// gated are the precisions whose gate TestForwardGoldens enforces: upstream
// parity for FP32, the reduced-precision gate for the default FP16X2.
var gated = map[cuda.Precision]bool{cuda.FP32: true, cuda.FP16X2: true}

// The backend conformance suite, in FP32 with graphs and kernel by kernel.
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		opts cuda.Options
	}{{"graphs", cuda.Options{}}, {"nographs", cuda.Options{NoGraphs: true}}} {
		t.Run(c.name, func(t *testing.T) {
			open(t, c.opts).Close()
			backendtest.Run(t, func() (backend.Backend, error) { return cuda.Open(c.opts) })
		})
	}
}

// TestKernelResources reports what every kernel takes of a multiprocessor
// as this GPU's NVRTC compiled it (with LAYA_CUDA_TEST_OPTIONS, e.g.
// define=ATTN_MMA_MINB=3), and writes the table as Markdown to the file
// LAYA_CUDA_RESOURCES names, if any: registers, spills and the warps a
// multiprocessor holds decide how much latency a kernel can hide.
func TestKernelResources(t *testing.T) {
	opts := testOptions(t)
	// How long a compile took, where the kernels were not kept yet.
	opts.Log = func(msg string) { t.Log(msg) }
	be := open(t, opts)
	defer be.Close()
	rs, err := be.(interface {
		KernelResources() ([]cuda.KernelResource, error)
	}).KernelResources()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| kernel | registers | local bytes | static shared | max threads | warps/SM (registers) |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", r.Name, r.Registers, r.LocalBytes, r.SharedBytes, r.MaxThreads, r.WarpsPerSM)
		if r.Registers <= 0 || r.MaxThreads < 32 || r.WarpsPerSM <= 0 {
			t.Errorf("%s: %+v, want registers, a warp's threads and a warp a multiprocessor at least", r.Name, r)
		}
	}
	if len(rs) < 20 {
		t.Errorf("%d kernels reported, want every kernel the backend loads", len(rs))
	}
	t.Logf("%s (%s):\n%s", be.(interface{ Device() string }).Device(), os.Getenv("LAYA_CUDA_TEST_OPTIONS"), b.String())
	if path := os.Getenv("LAYA_CUDA_RESOURCES"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSelfTest(t *testing.T) {
	open(t, cuda.Options{}).Close()
	for _, p := range precisions {
		if err := cuda.SelfTest(context.Background(), cuda.Options{Precision: p}); err != nil {
			t.Errorf("%v: %v", p, err)
		}
	}
}

// temperature is the calibration temperature of a question: its bucket's,
// else its type's.
func temperature(ckpt *weights.Checkpoint, q heads.QType, options int) float64 {
	if t, ok := ckpt.Agent.TemperatureByOptions[heads.Bucket(q, options)]; ok {
		return t
	}
	return ckpt.Agent.Temperature[q]
}

// goldenSet is a checkpoint with golden rows: the oracle's (upstream's own
// outputs) or a variant's (testdata/variants: shapes the oracle does not
// cover, with goldens from a model built of torch's and transformers' own
// modules), the latter in the reference's padded batches, since the act
// features of a row depend on its batch.
type goldenSet struct {
	name, dir string
	cases     []oracletest.Case
}

// variantsDir is the repository's testdata/variants, found as oracletest
// finds the oracle: from the source path, so that a test binary run from
// another directory (on a GPU host without Go) finds it too.
var variantsDir = filepath.Join(oracletest.Dir, "..", "variants")

func goldenSets(t *testing.T) []goldenSet {
	var sets []goldenSet
	for _, name := range []string{"tiny-en", "tiny-ml", "real-en"} {
		sets = append(sets, goldenSet{name, oracletest.Checkpoint(name), oracletest.Cases(t, name)})
	}
	entries, err := os.ReadDir(variantsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		dir := filepath.Join(variantsDir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "goldens.json")); !e.IsDir() || err != nil {
			continue
		}
		var g struct {
			BatchSize int              `json:"batch_size"`
			Rows      []oracletest.Row `json:"rows"`
		}
		oracletest.ReadJSON(t, filepath.Join(dir, "goldens.json"), &g)
		if g.BatchSize < 1 || len(g.Rows) == 0 {
			t.Fatalf("%s: batch size %d, %d rows", dir, g.BatchSize, len(g.Rows))
		}
		set := goldenSet{name: "variant-" + e.Name(), dir: dir}
		for at := 0; at < len(g.Rows); at += g.BatchSize {
			set.cases = append(set.cases, oracletest.Case{Name: fmt.Sprint(at / g.BatchSize), Rows: g.Rows[at:min(at+g.BatchSize, len(g.Rows))]})
		}
		sets = append(sets, set)
	}
	// The root package's variants test asks for at least five; so does this.
	if len(sets) < 3+5 {
		t.Fatalf("%s: %d variants, want at least 5", variantsDir, len(sets)-3)
	}
	return sets
}

// Every golden case of every bundled checkpoint and variant, in each
// precision, six times over: right-padded and unpruned as upstream runs it, then packed
// and pruned as the library runs it, each kernel by kernel, captured and
// replayed. FP32 holds the cpu
// backend's gates (logits within 1e-4, act probabilities within 1e-5);
// FP16X2, the default, holds the reduced-precision gate: the same answer
// (argmax) as upstream for every question and calibrated probabilities
// within 0.005. FP16 and BF16 are measured against the same gate and
// reported, not failed: the documentation says they miss it (near-ties).
// FP16 and FP16X2 run once more with the tensor-core attention forced
// ("+mma"): the goldens' batches are too small to fill the GPU, where
// Attention picks the float32 kernels, so without it no golden would reach
// the kernels ten questions and more run. FP16X2 runs a third time as the
// registered backend does with refinement on ("+refine", every batch
// reduced, its GEMMs of one question over k's halves as DefaultKBatchRows
// splits them): each batch in FP16 first, then its near-ties (backend.NearTie
// at DefaultRefine) again in FP16X2, held to FP16X2's gate; and a fourth
// ("+mma+refine") with the tensor-core attention forced, the registered
// backend's path at ten questions and more, where the reduced run's rows
// that are not near-ties must hold the gate's probabilities with the
// attention of its FP16 pass; and a fifth ("+mma+kcat") with every cuBLAS
// GEMM over FP16X2's two terms side by side (Options.KCatRows), held to
// FP16X2's gate. The reduced
// precisions' rows report their largest spread of logit errors (the most
// a gap between two of a row's logits moved): a refinement margin above
// it on every golden leaves no answer of the reduced run that FP16X2
// would not give.
func TestForwardGoldens(t *testing.T) {
	ctx := context.Background()
	sets := goldenSets(t)
	type config struct {
		prec   cuda.Precision
		mma    bool
		refine bool
		kcat   bool
	}
	var configs []config
	for _, prec := range precisions {
		configs = append(configs, config{prec: prec})
	}
	configs = append(configs, config{cuda.FP16, true, false, false}, config{cuda.FP16X2, true, false, false},
		config{cuda.FP16X2, false, true, false}, config{cuda.FP16X2, true, true, false}, config{cuda.FP16X2, true, false, true})
	for _, cf := range configs {
		prec, label := cf.prec, cf.prec.String()
		if cf.mma {
			label += "+mma"
		}
		if cf.refine {
			label += "+refine"
		}
		if cf.kcat {
			label += "+kcat"
		}
		for _, set := range sets {
			name := set.name
			t.Run(fmt.Sprintf("%s/%s", label, name), func(t *testing.T) {
				ckpt, err := weights.LoadCheckpoint(set.dir)
				if err != nil {
					t.Fatal(err)
				}
				defer ckpt.Close()
				opts := testOptions(t)
				opts.Precision = prec
				if cf.mma {
					opts.MMAWarps = cmp.Or(opts.MMAWarps, 4)
				}
				if cf.refine {
					opts.Refine, opts.RefineTokens = cuda.DefaultRefine, 1
					opts.KBatchRows = cmp.Or(opts.KBatchRows, cuda.DefaultKBatchRows)
				}
				if cf.kcat {
					opts.KCatRows = 1
				}
				be := open(t, opts)
				defer be.Close()
				parts, err := forwardpass.NewParts(be, ckpt)
				if err != nil {
					t.Fatal(err)
				}
				var worstLogit, worstAct, worstProb, worstSpread float64
				rows, agree, refined := 0, 0, 0
				for pass := range 6 {
					for _, c := range set.cases {
						run := parts.RunRows
						if pass >= 3 {
							run = forwardtest.RunPacked(parts)
						}
						rowsIn := forwardtest.Rows(c.Rows)
						var logits, probs [][]float32
						if cf.refine {
							logits, probs, refined, err = forwardtest.RunRefined(ctx, be, run, rowsIn, int32(ckpt.Encoder.PadTokenID), refined)
						} else {
							logits, probs, err = run(ctx, be, rowsIn, int32(ckpt.Encoder.PadTokenID), nil)
						}
						if err != nil {
							t.Fatalf("case %s pass %d: %v", c.Name, pass, err)
						}
						for i, want := range c.Rows {
							where := fmt.Sprintf("case %s %s pass %d", c.Name, want.QID, pass)
							if prec == cuda.FP32 {
								worstLogit = max(worstLogit, oracletest.Compare(t, where+" logits", logits[i], want.Logits, oracletest.LogitTol))
								worstAct = max(worstAct, oracletest.Compare(t, where+" act_probs", probs[i], want.ActProbs, oracletest.ActProbTol))
								rows++
								continue
							}
							wl := make([]float32, len(want.Logits))
							lo, hi := math.Inf(1), math.Inf(-1)
							for j, v := range want.Logits {
								wl[j] = float32(v)
								worstLogit = max(worstLogit, math.Abs(v-float64(logits[i][j])))
								lo, hi = min(lo, float64(logits[i][j])-v), max(hi, float64(logits[i][j])-v)
							}
							worstSpread = max(worstSpread, hi-lo)
							temp := temperature(ckpt, heads.QType(want.QType), len(wl))
							pg, pw := heads.Softmax(logits[i], temp), heads.Softmax(wl, temp)
							for j := range pg {
								worstProb = max(worstProb, math.Abs(float64(pg[j]-pw[j])))
							}
							for j, v := range want.ActProbs {
								worstAct = max(worstAct, math.Abs(v-float64(probs[i][j])))
							}
							rows++
							if heads.Argmax(pg) == heads.Argmax(pw) {
								agree++
							} else if gated[prec] {
								t.Errorf("%s: answer %d, upstream %d (logits %v, want %v)", where, heads.Argmax(pg), heads.Argmax(pw), logits[i], want.Logits)
							}
						}
					}
				}
				if gated[prec] && prec != cuda.FP32 && (worstProb > 0.005 || worstAct > 0.005) {
					t.Errorf("calibrated probabilities off by %.3g, act probabilities by %.3g: over 0.005", worstProb, worstAct)
				}
				st := be.(interface{ Stats() cuda.Stats }).Stats()
				if cf.refine && (st.ReducedStreams == 0 || refined > 0 && st.Streams == 0) {
					t.Errorf("streams counted %d reduced, %d plain; want reduced runs and their refinements", st.ReducedStreams, st.Streams)
				}
				if cf.kcat && st.GEMMKCat == 0 {
					t.Errorf("stats %+v: no GEMM ran over both terms side by side", st)
				}
				agreed := fmt.Sprintf("%d/%d", agree, rows)
				if cf.refine {
					agreed += fmt.Sprintf(" (%d refined)", refined)
				}
				switch {
				case prec == cuda.FP32:
					agreed = "gated by |Δlogit|"
				case !gated[prec]:
					agreed += " (reported, not gated)"
				}
				t.Logf("GOLDENS | %s | %s | %d rows | argmax %s | max |Δlogit| %.2g | max logit error spread %.2g | max |Δcalibrated p| %.2g | max |Δact p| %.2g | %+v",
					name, label, rows, agreed, worstLogit, worstSpread, worstProb, worstAct, st)
			})
		}
	}
}

// wideRequest is three rows, one of each question type.
var wideRequest = []byte(`{"state": "I was charged twice for March and the box arrived damaged.", "questions": {
	"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"},
	"dept": {"type": "choice", "instructions": "Which team should answer?", "criteria": ["billing", "shipping", "technical"]},
	"anger": {"type": "score", "instructions": "How angry is the customer?", "criteria": ["calm", "annoyed", "furious"]}}}`)

// A checkpoint whose activations outgrow fp16 (tiny-en and real-en with
// their embedding norm weight times 1e6: its output, layer 0's Wqkv
// operand, as ModernBERT's first layer has no attention norm, is then past
// 65504 at every token), answered through the model. In FP16X2 and FP16
// every row's outputs are NaN, and a request fails with ErrNonFinite where
// the backend offers no FP32 streams; with them (backend.Widener) the
// model runs those rows again in FP32, kernel by kernel, captured and
// replayed, and answers as the FP32 backend does: every number of the
// answer within 2e-4 (FP32's parity gate on logits, 1e-4, plus the
// answers' rounding to four decimals). With refinement the rows run in
// FP16, FP16X2, then FP32.
func TestWideStreamOverflow(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"tiny-en", "real-en"} {
		t.Run(name, func(t *testing.T) {
			scaled := func(be backend.Backend, noWide bool) *forwardtest.Scaled {
				return &forwardtest.Scaled{Backend: be, Weight: "encoder.embeddings.norm.weight", Factor: 1e6, NoWide: noWide}
			}
			// answer runs the request times times on one agent, each answer
			// within tol of the first's.
			answer := func(t *testing.T, be *forwardtest.Scaled, times int) (string, error) {
				agent, err := laya.Load(ctx, oracletest.Checkpoint(name), laya.WithBackendInstance(be), laya.WithBatchSize(2))
				if err != nil {
					t.Fatal(err)
				}
				defer agent.Close()
				if !be.Uploaded() {
					t.Fatalf("no weight %s uploaded", be.Weight)
				}
				var first string
				for i := range times {
					res, err := agent.PredictJSON(ctx, wideRequest)
					if err != nil {
						return "", err
					}
					if i == 0 {
						first = res.String()
					} else if err := closeJSON(res.String(), first, 2e-4); err != nil {
						t.Errorf("run %d against run 0: %v", i, err)
					}
				}
				return first, nil
			}
			opts := testOptions(t)
			opts.Precision = cuda.FP32
			ref := open(t, opts)
			defer ref.Close()
			if ref.(backend.Widener).WideStream() != nil {
				t.Error("FP32 offers a wider stream")
			}
			want, err := answer(t, scaled(ref, false), 1)
			if err != nil {
				t.Fatalf("FP32: %v", err)
			}
			for _, cf := range []struct {
				name   string
				prec   cuda.Precision
				refine bool
			}{{"FP16X2", cuda.FP16X2, false}, {"FP16X2+refine", cuda.FP16X2, true}, {"FP16", cuda.FP16, false}} {
				t.Run(cf.name, func(t *testing.T) {
					o := testOptions(t)
					o.Precision = cf.prec
					if cf.refine {
						o.Refine, o.RefineTokens = cuda.DefaultRefine, 1
					}
					be := open(t, o)
					defer be.Close()
					stats := be.(interface{ Stats() cuda.Stats }).Stats
					if _, err := answer(t, scaled(be, true), 1); !errors.Is(err, laya.ErrNonFinite) {
						t.Fatalf("without FP32 streams: err = %v, want ErrNonFinite", err)
					}
					if st := stats(); st.WideStreams != 0 {
						t.Fatalf("without FP32 streams: %+v", st)
					}
					before := stats()
					got, err := answer(t, scaled(be, false), 3)
					if err != nil {
						t.Fatal(err)
					}
					if err := closeJSON(got, want, 2e-4); err != nil {
						t.Errorf("against FP32: %v\n%s\nFP32: %s", err, got, want)
					}
					st := stats()
					if st.WideStreams == 0 || be.(backend.Counter).Counters()["wide_streams"] != st.WideStreams {
						t.Errorf("%+v: no FP32 stream counted", st)
					}
					if cf.refine != (st.ReducedStreams > 0) {
						t.Errorf("%+v: reduced streams with refine=%v", st, cf.refine)
					}
					if o.NoGraphs == (st.Captures > before.Captures && st.Replays > before.Replays) {
						t.Errorf("%+v: captures and replays with graphs=%v", st, !o.NoGraphs)
					}
					t.Logf("WIDE | %s | %s | %s | %+v", name, cf.name, got, st)
				})
			}
		})
	}
}

// closeJSON compares two JSON texts: the same structure and strings, and
// numbers within tol.
func closeJSON(got, want string, tol float64) error {
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return err
	}
	var walk func(path string, g, w any) error
	walk = func(path string, g, w any) error {
		switch w := w.(type) {
		case map[string]any:
			gm, ok := g.(map[string]any)
			if !ok || len(gm) != len(w) {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
			for k, v := range w {
				if err := walk(path+"."+k, gm[k], v); err != nil {
					return err
				}
			}
		case []any:
			gs, ok := g.([]any)
			if !ok || len(gs) != len(w) {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
			for i, v := range w {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), gs[i], v); err != nil {
					return err
				}
			}
		case float64:
			gf, ok := g.(float64)
			if !ok || !(math.Abs(gf-w) <= tol) {
				return fmt.Errorf("%s: %v, want %v within %g", path, g, w, tol)
			}
		default:
			if g != w {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
		}
		return nil
	}
	return walk("", g, w)
}

// Requests on several goroutines at once share the graph cache and the pool
// of CUDA streams: every answer still holds the fp32 gates.
func TestConcurrentRequests(t *testing.T) {
	ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint("real-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	be := open(t, cuda.Options{MaxGraphs: 8})
	defer be.Close()
	parts, err := forwardpass.NewParts(be, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	cases := oracletest.Cases(t, "real-en")
	ctx := context.Background()
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 12 {
				c := cases[(g+i)%len(cases)]
				run := parts.RunRows
				if i%2 == 1 {
					run = forwardtest.RunPacked(parts)
				}
				logits, probs, err := run(ctx, be, forwardtest.Rows(c.Rows), int32(ckpt.Encoder.PadTokenID), nil)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d case %s: %w", g, c.Name, err)
					return
				}
				for r, want := range c.Rows {
					for j, v := range want.Logits {
						if d := math.Abs(v - float64(logits[r][j])); d > oracletest.LogitTol {
							errs <- fmt.Errorf("goroutine %d case %s row %d logit %d off by %.2g", g, c.Name, r, j, d)
							return
						}
					}
					for j, v := range want.ActProbs {
						if d := math.Abs(v - float64(probs[r][j])); d > oracletest.ActProbTol {
							errs <- fmt.Errorf("goroutine %d case %s row %d act prob %d off by %.2g", g, c.Name, r, j, d)
							return
						}
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	t.Logf("CONCURRENT | %+v", be.(interface{ Stats() cuda.Stats }).Stats())
}

// Requests whose token counts fall in one bucket replay one graph, and give
// the answers they give with no bucket (each count its own graph).
func TestBucketsShareGraphs(t *testing.T) {
	ctx := context.Background()
	ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	pad := int32(ckpt.Encoder.PadTokenID)
	answers := map[int][][]float32{}
	perRequest := 0 // segments (flushes) a request makes
	for _, bucket := range []int{1, 16} {
		be := open(t, cuda.Options{Precision: cuda.FP16X2, Bucket: bucket})
		parts, err := forwardpass.NewParts(be, ckpt)
		if err != nil {
			t.Fatal(err)
		}
		run := forwardtest.RunPacked(parts)
		// Two questions of 17 to 32 tokens in all: one bucket of 16.
		for n := 17; n <= 32; n++ {
			rows := []forwardpass.Row{{IDs: make([]int, n/2), Markers: []int{1}}, {IDs: make([]int, n-n/2), Markers: []int{1, 2}, QType: 1}}
			for _, r := range rows {
				for i := range r.IDs {
					r.IDs[i] = 5 + (i*7+n)%50
				}
			}
			logits, _, err := run(ctx, be, rows, pad, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want, ok := answers[n]; ok {
				for i := range want {
					for j := range want[i] {
						if d := math.Abs(float64(logits[i][j] - want[i][j])); d > 1e-3 {
							t.Errorf("%d tokens, bucket %d: logit %d.%d %g, %g without a bucket", n, bucket, i, j, logits[i][j], want[i][j])
						}
					}
				}
			} else {
				answers[n] = logits
			}
		}
		st := be.(interface{ Stats() cuda.Stats }).Stats()
		t.Logf("bucket %d: %+v", bucket, st)
		if bucket == 1 {
			perRequest = st.Entries / 16
			if perRequest < 1 || st.Entries != 16*perRequest {
				t.Errorf("no bucket: %d shapes for 16 token counts", st.Entries)
			}
		} else if st.Entries != 2*perRequest || st.Replays < 13*perRequest {
			// 17–31 tokens fill up to 32 (one shape: three rows); 32 needs
			// no fill (two rows).
			t.Errorf("bucket 16: %+v; want 2 shapes (%d segments each), the one of 17–31 tokens captured once and replayed",
				st, perRequest)
		}
		be.Close()
	}
}

// Every attention kernel (tensor cores at 2, 4 and 8 warps a block, the
// whole-row ones at 4, 6 and 8, and the float32 tiled ones), with RoPE folded
// in, on packed batches against the float64 reference: head dims 32, 64
// and 128, rows longer than a chunk of keys and than a tile of queries, a
// one-token row, sliding windows wider and narrower than a chunk, and
// rows the whole-row kernels take (at most 128 tokens). Tolerances per precision: the float32 kernels
// and FP16X2's two-term products about float32's, FP16's one rounding of
// q, k, v and the probabilities to fp16 about 2^-11 relative.
func TestAttentionKernels(t *testing.T) {
	open(t, cuda.Options{}).Close()
	cases := []backend.AttentionParams{
		{Layout: backend.Layout{SeqLen: 130, Lengths: []int{93, 5, 130, 1, 17}}, Heads: 2, HeadDim: 64, Scale: 0.125, Sliding: true, Radius: 64},
		{Layout: backend.Layout{SeqLen: 130, Lengths: []int{93, 5, 130, 1, 17}}, Heads: 3, HeadDim: 64, Scale: 0.125},
		{Layout: backend.Layout{SeqLen: 40, Lengths: []int{40, 7, 33}}, Heads: 3, HeadDim: 32, Scale: 0.18, Sliding: true, Radius: 3},
		{Layout: backend.Layout{SeqLen: 200, Lengths: []int{70, 200}}, Heads: 1, HeadDim: 128, Scale: 0.09},
		// Rows that fit the whole-row kernels (at most 128 tokens).
		{Layout: backend.Layout{SeqLen: 128, Lengths: []int{93, 5, 128, 1, 17}}, Heads: 2, HeadDim: 64, Scale: 0.125, Sliding: true, Radius: 20},
		{Layout: backend.Layout{SeqLen: 100, Lengths: []int{70, 100}}, Heads: 2, HeadDim: 128, Scale: 0.09},
	}
	type kernel struct {
		name string
		opts cuda.Options
		tol  float64
	}
	var kernels []kernel
	for _, p := range precisions {
		tol := 2e-5
		switch p {
		case cuda.FP16:
			tol = 2e-2
		case cuda.FP16X2:
			tol = 5e-5
		}
		kernels = append(kernels, kernel{p.String() + " simt", cuda.Options{Precision: p, SIMTAttention: true}, 2e-5})
		if p == cuda.FP16 || p == cuda.FP16X2 {
			for _, w := range []int{1, 2, 4, 8} {
				kernels = append(kernels, kernel{fmt.Sprintf("%v mma %d warps", p, w), cuda.Options{Precision: p, MMAWarps: w}, tol})
			}
			kernels = append(kernels, kernel{fmt.Sprintf("%v mma key-split", p), cuda.Options{Precision: p, AttentionSplit: true}, tol})
			for _, w := range []int{4, 6, 8} {
				kernels = append(kernels, kernel{fmt.Sprintf("%v rows %d warps", p, w), cuda.Options{Precision: p, RowWarps: w, MMAWarps: 4}, tol})
			}
		}
	}
	for _, k := range kernels {
		t.Run(strings.ReplaceAll(k.name, " ", "_"), func(t *testing.T) {
			be := open(t, k.opts)
			defer be.Close()
			for ci, p := range cases {
				p.Packed = true
				width, cols := p.Heads*p.HeadDim, 3*p.Heads*p.HeadDim
				rope := backend.RopeParams{Layout: p.Layout, Heads: p.Heads, HeadDim: p.HeadDim, Theta: 160000}
				// The reference runs on the padded layout.
				padded := make([]float64, len(p.Lengths)*p.SeqLen*cols)
				var in []float32
				seed := uint64(ci + 1)
				for b, n := range p.Lengths {
					for i := range n * cols {
						seed = seed*6364136223846793005 + 1442695040888963407
						v := float32(int64(seed>>40)-1<<23) / float32(1<<22) // [-2, 2)
						in = append(in, v)
						padded[b*p.SeqLen*cols+i] = float64(v)
					}
				}
				rows := len(in) / cols
				padRope := rope
				padRope.Packed, padRope.Lengths = false, nil
				padAttn := p
				padAttn.Packed = false
				ref := backendtest.AttentionRef(backendtest.RopeRef(padded, len(p.Lengths)*p.SeqLen, padRope), padAttn)
				s := be.NewStream()
				qkv := s.FromHost(rows, cols, in)
				dst := s.New(rows, width)
				s.Rope(qkv, rope)
				s.Attention(dst, qkv, p)
				got := make([]float32, rows*width)
				if err := s.Read(context.Background(), dst, got); err != nil {
					t.Fatal(err)
				}
				s.Close()
				worst, at := 0.0, 0
				r := 0
				for b, n := range p.Lengths {
					for i := range n {
						for c := range width {
							want := ref[(b*p.SeqLen+i)*width+c]
							if d := math.Abs(float64(got[r*width+c])-want) / (1 + math.Abs(want)); !(d <= worst) {
								worst, at = d, r*width+c
							}
						}
						r++
					}
				}
				if !(worst <= k.tol) { // NaN fails
					t.Errorf("case %d (%+v): output %d off by %.3g (relative to 1+|want|), tolerance %.3g", ci, p, at, worst, k.tol)
				} else {
					t.Logf("case %d: worst %.3g", ci, worst)
				}
			}
		})
	}
}

// A producer (LayerNorm, attention, GeGLU) whose output is discarded after
// the GEMMs that read its 16-bit copy stores only the copy. The GEMMs'
// outputs are then those of the same recording without the Discards, bit
// for bit, and near the float64 reference, run kernel by kernel, captured
// and replayed; a Read of a discarded output is an error in the 16-bit
// precisions and gives it in FP32, which has no copies. The attention runs
// on the tiled kernels (head dim 32), the tensor-core ones (MMAWarps) and
// the plain kernel (head dim 16).
func TestDiscardedProducers(t *testing.T) {
	open(t, cuda.Options{}).Close()
	const d, inner, eps = 64, 48, 1e-5
	layout := backend.Layout{SeqLen: 20, Lengths: []int{20, 13}}
	rows := len(layout.Lengths) * layout.SeqLen
	seed := uint64(7)
	values := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			seed = seed*6364136223846793005 + 1442695040888963407
			v[i] = float32(float64(int64(seed>>40)-1<<23) / float64(1<<23) * scale) // [-scale, scale)
		}
		return v
	}
	xs, gs, bs := values(rows*d, 2), values(d, 1), values(d, 0.5)
	for i := range gs {
		gs[i] += 1.5
	}
	wqkv, w1 := values(3*d*d, 1/math.Sqrt(d)), values(2*inner*d, 1/math.Sqrt(d))
	wo, w2 := values(d*d, 1/math.Sqrt(d)), values(d*inner, 1/math.Sqrt(inner))
	// The float64 reference.
	matmul := func(x []float64, w []float32, m, k, n int) []float64 {
		y := make([]float64, m*n)
		for r := range m {
			for c := range n {
				acc := 0.0
				for i := range k {
					acc += x[r*k+i] * float64(w[c*k+i])
				}
				y[r*n+c] = acc
			}
		}
		return y
	}
	normed := make([]float64, rows*d)
	for r := range rows {
		row := xs[r*d : (r+1)*d]
		mean, v := 0.0, 0.0
		for _, x := range row {
			mean += float64(x)
		}
		mean /= d
		for _, x := range row {
			v += (float64(x) - mean) * (float64(x) - mean)
		}
		inv := 1 / math.Sqrt(v/d+eps)
		for c, x := range row {
			normed[r*d+c] = (float64(x)-mean)*inv*float64(gs[c]) + float64(bs[c])
		}
	}
	up := matmul(normed, w1, rows, d, 2*inner)
	act := make([]float64, rows*inner)
	for r := range rows {
		for c := range inner {
			v, u := up[r*2*inner+c], up[r*2*inner+inner+c]
			act[r*inner+c] = 0.5 * v * math.Erfc(-v/math.Sqrt2) * u
		}
	}
	wantF := matmul(act, w2, rows, inner, d)

	type attn struct {
		name        string
		heads, dh   int
		mma         bool
		wantO       []float64
		attnWeights []float32
	}
	var attns []*attn
	for _, a := range []attn{{name: "tiled", heads: 2, dh: 32}, {name: "mma", heads: 2, dh: 32, mma: true}, {name: "plain", heads: 4, dh: 16}} {
		p := backend.AttentionParams{Layout: layout, Heads: a.heads, HeadDim: a.dh, Scale: float32(1 / math.Sqrt(float64(a.dh)))}
		a.wantO = matmul(backendtest.AttentionRef(matmul(normed, wqkv, rows, d, 3*d), p), wo, rows, d, d)
		attns = append(attns, &a)
	}
	raw := func(v []float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	tolerance := map[cuda.Precision]float64{cuda.FP32: 1e-4, cuda.FP16X2: 5e-3, cuda.FP16: 2e-2, cuda.BF16: 8e-2}
	for _, prec := range precisions {
		for _, a := range attns {
			if a.mma && prec != cuda.FP16 && prec != cuda.FP16X2 {
				continue
			}
			t.Run(fmt.Sprintf("%v_%s", prec, a.name), func(t *testing.T) {
				opts := cuda.Options{Precision: prec}
				if a.mma {
					opts.MMAWarps = 4
				}
				be := open(t, opts)
				defer be.Close()
				upload := func(name string, r, c int, v []float32) backend.Tensor {
					w, err := be.Upload(name, backend.F32, r, c, raw(v))
					if err != nil {
						t.Fatal(err)
					}
					return w
				}
				g, b := upload("g", 1, d, gs), upload("b", 1, d, bs)
				Wqkv, W1, Wo, W2 := upload("wqkv", 3*d, d, wqkv), upload("w1", 2*inner, d, w1), upload("wo", d, d, wo), upload("w2", d, inner, w2)
				p := backend.AttentionParams{Layout: layout, Heads: a.heads, HeadDim: a.dh, Scale: float32(1 / math.Sqrt(float64(a.dh)))}
				// run records the layer and reads its two outputs, then
				// the LayerNorm's.
				run := func(discard bool) (o, f, n []float32, nerr error) {
					s := be.NewStream()
					defer s.Close()
					dead := func(t backend.Tensor) {
						if discard {
							backend.Discard(s, t)
						}
					}
					x := s.FromHost(rows, d, xs)
					normedT, qkv, attnT, upT, actT := s.New(rows, d), s.New(rows, 3*d), s.New(rows, d), s.New(rows, 2*inner), s.New(rows, inner)
					oT, fT := s.New(rows, d), s.New(rows, d)
					s.LayerNorm(normedT, x, g, b, eps)
					s.Linear(qkv, normedT, Wqkv, nil, backend.Identity)
					s.Linear(upT, normedT, W1, nil, backend.Identity)
					dead(normedT)
					s.Attention(attnT, qkv, p)
					s.Linear(oT, attnT, Wo, nil, backend.Identity)
					dead(attnT)
					s.GeGLU(actT, upT)
					s.Linear(fT, actT, W2, nil, backend.Identity)
					dead(actT)
					o, f, n = make([]float32, rows*d), make([]float32, rows*d), make([]float32, rows*d)
					for _, r := range []struct {
						t   backend.Tensor
						dst []float32
					}{{oT, o}, {fT, f}} {
						if err := s.Read(context.Background(), r.t, r.dst); err != nil {
							t.Fatal(err)
						}
					}
					return o, f, n, s.Read(context.Background(), normedT, n)
				}
				worst := func(got []float32, want []float64) (float64, int) {
					w, at := 0.0, 0
					for i := range want {
						if e := math.Abs(float64(got[i])-want[i]) / (1 + math.Abs(want[i])); !(e <= w) {
							w, at = e, i
						}
					}
					return w, at
				}
				tol := tolerance[prec]
				for i := range 3 { // kernel by kernel, captured, replayed
					o, f, n, nerr := run(true)
					ko, kf, kn, kerr := run(false)
					if kerr != nil {
						t.Fatalf("run %d: Read of the norm's output, not discarded: %v", i, kerr)
					}
					if prec == cuda.FP32 {
						if nerr != nil {
							t.Errorf("run %d: FP32: Read of a discarded norm's output: %v", i, nerr)
						} else if e, at := worst(n, normed); !(e <= tol) {
							t.Errorf("run %d: FP32: discarded norm's output %d off by %.3g", i, at, e)
						}
					} else if nerr == nil || !strings.Contains(nerr.Error(), "read of discarded tensor") {
						t.Errorf("run %d: Read of the discarded norm's output: %v, want a read of discarded tensor error", i, nerr)
					}
					if e, at := worst(kn, normed); !(e <= tol) {
						t.Errorf("run %d: norm's output %d off by %.3g", i, at, e)
					}
					for _, c := range []struct {
						name      string
						got, kept []float32
						want      []float64
					}{{"attention, Wo", o, ko, a.wantO}, {"GeGLU, W2", f, kf, wantF}} {
						for j := range c.got {
							if math.Float32bits(c.got[j]) != math.Float32bits(c.kept[j]) {
								t.Errorf("run %d: %s: element %d %g with the Discards, %g without", i, c.name, j, c.got[j], c.kept[j])
								break
							}
						}
						if e, at := worst(c.got, c.want); !(e <= tol) { // NaN fails
							t.Errorf("run %d: %s: element %d off by %.3g (relative to 1+|want|), tolerance %.3g", i, c.name, at, e, tol)
						} else if i == 0 {
							t.Logf("%s: worst %.3g", c.name, e)
						}
					}
				}
			})
		}
	}
}

// The registered backend declares itself an accelerator (laya serve batches
// greedily on it by default) whose passes run side by side to advantage
// (laya serve runs two dispatchers on it); no GPU needed.
func TestRegisteredAsAccelerator(t *testing.T) {
	for _, tr := range []struct {
		name string
		t    backend.Trait
	}{{"Accelerator", backend.Accelerator}, {"PassesSideBySide", backend.PassesSideBySide}} {
		if !backend.HasTrait(cuda.Name, tr.t) {
			t.Errorf("cuda is not registered with backend.%s", tr.name)
		}
	}
}

// fewRows is how many rows the backend's Linears on few rows take at most
// (Options.NoSmallLinear): beyond, cuBLAS.
const fewRows = 16

// uniform returns n deterministic values in [lo, hi), seed picking them.
func uniform(n int, seed uint64, lo, hi float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		seed = seed*6364136223846793005 + 1442695040888963407
		out[i] = float32(lo + (hi-lo)*float64(seed>>11)/(1<<53))
	}
	return out
}

// asWeight is w as precision p keeps a resident weight for its GEMMs: fp16
// in FP16 and FP16X2, bf16 in BF16 (nearest even, as the GPU rounds).
func asWeight(p cuda.Precision, w []float32) []float64 {
	out := make([]float64, len(w))
	for i, v := range w {
		switch p {
		case cuda.FP16, cuda.FP16X2:
			v = half.Float16ToFloat32(half.Float32ToFloat16(v))
		case cuda.BF16:
			v = half.BFloat16ToFloat32(half.Float32ToBFloat16(v))
		}
		out[i] = float64(v)
	}
	return out
}

// gemmInput is the relative rounding of a cuBLAS GEMM's float32 input in
// p: its 16-bit operand (one fp16 or bf16 term, or FP16X2's two fp16 terms,
// about 2^-22 with a margin for the second term's subnormals).
func gemmInput(p cuda.Precision) float64 {
	switch p {
	case cuda.FP16:
		return 0x1p-11
	case cuda.BF16:
		return 0x1p-8
	case cuda.FP16X2:
		return 0x1p-21
	}
	return 0
}

func activation(a backend.Activation, v float64) float64 {
	switch a {
	case backend.GELU:
		return 0.5 * v * math.Erfc(-v/math.Sqrt2)
	case backend.ReLU:
		return max(v, 0)
	}
	return v
}

// linearRef is a Linear in float64, want = act(x·wᵀ + b) for x [m, k] and
// w [n, k] (b may be nil), with each output's tolerance: x's rounding ux
// (relative; 0 where the kernel reads float32 x as it is) and xerr (the
// absolute error of an x the GPU computed) carried through the product,
// float32 accumulation as 4·sqrt(k) units of 2^-24 of Σ|x·w| (rounding
// errors of random sign grow as sqrt(k); this is several times that, and
// a hundred times below a dropped bias or residual of these tests'
// sizes), the output's own rounding, and the activation's slope (GELU's
// is below 1.13).
func linearRef(x, w, b []float64, m, k, n int, act backend.Activation, ux, xerr float64) (want, tol []float64) {
	want, tol = make([]float64, m*n), make([]float64, m*n)
	acc := 4 * math.Sqrt(float64(k)) * 0x1p-24
	for r := range m {
		for j := range n {
			var dot, abs, wabs float64
			for l := range k {
				p := x[r*k+l] * w[j*k+l]
				dot += p
				abs += math.Abs(p)
				wabs += math.Abs(w[j*k+l])
			}
			if b != nil {
				dot += b[j]
				abs += math.Abs(b[j])
			}
			v := activation(act, dot)
			want[r*n+j] = v
			tol[r*n+j] = 1.13*((ux+acc)*abs+xerr*wabs) + 0x1p-22*math.Abs(v)
		}
	}
	return want, tol
}

func float64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

func rawF32(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return out
}

// near reports the first output off by more than its tolerance (NaN
// fails) and returns the worst error relative to its tolerance.
func near(t *testing.T, where string, got []float32, want, tol []float64) float64 {
	t.Helper()
	worst := 0.0
	for i, w := range want {
		d := math.Abs(float64(got[i]) - w)
		if !(d <= tol[i]) {
			t.Errorf("%s: output %d is %v, want %v (off by %.3g, tolerance %.3g)", where, i, got[i], w, d, tol[i])
			return math.Inf(1)
		}
		worst = max(worst, d/tol[i])
	}
	return worst
}

// Linears on 16 rows or fewer run on the backend's own kernel (small=on),
// more rows on cuBLAS: in every precision, with small=on and off, against
// a float64 reference with the weights rounded as the precision keeps them
// and x as it is (the kernel reads float32 x; cuBLAS's 16-bit operand
// rounds it, which its tolerance allows: see linearRef). Shapes: 1, 3, 4
// and 5 (either side of the kernel's two row counts), 16 and 17 rows; k
// odd (37, 517, 1031), a multiple of 4 but not 8 (1028: float32 weights
// in 16-byte loads, 16-bit ones one at a time) and of 8 (64, 1024, 2624);
// 1, 7 and 300 outputs (1 and 7 leave a block's four columns part empty,
// 1 is a weight without a 16-bit copy until a GEMM asks). Each with and
// without bias, Identity, ReLU and GELU; then the residual fold (Linear,
// Add, Discard: the product added into the Add's target), and a LayerNorm
// feeding a Linear feeding a Linear (the 16-bit copies a producer writes
// for cuBLAS, asked for or not) beside a GEMM whose weight is the
// stream's (cuBLAS in the 16-bit precisions). All twice: kernel by kernel,
// then captured in a graph.
func TestFewRowsLinear(t *testing.T) {
	open(t, cuda.Options{}).Close()
	ctx := context.Background()
	shapes := []struct{ m, k, n int }{
		{1, 37, 7}, {1, 2624, 300}, {3, 517, 300}, {3, 1028, 1}, {4, 1031, 7}, {5, 64, 300},
		{16, 1031, 300}, {16, 2624, 7}, {16, 37, 1}, {16, 1028, 300}, {17, 517, 300}, {17, 2624, 7},
	}
	variants := []struct {
		bias bool
		act  backend.Activation
	}{{false, backend.Identity}, {true, backend.Identity}, {true, backend.ReLU}, {false, backend.GELU}, {true, backend.GELU}}
	read := func(t *testing.T, s backend.Stream, x backend.Tensor) []float32 {
		t.Helper()
		out := make([]float32, x.Rows()*x.Cols())
		if err := s.Read(ctx, x, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, p := range precisions {
		for _, off := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/small=%v", p, map[bool]string{false: "on", true: "off"}[off]), func(t *testing.T) {
				be := open(t, cuda.Options{Precision: p, NoSmallLinear: off})
				defer be.Close()
				ux := func(m int) float64 {
					if !off && m <= fewRows {
						return 0
					}
					return gemmInput(p)
				}
				upload := func(name string, rows, cols int, v []float32) backend.Tensor {
					w, err := be.Upload(name, backend.F32, rows, cols, rawF32(v))
					if err != nil {
						t.Fatal(err)
					}
					return w
				}
				// Weights of magnitude 1/sqrt(k): outputs of about 1.
				type linearCase struct {
					x    []float32
					w, b backend.Tensor
					wr   []float64 // w as the precision rounds it
					br   []float64
				}
				ws := make([]linearCase, len(shapes))
				for i, sh := range shapes {
					a := 1 / math.Sqrt(float64(sh.k))
					w, b := uniform(sh.n*sh.k, uint64(3*i+1), -a, a), uniform(sh.n, uint64(3*i+2), -1, 1)
					ws[i] = linearCase{uniform(sh.m*sh.k, uint64(3*i+3), -1, 1), upload(fmt.Sprint("w", i), sh.n, sh.k, w),
						upload(fmt.Sprint("b", i), 1, sh.n, b), asWeight(p, w), float64s(b)}
				}
				worst := 0.0
				for round := range 2 {
					for i, sh := range shapes {
						for _, v := range variants {
							where := fmt.Sprintf("round %d, %+v, bias %v, %v", round, sh, v.bias, v.act)
							c := ws[i]
							var b backend.Tensor
							var br []float64
							if v.bias {
								b, br = c.b, c.br
							}
							s := be.NewStream()
							x := s.FromHost(sh.m, sh.k, c.x)
							y := s.New(sh.m, sh.n)
							s.Linear(y, x, c.w, b, v.act)
							got := read(t, s, y)
							s.Close()
							want, tol := linearRef(float64s(c.x), c.wr, br, sh.m, sh.k, sh.n, v.act, ux(sh.m), 0)
							worst = max(worst, near(t, where, got, want, tol))
						}
					}
					// The residual fold: h += x·wᵀ.
					for _, i := range []int{2, 6, 10} {
						sh, c := shapes[i], ws[i]
						h0 := uniform(sh.m*sh.n, uint64(100+i), -1, 1)
						s := be.NewStream()
						x := s.FromHost(sh.m, sh.k, c.x)
						h := s.FromHost(sh.m, sh.n, h0)
						prod := s.New(sh.m, sh.n)
						s.Linear(prod, x, c.w, nil, backend.Identity)
						s.Add(h, h, prod)
						backend.Discard(s, prod)
						got := read(t, s, h)
						s.Close()
						want, tol := linearRef(float64s(c.x), c.wr, nil, sh.m, sh.k, sh.n, backend.Identity, ux(sh.m), 0)
						for j := range want {
							want[j] += float64(h0[j])
							tol[j] += 0x1p-23 * math.Abs(float64(h0[j]))
						}
						worst = max(worst, near(t, fmt.Sprintf("round %d, residual fold, %+v", round, sh), got, want, tol))
					}
					// LayerNorm → Linear (GELU) → Linear, and a GEMM on the
					// stream's weight reading the norm after the first.
					for _, m := range []int{3, fewRows, fewRows + 1} {
						const k, n1, n2, n3 = 1024, 1032, 300, 64
						seed := uint64(200 + m)
						xs := uniform(m*k, seed, -1, 1)
						gv := uniform(k, seed+1, 0.5, 1.5)
						w1v, b1v := uniform(n1*k, seed+2, -1/32.0, 1/32.0), uniform(n1, seed+3, -1, 1)
						w2v, b2v := uniform(n2*n1, seed+4, -1/32.0, 1/32.0), uniform(n2, seed+5, -1, 1)
						w3v := uniform(n3*k, seed+6, -1/32.0, 1/32.0)
						g, w1, b1 := upload("g", 1, k, gv), upload("w1", n1, k, w1v), upload("b1", 1, n1, b1v)
						w2, b2 := upload("w2", n2, n1, w2v), upload("b2", 1, n2, b2v)
						s := be.NewStream()
						x := s.FromHost(m, k, xs)
						nrm, y, z, u := s.New(m, k), s.New(m, n1), s.New(m, n2), s.New(m, n3)
						s.LayerNorm(nrm, x, g, nil, 1e-5)
						s.Linear(y, nrm, w1, b1, backend.GELU)
						s.Linear(u, nrm, s.FromHost(n3, k, w3v), nil, backend.Identity)
						s.Linear(z, y, w2, b2, backend.Identity)
						gz := read(t, s, z)
						gu := read(t, s, u)
						s.Close()
						norm := make([]float64, m*k)
						for r := range m {
							var mean, vr float64
							for _, v := range xs[r*k : (r+1)*k] {
								mean += float64(v)
							}
							mean /= k
							for _, v := range xs[r*k : (r+1)*k] {
								vr += (float64(v) - mean) * (float64(v) - mean)
							}
							inv := 1 / math.Sqrt(vr/k+1e-5)
							for l := range k {
								norm[r*k+l] = (float64(xs[r*k+l]) - mean) * inv * float64(gv[l])
							}
						}
						// The norm's float32 error: a few units of 2^-24 of
						// values below 3.
						const normErr = 1e-5
						yw, yt := linearRef(norm, asWeight(p, w1v), float64s(b1v), m, k, n1, backend.GELU, ux(m), normErr)
						zw, zt := linearRef(yw, asWeight(p, w2v), float64s(b2v), m, n1, n2, backend.Identity, ux(m), slices.Max(yt))
						// The stream's weight: cuBLAS in the 16-bit
						// precisions (rounded operands), the kernel in FP32.
						uw, ut := linearRef(norm, asWeight(p, w3v), nil, m, k, n3, backend.Identity, max(ux(m), gemmInput(p)), normErr)
						where := fmt.Sprintf("round %d, %d rows, layer norm → linear → linear", round, m)
						worst = max(worst, near(t, where, gz, zw, zt))
						worst = max(worst, near(t, where+", beside a GEMM on the stream's weight", gu, uw, ut))
					}
				}
				t.Logf("worst error %.3g of its tolerance", worst)
				// The kernel the Linears ran on, by the profiler's names.
				prof := be.(backend.Profiler)
				prof.SetProfiling(true)
				for _, m := range []int{1, fewRows, fewRows + 1} {
					s := be.NewStream()
					y := s.New(m, shapes[2].n)
					s.Linear(y, s.FromHost(m, shapes[2].k, uniform(m*shapes[2].k, 7, -1, 1)), ws[2].w, ws[2].b, backend.GELU)
					read(t, s, y)
					s.Close()
					small := slices.ContainsFunc(prof.OpTimes(), func(o backend.OpTime) bool { return strings.HasSuffix(o.Op, "(small)") })
					if want := !off && m <= fewRows; small != want {
						t.Errorf("%d rows: profiled %v; want the backend's own kernel %v", m, prof.OpTimes(), want)
					}
					prof.SetProfiling(true) // clears the times
				}
				prof.SetProfiling(false)
			})
		}
	}
}

// gemmRef is the float64 product x·wᵀ (x m×k, w n×k) of the operands as
// prec rounds them for the GEMM (weights to fp16 or bf16; x to fp16 or
// bf16, or in FP16X2 to two fp16 terms, the second the rounding of what
// the first missed), and the sum of its terms' magnitudes.
func gemmRef(prec cuda.Precision, m, n, k int, x, w []float32) (p, mag []float64) {
	round := func(v float32) float32 {
		if prec == cuda.BF16 {
			return half.BFloat16ToFloat32(half.Float32ToBFloat16(v))
		}
		return half.Float16ToFloat32(half.Float32ToFloat16(v))
	}
	xr, wr := make([]float64, m*k), make([]float64, n*k)
	for i, v := range x {
		hi := round(v)
		xr[i] = float64(hi)
		if prec == cuda.FP16X2 {
			xr[i] += float64(round(v - hi))
		}
	}
	for i, v := range w {
		wr[i] = float64(round(v))
	}
	p, mag = make([]float64, m*n), make([]float64, m*n)
	var wg sync.WaitGroup
	for r := range m {
		wg.Go(func() {
			xs := xr[r*k : (r+1)*k]
			for c := range n {
				ws := wr[c*k : (c+1)*k]
				var s, a float64
				for j, v := range xs {
					s += v * ws[j]
					a += math.Abs(v * ws[j])
				}
				p[r*n+c], mag[r*n+c] = s, a
			}
		})
	}
	wg.Wait()
	return p, mag
}

// Every GEMM path of Linear in the 16-bit precisions, cuBLASLt tuned and
// untuned and cuBLAS, against a float64 reference from the operands as the
// precision rounds them: m rows of 1 to 200, k up to 2624, n from 8 to
// 3072; without and with a bias, Identity, ReLU (both epilogues of
// cuBLASLt) and GELU (bias_act's); the residual fold (Linear, Add(x, x,
// p), Discard(p): beta = 1); in FP16X2 the stacked product of a plain
// Linear (the batched GEMM) and the two-term GEMMs of the others. Each
// shape runs kernel by kernel (where cuBLASLt tunes) and then from a
// captured graph. The products of 16-bit operands are exact in float32,
// so only the float32 accumulation errs: at most about k·2⁻²⁴ times the
// sum of the terms' magnitudes in order (a split-K sum does no worse); the
// tolerance is eight times that, plus 1e-5 relative for the bias,
// residual and GELU's float32 arithmetic. A dropped bias (values up to 1)
// or residual (up to 2), or an algorithm writing anything else, is off by
// orders of magnitude more.
func TestLinearGEMMPaths(t *testing.T) {
	open(t, cuda.Options{}).Close()
	type shape struct{ m, k, n int }
	var shapes []shape
	for _, m := range []int{1, 17, 96, 200} {
		for _, k := range []int{64, 1024, 2624} {
			for _, n := range []int{8, 1024, 3072} {
				shapes = append(shapes, shape{m, k, n})
			}
		}
	}
	uniform := func(seed *uint64, lo, hi float32) float32 {
		*seed = *seed*6364136223846793005 + 1442695040888963407
		return lo + (hi-lo)*float32(*seed>>40)/float32(1<<24)
	}
	type data struct{ x, w, bias, base []float32 }
	inputs := make([]data, len(shapes))
	for i, sh := range shapes {
		seed := uint64(i + 1)
		d := data{make([]float32, sh.m*sh.k), make([]float32, sh.n*sh.k), make([]float32, sh.n), make([]float32, sh.m*sh.n)}
		for j := range d.x {
			d.x[j] = uniform(&seed, -1, 1)
		}
		for j := range d.w {
			d.w[j] = uniform(&seed, -1.0/16, 1.0/16)
		}
		for j := range d.bias {
			d.bias[j] = uniform(&seed, -1, 1)
		}
		for j := range d.base {
			d.base[j] = uniform(&seed, -2, 2)
		}
		inputs[i] = d
	}
	gelu := func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }
	relu := func(v float64) float64 { return max(v, 0) }
	type variant struct {
		name string
		bias bool
		act  backend.Activation
		fold bool // the residual: base + x·wᵀ folded into the GEMM
		f    func(v float64) float64
	}
	variants := []variant{
		{"plain", false, backend.Identity, false, nil}, {"bias", true, backend.Identity, false, nil},
		{"relu", false, backend.ReLU, false, relu}, {"bias+relu", true, backend.ReLU, false, relu},
		{"gelu", false, backend.GELU, false, gelu}, {"bias+gelu", true, backend.GELU, false, gelu},
		{"residual", false, backend.Identity, true, nil},
	}
	raw := func(v []float32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)) }
	// The GeGLU check runs on the wide products (n ≥ 64), which the model's
	// GEMMs that feed a GeGLU are.
	withGLU := func(n int) bool { return n >= 64 && n%8 == 0 }
	boolInt := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	modes := []struct {
		name string
		opts cuda.Options
	}{{"lt", cuda.Options{}}, {"lt-untuned", cuda.Options{NoTune: true}}, {"lt-64-candidates", cuda.Options{TuneCandidates: 64}},
		{"lt-splitk", cuda.Options{SplitK: true}},
		{"blas", cuda.Options{GEMMBLAS: true}},
		// linear_mma for every shape here (FP16 and FP16X2; BF16 stays on
		// cuBLASLt), launched plain and with programmatic dependent launch.
		{"mma", cuda.Options{MMARows: cuda.MaxMMARows}}, {"mma-nopdl", cuda.Options{MMARows: cuda.MaxMMARows, NoPDL: true}},
		// linear_cl and linear_wg (FP16 and FP16X2's reduced streams:
		// here, FP16), linear_wg in its plan's clusters and in clusters of
		// five (where the slices fit), launched plain once.
		{"cl", cuda.Options{ClusterRows: cuda.MaxMMARows}}, {"wg", cuda.Options{WGRows: cuda.MaxMMARows}},
		{"wg-splits=5", cuda.Options{WGRows: cuda.MaxMMARows, WGSplits: 5}},
		{"wg-nopdl", cuda.Options{WGRows: cuda.MaxMMARows, NoPDL: true}},
		{"wg-tma", cuda.Options{WGRows: cuda.MaxMMARows, WGTMA: true}}, {"wg-tma-ring=3", cuda.Options{WGRows: cuda.MaxMMARows, WGTMA: true, WGRing: 3}}}
	for _, prec := range []cuda.Precision{cuda.FP16, cuda.BF16, cuda.FP16X2} {
		refs := make([][2][]float64, len(shapes))
		for i, sh := range shapes {
			p, mag := gemmRef(prec, sh.m, sh.n, sh.k, inputs[i].x, inputs[i].w)
			refs[i] = [2][]float64{p, mag}
		}
		for _, md := range modes {
			t.Run(fmt.Sprintf("%v/%s", prec, md.name), func(t *testing.T) {
				opts := md.opts
				// m = 1 would run on the few-rows kernel, which reads x
				// unrounded (TestFewRowsLinear); these are the GEMMs.
				opts.Precision, opts.NoSmallLinear = prec, true
				be := open(t, opts)
				defer be.Close()
				dev := be.(interface{ Device() string }).Device()
				if md.name != "blas" && strings.Contains(dev, "no cuBLASLt") {
					t.Skipf("%s: libcublasLt not found", dev)
				}
				worst := 0.0
				for i, sh := range shapes {
					in := inputs[i]
					w, err := be.Upload("w", backend.F32, sh.n, sh.k, raw(in.w))
					if err != nil {
						t.Fatal(err)
					}
					bias, err := be.Upload("bias", backend.F32, 1, sh.n, raw(in.bias))
					if err != nil {
						t.Fatal(err)
					}
					p, mag := refs[i][0], refs[i][1]
					// Kernel by kernel, captured, replayed.
					for pass := range 3 {
						s := be.NewStream()
						x := s.FromHost(sh.m, sh.k, in.x)
						// A GeGLU of the product: in FP16 the GEMM writes its
						// output as fp16 for the GeGLU alone (Discard).
						hn := sh.n / 2
						var glu backend.Tensor
						if withGLU(sh.n) {
							glu = s.New(sh.m, hn)
							tmp := s.New(sh.m, sh.n)
							s.Linear(tmp, x, w, nil, backend.Identity)
							s.GeGLU(glu, tmp)
							s.(backend.Discarder).Discard(tmp)
						}
						outs := make([]backend.Tensor, len(variants))
						for vi, v := range variants {
							var b backend.Tensor
							if v.bias {
								b = bias
							}
							if v.fold {
								outs[vi] = s.FromHost(sh.m, sh.n, in.base)
								tmp := s.New(sh.m, sh.n)
								s.Linear(tmp, x, w, nil, v.act)
								s.Add(outs[vi], outs[vi], tmp)
								s.(backend.Discarder).Discard(tmp)
								continue
							}
							outs[vi] = s.New(sh.m, sh.n)
							s.Linear(outs[vi], x, w, b, v.act)
						}
						got := make([]float32, sh.m*sh.n)
						if glu != nil {
							if err := s.Read(context.Background(), glu, got[:sh.m*hn]); err != nil {
								t.Fatalf("%+v geglu pass %d: %v", sh, pass, err)
							}
							bad := 0
							for r := range sh.m {
								for c := range hn {
									i, j := r*sh.n+c, r*sh.n+hn+c
									v, u := p[i], p[j]
									// Each operand's GEMM error, and fp16's rounding
									// of it where the GEMM writes fp16.
									ev := 8*float64(sh.k)*0x1p-24*mag[i] + 1e-5*(1+math.Abs(v)) + math.Abs(v)*0x1p-11
									eu := 8*float64(sh.k)*0x1p-24*mag[j] + 1e-5*(1+math.Abs(u)) + math.Abs(u)*0x1p-11
									want := gelu(v) * u
									tol := 1.2*math.Abs(u)*ev + math.Abs(gelu(v))*eu + 1e-5*(1+math.Abs(want))
									g := float64(got[r*hn+c])
									if d := math.Abs(g - want); !(d <= tol) {
										if bad++; bad <= 3 {
											t.Errorf("%+v geglu pass %d: [%d,%d] = %v, want %v (off by %.3g, tolerance %.3g)", sh, pass, r, c, g, want, d, tol)
										}
									} else {
										worst = max(worst, d/tol)
									}
								}
							}
						}
						for vi, v := range variants {
							if err := s.Read(context.Background(), outs[vi], got); err != nil {
								t.Fatalf("%+v %s pass %d: %v", sh, v.name, pass, err)
							}
							bad := 0
							for r := range sh.m {
								for c := range sh.n {
									want := p[r*sh.n+c]
									if v.bias {
										want += float64(in.bias[c])
									}
									if v.fold {
										want += float64(in.base[r*sh.n+c])
									}
									if v.f != nil {
										want = v.f(want)
									}
									i := r*sh.n + c
									d := math.Abs(float64(got[i]) - want)
									tol := 8*float64(sh.k)*0x1p-24*mag[i] + 1e-5*(1+math.Abs(want))
									if !(d <= tol) { // NaN fails
										if bad++; bad <= 3 {
											t.Errorf("%+v %s pass %d: [%d,%d] = %v, want %v (off by %.3g, tolerance %.3g)", sh, v.name, pass, r, c, got[i], want, d, tol)
										}
									}
									worst = max(worst, d/tol)
								}
							}
						}
						s.Close()
					}
				}
				st := be.(interface{ Stats() cuda.Stats }).Stats()
				t.Logf("%s: worst error %.3g of the tolerance; %+v", dev, worst, st)
				tunes := !md.opts.GEMMBLAS && !md.opts.NoTune
				own := md.opts.MMARows > 0 && prec != cuda.BF16
				// linear_cl (one fp16 term) and linear_wg (one or two) take
				// the GEMMs their kernels fit (linear_wg no GELU, slices
				// that fit shared memory), the rest going to cuBLASLt: some
				// of each, not all.
				some := md.opts.ClusterRows > 0 && prec == cuda.FP16 || md.opts.WGRows > 0 && prec != cuda.BF16
				gemms := 0 // each shape's, in the run kernel by kernel
				for _, sh := range shapes {
					gemms += len(variants) + boolInt(withGLU(sh.n))
				}
				switch {
				case own && (st.GEMMOwn != gemms || st.GEMMTuned != 0):
					t.Errorf("%d GEMMs on linear_mma, %d shapes tuned; want %d and none (%+v)", st.GEMMOwn, st.GEMMTuned, gemms, st)
				case st.PDLRefused != 0:
					t.Errorf("%d captures refused programmatic dependent launches (%+v)", st.PDLRefused, st)
				case own:
				case some && st.GEMMOwn == 0:
					t.Errorf("no GEMM on the mode's own kernel (%+v)", st)
				case some:
				case st.GEMMOwn != 0:
					t.Errorf("%d GEMMs on linear_mma (%+v)", st.GEMMOwn, st)
				case tunes && st.GEMMTuned == 0:
					t.Errorf("no GEMM shape tuned (%+v)", st)
				case !tunes && st.GEMMTuned != 0:
					t.Errorf("%d GEMM shapes tuned (%+v)", st.GEMMTuned, st)
				case md.name == "blas" && st.GEMMFallback != 0:
					t.Errorf("cuBLAS run counted cuBLASLt fallbacks (%+v)", st)
				case prec != cuda.FP16X2 && st.GEMMFallback != 0:
					// Only the FP16X2 batch (one weight for both terms) may
					// find cuBLASLt without an algorithm.
					t.Errorf("cuBLASLt had no algorithm for %d shapes (%+v)", st.GEMMFallback, st)
				}
				if st.Captures == 0 {
					t.Errorf("nothing captured (%+v)", st)
				}
			})
		}
	}
}

// The second Open with the same kernel cache loads the cubin the first
// kept, and the backend it opens computes as a compiled one does.
func TestKernelCache(t *testing.T) {
	dir := t.TempDir()
	for i, want := range []bool{false, true} {
		be := open(t, cuda.Options{KernelCache: dir})
		if got := be.(interface{ Stats() cuda.Stats }).Stats().KernelsCached; got != want {
			t.Errorf("open %d: kernels from the cache %v, want %v", i+1, got, want)
		}
		be.Close()
	}
	if err := cuda.SelfTest(context.Background(), cuda.Options{KernelCache: dir}); err != nil {
		t.Errorf("self-test on cached kernels: %v", err)
	}
	// The core's cubin, and the extras' on a GPU whose shared memory
	// cannot hold the four-warp tensor-core attention.
	if files, _ := filepath.Glob(filepath.Join(dir, "*.cubin")); len(files) != 1 && len(files) != 2 {
		t.Errorf("cache holds %v, want the core's cubin (and the extras')", files)
	}
	be := open(t, cuda.Options{KernelCache: "off"})
	if be.(interface{ Stats() cuda.Stats }).Stats().KernelsCached {
		t.Error("cache=off loaded cached kernels")
	}
	be.Close()
}

// geglu=vec (geglu4, a float4 a thread) agrees with geglu bit for bit, in
// every precision: on a GEMM's output (two stacked terms in FP16X2 on more
// than smallRows rows) and on a few-rows Linear's, writing the float32
// output and the 16-bit copy the next GEMM reads; an inner width that is not
// a multiple of 4 falls back to geglu. With the GEMM's output discarded
// after the GeGLU, FP16 writes it as fp16 (tensor.halfLin): geglu and geglu4
// still agree, and the results stay within fp16's rounding of the float32
// path's; the other precisions do not change.
func TestVecGeGLU(t *testing.T) {
	open(t, cuda.Options{}).Close()
	const d = 32
	seed := uint64(11)
	values := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			seed = seed*6364136223846793005 + 1442695040888963407
			v[i] = float32(float64(int64(seed>>40)-1<<23) / float64(1<<23) * scale)
		}
		return v
	}
	raw := func(v []float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	for _, sh := range []struct{ rows, inner int }{{40, 48}, {3, 100}, {20, 6}, {17, 2624}} {
		xs, gs := values(sh.rows*d, 2), values(d, 1)
		w1, w2 := values(2*sh.inner*d, 1/math.Sqrt(d)), values(d*sh.inner, 1/math.Sqrt(float64(sh.inner)))
		for _, prec := range precisions {
			t.Run(fmt.Sprintf("%v/%dx%d", prec, sh.rows, sh.inner), func(t *testing.T) {
				var got [2][2][2][]float32 // [scalar, vec][kept, discarded][act, f]
				for k, vec := range []bool{false, true} {
					for dk, discard := range []bool{false, true} {
						// Untuned: two backends' timed GEMM choices could
						// differ in their last bits, which this test is not
						// about.
						be := open(t, cuda.Options{Precision: prec, ScalarGeGLU: !vec, NoTune: true})
						upload := func(name string, r, c int, v []float32) backend.Tensor {
							w, err := be.Upload(name, backend.F32, r, c, raw(v))
							if err != nil {
								t.Fatal(err)
							}
							return w
						}
						g, W1, W2 := upload("g", 1, d, gs), upload("w1", 2*sh.inner, d, w1), upload("w2", d, sh.inner, w2)
						s := be.NewStream()
						x := s.FromHost(sh.rows, d, xs)
						n, up, act, f := s.New(sh.rows, d), s.New(sh.rows, 2*sh.inner), s.New(sh.rows, sh.inner), s.New(sh.rows, d)
						s.LayerNorm(n, x, g, nil, 1e-5)
						s.Linear(up, n, W1, nil, backend.Identity)
						s.GeGLU(act, up)
						if discard {
							backend.Discard(s, up)
						}
						s.Linear(f, act, W2, nil, backend.Identity)
						got[k][dk] = [2][]float32{make([]float32, sh.rows*sh.inner), make([]float32, sh.rows*d)}
						for i, tn := range []backend.Tensor{act, f} {
							if err := s.Read(context.Background(), tn, got[k][dk][i]); err != nil {
								t.Fatal(err)
							}
						}
						s.Close()
						be.Close()
					}
				}
				for i, name := range []string{"geglu output", "next GEMM's output"} {
					for dk := range 2 {
						for j := range got[0][dk][i] {
							if math.Float32bits(got[0][dk][i][j]) != math.Float32bits(got[1][dk][i][j]) {
								t.Fatalf("%s %d (discarded %v): geglu %v, geglu4 %v", name, j, dk == 1, got[0][dk][i][j], got[1][dk][i][j])
							}
						}
					}
					kept, disc := got[0][0][i], got[0][1][i]
					if prec != cuda.FP16 {
						if !slices.Equal(kept, disc) {
							t.Fatalf("%s: discarding the GEMM's output changed %v's results", name, prec)
						}
						continue
					}
					// fp16 rounding of the GeGLU's inputs moves each output
					// by a few of fp16's ulps of the row's largest; the
					// float32 bits of a GEMM output read as fp16 would not.
					big, differ := 0.0, false
					for _, v := range kept {
						big = max(big, math.Abs(float64(v)))
					}
					for j := range kept {
						if e := math.Abs(float64(disc[j] - kept[j])); e > big/256 {
							t.Fatalf("%s %d: %v with the GEMM's output in fp16, %v in float32", name, j, disc[j], kept[j])
						}
						differ = differ || disc[j] != kept[j]
					}
					if !differ && sh.rows > 16 {
						t.Errorf("%s: the same with the GEMM's output discarded: not written in fp16?", name)
					}
				}
			})
		}
	}
}

// gelu_exp (the default, GEGLU_EXP=1) on the GPU, whose rcp.approx and ex2.approx
// the emulator's TestEmuGeluExp stands in for with correctly rounded ones:
// GeGLU's float32 output in FP16 and FP16X2 against float64's GELU at
// 20,001 inputs from −10 to 10 (cuda.GeluInputs), within cuda.CheckGeluExp's
// bounds.
func TestGeluExp(t *testing.T) {
	x, inner := cuda.GeluInputs(20000)
	for _, prec := range []cuda.Precision{cuda.FP16, cuda.FP16X2} {
		be := open(t, cuda.Options{Precision: prec})
		s := be.NewStream()
		up, act := s.FromHost(1, 2*inner, x), s.New(1, inner)
		s.GeGLU(act, up)
		y := make([]float32, inner)
		if err := s.Read(context.Background(), act, y); err != nil {
			t.Fatal(err)
		}
		s.Close()
		be.Close()
		for i := range inner {
			if err := cuda.CheckGeluExp(float64(x[i]), y[i]); err != nil {
				t.Fatalf("%v: %v", prec, err)
			}
		}
	}
}

// In FP16 a qkv GEMM whose output only the tensor-core attention reads
// (its RoPE folded in) before the model discards it writes fp16, which the
// attention reads: the output stays within FP16's tolerance of the float64
// reference, and differs from the same recording with qkv kept (fp16 q and
// k rotated, then rounded again), which shows that the fp16 path ran. Each
// qkv element is x_i + ⅓·x_{i+1} (a two-entry weight row), so that the
// GEMM's float32 output is not already an fp16 value.
func TestHalfAttention(t *testing.T) {
	open(t, cuda.Options{}).Close()
	cases := []backend.AttentionParams{
		{Layout: backend.Layout{SeqLen: 130, Lengths: []int{93, 5, 130, 1, 17}}, Heads: 2, HeadDim: 64, Scale: 0.125, Sliding: true, Radius: 64},
		{Layout: backend.Layout{SeqLen: 40, Lengths: []int{40, 7, 33}}, Heads: 3, HeadDim: 32, Scale: 0.18},
	}
	third := float64(half.Float16ToFloat32(half.Float32ToFloat16(1.0 / 3)))
	for _, w := range []int{1, 2, 4, 8, 0} {
		// 0: the key-split kernels.
		be := open(t, cuda.Options{Precision: cuda.FP16, MMAWarps: w, AttentionSplit: w == 0, NoTune: true})
		kernel := fmt.Sprintf("%d warps", w)
		if w == 0 {
			kernel = "key-split"
		}
		for ci, p := range cases {
			p.Packed = true
			width, cols := p.Heads*p.HeadDim, 3*p.Heads*p.HeadDim
			rope := backend.RopeParams{Layout: p.Layout, Heads: p.Heads, HeadDim: p.HeadDim, Theta: 160000}
			rows := 0
			for _, n := range p.Lengths {
				rows += n
			}
			in := uniform(rows*cols, uint64(ci+7), -2, 2)
			weight := make([]float32, cols*cols)
			for i := range cols {
				weight[i*cols+i], weight[i*cols+(i+1)%cols] = 1, float32(third)
			}
			// The reference's qkv: the GEMM of fp16 x with the fp16 weight,
			// on the padded layout.
			padded := make([]float64, len(p.Lengths)*p.SeqLen*cols)
			x16 := asWeight(cuda.FP16, in)
			r := 0
			for b, n := range p.Lengths {
				for i := range n {
					for c := range cols {
						padded[(b*p.SeqLen+i)*cols+c] = x16[r*cols+c] + third*x16[r*cols+(c+1)%cols]
					}
					r++
				}
			}
			padRope, padAttn := rope, p
			padRope.Packed, padRope.Lengths, padAttn.Packed = false, nil, false
			ref := backendtest.AttentionRef(backendtest.RopeRef(padded, len(p.Lengths)*p.SeqLen, padRope), padAttn)
			W, err := be.Upload(fmt.Sprintf("w%d", ci), backend.F32, cols, cols, rawF32(weight))
			if err != nil {
				t.Fatal(err)
			}
			var got [2][]float32 // qkv kept, discarded
			for k, discard := range []bool{false, true} {
				s := be.NewStream()
				x, qkv, dst := s.FromHost(rows, cols, in), s.New(rows, cols), s.New(rows, width)
				s.Linear(qkv, x, W, nil, backend.Identity)
				s.Rope(qkv, rope)
				s.Attention(dst, qkv, p)
				if discard {
					backend.Discard(s, qkv)
				}
				got[k] = make([]float32, rows*width)
				if err := s.Read(context.Background(), dst, got[k]); err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
			worst, differ := 0.0, false
			r = 0
			for b, n := range p.Lengths {
				for i := range n {
					for c := range width {
						want := ref[(b*p.SeqLen+i)*width+c]
						v := got[1][r*width+c]
						if d := math.Abs(float64(v)-want) / (1 + math.Abs(want)); !(d <= worst) {
							worst = d
						}
						differ = differ || v != got[0][r*width+c]
					}
					r++
				}
			}
			if !(worst <= 2e-2) {
				t.Errorf("%s, case %d: fp16 qkv: off by %.3g (relative to 1+|want|), tolerance 2e-2", kernel, ci, worst)
			}
			if !differ {
				t.Errorf("%s, case %d: the same output with qkv discarded: did the GEMM write fp16?", kernel, ci)
			}
		}
		be.Close()
	}
}

// One packed forward of one tiny-en case in each precision and attention
// kind, kernel by kernel, captured and replayed: every kernel a forward runs
// (the float32 and tensor-core attention, GEMM outputs in fp16 for GeGLU and
// attention, the few-rows Linear, the heads) at a size compute-sanitizer's
// racecheck gets through (scripts/gpucheck/cuda.sh, sanitize). FP32's
// logits are held to upstream's, as a sign the forward ran;
// TestForwardGoldens is the parity test.
func TestSanitizerForward(t *testing.T) {
	open(t, cuda.Options{}).Close()
	ctx := context.Background()
	ckpt, err := weights.LoadCheckpoint(oracletest.Checkpoint("tiny-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	c := oracletest.Cases(t, "tiny-en")[0]
	for _, cf := range []struct {
		name string
		opts cuda.Options
	}{
		{"fp32", cuda.Options{Precision: cuda.FP32}},
		{"bf16", cuda.Options{Precision: cuda.BF16}},
		{"fp16", cuda.Options{Precision: cuda.FP16}},
		{"fp16x2", cuda.Options{Precision: cuda.FP16X2}},
		{"fp16x2+nopdl", cuda.Options{Precision: cuda.FP16X2, NoPDL: true}},
		{"fp16+mma", cuda.Options{Precision: cuda.FP16, MMAWarps: 4}},
		{"fp16x2+mma", cuda.Options{Precision: cuda.FP16X2, MMAWarps: 4}},
		// The GEMMs on linear_mma (every precision launches its kernels
		// with PDL by default).
		{"fp16+own", cuda.Options{Precision: cuda.FP16, MMARows: cuda.MaxMMARows}},
		{"fp16x2+own", cuda.Options{Precision: cuda.FP16X2, MMARows: cuda.MaxMMARows}},
		{"fp16x2+own+attnsplit", cuda.Options{Precision: cuda.FP16X2, MMARows: cuda.MaxMMARows, AttentionSplit: true}},
		// The GEMMs of one fp16 term on linear_cl (thread block clusters)
		// and on linear_wg (warpgroup products).
		{"fp16+cl", cuda.Options{Precision: cuda.FP16, ClusterRows: cuda.MaxMMARows}},
		{"fp16+wg", cuda.Options{Precision: cuda.FP16, WGRows: cuda.MaxMMARows}},
		{"fp16+wg+tma", cuda.Options{Precision: cuda.FP16, WGRows: cuda.MaxMMARows, WGTMA: true}},
		// The float32 attention of few tiles on the tiled kernel's warp a
		// query instead of attn_reg.
		{"fp32+attnreg=off", cuda.Options{Precision: cuda.FP32, NoRegAttention: true}},
	} {
		t.Run(cf.name, func(t *testing.T) {
			be := open(t, cf.opts)
			defer be.Close()
			parts, err := forwardpass.NewParts(be, ckpt)
			if err != nil {
				t.Fatal(err)
			}
			run := forwardtest.RunPacked(parts)
			for pass := range 3 {
				logits, _, err := run(ctx, be, forwardtest.Rows(c.Rows), int32(ckpt.Encoder.PadTokenID), nil)
				if err != nil {
					t.Fatalf("pass %d: %v", pass, err)
				}
				if cf.opts.Precision != cuda.FP32 {
					continue
				}
				for i, want := range c.Rows {
					oracletest.Compare(t, fmt.Sprintf("case %s %s pass %d logits", c.Name, want.QID, pass), logits[i], want.Logits, oracletest.LogitTol)
				}
			}
		})
	}
}
