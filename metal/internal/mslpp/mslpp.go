// Package mslpp turns a Metal Shading Language source into a C++ translation
// unit: for the MSL emulator (package metal/emu, target Emulator) or for
// NVRTC on an NVIDIA GPU (package metal/cuda, target CUDA; see cuda.go). One
// front end reads both: TranslateFor runs the same passes (includes, macros,
// conditionals, kernel signatures, instantiations, threadgroup
// declarations) and only the emitter differs. It reads every kernel's signature, rewrites the
// MSL constructs that are not C++ (threadgroup variables, function constants,
// half literals, C-style vector casts), finds the host names of templated
// kernels instantiated with template [[host_name("n")]] (directly or through
// a macro such as MLX's instantiate_kernel), and appends one entry point per
// kernel that binds buffers, threadgroup memory and thread-position builtins
// by attribute.
//
// It does not evaluate #if: clang does. What it finds inside a conditional
// block (a kernel, an instantiation, MSL the emulator lacks, an include it
// cannot read) is emitted under the same directives, so it exists, or
// fails, only when the block is compiled. #pragma once headers are inlined
// once; member functions overloaded on the address space of *this
// (MLX's complex64_t) are folded into one.
//
// It works on lines and statements rather than a full C++ parse, as the
// proof of concept in shared/spec/msl-kernels-emulator-performance.md
// (Part 1) did; clang then compiles the result against msl_shim.h. Every
// emitted line keeps a #line marker back to its .metal file so that compiler
// errors, diagnostics and ASan reports name the .metal line. MSL the
// emulator cannot run (textures, ray tracing, Metal 4 tensors, render
// stages) is refused with an error wrapping ErrUnsupported that names the
// file, line and feature.
package mslpp

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by every error about source the preprocessor cannot
// read; the message names the file and line.
var ErrSyntax = errors.New("mslpp: unsupported or malformed MSL")

// ErrUnsupported is wrapped (with ErrSyntax and errors.ErrUnsupported) by
// errors about valid MSL that the emulator does not implement: textures,
// samplers, ray tracing, Metal 4 tensors, vertex/fragment functions.
var ErrUnsupported = fmt.Errorf("%w: the MSL emulator does not implement it: %w", ErrSyntax, errors.ErrUnsupported)

// Source is one .metal file. Name appears in #line markers and diagnostics.
type Source struct {
	Name string
	Text string
}

// Includer resolves a local #include "name" seen in the file from.
type Includer func(from, name string) (Source, error)

// ParamKind says how a kernel parameter is bound.
type ParamKind int

const (
	// Buffer is a [[buffer(n)]] pointer.
	Buffer ParamKind = iota
	// BufferRef is a [[buffer(n)]] reference (constant T&): setBytes data.
	BufferRef
	// Threadgroup is a [[threadgroup(n)]] pointer sized by the dispatch.
	Threadgroup
	// Builtin is a thread-position attribute such as thread_position_in_grid.
	Builtin
)

// Param is one kernel parameter.
type Param struct {
	Name    string
	Type    string // as written, without attributes
	Kind    ParamKind
	Index   int    // buffer or threadgroup index
	Builtin string // attribute name for Builtin
	// FunctionConstant names the constant that makes the parameter optional
	// ([[buffer(5), function_constant(has_mask)]]); empty otherwise.
	FunctionConstant string
}

// Kernel is one kernel entry point of a source: a kernel function, or one
// host_name instantiation of a templated kernel.
type Kernel struct {
	// Name is the name the host asks for: the function's name, or its
	// [[host_name("...")]].
	Name string
	// Function is the C++ entity the entry point calls when it differs from
	// Name: "gemm<float, 32>" for an instantiation, the function's own name
	// for a non-template kernel with a host_name.
	Function string
	File     string
	Line     int
	Params   []Param
	// MaxThreads is [[max_total_threads_per_threadgroup(N)]] when N is an
	// integer literal, else 0.
	MaxThreads int
	// Guard is the preprocessor conditionals around the kernel, as
	// directive lines ("#ifdef A\n#else\n"), or empty: such a kernel
	// exists only when the conditions hold.
	Guard string
}

// FunctionConstant is a program-scope [[function_constant(i)]] declaration.
type FunctionConstant struct {
	Name  string
	Type  string
	Index int // as declared, 0..65535
	// Slot is the constant's position in the dispatch record (declaration
	// order, 0..63): MSL indices go up to 65535 (MLX uses 10, 100, 200...).
	Slot int
	File string
	Line int
}

// MaxConstants is how many function constants one source may declare.
const MaxConstants = 64

// ThreadgroupArray is one threadgroup variable declared in a function body.
type ThreadgroupArray struct {
	Name, Type, Dims string
	File             string
	Line             int
	Kernel           string // the non-template kernel whose body declares it, or ""
}

// Unit is a translated source.
type Unit struct {
	Kernels     []Kernel
	Constants   []FunctionConstant
	Threadgroup []ThreadgroupArray
	// CPP is the C++ translation unit; it includes "msl_shim.h".
	CPP string
}

// builtinField maps MSL builtin attributes to mslemu::Ctx fields. Scalar
// fields hold one value; the others hold x, y, z.
var builtinField = map[string]struct {
	field  string
	scalar bool
}{
	"thread_position_in_grid":             {"tpig", false},
	"thread_position_in_threadgroup":      {"tpitg", false},
	"threadgroup_position_in_grid":        {"tgpig", false},
	"threads_per_threadgroup":             {"tptg", false},
	"dispatch_threads_per_threadgroup":    {"tptg", false},
	"threadgroups_per_grid":               {"tgpg", false},
	"threads_per_grid":                    {"tpg", false},
	"thread_index_in_threadgroup":         {"tiitg", true},
	"thread_index_in_simdgroup":           {"lane", true},
	"thread_index_in_quadgroup":           {"qlane", true},
	"simdgroup_index_in_threadgroup":      {"sgitg", true},
	"simdgroups_per_threadgroup":          {"sgptg", true},
	"dispatch_simdgroups_per_threadgroup": {"sgptg", true},
	"thread_execution_width":              {"width", true},
	"threads_per_simdgroup":               {"width", true},
	"quadgroup_index_in_threadgroup":      {"qgitg", true},
	"quadgroups_per_threadgroup":          {"qgptg", true},
	"dispatch_quadgroups_per_threadgroup": {"qgptg", true},
}

// IsBuiltin reports whether name is a thread-position attribute the
// emulator supplies.
func IsBuiltin(name string) bool { _, ok := builtinField[name]; return ok }

type line struct {
	text  string // original
	blank string // comments blanked, same length
	file  string
	num   int
	done  bool // already translated (a rewritten threadgroup statement)
	// unsupported names MSL the emulator cannot run found on this line
	// (an include of <metal_texture>...). Outside #if blocks it is an
	// error at once; inside one it becomes an #error line, which clang
	// reports only if the block is compiled (llama.cpp guards its Metal 4
	// tensor code with #ifdef GGML_METAL_HAS_TENSOR).
	unsupported string
	// guard holds the #if/#elif/#else directives that enclose the line,
	// include guards aside; empty when none.
	guard string
	depth int // how many such blocks enclose the line
	// includeErr is a local #include that could not be read: an error
	// outside #if blocks, an #error line inside one.
	includeErr error
}

var (
	includeRe    = regexp.MustCompile(`^\s*#\s*include\s*"([^"]+)"`)
	sysIncludeRe = regexp.MustCompile(`^\s*#\s*include\s*<([^>]+)>`)
	pragmaOnceRe = regexp.MustCompile(`^\s*#\s*pragma\s+once\b`)
)

// standIns are the <metal_*> headers the emulator's runtime directory
// provides (metal/emu/internal/rt/src); each includes msl_shim.h.
var standIns = map[string]bool{
	"metal_stdlib": true, "metal_common": true, "metal_compute": true, "metal_geometric": true,
	"metal_integer": true, "metal_math": true, "metal_relational": true, "metal_simdgroup": true,
	"metal_simdgroup_matrix": true, "metal_atomic": true, "metal_types": true, "metal_numeric": true,
	"metal_limits": true, "metal_type_traits": true, "metal_array": true, "metal_pack": true, "metal_matrix": true,
}

// unsupportedHeaders name what an include of them means.
var unsupportedHeaders = map[string]string{
	"metal_texture": "textures", "metal_imageblocks": "imageblocks", "metal_raytracing": "ray tracing",
	"metal_tensor": "Metal 4 tensors", "metal_graphics": "graphics functions", "metal_visible_function_table": "visible function tables",
	"metal_mesh": "mesh shaders", "metal_sampler": "samplers", "metal_uniform": "uniform<T>",
}

// expand inlines the local #includes of src. once holds the files that
// said #pragma once and were expanded already: MLX includes utils.h both
// directly and through other headers.
func expand(src Source, inc Includer, depth int, out []line, once map[string]bool) ([]line, error) {
	if depth > 32 {
		return nil, fmt.Errorf("%w: %s: #include nested more than 32 deep", ErrSyntax, src.Name)
	}
	texts := strings.Split(strings.ReplaceAll(src.Text, "\r\n", "\n"), "\n")
	blanks := strings.Split(blankComments(strings.ReplaceAll(src.Text, "\r\n", "\n")), "\n")
	for _, b := range blanks {
		if pragmaOnceRe.MatchString(b) {
			if once[src.Name] {
				return out, nil
			}
			once[src.Name] = true
			break
		}
	}
	for i, t := range texts {
		if m := includeRe.FindStringSubmatch(blanks[i]); m != nil {
			if inc == nil {
				return nil, fmt.Errorf("%w: %s:%d: #include %q: no include resolver", ErrSyntax, src.Name, i+1, m[1])
			}
			sub, err := inc(src.Name, m[1])
			if err != nil {
				// The include may sit in a branch of #if that is not
				// taken (llama.cpp's embedded-library switch); clang
				// reports it at this line only if the branch is live.
				out = append(out, line{text: t, blank: blanks[i], file: src.Name, num: i + 1,
					includeErr: fmt.Errorf("%s:%d: #include %q: %w", src.Name, i+1, m[1], err)})
				continue
			}
			out, err = expand(sub, inc, depth+1, out, once)
			if err != nil {
				return nil, err
			}
			continue
		}
		unsup := ""
		if m := sysIncludeRe.FindStringSubmatch(blanks[i]); m != nil {
			h := strings.TrimSpace(m[1])
			switch {
			case standIns[h]:
			case h == "simd/simd.h":
				// Host/shader shared headers include it for vector_float4
				// and friends, which the shim defines.
				t, blanks[i] = "", ""
			case strings.HasPrefix(h, "MetalPerformancePrimitives"):
				unsup = fmt.Sprintf("#include <%s>: Metal Performance Primitives (Metal 4 tensor ops)", h)
			case unsupportedHeaders[h] != "":
				unsup = fmt.Sprintf("#include <%s>: %s", h, unsupportedHeaders[h])
			case strings.HasPrefix(h, "metal_"):
				unsup = fmt.Sprintf("#include <%s>: no emulator stand-in for this header", h)
			}
		}
		out = append(out, line{text: t, blank: blanks[i], file: src.Name, num: i + 1, unsupported: unsup})
	}
	return out, nil
}

// blankComments replaces comment characters by spaces, keeping newlines and
// string literals, so offsets and line numbers stay those of the source.
func blankComments(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"' || b[i] == '\'':
			q := b[i]
			for i++; i < len(b) && b[i] != q && b[i] != '\n'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			b[i], b[i+1] = ' ', ' '
			for i += 2; i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/'); i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
			if i < len(b) {
				b[i] = ' '
				if i+1 < len(b) {
					b[i+1] = ' '
				}
				i++
			}
		}
	}
	return string(b)
}

// unsupported lists MSL the emulator refuses, matched on comment-free lines.
var unsupported = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`\b(texture(?:1d|2d|3d|cube|buffer)(?:_array|_ms|_ms_array)?)\s*<`), "textures (%s)"},
	{regexp.MustCompile(`\b(depth(?:2d|cube)(?:_array|_ms|_ms_array)?)\s*<`), "depth textures (%s)"},
	{regexp.MustCompile(`\b(sampler|constexpr\s+sampler)\s+\w+`), "samplers (%s)"},
	{regexp.MustCompile(`\b(raytracing::\w+|intersector\s*<|acceleration_structure\s*<|intersection_function_table\s*<|primitive_acceleration_structure|instance_acceleration_structure)`), "ray tracing (%s)"},
	{regexp.MustCompile(`\b(visible_function_table\s*<|\[\[\s*visible\s*\]\])`), "function tables (%s)"},
	{regexp.MustCompile(`\b(tensor\s*<|tensor_inline|tensor_handle|tensor_offset|mpp::\w+|cooperative_tensor\s*<)`), "Metal 4 tensors (%s)"},
	{regexp.MustCompile(`\b(imageblock\s*<|\[\[\s*imageblock_data)`), "imageblocks (%s)"},
	{regexp.MustCompile(`\[\[\s*(stage_in|position|color\(\d+\)|vertex_id|instance_id|render_target_array_index|sample_id)\s*\]\]`), "render-stage attributes ([[%s]]); only compute kernels run"},
	{regexp.MustCompile(`^\s*(?:\[\[[^\]]*\]\]\s*)*((?:vertex|fragment|mesh|object)\s+[\w:<>]+\s+\w+)\s*\(`), "render-stage functions (%s); only compute kernels run"},
}

// A kernel is "kernel void name(" or "[[kernel]] void name(" (with more
// attributes, as in MLX's [[kernel, max_total_threads_per_threadgroup(N)]]).
var (
	kernelRe   = regexp.MustCompile(`(?:\bkernel|\[\[\s*kernel\b[^\]]*\]\])\s+(?:\[\[[^\]]*\]\]\s*)*void\s+(\w+)\s*\(`)
	fcRe       = regexp.MustCompile(`^\s*constant\s+([\w:<>, ]+?)\s+(\w+)\s*\[\[\s*function_constant\s*\(\s*([^\]]+?)\s*\)\s*\]\]\s*;\s*$`)
	constInitR = regexp.MustCompile(`^\s*constant\s+([\w:<>, ]+?)\s+(\w+)\s*=\s*(.+?);\s*$`)
	tgWordRe   = regexp.MustCompile(`\bthreadgroup\s`)
	tgDeclRe   = regexp.MustCompile(`(?s)^threadgroup\s+(.+?)\s*\b(\w+)\s*((?:\[[^\]]*\]\s*)*)(=.*|\{.*)?$`)
	halfLitRe  = regexp.MustCompile(`\b(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?[hH]\b`)
	identRe    = regexp.MustCompile(`\w+`)
	hostNameRe = regexp.MustCompile(`host_name\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)`)
	maxTotalRe = regexp.MustCompile(`max_total_threads_per_threadgroup\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)`)
	defineRe   = regexp.MustCompile(`^\s*#\s*define\s+(\w+)(\([^)]*\))?`)
	instRe     = regexp.MustCompile(`(?s)\btemplate\s*((?:\[\[.*?\]\]\s*)+)(?:kernel\s+)?([^;{}]*?)\s*;`)
	castEndRe  = regexp.MustCompile(`\(\s*(?:(?:u?(?:char|short|int|long)|float|half|bfloat|bool)[234])\s*\)\s*$`)
	anyCastRe  = regexp.MustCompile(`\(\s*(\w+)\s*\)`)
	tmplHeadRe = regexp.MustCompile(`\btemplate\s*<([^;{}]*?)>\s*(?:\[\[|\w)`)
	castRe     = regexp.MustCompile(`\(\s*((?:u?(?:char|short|int|long)|float|half|bfloat|bool)[234])\s*\)`)
)

// Target is the device a translation is for. Both targets share every pass
// that reads the source (includes, macros, conditionals, kernel signatures,
// template instantiations, threadgroup declarations); they differ in how
// threadgroup variables, function constants and entry points are written.
type Target int

const (
	// Emulator is C++ for clang against msl_shim.h (package metal/emu).
	Emulator Target = iota
	// CUDA is CUDA C++ for NVRTC against msl_cuda.h (package metal/cuda):
	// threadgroup variables become __shared__, function constants become
	// compile-time values, and each kernel gets an extern "C" __global__
	// entry point mslk_<n> (n: its position in Unit.Kernels).
	CUDA
)

// Translate preprocesses one .metal source for the emulator.
func Translate(src Source, inc Includer) (*Unit, error) {
	return TranslateFor(src, inc, Emulator)
}

// TranslateFor preprocesses one .metal source for target.
func TranslateFor(src Source, inc Includer, target Target) (*Unit, error) {
	t, err := newTranslation(src, inc, target)
	if err != nil {
		return nil, err
	}
	passes := []func() error{
		t.readMacros,
		t.markUnsupported,
		t.foldQualifiedMembers,
		t.findKernels,
		t.checkStrict,
		t.findInstantiations,
		t.checkDuplicateKernels,
		t.rewriteThreadgroupDecls,
	}
	for _, pass := range passes {
		if err := pass(); err != nil {
			return nil, err
		}
	}
	blankMultilineAttributes(t.lines)
	if target == CUDA {
		err = t.emitCUDA()
	} else {
		err = t.emitEmulator()
	}
	if err != nil {
		return nil, err
	}
	return t.u, nil
}

// translation is the state the passes of TranslateFor share.
type translation struct {
	src    Source
	target Target
	lines  []line
	// inDefine marks the lines of #define directives (with their
	// continuations): kernels and threadgroup declarations inside a macro
	// body are not seen until the compiler expands the macro, so they are
	// left alone.
	inDefine []bool
	macros   macroTable
	u        *Unit
	fns      []kernelFn
	// blank is the comment-free text of all lines joined; lineAt maps an
	// offset in it to a line index.
	blank  string
	lineAt func(int) int
}

// kernelFn is one kernel function definition, templated or not.
type kernelFn struct {
	name     string
	template bool
	head     string // template parameter list
	maxExpr  string // max_total_threads_per_threadgroup argument
	from, to int    // line indexes of the body
	kernel   Kernel // for templates: Params, File, Line, MaxThreads
}

func newTranslation(src Source, inc Includer, target Target) (*translation, error) {
	lines, err := expand(src, inc, 0, nil, map[string]bool{})
	if err != nil {
		return nil, err
	}
	return &translation{src: src, target: target, lines: lines, inDefine: make([]bool, len(lines)), macros: macroTable{}, u: &Unit{}}, nil
}

// readMacros records the #define directives (instantiation macros are
// expanded to find host names) and marks their lines, then the #if blocks.
func (t *translation) readMacros() error {
	lines := t.lines
	for i := 0; i < len(lines); i++ {
		if !defineRe.MatchString(lines[i].blank) {
			continue
		}
		j := i
		var body strings.Builder
		for {
			t.inDefine[j] = true
			s := strings.TrimRight(lines[j].blank, " \t")
			if !strings.HasSuffix(s, "\\") || j+1 >= len(lines) {
				body.WriteString(s)
				break
			}
			body.WriteString(strings.TrimSuffix(s, "\\"))
			body.WriteByte(' ')
			j++
		}
		t.macros.define(body.String())
		i = j
	}
	markConditionals(lines, t.inDefine)
	return nil
}

// markUnsupported refuses MSL the devices cannot run: at once outside #if
// blocks, as an #error line the compiler reports only if the block is
// compiled inside one. Unreadable includes are treated the same way.
func (t *translation) markUnsupported() error {
	for i := range t.lines {
		l := &t.lines[i]
		if l.unsupported == "" && !t.inDefine[i] {
			for _, un := range unsupported {
				if m := un.re.FindStringSubmatch(l.blank); m != nil {
					l.unsupported = fmt.Sprintf(un.what, strings.Join(strings.Fields(m[1]), " "))
					break
				}
			}
		}
		if l.includeErr != nil {
			if l.depth == 0 {
				return l.includeErr
			}
			msg := "#error " + strconv.Quote(l.includeErr.Error())
			l.text, l.blank, l.done = msg, strings.Repeat(" ", len(msg)), true
			continue
		}
		if l.unsupported == "" {
			continue
		}
		if l.depth == 0 {
			return fmt.Errorf("%w: %s:%d: %s", ErrUnsupported, l.file, l.num, l.unsupported)
		}
		msg := "#error " + strconv.Quote(l.unsupported+": the MSL emulator does not implement it")
		l.text, l.blank, l.done = msg, strings.Repeat(" ", len(msg)), true
	}
	return nil
}

// foldQualifiedMembers merges members overloaded on the address space of
// *this, then joins the comment-free text the following passes search.
func (t *translation) foldQualifiedMembers() error {
	rewriteQualifiedMembers(t.lines, t.inDefine)
	joined := joinBlank(t.lines)
	t.blank, t.lineAt = joined.text, joined.lineAt
	return nil
}

// findKernels reads every kernel definition: signature, attributes,
// template head and body span.
func (t *translation) findKernels() error {
	lines, blank, lineAt := t.lines, t.blank, t.lineAt
	for _, m := range kernelRe.FindAllStringSubmatchIndex(blank, -1) {
		name := blank[m[2]:m[3]]
		li := lineAt(m[0])
		if t.inDefine[li] {
			continue
		}
		open := m[1] - 1
		closeParen, ok := matching(blank, open, '(', ')')
		if !ok {
			return fmt.Errorf("%w: %s:%d: kernel %s: unbalanced parentheses", ErrSyntax, lines[li].file, lines[li].num, name)
		}
		k := Kernel{Name: name, File: lines[li].file, Line: lines[li].num, Guard: lines[li].guard}
		var err error
		if k.Params, err = parseParams(blank[open+1 : closeParen]); err != nil {
			if lines[li].depth == 0 {
				return fmt.Errorf("%w: %s:%d: kernel %s: %v", ErrSyntax, k.File, k.Line, name, err)
			}
			// Inside an #if block the kernel may never be compiled.
			msg := "#error " + strconv.Quote(fmt.Sprintf("kernel %s: %v", name, err))
			lines[li].text, lines[li].blank, lines[li].done = msg, strings.Repeat(" ", len(msg)), true
			continue
		}
		brace := strings.IndexByte(blank[closeParen:], '{')
		semi := strings.IndexByte(blank[closeParen:], ';')
		if semi >= 0 && (brace < 0 || semi < brace) {
			continue // a declaration; the definition comes elsewhere
		}
		if brace < 0 {
			return fmt.Errorf("%w: %s:%d: kernel %s has no body", ErrSyntax, k.File, k.Line, name)
		}
		end, ok := matching(blank, closeParen+brace, '{', '}')
		if !ok {
			return fmt.Errorf("%w: %s:%d: kernel %s: unbalanced braces", ErrSyntax, k.File, k.Line, name)
		}
		// The declaration's prefix back to the previous statement holds
		// template <...>, [[host_name]] and kernel attributes.
		prefix := declPrefix(blank, m[0])
		full := prefix + blank[m[0]:m[1]]
		maxExpr := ""
		if mm := maxTotalRe.FindStringSubmatch(full); mm != nil {
			maxExpr = mm[1]
			k.MaxThreads = evalInt(maxExpr, nil)
		}
		head, isTemplate := templateHead(prefix)
		if hn := hostNameRe.FindStringSubmatch(full); hn != nil && !isTemplate {
			k.Function, k.Name = name, joinStringLits(hn[1])
		}
		for _, o := range t.fns {
			if o.name == name && !o.template && !isTemplate && o.kernel.Guard == k.Guard {
				return fmt.Errorf("%w: %s:%d: kernel %s is also defined at line %d", ErrSyntax, k.File, k.Line, name, o.kernel.Line)
			}
		}
		t.fns = append(t.fns, kernelFn{name: name, template: isTemplate, head: head, maxExpr: maxExpr,
			from: lineAt(closeParen + brace), to: lineAt(end), kernel: k})
		if !isTemplate {
			t.u.Kernels = append(t.u.Kernels, k)
		}
	}
	return nil
}

// findInstantiations finds the host_name instantiations of templated
// kernels, written out or through macros.
func (t *translation) findInstantiations() error {
	lines := t.lines
	for i := 0; i < len(lines); i++ {
		if t.inDefine[i] {
			continue
		}
		stmt, last := lines[i].blank, i
		for depthOf(stmt) > 0 && last+1 < len(lines) && last-i < 64 && !t.inDefine[last+1] {
			last++
			stmt += "\n" + lines[last].blank
		}
		if !strings.Contains(stmt, "template") && !t.macros.invoked(stmt) {
			continue
		}
		expanded := t.macros.expand(stmt, 0, nil)
		for _, m := range instRe.FindAllStringSubmatch(expanded, -1) {
			hn := hostNameRe.FindStringSubmatch(m[1])
			if hn == nil {
				continue
			}
			entity := templateID(m[2])
			if entity == "" {
				return fmt.Errorf("%w: %s:%d: cannot read the instantiated function of %q", ErrSyntax, lines[i].file, lines[i].num, strings.Join(strings.Fields(m[0]), " "))
			}
			base := strings.TrimSpace(entity[:strings.IndexByte(entity, '<')])
			var tmpl *kernelFn
			for j := range t.fns {
				if t.fns[j].name == base && t.fns[j].template {
					tmpl = &t.fns[j]
				}
			}
			if tmpl == nil {
				continue // a host_name instantiation of a non-kernel function
			}
			k := tmpl.kernel
			k.Name, k.Function, k.File, k.Line, k.Guard = joinStringLits(hn[1]), entity, lines[i].file, lines[i].num, lines[i].guard
			if tmpl.maxExpr != "" {
				k.MaxThreads = evalInt(tmpl.maxExpr, templateArgs(tmpl.head, entity))
			}
			t.u.Kernels = append(t.u.Kernels, k)
		}
		i = last
	}
	return nil
}

// checkDuplicateKernels refuses two entry points of one name under the same
// conditions.
func (t *translation) checkDuplicateKernels() error {
	for i, k := range t.u.Kernels {
		for _, o := range t.u.Kernels[:i] {
			if o.Name == k.Name && o.Guard == k.Guard {
				return fmt.Errorf("%w: %s:%d: kernel %s is also defined at %s:%d", ErrSyntax, k.File, k.Line, k.Name, o.File, o.Line)
			}
		}
	}
	return nil
}

// inKernel names the kernel function whose body holds line li.
func (t *translation) inKernel(li int) (string, bool) {
	for _, f := range t.fns {
		if li >= f.from && li <= f.to {
			return f.name, f.template
		}
	}
	return "", false
}

// rewriteThreadgroupDecls rewrites threadgroup variable declarations, which
// may span lines and start anywhere a statement can ("{ threadgroup float
// t[4]; ...").
func (t *translation) rewriteThreadgroupDecls() error {
	lines := t.lines
	for i := 0; i < len(lines); i++ {
		if t.inDefine[i] || lines[i].done {
			continue
		}
		for _, m := range tgWordRe.FindAllStringIndex(lines[i].blank, -1) {
			col := m[0]
			prev := strings.TrimRight(lines[i].blank[:col], " \t")
			if prev != "" && !strings.HasSuffix(prev, "{") && !strings.HasSuffix(prev, ";") && !strings.HasSuffix(prev, "}") {
				continue // a parameter or a cast: (threadgroup float*)p
			}
			done, err := rewriteThreadgroup(t.u, lines, i, col, t.inKernel, t.target)
			if err != nil {
				return err
			}
			if done {
				if !lines[i].done {
					i-- // code after the declaration on this line: scan it again
				}
				break
			}
		}
	}
	return nil
}

// functionConstant reads a [[function_constant(i)]] declaration line and
// records it.
func (t *translation) functionConstant(l line) (FunctionConstant, error) {
	m := fcRe.FindStringSubmatch(l.blank)
	// The index may be an expression of macros, as in llama.cpp's
	// [[function_constant(FC_MUL_MV + 1)]].
	idx, ok := evalIntOK(t.macros.expand(m[3], 0, nil), nil)
	if !ok || idx < 0 || idx > 65535 {
		return FunctionConstant{}, fmt.Errorf("%w: %s:%d: function_constant index %q must be an integer 0..65535", ErrSyntax, l.file, l.num, m[3])
	}
	for _, c := range t.u.Constants {
		if c.Index == idx {
			return FunctionConstant{}, fmt.Errorf("%w: %s:%d: function_constant(%d) is also declared at line %d", ErrSyntax, l.file, l.num, idx, c.Line)
		}
	}
	if len(t.u.Constants) == MaxConstants {
		return FunctionConstant{}, fmt.Errorf("%w: %s:%d: more than %d function constants in one source", ErrUnsupported, l.file, l.num, MaxConstants)
	}
	c := FunctionConstant{Name: m[2], Type: strings.TrimSpace(m[1]), Index: idx, Slot: len(t.u.Constants), File: l.file, Line: l.num}
	t.u.Constants = append(t.u.Constants, c)
	return c, nil
}

// lineMarker writes a #line marker when line l does not follow the last one.
func lineMarker(out *strings.Builder, l line, prevFile *string, prevNum *int) {
	if l.file != *prevFile || l.num != *prevNum+1 {
		fmt.Fprintf(out, "#line %d %s\n", l.num, strconv.Quote(l.file))
	}
	*prevFile, *prevNum = l.file, l.num
}

// emitEmulator writes the C++ translation unit for the emulator: function
// constants as statics bound per dispatch, and one thunk and registrar per
// kernel.
func (t *translation) emitEmulator() error {
	u, lines, src := t.u, t.lines, t.src
	typeParams := templateTypeParams(t.blank)
	fcNames := map[string]bool{}
	var out strings.Builder
	out.WriteString("#include \"msl_shim.h\"\n")
	prevFile, prevNum := "", 0
	for _, l := range lines {
		lineMarker(&out, l, &prevFile, &prevNum)
		text := l.text
		switch {
		case l.done:
		case fcRe.MatchString(l.blank):
			c, err := t.functionConstant(l)
			if err != nil {
				return err
			}
			fcNames[c.Name] = true
			// Bound per dispatch by the generated binder, before any thread runs.
			text = fmt.Sprintf("static %s %s; static bool %s__mslemu_defined;", c.Type, c.Name, c.Name)
		case constInitR.MatchString(l.blank) && refersTo(constInitR.FindStringSubmatch(l.blank)[3], fcNames):
			// A program-scope constant computed from function constants
			// must be evaluated after they are bound, so it becomes a macro.
			m := constInitR.FindStringSubmatch(l.blank)
			text = fmt.Sprintf("#define %s (%s(%s))", m[2], strings.TrimSpace(m[1]), m[3])
		default:
			var err error
			if text, err = rewriteCasts(text, l.blank, typeParams, "::mslemu::cast"); err != nil {
				return fmt.Errorf("%w: %s:%d: %v", ErrSyntax, l.file, l.num, err)
			}
			text = rewriteHalfLiterals(text, blankComments(text))
			// Attributes were read above; left in, [[threadgroup(0)]] would
			// become [[(0)]] once the threadgroup qualifier macro expands.
			text = attrRe.ReplaceAllString(text, "")
		}
		out.WriteString(text)
		out.WriteByte('\n')
	}

	gen := "mslemu-generated:" + src.Name
	fmt.Fprintf(&out, "#line 1 %s\n", strconv.Quote(gen))
	out.WriteString("static void mslemu_bind_constants(const uint64_t* v, const uint8_t* d) {\n  (void)v; (void)d;\n")
	for _, c := range u.Constants {
		fmt.Fprintf(&out, "  { %s t{}; if (d[%d]) __builtin_memcpy(&t, &v[%d], sizeof t); %s = t; %s__mslemu_defined = d[%d] != 0; }\n",
			c.Type, c.Slot, c.Slot, c.Name, c.Name, c.Slot)
	}
	out.WriteString("}\n")
	for n, k := range u.Kernels {
		call := k.Name
		if k.Function != "" {
			call = k.Function
		}
		// A kernel inside #if blocks gets its entry point inside the same
		// blocks: it exists only if its definition is compiled.
		out.WriteString(k.Guard)
		fmt.Fprintf(&out, "static void mslemu_thunk_%d(void* const* bufs, void* const* tgmem) {\n", n)
		out.WriteString("  const ::mslemu::Ctx* c = ::mslemu::ctx(); (void)c; (void)bufs; (void)tgmem;\n")
		// Parameter types come from the function itself, so templated
		// kernels bind the types of their instantiation.
		fmt.Fprintf(&out, "  using F = decltype(&%s);\n", call)
		args := make([]string, len(k.Params))
		for i, p := range k.Params {
			at := fmt.Sprintf("::mslemu::arg_t<F, %d>", i)
			switch p.Kind {
			case Buffer, BufferRef:
				args[i] = fmt.Sprintf("::mslemu::bind<%s>(bufs[%d])", at, p.Index)
			case Threadgroup:
				args[i] = fmt.Sprintf("::mslemu::bind<%s>(tgmem[%d])", at, p.Index)
			case Builtin:
				b := builtinField[p.Builtin]
				if b.scalar {
					args[i] = fmt.Sprintf("::mslemu::builtin1<%s>(c->%s)", at, b.field)
				} else {
					args[i] = fmt.Sprintf("::mslemu::builtin<%s>(c->%s)", at, b.field)
				}
			}
		}
		fmt.Fprintf(&out, "  %s(%s);\n}\n", call, strings.Join(args, ", "))
		static := []string{"0"}
		fname := k.Name
		if k.Function != "" && !strings.Contains(k.Function, "<") {
			fname = k.Function
		}
		for _, a := range u.Threadgroup {
			if a.Kernel == fname && a.Kernel != "" {
				static = append(static, fmt.Sprintf("sizeof(%s%s)", a.Type, a.Dims))
			}
		}
		fmt.Fprintf(&out, "static ::mslemu::Registrar mslemu_reg_%d(%s, &mslemu_thunk_%d, &mslemu_bind_constants, %s, %s, %d);\n",
			n, strconv.Quote(k.Name), n, strings.Join(static, " + "), strconv.Quote(k.File), k.Line)
		out.WriteString(strings.Repeat("#endif\n", guardDepth(k.Guard)))
	}
	u.CPP = out.String()
	return nil
}

// blankMultilineAttributes removes attributes that span lines
// ([[host_name(\n name)]] in clang-formatted MLX macros), keeping line
// breaks and the backslashes that continue a #define. Attributes within one
// line are read and removed line by line.
func blankMultilineAttributes(lines []line) {
	for i := 0; i < len(lines); i++ {
		b := lines[i].blank
		for start := strings.Index(b, "[["); start >= 0; {
			if strings.Contains(b[start:], "]]") {
				next := strings.Index(b[start+2:], "[[")
				if next < 0 {
					break
				}
				start += 2 + next
				continue
			}
			// The attribute closes on a later line.
			end := -1
			for j := i + 1; j < len(lines) && j <= i+8; j++ {
				if k := strings.Index(lines[j].blank, "]]"); k >= 0 {
					end = j
					clearSpan(&lines[j], 0, k+2)
					break
				}
			}
			if end < 0 {
				break
			}
			clearSpan(&lines[i], start, len(lines[i].blank))
			for j := i + 1; j < end; j++ {
				clearSpan(&lines[j], 0, len(lines[j].blank))
			}
			break
		}
	}
}

// clearSpan blanks l.text and l.blank between from and to, except for a
// line-continuation backslash at the end of the line.
func clearSpan(l *line, from, to int) {
	if l.done || len(l.text) != len(l.blank) {
		return
	}
	keep := strings.HasSuffix(strings.TrimRight(l.blank, " \t"), "\\") && to == len(l.blank)
	t, b := []byte(l.text), []byte(l.blank)
	for k := from; k < to; k++ {
		t[k], b[k] = ' ', ' '
	}
	if keep {
		t = append([]byte(strings.TrimRight(string(t), " \t")), ' ', '\\')
		b = append([]byte(strings.TrimRight(string(b), " \t")), ' ', '\\')
	}
	l.text, l.blank = string(t), string(b)
}

// declPrefix returns the text before off back to the end of the previous
// declaration or statement (a ';', '}' or '{' outside brackets).
func declPrefix(s string, off int) string {
	depth := 0
	i := off - 1
	for ; i >= 0; i-- {
		switch s[i] {
		case ')', ']', '>':
			depth++
		case '(', '[', '<':
			depth--
		case ';', '}', '{':
			if depth <= 0 {
				return s[i+1 : off]
			}
		case '#':
			if depth <= 0 && (i == 0 || s[i-1] == '\n') {
				// A preprocessor line: the prefix starts on the next line.
				if nl := strings.IndexByte(s[i:off], '\n'); nl >= 0 {
					return s[i+nl+1 : off]
				}
			}
		}
	}
	return s[:off]
}

// templateHead reports whether prefix (attributes aside) ends with
// "template <...>", and returns the parameter list.
func templateHead(prefix string) (string, bool) {
	p := strings.TrimSpace(attrRe.ReplaceAllString(prefix, " "))
	p = strings.TrimSpace(strings.TrimSuffix(p, "kernel"))
	if !strings.HasSuffix(p, ">") {
		return "", false
	}
	depth := 0
	for i := len(p) - 1; i >= 0; i-- {
		switch p[i] {
		case '>':
			depth++
		case '<':
			depth--
			if depth == 0 {
				return p[i+1 : len(p)-1], strings.HasSuffix(strings.TrimSpace(p[:i]), "template")
			}
		}
	}
	return "", false
}

// templateArgs maps a template's parameter names to an instantiation's
// arguments: head "typename T, int BM = 32", entity "k<float, 64>" gives
// {T: float, BM: 64}.
func templateArgs(head, entity string) map[string]string {
	open := strings.IndexByte(entity, '<')
	if open < 0 {
		return nil
	}
	args := splitTop(entity[open+1 : len(entity)-1])
	out := map[string]string{}
	for i, p := range splitTop(head) {
		p, def, _ := strings.Cut(p, "=")
		m := nameRe.FindStringSubmatch(strings.TrimSpace(p))
		if m == nil {
			continue
		}
		switch {
		case i < len(args):
			out[m[1]] = strings.TrimSpace(args[i])
		case def != "":
			out[m[1]] = strings.TrimSpace(def)
		}
	}
	return out
}

// evalInt evaluates an integer expression of literals, names bound in
// vars, + - * / % and parentheses; 0 when it cannot.
func evalInt(expr string, vars map[string]string) int {
	v, _ := evalIntOK(expr, vars)
	return v
}

// evalIntOK is evalInt reporting whether the expression could be read.
func evalIntOK(expr string, vars map[string]string) (int, bool) {
	toks := regexp.MustCompile(`\d+|\w+|[-+*/%()]`).FindAllString(expr, -1)
	pos := 0
	var sum func(depth int) (int, bool)
	atom := func(depth int) (int, bool) {
		if pos >= len(toks) || depth > 8 {
			return 0, false
		}
		t := toks[pos]
		pos++
		switch {
		case t == "(":
			v, ok := sum(depth)
			if !ok || pos >= len(toks) || toks[pos] != ")" {
				return 0, false
			}
			pos++
			return v, true
		case t == "-":
			v, ok := sum(depth)
			return -v, ok
		case t[0] >= '0' && t[0] <= '9':
			v, err := strconv.Atoi(t)
			return v, err == nil
		}
		if v, ok := vars[t]; ok {
			return evalIntOK(v, nil)
		}
		return 0, false
	}
	term := func(depth int) (int, bool) {
		v, ok := atom(depth + 1)
		for ok && pos < len(toks) && strings.Contains("*/%", toks[pos]) {
			op := toks[pos]
			pos++
			w, ok2 := atom(depth + 1)
			if !ok2 || (op != "*" && w == 0) {
				return 0, false
			}
			switch op {
			case "*":
				v *= w
			case "/":
				v /= w
			case "%":
				v %= w
			}
		}
		return v, ok
	}
	sum = func(depth int) (int, bool) {
		v, ok := term(depth + 1)
		for ok && pos < len(toks) && (toks[pos] == "+" || toks[pos] == "-") {
			op := toks[pos]
			pos++
			w, ok2 := term(depth + 1)
			if !ok2 {
				return 0, false
			}
			if op == "+" {
				v += w
			} else {
				v -= w
			}
		}
		return v, ok
	}
	v, ok := sum(0)
	if !ok || pos != len(toks) || v < 0 {
		return 0, false
	}
	return v, true
}

// templateID returns the trailing "name<args>" of an explicit
// instantiation's declarator ("decltype(k<float>) k<float>" gives "k<float>").
func templateID(decl string) string {
	d := strings.TrimSpace(decl)
	// Older MLX spells out the signature:
	// "void binary_op_vv<float, float, Add>(device const float* a, ...)".
	if strings.HasSuffix(d, ")") {
		if open, ok := matchingBack(d, len(d)-1, '(', ')'); ok {
			d = strings.TrimSpace(d[:open])
		}
	}
	if !strings.HasSuffix(d, ">") {
		return ""
	}
	depth := 0
	for i := len(d) - 1; i >= 0; i-- {
		switch d[i] {
		case '>':
			depth++
		case '<':
			depth--
			if depth == 0 {
				head := strings.TrimRight(d[:i], " \t\n")
				j := len(head)
				for j > 0 && (isAlnum(head[j-1]) || head[j-1] == '_' || head[j-1] == ':') {
					j--
				}
				if j == len(head) {
					return ""
				}
				return strings.Join(strings.Fields(head[j:]+d[i:]), " ")
			}
		}
	}
	return ""
}

// joinStringLits turns `"a" "b"` (adjacent literals, as macros produce)
// into ab.
func joinStringLits(s string) string {
	var b strings.Builder
	for _, m := range regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(s, -1) {
		if v, err := strconv.Unquote(`"` + m[1] + `"`); err == nil {
			b.WriteString(v)
		} else {
			b.WriteString(m[1])
		}
	}
	return b.String()
}

// depthOf is the parenthesis depth at the end of s.
func depthOf(s string) int {
	d := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			d++
		case ')':
			d--
		}
	}
	return d
}

// rewriteThreadgroup turns the threadgroup declaration statement starting
// at lines[i] into threadgroup memory of the emulator: a thread_local
// (one OS thread runs a whole threadgroup) registered with the runtime, which
// poisons it, or copies its initializer, when the first thread of each
// threadgroup reaches it. Pointers and references into threadgroup memory
// ("threadgroup float* p = tile;") only lose the qualifier, in the shim.
func rewriteThreadgroup(u *Unit, lines []line, i, col int, inKernel func(int) (string, bool), target Target) (bool, error) {
	l := lines[i]
	var stmt strings.Builder
	end, endOff := -1, 0
	for j := i; j < len(lines) && j < i+64; j++ {
		b := lines[j].blank
		from := 0
		if j == i {
			from = col
		}
		depth := 0
		for k := from; k < len(b); k++ {
			switch b[k] {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth--
			case ';':
				if depth <= 0 {
					stmt.WriteString(b[from:k])
					end, endOff = j, k
				}
			}
			if end >= 0 || depth < 0 {
				break
			}
		}
		if end >= 0 {
			break
		}
		stmt.WriteString(b[from:])
		stmt.WriteByte('\n')
	}
	if end < 0 {
		return false, nil // not a declaration statement; left to clang
	}
	decl := strings.TrimSpace(stmt.String())
	parts := splitTop(decl)
	head := parts[0]
	if k := strings.IndexAny(head, "[={"); k >= 0 {
		head = head[:k]
	}
	if strings.ContainsAny(head, "*&(") {
		return false, nil // a pointer or reference into threadgroup memory
	}
	m := tgDeclRe.FindStringSubmatch(strings.TrimSpace(parts[0]))
	if m == nil {
		return false, fmt.Errorf("%w: %s:%d: cannot read the threadgroup declaration %q", ErrSyntax, l.file, l.num, strings.Join(strings.Fields(decl), " "))
	}
	typ := strings.Join(strings.Fields(m[1]), " ")
	kname, tmpl := inKernel(i)
	counted := 1
	if kname != "" && !tmpl {
		counted = 0 // in the kernel's static total, checked before the dispatch runs
	} else {
		kname = ""
	}
	var gen strings.Builder
	gen.WriteString(l.text[:col])
	for n, part := range parts {
		var name, dims, init string
		if n == 0 {
			name, dims, init = m[2], m[3], m[4]
		} else {
			dm := regexp.MustCompile(`(?s)^\s*(\w+)\s*((?:\[[^\]]*\]\s*)*)(=.*|\{.*)?$`).FindStringSubmatch(part)
			if dm == nil || strings.ContainsAny(part[:len(part)-len(dm[3])], "*&") {
				return false, fmt.Errorf("%w: %s:%d: cannot read threadgroup declarator %q", ErrSyntax, l.file, l.num, strings.TrimSpace(part))
			}
			name, dims, init = dm[1], dm[2], dm[3]
		}
		dims = strings.Join(strings.Fields(dims), "")
		init = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(init), "="))
		u.Threadgroup = append(u.Threadgroup, ThreadgroupArray{Name: name, Type: typ, Dims: dims, File: l.file, Line: l.num, Kernel: kname})
		if target == CUDA {
			// Shared memory has no initialisers in CUDA, and one written
			// by every thread would race with the threads already using it.
			if init != "" {
				return false, fmt.Errorf("%w: %s:%d: threadgroup variable %s has an initialiser (not translated for CUDA)", ErrUnsupported, l.file, l.num, name)
			}
			fmt.Fprintf(&gen, "__shared__ %s %s%s; ", typ, name, dims)
			continue
		}
		fmt.Fprintf(&gen, "static thread_local %s %s%s; ", typ, name, dims)
		if init == "" {
			fmt.Fprintf(&gen, "::mslemu::tg_array((void*)&%s, sizeof(%s), __FILE__, __LINE__, %d); ", name, name, counted)
			continue
		}
		init = rewriteHalfLiterals(strings.Join(strings.Fields(init), " "), strings.Join(strings.Fields(init), " "))
		fmt.Fprintf(&gen, "{ %s __mslemu_init_%s%s = %s; ::mslemu::tg_array_init((void*)&%s, (const void*)&__mslemu_init_%s, sizeof(%s), __FILE__, __LINE__, %d); } ",
			typ, name, dims, init, name, name, name, counted)
	}
	// The statement's first line carries the whole rewrite; its other lines
	// become empty and the code after the ';' stays on its own line.
	endText := lines[end].text
	for j := i; j <= end; j++ {
		lines[j].done = true
		lines[j].text = ""
	}
	lines[i].text = strings.TrimRight(gen.String(), " ")
	if rest := lines[end].blank[endOff+1:]; strings.TrimSpace(rest) != "" {
		restText := endText[endOff+1:]
		if end == i {
			// The rest of the line stays code to translate (and may hold
			// another threadgroup declaration); the generated part is blank
			// in l.blank, so it is not read again.
			lines[i].text += " "
			pad := len(lines[i].text)
			lines[i].text += restText
			lines[i].blank = strings.Repeat(" ", pad) + rest
			lines[i].done = false
		} else {
			pad := strings.Repeat(" ", endOff+1)
			lines[end].done = false
			lines[end].text, lines[end].blank = pad+restText, pad+rest
		}
	}
	return true, nil
}

// rewriteCasts turns C-style vector casts "(float4)h4" into MSL
// constructors "float4(h4)", which convert element-wise; as a C++ cast
// between vector types of different sizes clang rejects them (spec Part 1).
// The operand is a unary expression: prefix operators, then a name, number
// or parenthesised expression, then calls, subscripts and member accesses.
func rewriteCasts(text, blank string, typeParams map[string]bool, castFn string) (string, error) {
	for {
		ms := castRe.FindAllStringSubmatchIndex(blank, -1)
		for _, m := range anyCastRe.FindAllStringSubmatchIndex(blank, -1) {
			if typeParams[blank[m[2]:m[3]]] {
				ms = append(ms, m)
			}
		}
		sort.Slice(ms, func(a, b int) bool { return ms[a][0] < ms[b][0] })
		var m []int
		for k := len(ms) - 1; k >= 0; k-- {
			j := ms[k][0] - 1
			for j >= 0 && (blank[j] == ' ' || blank[j] == '\t') {
				j--
			}
			if j >= 0 && (isAlnum(blank[j]) || blank[j] == '_' || blank[j] == ')' || blank[j] == ']' || blank[j] == '>') &&
				!castEndRe.MatchString(blank[:ms[k][0]]) {
				continue // sizeof(float4), f(float4): not a cast; (float2)(half2)x is two
			}
			if e := operandEnd(blank, ms[k][1]); typeParams[blank[ms[k][2]:ms[k][3]]] && (e < 0 || strings.TrimSpace(blank[ms[k][1]:e]) == "") {
				continue // (T) alone, as in a declaration "void f(T)"
			}
			m = ms[k]
			break
		}
		if m == nil {
			return text, nil
		}
		end := operandEnd(blank, m[1])
		if end < 0 {
			return "", fmt.Errorf("cast in C style, (%s), without an operand this preprocessor can read: write %s(...) instead", blank[m[2]:m[3]], blank[m[2]:m[3]])
		}
		typ := blank[m[2]:m[3]]
		if typeParams[typ] {
			// A template type parameter may be a vector type, for which a
			// C-style cast does not convert; the shim's cast does.
			typ = castFn + "<" + typ + ">"
		}
		repl := func(s string) string {
			return s[:m[0]] + typ + "(" + strings.TrimSpace(s[m[1]:end]) + ")" + s[end:]
		}
		text, blank = repl(text), repl(blank)
	}
}

// templateTypeParams collects the names of template type parameters
// ("typename T", "class type4x4") declared anywhere in the source: a C-style
// cast to one of them is rewritten to the shim's conversion.
func templateTypeParams(blank string) map[string]bool {
	names := map[string]bool{}
	for _, m := range tmplHeadRe.FindAllStringSubmatch(blank, -1) {
		for _, p := range splitTop(m[1]) {
			p, _, _ = strings.Cut(p, "=")
			f := strings.Fields(p)
			if len(f) == 2 && (f[0] == "typename" || f[0] == "class") {
				names[f[1]] = true
			}
		}
	}
	return names
}

// operandEnd returns the end offset of the unary expression starting at or
// after off, or -1.
func operandEnd(s string, off int) int {
	i := off
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	skip()
	for i < len(s) && strings.IndexByte("-+!~*&", s[i]) >= 0 {
		i++
		skip()
	}
	switch {
	case i >= len(s):
		return -1
	case s[i] == '(':
		e, ok := matching(s, i, '(', ')')
		if !ok {
			return -1
		}
		i = e + 1
	case isAlnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == ':':
		for i < len(s) && (isAlnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == ':') {
			i++
		}
		// A template argument list after a name: as_type<half4>(x).
		if i < len(s) && s[i] == '<' {
			if e, ok := matching(s, i, '<', '>'); ok && !strings.ContainsAny(s[i:e], ";{}") {
				i = e + 1
			}
		}
	default:
		return -1
	}
	for {
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		switch {
		case j < len(s) && s[j] == '(':
			e, ok := matching(s, j, '(', ')')
			if !ok {
				return -1
			}
			i = e + 1
		case j < len(s) && s[j] == '[':
			e, ok := matching(s, j, '[', ']')
			if !ok {
				return -1
			}
			i = e + 1
		case j < len(s) && s[j] == '.' && j+1 < len(s) && (isAlnum(s[j+1]) || s[j+1] == '_'):
			i = j + 1
			for i < len(s) && (isAlnum(s[i]) || s[i] == '_') {
				i++
			}
		case j+1 < len(s) && s[j] == '-' && s[j+1] == '>':
			i = j + 2
			for i < len(s) && (isAlnum(s[i]) || s[i] == '_' || s[i] == ' ') {
				i++
			}
		default:
			return i
		}
	}
}

func refersTo(expr string, names map[string]bool) bool {
	for _, id := range identRe.FindAllString(expr, -1) {
		if names[id] {
			return true
		}
	}
	return strings.Contains(expr, "is_function_constant_defined")
}

// rewriteHalfLiterals turns MSL's 1.5h into ((half)1.5f); C++ has no h suffix.
func rewriteHalfLiterals(text, blank string) string {
	ms := halfLitRe.FindAllStringSubmatchIndex(blank, -1)
	if ms == nil {
		return text
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if m[0] > 0 && (blank[m[0]-1] == '.' || blank[m[0]-1] == '_' || isAlnum(blank[m[0]-1])) {
			continue
		}
		lit := text[m[0] : m[1]-1]
		if strings.ContainsAny(lit, ".eE") {
			lit += "f"
		}
		b.WriteString(text[last:m[0]])
		b.WriteString("((half)" + lit + ")")
		last = m[1]
	}
	b.WriteString(text[last:])
	return b.String()
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// matching returns the offset of the bracket closing the one at open.
func matching(s string, open int, o, c byte) (int, bool) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case o:
			depth++
		case c:
			depth--
			if depth == 0 {
				return i, true
			}
		}
	}
	return 0, false
}

var (
	attrRe  = regexp.MustCompile(`\[\[(.*?)\]\]`)
	indexRe = regexp.MustCompile(`^(buffer|threadgroup|function_constant)\s*\(\s*(\w+)\s*\)$`)
	nameRe  = regexp.MustCompile(`(\w+)\s*$`)
)

// ignoredParamAttrs are parameter attributes that do not change binding.
var ignoredParamAttrs = regexp.MustCompile(`^(raster_order_group\s*\(.*\)|user\s*\(.*\)|maybe_unused|clang::\w+)$`)

func parseParams(list string) ([]Param, error) {
	var params []Param
	usedBuf := map[int]bool{}
	var implicit []int
	for _, raw := range splitTop(list) {
		raw = strings.Join(strings.Fields(raw), " ")
		if raw == "" || raw == "void" {
			continue
		}
		var attrs []string
		for _, m := range attrRe.FindAllStringSubmatch(raw, -1) {
			for _, a := range splitTop(m[1]) {
				attrs = append(attrs, strings.TrimSpace(a))
			}
		}
		decl := strings.TrimSpace(attrRe.ReplaceAllString(raw, ""))
		// An array parameter (MLX's "constant const size_t a_strides[2]")
		// is a pointer, as in C: a buffer binding.
		arrayParam := false
		for strings.HasSuffix(decl, "]") {
			open := strings.LastIndexByte(decl, '[')
			if open < 0 {
				break
			}
			decl, arrayParam = strings.TrimSpace(decl[:open]), true
		}
		nm := nameRe.FindStringSubmatch(decl)
		if nm == nil {
			return nil, fmt.Errorf("parameter %q has no name", raw)
		}
		p := Param{Name: nm[1], Type: strings.TrimSpace(strings.TrimSuffix(decl, nm[0])), Index: -1}
		if p.Type == "" {
			return nil, fmt.Errorf("parameter %q has no type", raw)
		}
		if arrayParam {
			p.Type += "*"
		}
		kindSet := false
		for _, a := range attrs {
			if m := indexRe.FindStringSubmatch(a); m != nil {
				if m[1] == "function_constant" {
					p.FunctionConstant = m[2]
					continue
				}
				n, err := strconv.Atoi(m[2])
				if err != nil || n < 0 || n > 31 {
					return nil, fmt.Errorf("parameter %s: index %q must be 0..31", p.Name, m[2])
				}
				p.Index, kindSet = n, true
				if m[1] == "threadgroup" {
					p.Kind = Threadgroup
				} else if strings.HasSuffix(p.Type, "&") {
					p.Kind = BufferRef
				} else {
					p.Kind = Buffer
				}
				continue
			}
			if IsBuiltin(a) {
				p.Kind, p.Builtin, kindSet = Builtin, a, true
				continue
			}
			if ignoredParamAttrs.MatchString(a) {
				continue
			}
			return nil, fmt.Errorf("parameter %s: attribute [[%s]] is not supported by the emulator", p.Name, a)
		}
		if !kindSet {
			// MSL numbers buffer parameters without an attribute itself.
			if !strings.HasSuffix(p.Type, "*") && !strings.HasSuffix(p.Type, "&") {
				return nil, fmt.Errorf("parameter %s has no [[buffer(n)]] or builtin attribute", p.Name)
			}
			p.Kind = Buffer
			if strings.HasSuffix(p.Type, "&") {
				p.Kind = BufferRef
			}
			implicit = append(implicit, len(params))
		}
		if p.Kind == Buffer || p.Kind == BufferRef {
			if p.Index >= 0 && usedBuf[p.Index] {
				return nil, fmt.Errorf("parameter %s: buffer(%d) used twice", p.Name, p.Index)
			}
			if p.Index >= 0 {
				usedBuf[p.Index] = true
			}
		}
		params = append(params, p)
	}
	next := 0
	for _, i := range implicit {
		for usedBuf[next] {
			next++
		}
		params[i].Index = next
		usedBuf[next] = true
	}
	return params, nil
}

// splitTop splits at commas outside (), <>, [] and {}.
func splitTop(s string) []string {
	var parts []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[', '{':
			depth++
		case ')', '>', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[last:i])
				last = i + 1
			}
		}
	}
	return append(parts, s[last:])
}
