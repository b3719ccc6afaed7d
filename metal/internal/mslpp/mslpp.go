// Package mslpp turns a Metal Shading Language source into a C++ translation
// unit for the MSL emulator: it reads every kernel's signature, rewrites the
// few MSL constructs that are not C++ (threadgroup arrays, function constants,
// half literals), and appends one entry point per kernel that binds buffers,
// threadgroup memory and thread-position builtins by attribute.
//
// It is line based, as the proof of concept in
// shared/spec/msl-kernels-emulator-performance.md (Part 1) was: kernels are
// written in a "shim-compatible subset" (threadgroup arrays declared on one
// line without an initializer, explicit [[buffer(n)]] attributes, MSL
// constructors rather than C casts). Every emitted line keeps a #line marker
// back to its .metal file so that compiler errors, diagnostics and ASan
// reports name the .metal line.
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

// Kernel is one kernel function of a source.
type Kernel struct {
	Name   string
	File   string
	Line   int
	Params []Param
}

// FunctionConstant is a program-scope [[function_constant(i)]] declaration.
type FunctionConstant struct {
	Name  string
	Type  string
	Index int
	File  string
	Line  int
}

// ThreadgroupArray is one threadgroup variable declared in a function body.
type ThreadgroupArray struct {
	Name, Type, Dims string
	File             string
	Line             int
	Kernel           string // the kernel whose body declares it, or ""
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
	"thread_position_in_grid":          {"tpig", false},
	"thread_position_in_threadgroup":   {"tpitg", false},
	"threadgroup_position_in_grid":     {"tgpig", false},
	"threads_per_threadgroup":          {"tptg", false},
	"dispatch_threads_per_threadgroup": {"tptg", false},
	"threadgroups_per_grid":            {"tgpg", false},
	"threads_per_grid":                 {"tpg", false},
	"thread_index_in_threadgroup":      {"tiitg", true},
	"thread_index_in_simdgroup":        {"lane", true},
	"simdgroup_index_in_threadgroup":   {"sgitg", true},
	"simdgroups_per_threadgroup":       {"sgptg", true},
	"thread_execution_width":           {"width", true},
	"threads_per_simdgroup":            {"width", true},
}

// IsBuiltin reports whether name is a thread-position attribute the
// emulator supplies.
func IsBuiltin(name string) bool { _, ok := builtinField[name]; return ok }

type line struct {
	text  string // original
	blank string // comments blanked, same length
	file  string
	num   int
}

var includeRe = regexp.MustCompile(`^\s*#\s*include\s*"([^"]+)"`)

func expand(src Source, inc Includer, depth int, out []line) ([]line, error) {
	if depth > 32 {
		return nil, fmt.Errorf("%w: %s: #include nested more than 32 deep", ErrSyntax, src.Name)
	}
	texts := strings.Split(strings.ReplaceAll(src.Text, "\r\n", "\n"), "\n")
	blanks := strings.Split(blankComments(strings.ReplaceAll(src.Text, "\r\n", "\n")), "\n")
	for i, t := range texts {
		if m := includeRe.FindStringSubmatch(blanks[i]); m != nil {
			if inc == nil {
				return nil, fmt.Errorf("%w: %s:%d: #include %q: no include resolver", ErrSyntax, src.Name, i+1, m[1])
			}
			sub, err := inc(src.Name, m[1])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: #include %q: %w", src.Name, i+1, m[1], err)
			}
			out, err = expand(sub, inc, depth+1, out)
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, line{text: t, blank: blanks[i], file: src.Name, num: i + 1})
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

var (
	kernelRe   = regexp.MustCompile(`(?:\bkernel|\[\[\s*kernel\s*\]\])\s+void\s+(\w+)\s*\(`)
	fcRe       = regexp.MustCompile(`^\s*constant\s+([\w:<>, ]+?)\s+(\w+)\s*\[\[\s*function_constant\s*\(\s*(\w+)\s*\)\s*\]\]\s*;\s*$`)
	constInitR = regexp.MustCompile(`^\s*constant\s+([\w:<>, ]+?)\s+(\w+)\s*=\s*(.+?);\s*$`)
	tgDeclRe   = regexp.MustCompile(`^(\s*)threadgroup\s+([\w:<>, ]+?)\s+(\w+)((?:\s*\[[^\]]+\])*)\s*(=[^;]*)?;\s*$`)
	halfLitRe  = regexp.MustCompile(`\b(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?[hH]\b`)
	identRe    = regexp.MustCompile(`\w+`)
)

// Translate preprocesses one .metal source.
func Translate(src Source, inc Includer) (*Unit, error) {
	lines, err := expand(src, inc, 0, nil)
	if err != nil {
		return nil, err
	}
	u := &Unit{}
	// Offsets of each line in the joined blanked text.
	var sb strings.Builder
	starts := make([]int, len(lines))
	for i, l := range lines {
		starts[i] = sb.Len()
		sb.WriteString(l.blank)
		sb.WriteByte('\n')
	}
	blank := sb.String()
	lineAt := func(off int) int { return sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1 }

	type span struct{ from, to int } // line indexes of a kernel body
	bodies := map[string]span{}
	for _, m := range kernelRe.FindAllStringSubmatchIndex(blank, -1) {
		name := blank[m[2]:m[3]]
		li := lineAt(m[0])
		open := m[1] - 1
		closeParen, ok := matching(blank, open, '(', ')')
		if !ok {
			return nil, fmt.Errorf("%w: %s:%d: kernel %s: unbalanced parentheses", ErrSyntax, lines[li].file, lines[li].num, name)
		}
		k := Kernel{Name: name, File: lines[li].file, Line: lines[li].num}
		if k.Params, err = parseParams(blank[open+1 : closeParen]); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: kernel %s: %v", ErrSyntax, k.File, k.Line, name, err)
		}
		brace := strings.IndexByte(blank[closeParen:], '{')
		if brace < 0 {
			return nil, fmt.Errorf("%w: %s:%d: kernel %s has no body", ErrSyntax, k.File, k.Line, name)
		}
		end, ok := matching(blank, closeParen+brace, '{', '}')
		if !ok {
			return nil, fmt.Errorf("%w: %s:%d: kernel %s: unbalanced braces", ErrSyntax, k.File, k.Line, name)
		}
		for _, o := range u.Kernels {
			if o.Name == name {
				return nil, fmt.Errorf("%w: %s:%d: kernel %s is also defined at line %d", ErrSyntax, k.File, k.Line, name, o.Line)
			}
		}
		bodies[name] = span{lineAt(closeParen + brace), lineAt(end)}
		u.Kernels = append(u.Kernels, k)
	}
	inKernel := func(li int) string {
		for n, s := range bodies {
			if li >= s.from && li <= s.to {
				return n
			}
		}
		return ""
	}

	fcNames := map[string]bool{}
	var out strings.Builder
	out.WriteString("#include \"msl_shim.h\"\n")
	prevFile, prevNum := "", 0
	for i, l := range lines {
		if l.file != prevFile || l.num != prevNum+1 {
			fmt.Fprintf(&out, "#line %d %s\n", l.num, strconv.Quote(l.file))
		}
		prevFile, prevNum = l.file, l.num
		text := l.text
		switch {
		case fcRe.MatchString(l.blank):
			m := fcRe.FindStringSubmatch(l.blank)
			idx, err := strconv.Atoi(m[3])
			if err != nil || idx < 0 || idx >= 64 {
				return nil, fmt.Errorf("%w: %s:%d: function_constant index %q must be an integer 0..63", ErrSyntax, l.file, l.num, m[3])
			}
			for _, c := range u.Constants {
				if c.Index == idx {
					return nil, fmt.Errorf("%w: %s:%d: function_constant(%d) is also declared at line %d", ErrSyntax, l.file, l.num, idx, c.Line)
				}
			}
			typ := strings.TrimSpace(m[1])
			u.Constants = append(u.Constants, FunctionConstant{Name: m[2], Type: typ, Index: idx, File: l.file, Line: l.num})
			fcNames[m[2]] = true
			// Bound per dispatch by the generated binder, before any thread runs.
			text = fmt.Sprintf("static %s %s; static bool %s__mslemu_defined;", typ, m[2], m[2])
		case constInitR.MatchString(l.blank) && refersTo(constInitR.FindStringSubmatch(l.blank)[3], fcNames):
			// A program-scope constant computed from function constants
			// must be evaluated after they are bound, so it becomes a macro.
			m := constInitR.FindStringSubmatch(l.blank)
			text = fmt.Sprintf("#define %s (%s(%s))", m[2], strings.TrimSpace(m[1]), m[3])
		case tgDeclRe.MatchString(l.blank):
			m := tgDeclRe.FindStringSubmatch(l.blank)
			if m[5] != "" {
				return nil, fmt.Errorf("%w: %s:%d: threadgroup variable %s has an initializer; threadgroup memory cannot be initialised in its declaration", ErrSyntax, l.file, l.num, m[3])
			}
			k := inKernel(i)
			counted := 1
			if k != "" {
				counted = 0 // in the kernel's static total, checked before the dispatch runs
			}
			typ, dims := strings.TrimSpace(m[2]), strings.Join(strings.Fields(m[4]), "")
			u.Threadgroup = append(u.Threadgroup, ThreadgroupArray{Name: m[3], Type: typ, Dims: dims, File: l.file, Line: l.num, Kernel: k})
			text = fmt.Sprintf("%sstatic thread_local %s %s%s; ::mslemu::tg_array((void*)&%s, sizeof(%s), __FILE__, __LINE__, %d);",
				m[1], typ, m[3], dims, m[3], m[3], counted)
		default:
			text = rewriteHalfLiterals(text, l.blank)
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
			c.Type, c.Index, c.Index, c.Name, c.Name, c.Index)
	}
	out.WriteString("}\n")
	for _, k := range u.Kernels {
		fmt.Fprintf(&out, "static void mslemu_thunk_%s(void* const* bufs, void* const* tgmem) {\n", k.Name)
		out.WriteString("  const ::mslemu::Ctx* c = ::mslemu::ctx(); (void)c; (void)bufs; (void)tgmem;\n")
		args := make([]string, len(k.Params))
		for i, p := range k.Params {
			switch p.Kind {
			case Buffer:
				args[i] = fmt.Sprintf("(%s)(bufs[%d])", p.Type, p.Index)
			case BufferRef:
				args[i] = fmt.Sprintf("*(std::remove_reference_t<%s>*)(bufs[%d])", p.Type, p.Index)
			case Threadgroup:
				args[i] = fmt.Sprintf("(%s)(tgmem[%d])", p.Type, p.Index)
			case Builtin:
				b := builtinField[p.Builtin]
				if b.scalar {
					args[i] = fmt.Sprintf("::mslemu::builtin1<%s>(c->%s)", p.Type, b.field)
				} else {
					args[i] = fmt.Sprintf("::mslemu::builtin<%s>(c->%s)", p.Type, b.field)
				}
			}
		}
		fmt.Fprintf(&out, "  %s(%s);\n}\n", k.Name, strings.Join(args, ", "))
		static := []string{"0"}
		for _, t := range u.Threadgroup {
			if t.Kernel == k.Name {
				static = append(static, fmt.Sprintf("sizeof(%s%s)", t.Type, t.Dims))
			}
		}
		fmt.Fprintf(&out, "static ::mslemu::Registrar mslemu_reg_%s(%q, &mslemu_thunk_%s, &mslemu_bind_constants, %s, %s, %d);\n",
			k.Name, k.Name, k.Name, strings.Join(static, " + "), strconv.Quote(k.File), k.Line)
	}
	u.CPP = out.String()
	return u, nil
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
		nm := nameRe.FindStringSubmatch(decl)
		if nm == nil {
			return nil, fmt.Errorf("parameter %q has no name", raw)
		}
		p := Param{Name: nm[1], Type: strings.TrimSpace(strings.TrimSuffix(decl, nm[0])), Index: -1}
		if p.Type == "" {
			return nil, fmt.Errorf("parameter %q has no type", raw)
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
