package mslpp

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The CUDA target. The translation is CUDA C++ that NVRTC compiles against
// msl_cuda.h (package metal/cuda) with -default-device, so helper functions
// need no __device__. What differs from the emulator:
//
//   - The source is wrapped in namespace metal::msl_user: unqualified names
//     find the shim's MSL types and functions (metal::float4, metal::exp)
//     before CUDA's global ones (::float4, ::exp), and no global using
//     directive makes them ambiguous.
//   - Address-space words (device, constant, thread, threadgroup) and the
//     kernel keyword are deleted as tokens, after the attributes were read
//     and removed. They cannot be macros: CUDA's own headers define
//     __device__ and __constant__ through attributes named device and
//     constant.
//   - threadgroup variables become __shared__ (rewriteThreadgroup).
//   - Function constants are compile-time values: MSLFC_VALUE_<slot> and
//     MSLFC_DEFINED_<slot>, defined by the device for each pipeline
//     (value-initialised when not given), so dead branches compile away as
//     on Apple.
//   - Program-scope constants become static constexpr (scalars) or
//     __device__ const (arrays).
//   - Each kernel gets extern "C" __global__ void mslk_<n>(::metal::Launch),
//     n its position in Unit.Kernels, which binds buffers, [[threadgroup(n)]]
//     memory (carved from dynamic shared memory) and builtins in Metal's
//     numbering.

var (
	// addrSpaceRe matches the words the CUDA translation deletes.
	addrSpaceRe = regexp.MustCompile(`\b(device|constant|thread|threadgroup|kernel)\b`)
	// constArrayRe is a program-scope constant array ("constant float
	// t[4] = {").
	constArrayRe = regexp.MustCompile(`^(\s*)constant\s+[\w:<>, ]+?\s+\w+\s*(?:\[[^\]]*\]\s*)+=`)
	constWordRe  = regexp.MustCompile(`^(\s*)constant\s+`)
)

// constexprTypes are the MSL scalar types a program-scope constant may have
// as a static constexpr usable in device code.
var constexprTypes = map[string]bool{
	"bool": true, "char": true, "uchar": true, "short": true, "ushort": true, "int": true, "uint": true,
	"long": true, "ulong": true, "float": true, "size_t": true, "int8_t": true, "uint8_t": true,
	"int16_t": true, "uint16_t": true, "int32_t": true, "uint32_t": true, "int64_t": true, "uint64_t": true,
	"unsigned": true, "unsigned int": true,
}

// cudaNamespaceOpen and cudaNamespaceClose wrap the translated source.
const (
	cudaNamespaceOpen  = "namespace metal { namespace msl_user {\n"
	cudaNamespaceClose = "} } // namespace metal::msl_user\n"
)

// emitCUDA writes the CUDA translation unit.
func (t *translation) emitCUDA() error {
	u, lines, src := t.u, t.lines, t.src
	typeParams := templateTypeParams(t.blank)
	var out strings.Builder
	out.WriteString("#include \"msl_cuda.h\"\n")
	out.WriteString(cudaNamespaceOpen)
	prevFile, prevNum := "", 0
	for _, l := range lines {
		lineMarker(&out, l, &prevFile, &prevNum)
		text := l.text
		switch {
		case l.done:
		case sysIncludeRe.MatchString(l.blank) && standIns[strings.TrimSpace(sysIncludeRe.FindStringSubmatch(l.blank)[1])]:
			text = "" // the shim is the whole standard library
		case fcRe.MatchString(l.blank):
			c, err := t.functionConstant(l)
			if err != nil {
				return err
			}
			fmt.Fprintf(&out, "#ifndef MSLFC_VALUE_%d\n#define MSLFC_VALUE_%d\n#endif\n#ifndef MSLFC_DEFINED_%d\n#define MSLFC_DEFINED_%d false\n#endif\n",
				c.Slot, c.Slot, c.Slot, c.Slot)
			text = fmt.Sprintf("static constexpr %s %s = %s{MSLFC_VALUE_%d}; static constexpr bool %s__mslfc_defined = MSLFC_DEFINED_%d;",
				c.Type, c.Name, cudaValueInit(c.Type), c.Slot, c.Name, c.Slot)
			prevNum = -2 // the directives above shift the lines: mark the next one
			fmt.Fprintf(&out, "#line %d %s\n", l.num, strconv.Quote(l.file))
		case constInitR.MatchString(l.blank) && l.depth >= 0 && constexprTypes[strings.Join(strings.Fields(constInitR.FindStringSubmatch(l.blank)[1]), " ")]:
			m := constInitR.FindStringSubmatch(l.blank)
			init, err := t.cudaExpr(l, m[3], typeParams)
			if err != nil {
				return err
			}
			text = fmt.Sprintf("static constexpr %s %s = %s;", strings.TrimSpace(m[1]), m[2], init)
		default:
			if constArrayRe.MatchString(l.blank) {
				text = constWordRe.ReplaceAllString(text, "${1}static __device__ const ")
			}
			var err error
			if text, err = t.cudaExpr(l, text, typeParams); err != nil {
				return err
			}
		}
		out.WriteString(text)
		out.WriteByte('\n')
	}
	out.WriteString(cudaNamespaceClose)

	gen := "mslcuda-generated:" + src.Name
	fmt.Fprintf(&out, "#line 1 %s\n", strconv.Quote(gen))
	out.WriteString(cudaNamespaceOpen)
	for n, k := range u.Kernels {
		call := k.Name
		if k.Function != "" {
			call = k.Function
		}
		out.WriteString(k.Guard)
		fmt.Fprintf(&out, "extern \"C\" __global__ void mslk_%d(const ::metal::Launch L) {\n", n)
		// Parameter types come from the function itself, so templated
		// kernels bind the types of their instantiation.
		fmt.Fprintf(&out, "  using F = decltype(&%s);\n", call)
		args := make([]string, len(k.Params))
		for i, p := range k.Params {
			at := fmt.Sprintf("::metal::arg_t<F, %d>", i)
			switch p.Kind {
			case Buffer, BufferRef:
				args[i] = fmt.Sprintf("::metal::bind<%s>(L.buf[%d])", at, p.Index)
			case Threadgroup:
				args[i] = fmt.Sprintf("::metal::bind<%s>(::metal::tgmem(L, %d))", at, p.Index)
			case Builtin:
				b := builtinField[p.Builtin]
				args[i] = fmt.Sprintf("::metal::builtin<%s>(::metal::bi_%s(L))", at, b.field)
			}
		}
		fmt.Fprintf(&out, "  %s(%s);\n}\n", call, strings.Join(args, ", "))
		out.WriteString(strings.Repeat("#endif\n", guardDepth(k.Guard)))
	}
	out.WriteString(cudaNamespaceClose)
	u.CPP = out.String()
	return nil
}

// cudaExpr rewrites one line of MSL (or an initialiser) into CUDA C++:
// C-style vector casts, half literals, attributes and address spaces.
func (t *translation) cudaExpr(l line, text string, typeParams map[string]bool) (string, error) {
	blank := blankComments(text)
	text, err := rewriteCasts(text, blank, typeParams, "::metal::cast")
	if err != nil {
		return "", fmt.Errorf("%w: %s:%d: %v", ErrSyntax, l.file, l.num, err)
	}
	text = rewriteHalfLiterals(text, blankComments(text))
	text = attrRe.ReplaceAllString(text, "")
	return addrSpaceRe.ReplaceAllString(text, ""), nil
}

// cudaValueInit is the type that braces a function constant's value macro:
// empty (not given) it value-initialises, as the emulator binds an unset
// constant; given, it is a literal of the type (true, 3u, 0x1.8p+0f,
// ::metal::half_bits(0x3c00)).
func cudaValueInit(typ string) string {
	if strings.Contains(typ, " ") {
		return "::metal::identity_t<" + typ + ">"
	}
	return typ
}
