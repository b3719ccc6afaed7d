package metal

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"
	"structs"
	"time"
	"unicode/utf8"

	"github.com/laya-metal/laya/kernels"
)

// This file holds the system device's options and the pure logic behind it
// (sizes, alignment, constants, argument checks). It has no build tag so that
// go test on Linux exercises it; the Objective-C calls live in *_darwin.go.

// SystemOptions configures OpenSystem.
type SystemOptions struct {
	// Sources are the MSL files to compile, as for the emulator. Every file
	// whose name ends in ".metal" becomes its own library; other files
	// (headers) are reachable only through #include "name". Nil means the
	// kernels package's embedded sources, named "kernels/<file>".
	Sources []KernelSource
	// LanguageVersion is the MSL version the kernels are compiled as. The
	// zero value means DefaultMSLVersion. It is always set explicitly and
	// read back: a cgo-free binary carries no SDK version the Metal compiler
	// trusts (golang/go#77917), and its default then drops to MSL 2.4.
	LanguageVersion MSLVersion
	// MathMode is the compiler's floating-point mode. The zero value,
	// MathSafe, keeps results close to the Go references and the emulator;
	// kernels can still call fast:: functions where they want speed.
	// Metal's own default is fast math, hence always set explicitly; with
	// MathSafe the device also asks for precise floating-point functions
	// (macOS 15) and reads the choice back (SystemInfo.FPFunctions).
	// MathFast is refused: the kernels rely on -INFINITY.
	MathMode MathMode
	// EncodePools runs Dispatch and Barrier inside an autorelease pool too.
	// Their messages create no autoreleased object in any documented way,
	// so they run bare (a pool push and pop per dispatch is not free); a
	// driver that autoreleases there anyway leaks one object per dispatch
	// on a Go thread, which OBJC_DEBUG_MISSING_POOLS=YES reports
	// (scripts/maccheck/mac-check.sh's pools step), and this turns the
	// pools on. OpenSystemDefault sets it from LAYA_METAL_ENCODE_POOLS=1.
	EncodePools bool
	// Labels names command buffers (setLabel:) and wraps each dispatch
	// in a debug group (pushDebugGroup:) named by the backend (operation,
	// ordinal, kernel; DebugLabeler), so that Xcode's GPU capture and the
	// Metal validation layer say which operation they mean. It costs an
	// NSString per dispatch. OpenSystemDefault turns it on with
	// LAYA_METAL_LABELS=1, and whenever MTL_SHADER_VALIDATION=1 or
	// MTL_DEBUG_LAYER=1 asks for validation.
	Labels bool
}

// labelsFromEnv is Labels as OpenSystemDefault sets it.
func labelsFromEnv(getenv func(string) string) bool {
	return getenv("LAYA_METAL_LABELS") == "1" || getenv("MTL_SHADER_VALIDATION") == "1" || getenv("MTL_DEBUG_LAYER") == "1"
}

// systemFingerprint identifies what decides a system device's results: the
// GPU, the sources and the compile options (metal.Fingerprinter). Two
// devices of one process with the same fingerprint run the same compiled
// kernels on the same GPU, so a self-test passed on one speaks for the
// other (laya serve --backend auto opens the GPU once to choose it and
// once per model it loads).
func systemFingerprint(gpu string, registryID uint64, files map[string]string, msl MSLVersion, mode MathMode) string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(files[name]))
		h.Write([]byte(files[name]))
	}
	return fmt.Sprintf("metal|%s|%#x|msl %s|%s|%x", gpu, registryID, msl, mode, h.Sum(nil))
}

// EncodePoolsEnv is the environment variable that sets
// SystemOptions.EncodePools for OpenSystemDefault.
const EncodePoolsEnv = "LAYA_METAL_ENCODE_POOLS"

// MathMode is MTLMathMode: how freely the Metal compiler may rewrite
// floating-point code.
type MathMode int

// MathMode values, numbered as MTLMathMode (MTLLibrary.h).
const (
	MathSafe    MathMode = 0 // IEEE 754 semantics, no unsafe rewrites
	MathRelaxed MathMode = 1 // reassociation allowed, inf/NaN kept
	MathFast    MathMode = 2 // also assumes no inf/NaN: refused by OpenSystem (see checkMathMode)
)

func (m MathMode) String() string {
	switch m {
	case MathSafe:
		return "safe"
	case MathRelaxed:
		return "relaxed"
	case MathFast:
		return "fast"
	}
	return "MathMode(" + strconv.Itoa(int(m)) + ")"
}

// sourceMap indexes the sources by name, defaulting to package kernels.
func (o SystemOptions) sourceMap() (map[string]string, error) {
	files := map[string]string{}
	if o.Sources == nil {
		err := fs.WalkDir(kernels.FS(), ".", func(name string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := fs.ReadFile(kernels.FS(), name)
			files["kernels/"+name] = string(b)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%w: reading package kernels: %v", ErrShaderCompile, err)
		}
		return files, nil
	}
	for _, src := range o.Sources {
		if _, dup := files[src.Name]; dup {
			return nil, fmt.Errorf("%w: kernel source %q given twice", ErrShaderCompile, src.Name)
		}
		files[src.Name] = src.Text
	}
	return files, nil
}

// MSLVersion is a Metal Shading Language version.
type MSLVersion struct{ Major, Minor int }

// DefaultMSLVersion is MSL 3.1 (macOS 14): the first with bfloat vectors
// and the oldest the kernels are written for.
var DefaultMSLVersion = MSLVersion{3, 1}

func (v MSLVersion) String() string { return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) }

func (v MSLVersion) less(w MSLVersion) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// mtlLanguageVersion encodes v as MTLLanguageVersion: (major << 16) + minor
// (MTLLibrary.h, e.g. MTLLanguageVersion3_1 = 0x30001).
func (v MSLVersion) mtlLanguageVersion() uint64 { return uint64(v.Major)<<16 | uint64(v.Minor) }

func mslVersionOf(mtl uint64) MSLVersion {
	return MSLVersion{Major: int(mtl >> 16), Minor: int(mtl & 0xffff)}
}

// resolvedLanguageVersion applies the default and refuses versions older
// than the kernels need.
func (o SystemOptions) resolvedLanguageVersion() (MSLVersion, error) {
	v := o.LanguageVersion
	if v == (MSLVersion{}) {
		v = DefaultMSLVersion
	}
	if v.less(DefaultMSLVersion) || v.Minor < 0 || v.Minor > 0xffff {
		return v, fmt.Errorf("%w: MSL %s requested; the kernels need MSL %s or newer", ErrShaderCompile, v, DefaultMSLVersion)
	}
	return v, nil
}

// mtlSize is MTLSize {NSUInteger width, height, depth}: 24 bytes, so on
// arm64 (AAPCS64: composites over 16 bytes) it travels by reference to a
// caller-made copy, and on amd64 in memory; purego's struct support does
// both when the trampoline takes it by value.
type mtlSize struct {
	_                    structs.HostLayout
	Width, Height, Depth uint64
}

func toMTLSize(s Size3) mtlSize {
	return mtlSize{Width: uint64(s.X), Height: uint64(s.Y), Depth: uint64(s.Z)}
}

// MTLDataType values (MTLDataType.h) of the function-constant types we take.
const (
	mtlDataTypeFloat = 3
	mtlDataTypeInt   = 29
	mtlDataTypeUInt  = 33
	mtlDataTypeBool  = 53
)

// constantValue is one function constant ready for
// setConstantValue:type:atIndex:.
type constantValue struct {
	index    int
	dataType uint64
	bytes    []byte // little-endian value as the GPU reads it
}

// encodeConstants validates function constants and returns them sorted by
// index together with the pipeline-cache key for (kernel, constants).
func encodeConstants(kernel string, cs []Constant) ([]constantValue, string, error) {
	out := make([]constantValue, 0, len(cs))
	for _, c := range cs {
		if c.Index < 0 || c.Index > math.MaxUint16 {
			return nil, "", fmt.Errorf("%w: kernel %s: function constant index %d out of range", ErrPipeline, kernel, c.Index)
		}
		v := constantValue{index: c.Index}
		switch x := c.Value.(type) {
		case bool:
			v.dataType, v.bytes = mtlDataTypeBool, []byte{0}
			if x {
				v.bytes[0] = 1
			}
		case int32:
			v.dataType, v.bytes = mtlDataTypeInt, binary.LittleEndian.AppendUint32(nil, uint32(x))
		case uint32:
			v.dataType, v.bytes = mtlDataTypeUInt, binary.LittleEndian.AppendUint32(nil, x)
		case float32:
			v.dataType, v.bytes = mtlDataTypeFloat, binary.LittleEndian.AppendUint32(nil, math.Float32bits(x))
		default:
			return nil, "", fmt.Errorf("%w: kernel %s: function constant %d has Go type %T; use bool, int32, uint32 or float32",
				ErrPipeline, kernel, c.Index, c.Value)
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	var key strings.Builder
	key.WriteString(kernel)
	for i, v := range out {
		if i > 0 && out[i-1].index == v.index {
			return nil, "", fmt.Errorf("%w: kernel %s: function constant %d given twice", ErrPipeline, kernel, v.index)
		}
		fmt.Fprintf(&key, "|%d:%d=%x", v.index, v.dataType, v.bytes)
	}
	return out, key.String(), nil
}

// hostClock converts Metal's host times (GPUStartTime, GPUEndTime: seconds
// on the mach_absolute_time clock, the CACurrentMediaTime base) to wall-clock
// times through one pair of readings taken together.
type hostClock struct {
	wall time.Time
	host float64 // seconds on the host clock at wall
}

func (c hostClock) at(host float64) time.Time {
	if host == 0 {
		return time.Time{} // Metal reports 0 when it has no timestamp
	}
	return c.wall.Add(time.Duration((host - c.host) * float64(time.Second)))
}

// checkMathMode accepts the math modes the kernels are correct under.
// MathFast lets the compiler assume no inf or NaN, but the kernels start
// their max reductions from -INFINITY and mask with it (softmax, attention),
// so fast math would silently break them: it is refused, not offered.
func checkMathMode(m MathMode) error {
	switch m {
	case MathSafe, MathRelaxed:
		return nil
	case MathFast:
		return fmt.Errorf("%w: math mode fast is not supported: it assumes no inf/NaN, and the kernels start reductions from -INFINITY (use safe or relaxed)", ErrShaderCompile)
	}
	return fmt.Errorf("%w: unknown math mode %s", ErrShaderCompile, m)
}

// FPFunctions is MTLMathFloatingPointFunctions (MTLLibrary.h, macOS 15):
// which exp, log, sqrt, ... the compiler links. Metal's default is Fast
// even under MathSafe, so with MathSafe the device asks for Precise and
// reads the value back.
type FPFunctions int

// FPFunctions values, numbered as MTLMathFloatingPointFunctions, and
// FPFunctionsUnavailable for a macOS (< 15) without the property, where
// MathSafe (fastMathEnabled = NO) already means precise functions.
const (
	FPFunctionsFast        FPFunctions = 0
	FPFunctionsPrecise     FPFunctions = 1
	FPFunctionsUnavailable FPFunctions = -1
)

func (f FPFunctions) String() string {
	switch f {
	case FPFunctionsFast:
		return "fast"
	case FPFunctionsPrecise:
		return "precise"
	case FPFunctionsUnavailable:
		return "n/a"
	}
	return "FPFunctions(" + strconv.Itoa(int(f)) + ")"
}

// wantFPFunctions is what a math mode asks of mathFloatingPointFunctions:
// precise for MathSafe (the kernels are held to float64 references with
// tolerances of a few ulp), the default (fast) for MathRelaxed.
func wantFPFunctions(m MathMode) FPFunctions {
	if m == MathSafe {
		return FPFunctionsPrecise
	}
	return FPFunctionsFast
}

// MTLGPUFamilyApple1 numbers the Apple GPU families (MTLDevice.h:
// MTLGPUFamilyApple1 = 1001 ... MTLGPUFamilyApple9 = 1009). The kernels
// need Apple7 (A14, M1 and later): simdgroup matrices.
const (
	mtlGPUFamilyApple1 = 1001
	requiredAppleGPU   = 7
	newestAppleGPU     = 10 // MTLGPUFamilyApple10 = 1010: M5, macOS 26 (as llama.cpp's ggml-metal logs it)
)

// appleFamily is the highest Apple GPU family for which supports(1000+n)
// answers yes, 0 for none (an Intel or AMD GPU).
func appleFamily(supports func(family int) bool) int {
	best := 0
	for n := 1; n <= newestAppleGPU; n++ {
		if supports(mtlGPUFamilyApple1 - 1 + n) {
			best = n
		}
	}
	return best
}

// checkAppleFamily explains a GPU the kernels cannot run on.
func checkAppleFamily(name string, family int) error {
	if family >= requiredAppleGPU {
		return nil
	}
	if family == 0 {
		return fmt.Errorf("%w: %s is not an Apple-family GPU (an Intel Mac?): the kernels need Apple7 or later (M1 and later) for simdgroup matrices; use the cpu backend", ErrNoMetal, name)
	}
	return fmt.Errorf("%w: %s supports GPU family Apple%d; the kernels need Apple%d or later (M1 and later) for simdgroup matrices; use the cpu backend", ErrNoMetal, name, family, requiredAppleGPU)
}

// SystemInfo is what the system device found and chose at open, for
// reports (scripts/maccheck/mac-check.sh reads String's line from the test log).
type SystemInfo struct {
	Name                  string
	AppleFamily           int // highest MTLGPUFamilyAppleN supported
	LanguageVersion       MSLVersion
	MathMode              MathMode
	FPFunctions           FPFunctions // read back from the compile options
	PageSize              int
	MaxThreadgroupMemory  int
	MaxBufferLength       int
	UnifiedMemory         bool
	RecommendedWorkingSet uint64 // recommendedMaxWorkingSetSize, bytes
}

// String is one line of key=value pairs, the name quoted.
func (i SystemInfo) String() string {
	return fmt.Sprintf("metal-device name=%q family=apple%d msl=%s math=%s fp-functions=%s page=%d tg-memory=%d max-buffer=%d unified-memory=%v working-set=%d",
		i.Name, i.AppleFamily, i.LanguageVersion, i.MathMode, i.FPFunctions, i.PageSize, i.MaxThreadgroupMemory,
		i.MaxBufferLength, i.UnifiedMemory, i.RecommendedWorkingSet)
}

// invalidUTF8At is the byte offset of the first invalid UTF-8 sequence in
// s, or -1.
func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return -1
}
