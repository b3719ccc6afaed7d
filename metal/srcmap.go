package metal

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The Metal runtime compiler (newLibraryWithSource:options:error:) sees one
// string per library and has no file system to search, so quoted #include
// lines must be resolved here, and its diagnostics speak of
// "program_source:LINE:COL" instead of our file names. A compileUnit is one
// .metal file made ready for it: headers inlined, "#line" markers inserted
// (clang-based compilers, Metal's included, then report the original file and
// line themselves) and a line table kept so that a log that still says
// program_source can be mapped back by mapCompileLog.

// srcPos is where one line of a compile unit came from.
type srcPos struct {
	file string
	line int // 1-based; 0 for lines we inserted (#line markers)
}

// compileUnit is one .metal file as handed to the Metal compiler.
type compileUnit struct {
	name   string   // the .metal file this unit compiles
	source string   // what the compiler sees
	lines  []srcPos // lines[i] is the origin of source line i+1
}

// maxIncludeDepth bounds header nesting so a cycle cannot recurse forever.
const maxIncludeDepth = 16

var includeLine = regexp.MustCompile(`^\s*#\s*include\s*"([^"]+)"`)

var pragmaOnceLine = regexp.MustCompile(`^\s*#\s*pragma\s+once\b`)

// prepareUnits turns a name→source set into compile units: one per file
// whose name ends in ".metal", in name order. Other files (headers) are only
// reachable through #include "name"; each header is inlined at most once per
// unit, which is what #pragma once or include guards would give.
func prepareUnits(files map[string]string) ([]compileUnit, error) {
	var names []string
	for name := range files {
		if strings.HasSuffix(name, ".metal") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no .metal file among %d kernel sources", ErrShaderCompile, len(files))
	}
	sort.Strings(names)
	units := make([]compileUnit, 0, len(names))
	for _, name := range names {
		b := unitBuilder{files: files, included: map[string]bool{}}
		if err := b.appendFile(name, 0); err != nil {
			return nil, err
		}
		units = append(units, compileUnit{name: name, source: b.text.String(), lines: b.lines})
	}
	return units, nil
}

type unitBuilder struct {
	files    map[string]string
	included map[string]bool
	text     strings.Builder
	lines    []srcPos
}

func (b *unitBuilder) emit(line string, pos srcPos) {
	b.text.WriteString(line)
	b.text.WriteByte('\n')
	b.lines = append(b.lines, pos)
}

func (b *unitBuilder) marker(file string, nextLine int) {
	b.emit(fmt.Sprintf("#line %d %s", nextLine, strconv.Quote(file)), srcPos{file: file})
}

func (b *unitBuilder) appendFile(name string, depth int) error {
	b.included[name] = true
	b.marker(name, 1)
	for i, line := range strings.Split(strings.TrimSuffix(b.files[name], "\n"), "\n") {
		lineNo := i + 1
		if pragmaOnceLine.MatchString(line) {
			// Inlined, the header is part of the main file, where clang
			// warns about #pragma once; the set in b.included does its job.
			b.emit("", srcPos{name, lineNo})
			continue
		}
		m := includeLine.FindStringSubmatch(line)
		if m == nil {
			b.emit(line, srcPos{name, lineNo})
			continue
		}
		header, ok := resolveInclude(b.files, name, m[1])
		if !ok {
			return fmt.Errorf("%w: %s:%d: #include %q is not among the kernel sources (the Metal runtime compiler cannot read files)",
				ErrShaderCompile, name, lineNo, m[1])
		}
		if depth+1 > maxIncludeDepth {
			return fmt.Errorf("%w: %s:%d: includes nested deeper than %d (cycle?)", ErrShaderCompile, name, lineNo, maxIncludeDepth)
		}
		if b.included[header] {
			b.emit("", srcPos{name, lineNo})
			continue
		}
		if err := b.appendFile(header, depth+1); err != nil {
			return err
		}
		b.marker(name, lineNo+1)
	}
	return nil
}

// resolveInclude finds an included file the way a compiler would for a
// quoted include: next to the including file first, then as given.
func resolveInclude(files map[string]string, from, target string) (string, bool) {
	candidates := []string{path.Join(path.Dir(from), target), path.Clean(target)}
	for _, c := range candidates {
		if _, ok := files[c]; ok {
			return c, true
		}
	}
	return "", false
}

var programSourcePos = regexp.MustCompile(`program_source:(\d+)`)

// mapCompileLog rewrites "program_source:LINE" positions in a Metal
// compiler log to "file:line" through the unit's line table. Positions the
// compiler already reported by file name (it honoured our #line markers) are
// left untouched.
func mapCompileLog(log string, u compileUnit) string {
	return programSourcePos.ReplaceAllStringFunc(log, func(m string) string {
		n, err := strconv.Atoi(m[len("program_source:"):])
		if err != nil || n < 1 || n > len(u.lines) || u.lines[n-1].line == 0 {
			return m
		}
		p := u.lines[n-1]
		return p.file + ":" + strconv.Itoa(p.line)
	})
}
