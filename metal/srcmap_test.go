package metal

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

func TestSrcMapPrepareUnits(t *testing.T) {
	files := map[string]string{
		"b.metal":        "#include \"common.h\"\nkernel void b() {}\n",
		"a.metal":        "// a\n#include \"common.h\"\n#include \"common.h\"\nkernel void a() {}\n",
		"common.h":       "#pragma once\n#include \"sub/inner.h\"\nconstant int k = 1;\n",
		"sub/inner.h":    "#include \"../common.h\"\nconstant int inner = 2;\n",
		"notes.txt":      "not compiled",
		"sub/alone.h":    "constant int alone = 3;\n",
		"sub/x.metal":    "#include \"alone.h\"\n",
		"sub/README.txt": "",
	}
	units, err := prepareUnits(files)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range units {
		names = append(names, u.name)
	}
	if got, want := strings.Join(names, ","), "a.metal,b.metal,sub/x.metal"; got != want {
		t.Fatalf("units %s, want %s", got, want)
	}
	wantA := strings.Join([]string{
		`#line 1 "a.metal"`,
		`// a`,
		`#line 1 "common.h"`,
		``, // #pragma once blanked
		`#line 1 "sub/inner.h"`,
		``, // ../common.h already included
		`constant int inner = 2;`,
		`#line 3 "common.h"`,
		`constant int k = 1;`,
		`#line 3 "a.metal"`,
		``, // second include of common.h
		`kernel void a() {}`,
	}, "\n") + "\n"
	if units[0].source != wantA {
		t.Errorf("a.metal unit:\n%s\nwant:\n%s", units[0].source, wantA)
	}
	if len(units[0].lines) != strings.Count(wantA, "\n") {
		t.Errorf("line table has %d entries for %d lines", len(units[0].lines), strings.Count(wantA, "\n"))
	}
	if !strings.Contains(units[2].source, "constant int alone = 3;") {
		t.Errorf("sub/x.metal did not inline sub/alone.h relative to itself:\n%s", units[2].source)
	}
}

func TestSrcMapPrepareUnitsErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no metal file", map[string]string{"a.h": ""}, "no .metal file"},
		{"missing include", map[string]string{"k.metal": "x\n#include \"gone.h\"\n"}, `k.metal:2: #include "gone.h" is not among`},
		{"missing nested include", map[string]string{"k.metal": "#include \"a.h\"\n", "a.h": "\n\n#include \"b.h\"\n"}, `a.h:3: #include "b.h"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := prepareUnits(tt.files)
			if !errors.Is(err, ErrShaderCompile) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrShaderCompile containing %q", err, tt.want)
			}
		})
	}
}

func TestSrcMapCompileLog(t *testing.T) {
	units, err := prepareUnits(map[string]string{
		"k.metal": "line1\n#include \"h.h\"\nline3\n",
		"h.h":     "h1\nh2\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	u := units[0]
	// Unit lines: 1 #line k, 2 line1, 3 #line h, 4 h1, 5 h2, 6 #line k, 7 line3.
	tests := []struct{ log, want string }{
		{"program_source:2:5: error: x", "k.metal:1:5: error: x"},
		{"program_source:5:1: error: y\nprogram_source:7:2: note: z", "h.h:2:1: error: y\nk.metal:3:2: note: z"},
		{"program_source:3:1: marker line stays", "program_source:3:1: marker line stays"},
		{"program_source:99:1: out of range stays", "program_source:99:1: out of range stays"},
		{"k.metal:3:2: already mapped by #line", "k.metal:3:2: already mapped by #line"},
	}
	for _, tt := range tests {
		if got := mapCompileLog(tt.log, u); got != tt.want {
			t.Errorf("mapCompileLog(%q) = %q, want %q", tt.log, got, tt.want)
		}
	}
}

// TestSrcMapAgainstClang holds our line table to an independent reference:
// clang reports an error's position once through our #line markers and once
// (markers blanked out) as a raw line of the unit that mapCompileLog must map
// to the same file:line.
func TestSrcMapAgainstClang(t *testing.T) {
	clang := ""
	for _, name := range []string{"clang-19", "clang"} {
		if p, err := exec.LookPath(name); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		t.Skip("clang-19 or clang not installed; the line mapping is still covered by TestSrcMapCompileLog")
	}
	files := map[string]string{
		"main.metal": "int a;\n#include \"defs.h\"\nint b;\nint main_bad = undeclared_in_main;\n",
		"defs.h":     "#pragma once\nint c;\n#include \"deep.h\"\nint defs_bad = undeclared_in_defs;\n",
		"deep.h":     "\n\nint deep_bad = undeclared_in_deep;\n",
	}
	units, err := prepareUnits(files)
	if err != nil {
		t.Fatal(err)
	}
	u := units[0]
	diag := regexp.MustCompile(`(?m)^(\S+?):(\d+):\d+: error: use of undeclared identifier '(\w+)'`)
	run := func(src, stdinName string) map[string]string {
		cmd := exec.Command(clang, "-fsyntax-only", "-x", "c", "-")
		cmd.Stdin = strings.NewReader(src)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, _ := cmd.CombinedOutput() // the errors are the point
		text := strings.ReplaceAll(string(out), "<stdin>:", stdinName+":")
		found := map[string]string{}
		for _, m := range diag.FindAllStringSubmatch(text, -1) {
			found[m[3]] = m[1] + ":" + m[2]
		}
		return found
	}
	viaMarkers := run(u.source, "<stdin>")
	blanked := regexp.MustCompile(`(?m)^#line .*$`).ReplaceAllString(u.source, "")
	viaTable := run(blanked, "program_source")
	want := map[string]string{
		"undeclared_in_main": "main.metal:4",
		"undeclared_in_defs": "defs.h:4",
		"undeclared_in_deep": "deep.h:3",
	}
	for ident, pos := range want {
		if viaMarkers[ident] != pos {
			t.Errorf("clang through #line markers puts %s at %q, want %q", ident, viaMarkers[ident], pos)
		}
		raw, ok := viaTable[ident]
		if !ok {
			t.Errorf("clang did not report %s without markers: %v", ident, viaTable)
			continue
		}
		if got := mapCompileLog(raw, u); got != pos {
			t.Errorf("mapCompileLog(%q) = %q, want %q (clang with markers)", raw, got, pos)
		}
	}
}
