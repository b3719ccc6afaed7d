package laya_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
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
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	pkg := pkgs["laya"]
	if pkg == nil {
		t.Fatal("no package laya in the root directory")
	}
	var names []string
	d := doc.New(pkg, "github.com/laya-metal/laya", 0)
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
