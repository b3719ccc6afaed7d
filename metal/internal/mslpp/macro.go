package mslpp

import (
	"strings"
)

// macroTable holds the source's #define directives. It is used only to find
// kernel instantiations that macros write (MLX's
// instantiate_kernel(name, func, ...) expands to
// template [[host_name(name)]] [[kernel]] decltype(func<...>) func<...>;);
// clang does the real preprocessing of the emitted code.
type macroTable map[string]macro

type macro struct {
	function bool
	params   []string
	variadic bool
	body     string
}

// define records one directive, given as "#define NAME(params) body" with
// continuation lines already joined.
func (t macroTable) define(directive string) {
	s := strings.TrimSpace(directive)
	s = strings.TrimSpace(strings.TrimPrefix(s, "#"))
	s = strings.TrimSpace(strings.TrimPrefix(s, "define"))
	i := 0
	for i < len(s) && (isAlnum(s[i]) || s[i] == '_') {
		i++
	}
	name := s[:i]
	if name == "" {
		return
	}
	m := macro{}
	rest := s[i:]
	if strings.HasPrefix(rest, "(") {
		e := strings.IndexByte(rest, ')')
		if e < 0 {
			return
		}
		m.function = true
		for _, p := range strings.Split(rest[1:e], ",") {
			p = strings.TrimSpace(p)
			switch {
			case p == "":
			case p == "...":
				m.variadic = true
			case strings.HasSuffix(p, "..."):
				// GNU named variadic parameter: args...
				m.variadic = true
				m.params = append(m.params, strings.TrimSpace(strings.TrimSuffix(p, "...")))
			default:
				m.params = append(m.params, p)
			}
		}
		rest = rest[e+1:]
	}
	m.body = strings.TrimSpace(rest)
	t[name] = m
}

// invoked reports whether s names a function-like macro.
func (t macroTable) invoked(s string) bool {
	for _, id := range identRe.FindAllString(s, -1) {
		if _, ok := t[id]; ok {
			return true
		}
	}
	return false
}

// expand macro-expands s: arguments are expanded before substitution except
// next to # and ##, and the result is rescanned with the macro disabled, as
// in the C preprocessor (close enough for instantiation lists).
func (t macroTable) expand(s string, depth int, disabled map[string]bool) string {
	if depth > 32 || len(t) == 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(s) {
				j++
			}
			b.WriteString(s[i:min(j, len(s))])
			i = j
			continue
		case isAlnum(c) || c == '_':
			j := i
			for j < len(s) && (isAlnum(s[j]) || s[j] == '_') {
				j++
			}
			id := s[i:j]
			if c >= '0' && c <= '9' {
				b.WriteString(id)
				i = j
				continue
			}
			m, ok := t[id]
			if !ok || disabled[id] {
				b.WriteString(id)
				i = j
				continue
			}
			dis := map[string]bool{id: true}
			for k := range disabled {
				dis[k] = true
			}
			if !m.function {
				b.WriteString(t.expand(m.body, depth+1, dis))
				i = j
				continue
			}
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n') {
				k++
			}
			if k >= len(s) || s[k] != '(' {
				b.WriteString(id)
				i = j
				continue
			}
			e, ok := matching(s, k, '(', ')')
			if !ok {
				b.WriteString(s[i:])
				return b.String()
			}
			args := splitArgs(s[k+1 : e])
			b.WriteString(t.expand(t.substitute(m, args, depth, dis), depth+1, dis))
			i = e + 1
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// splitArgs splits macro arguments at commas outside parentheses (angle
// brackets do not group in the preprocessor).
func splitArgs(s string) []string {
	var out []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[last:i]))
				last = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[last:]); rest != "" || len(out) > 0 {
		out = append(out, rest)
	}
	return out
}

func (t macroTable) substitute(m macro, args []string, depth int, disabled map[string]bool) string {
	value := map[string]string{}
	for i, p := range m.params {
		if i < len(args) {
			value[p] = args[i]
		}
	}
	if m.variadic {
		rest := []string{}
		if len(args) > len(m.params) {
			rest = args[len(m.params):]
		}
		name := "__VA_ARGS__"
		if len(m.params) > 0 && len(args) >= len(m.params) && strings.Contains(m.body, m.params[len(m.params)-1]+"...") {
			name = m.params[len(m.params)-1]
		}
		value[name] = strings.Join(rest, ", ")
	}
	body := m.body
	var b strings.Builder
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(body) && body[j] != c {
				if body[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(body))
			b.WriteString(body[i:j])
			i = j
		case c == '#' && i+1 < len(body) && body[i+1] == '#':
			// Token pasting: drop the operator and the spaces around it.
			out := strings.TrimRight(b.String(), " \t")
			b.Reset()
			b.WriteString(out)
			i += 2
			for i < len(body) && (body[i] == ' ' || body[i] == '\t') {
				i++
			}
			j := i
			for j < len(body) && (isAlnum(body[j]) || body[j] == '_') {
				j++
			}
			if v, ok := value[body[i:j]]; ok {
				b.WriteString(v)
				i = j
			}
		case c == '#':
			j := i + 1
			for j < len(body) && (body[j] == ' ' || body[j] == '\t') {
				j++
			}
			k := j
			for k < len(body) && (isAlnum(body[k]) || body[k] == '_') {
				k++
			}
			if v, ok := value[body[j:k]]; ok {
				b.WriteString(`"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`)
				i = k
			} else {
				b.WriteByte(c)
				i++
			}
		case isAlnum(c) || c == '_':
			j := i
			for j < len(body) && (isAlnum(body[j]) || body[j] == '_') {
				j++
			}
			id := body[i:j]
			v, ok := value[id]
			switch {
			case !ok:
				b.WriteString(id)
			case strings.HasPrefix(strings.TrimLeft(body[j:], " \t"), "##"):
				b.WriteString(v) // operand of ##: not expanded first
			default:
				b.WriteString(t.expand(v, depth+1, disabled))
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}
