package mslpp

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The strictness gate. The emulator and the CUDA device compile the
// translated MSL as C++ with clang or NVRTC, which accept much that
// Apple's Metal compiler rejects; a kernel that uses it would pass every
// test on Linux and fail to compile on the first Mac that loads it. The
// gate refuses those constructs here, with the file and line, each rule
// citing the section of the Metal Shading Language Specification (version
// 3.2) that rules it out. It reads lines and statements as the rest of the
// front end does, so it errs towards the forms kernels are written in:
// macro bodies are not read (they are checked where they are expanded
// into a kernel signature, or not at all), and, as with the emulator's
// unsupported features, a hit inside an #if block becomes an #error that
// fires only if the block is compiled.

// ErrNotMSL is wrapped (with ErrSyntax) by errors about C++ that Apple's
// Metal compiler rejects; the message names the file, line, construct and
// the specification section.
var ErrNotMSL = fmt.Errorf("%w: Apple's Metal compiler rejects it", ErrSyntax)

// strictRule is one construct matched on a comment-free line.
type strictRule struct {
	re   *regexp.Regexp
	what string // with the specification section
}

var strictRules = []strictRule{
	{regexp.MustCompile(`\b(?:long\s+)?double\b`),
		"double: Metal has no double-precision type (MSL spec §2.1 Scalar Data Types)"},
	{regexp.MustCompile(`\bvirtual\b`),
		"virtual functions (MSL spec §1.5.4 Restrictions)"},
	{regexp.MustCompile(`\b(?:try|catch|throw)\b`),
		"exception handling (MSL spec §1.5.4 Restrictions)"},
	{regexp.MustCompile(`\bstd\s*::`),
		"the C++ standard library (std::); Metal has its own (MSL spec §1.5.4 Restrictions, §6 Metal Standard Library)"},
	{regexp.MustCompile(`\bnew\b\s*[\w(]|\bdelete\b`),
		"new and delete (MSL spec §1.5.4 Restrictions)"},
	{regexp.MustCompile(`\(\s*\*\s*\w*\s*\)\s*\(`), fnPointers},
	// A lambda's introducer follows an operator or an opening bracket,
	// never a name or a closing bracket (a subscript) or another [ (an
	// attribute).
	{regexp.MustCompile(`(?:^|[=(,{;?:]|\breturn)\s*\[[^\[\]]*\]\s*(?:\([^()]*\)\s*)?(?:mutable\s*)?(?:->\s*[\w:<>]+\s*)?\{`),
		"lambda expressions (MSL spec §1.5.4 Restrictions)"},
}

// fnPointers is the function-pointer rule's message. A function pointer
// as a template parameter is a compile-time constant, which Apple's
// compiler takes (ggml's get_rows kernels pass their dequantizers so).
const fnPointers = "function pointers (MSL spec §1.5.4 Restrictions)"

var templateHeadRe = regexp.MustCompile(`\btemplate\s*<`)

// deleteDefaultRe is "= delete" / "= default" on a special member, which is
// not the operator.
var deleteDefaultRe = regexp.MustCompile(`=\s*delete\b`)

// builtinTypes are the types the thread-position attributes take (MSL spec
// §5.2, the attributes for kernel function inputs): uint or ushort, and
// their 2- and 3-vectors where the attribute has x, y, z. size_t is what
// C++ code reaches for and clang takes; Apple's compiler does not. (size_t
// is fine elsewhere in a signature: MLX binds constant size_t& buffers.)
var builtinTypes = map[string]bool{
	"uint": true, "ushort": true, "uint2": true, "ushort2": true, "uint3": true, "ushort3": true,
	"vec<uint, 2>": true, "vec<uint, 3>": true, "vec<ushort, 2>": true, "vec<ushort, 3>": true,
}

var addressSpaceRe = regexp.MustCompile(`\b(?:device|constant|threadgroup|threadgroup_imageblock|ray_data|object_data)\b`)

// checkStrict is the strictness gate's pass.
func (t *translation) checkStrict() error {
	for i := range t.lines {
		l := &t.lines[i]
		if t.inDefine[i] || l.done || strings.HasPrefix(strings.TrimSpace(l.blank), "#") {
			continue
		}
		s := deleteDefaultRe.ReplaceAllString(blankStrings(l.blank), "")
		for _, r := range strictRules {
			if loc := r.re.FindStringIndex(s); loc != nil && !(r.what == fnPointers && templateHeadRe.MatchString(s[:loc[0]])) {
				if err := t.refuse(i, r.what); err != nil {
					return err
				}
				break
			}
		}
	}
	for _, f := range t.fns {
		for _, p := range f.kernel.Params {
			what := ""
			switch {
			case p.Kind == Builtin && !builtinTypes[strings.Join(strings.Fields(strings.ReplaceAll(" "+p.Type+" ", " const ", " ")), " ")]:
				what = fmt.Sprintf("kernel %s: parameter %s [[%s]] has type %s; thread-position attributes take uint or ushort (and their vectors) (MSL spec §5.2, attributes for kernel function inputs)",
					f.name, p.Name, p.Builtin, strings.TrimSpace(p.Type))
			case p.Kind != Builtin && strings.Contains(p.Type, "*") && !addressSpaceRe.MatchString(p.Type):
				what = fmt.Sprintf("kernel %s: pointer parameter %s has no address space (device, constant, threadgroup) (MSL spec §1.5.4 Restrictions, §4 Address Spaces)", f.name, p.Name)
			}
			if what == "" {
				continue
			}
			if err := t.refuseAt(f.kernel.File, f.kernel.Line, what); err != nil {
				return err
			}
		}
	}
	return t.checkFunctionBodies()
}

// refuse reports construct what on line i: an error outside #if blocks,
// an #error line the compiler sees only if the block is compiled inside
// one.
func (t *translation) refuse(i int, what string) error {
	l := &t.lines[i]
	if l.depth == 0 {
		return fmt.Errorf("%w: %s:%d: %s", ErrNotMSL, l.file, l.num, what)
	}
	msg := "#error " + strconv.Quote(what+": Apple's Metal compiler rejects it")
	l.text, l.blank, l.done = msg, strings.Repeat(" ", len(msg)), true
	return nil
}

// refuseAt is refuse for the line of file:num.
func (t *translation) refuseAt(file string, num int, what string) error {
	for i, l := range t.lines {
		if l.file == file && l.num == num {
			return t.refuse(i, what)
		}
	}
	return fmt.Errorf("%w: %s:%d: %s", ErrNotMSL, file, num, what)
}

// funcDefRe finds a function definition's name and parameter list opening:
// "name(" followed, after the balanced parameters, by a body.
var funcDefRe = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*\(`)

var notFunctions = map[string]bool{"if": true, "for": true, "while": true, "switch": true, "return": true,
	"sizeof": true, "alignof": true, "decltype": true, "static_assert": true, "catch": true, "operator": true,
	"defined": true, "alignas": true, "noexcept": true}

// localArrayRe is a local array declaration: "type name[bound]" then ";",
// "=" or "{".
var localArrayRe = regexp.MustCompile(`(?:^|[;{}])\s*((?:const\s+)?(?:thread\s+)?[A-Za-z_][\w:<>, ]*?)\s+([A-Za-z_]\w*)\s*\[([^\[\]]+)\]\s*(?:;|=|\{)`)

// checkFunctionBodies finds recursion (a function whose body calls its own
// name, unqualified) and arrays whose size is a run-time value (a
// parameter, or a local that is not const) in every function definition.
func (t *translation) checkFunctionBodies() error {
	blank := t.blank
	for _, m := range funcDefRe.FindAllStringSubmatchIndex(blank, -1) {
		name := blank[m[2]:m[3]]
		if notFunctions[name] || m[2] >= 1 && (blank[m[2]-1] == '.' || blank[m[2]-1] == ':' || blank[m[2]-1] == '~') ||
			strings.HasSuffix(strings.TrimRight(blank[max(0, m[2]-12):m[2]], " \t\n"), "operator") {
			continue // a member called through an object, a destructor, a conversion operator
		}
		li := t.lineAt(m[0])
		if t.inDefine[li] || t.lines[li].done {
			continue
		}
		closeParen, ok := matching(blank, m[1]-1, '(', ')')
		if !ok {
			continue
		}
		// A definition: after the parameters, optional qualifiers and
		// attributes, then the body.
		rest := blank[closeParen+1:]
		k := 0
		for k < len(rest) {
			switch {
			case rest[k] == ' ' || rest[k] == '\t' || rest[k] == '\n':
				k++
			case strings.HasPrefix(rest[k:], "[["):
				e := strings.Index(rest[k:], "]]")
				if e < 0 {
					k = len(rest)
				} else {
					k += e + 2
				}
			default:
				w := identRe.FindStringIndex(rest[k:])
				if w == nil || w[0] != 0 || !slices.Contains([]string{"const", "thread", "device", "constant", "threadgroup", "volatile"}, rest[k:k+w[1]]) {
					goto done
				}
				k += w[1]
			}
		}
	done:
		if k >= len(rest) || rest[k] != '{' {
			continue
		}
		open := closeParen + 1 + k
		end, ok := matching(blank, open, '{', '}')
		if !ok {
			continue
		}
		body := blank[open+1 : end]
		if err := t.checkRecursion(name, body, open+1); err != nil {
			return err
		}
		if err := t.checkLocalArrays(blank[m[1]:closeParen], body, open+1); err != nil {
			return err
		}
	}
	return nil
}

func (t *translation) checkRecursion(name, body string, base int) error {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*\(`)
	for _, c := range re.FindAllStringIndex(body, -1) {
		if c[0] > 0 {
			prev := strings.TrimRight(body[:c[0]], " \t\n")
			if strings.HasSuffix(prev, "::") || strings.HasSuffix(prev, ".") || strings.HasSuffix(prev, "->") {
				continue // another entity's member, or a qualified overload
			}
		}
		li := t.lineAt(base + c[0])
		if t.inDefine[li] || t.lines[li].done {
			continue
		}
		return t.refuse(li, fmt.Sprintf("recursive call of %s (MSL spec §1.5.4 Restrictions: recursive function calls)", name))
	}
	return nil
}

// localIntRe is a local integer declaration: its qualifiers, then its name.
var localIntRe = regexp.MustCompile(`(?:^|[;{}(])\s*((?:const\s+|constexpr\s+|thread\s+)*)(?:u?int|u?short|u?long|size_t|int\d+_t|uint\d+_t|auto)\s+([A-Za-z_]\w*)\s*[=;]`)

func (t *translation) checkLocalArrays(params, body string, base int) error {
	runtime := map[string]bool{}
	for _, p := range splitTop(attrRe.ReplaceAllString(params, "")) {
		if id := identRe.FindAllString(p, -1); len(id) > 0 {
			runtime[id[len(id)-1]] = true
		}
	}
	for _, d := range localIntRe.FindAllStringSubmatch(body, -1) {
		if !strings.Contains(d[1], "const") {
			runtime[d[2]] = true
		}
	}
	for _, a := range localArrayRe.FindAllStringSubmatchIndex(body, -1) {
		typ, bound := body[a[2]:a[3]], body[a[6]:a[7]]
		if strings.HasPrefix(strings.TrimSpace(typ), "threadgroup") || strings.Contains(typ, "return") {
			continue
		}
		for _, id := range identRe.FindAllString(bound, -1) {
			if !runtime[id] {
				continue
			}
			li := t.lineAt(base + a[4])
			if t.inDefine[li] || t.lines[li].done {
				break
			}
			return t.refuse(li, fmt.Sprintf("array %s[%s] sized at run time (%s is not a constant expression): variable-length arrays are a clang extension, not C++14 (MSL spec §1.5 Metal and C++14)",
				body[a[4]:a[5]], strings.TrimSpace(bound), id))
		}
	}
	return nil
}

// blankStrings replaces the contents of string and character literals by
// spaces, so that rules do not match words inside them.
func blankStrings(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		if b[i] != '"' && b[i] != '\'' {
			continue
		}
		q := b[i]
		for i++; i < len(b) && b[i] != q; i++ {
			if b[i] == '\\' && i+1 < len(b) {
				b[i] = ' '
				i++
			}
			b[i] = ' '
		}
	}
	return string(b)
}
