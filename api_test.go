package laya_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxRootAPI caps the root package's exported functions, types and methods
// (at most ~90). The root is Load, Agent.Predict and the answer
// and request types; add-ons (router, preset, hub, …) live in packages that
// import it. Raising the cap is a design decision, not a test fix.
const maxRootAPI = 90

// TestRootAPISize counts the root package's exported API as go doc shows it:
// package-level functions, types, the functions go/doc files under a type
// (constructors) and the exported methods of exported types. Constants and
// variables are not counted.
func TestRootAPISize(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "laya" {
			t.Fatalf("%s is package %s, want laya", path, f.Name.Name)
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, "github.com/laya-metal/laya")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range d.Funcs {
		names = append(names, f.Name)
	}
	for _, typ := range d.Types {
		names = append(names, typ.Name)
		for _, f := range typ.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range typ.Methods {
			if ast.IsExported(m.Name) {
				names = append(names, typ.Name+"."+m.Name)
			}
		}
	}
	t.Logf("root API: %d exported functions, types and methods (cap %d)", len(names), maxRootAPI)
	if len(names) > maxRootAPI {
		t.Errorf("the root package exports %d functions, types and methods, more than %d: %s\n"+
			"put add-ons in a subpackage that imports laya", len(names), maxRootAPI, strings.Join(names, ", "))
	}
	if len(names) < 20 {
		t.Errorf("counted only %d exported names (%s): the counter is broken", len(names), strings.Join(names, ", "))
	}
}
