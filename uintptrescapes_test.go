package laya_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Functions marked //go:uintptrescapes (cudadrv's Driver.Call, the cuBLAS
// wrappers, purego.SyscallN) keep what a uintptr argument points to on the
// heap over the call only where they are called directly. Taken as a func
// value (c := d.Call), a local whose address is passed stays on the stack,
// a stack growth inside the call moves it, and the driver writes where it
// no longer is (a module handle that read back as 0 made an Open fail now
// and then). No package that calls through purego binds such a function
// to a variable, the idiom that did it; other ways of taking it as a
// value (an argument, a field, a method expression) the syntax alone
// cannot tell from a field of the same name, and are not checked.
func TestUintptrEscapesCalledDirectly(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string][]*ast.File{} // by directory
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files[filepath.Dir(path)] = append(files[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The marked functions by name, and the packages that call through
	// purego: those with a file importing it or cudadrv. In them a
	// selector of a marked name counts (a name is all the syntax says).
	marked := map[string]bool{"SyscallN": true}
	var pkgs [][]*ast.File
	for _, fs := range files {
		calls := false
		for _, f := range fs {
			calls = calls || importsPurego(f)
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Doc != nil && hasDirective(fn.Doc, "//go:uintptrescapes") {
					marked[fn.Name.Name] = true
				}
			}
		}
		if calls {
			pkgs = append(pkgs, fs)
		}
	}
	if !marked["Call"] || !marked["Result"] || len(pkgs) < 3 {
		t.Fatalf("found the marked functions %v in %d packages calling through purego, want cudadrv's Call and Result, three packages at least",
			marked, len(pkgs))
	}
	for _, f := range slices.Concat(pkgs...) {
		// The idiom that loses the annotation: a marked method bound to a
		// variable (c := d.drv.Call). A selector read anywhere else may be a
		// field of the same name (an error's call), which the syntax cannot
		// tell apart.
		ast.Inspect(f, func(n ast.Node) bool {
			var values []ast.Expr
			switch n := n.(type) {
			case *ast.AssignStmt:
				values = n.Rhs
			case *ast.ValueSpec:
				values = n.Values
			}
			for _, v := range values {
				if sel, ok := v.(*ast.SelectorExpr); ok && marked[sel.Sel.Name] {
					t.Errorf("%s: %s bound to a variable: call it directly (//go:uintptrescapes)", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}

func hasDirective(g *ast.CommentGroup, directive string) bool {
	for _, c := range g.List {
		if strings.HasPrefix(c.Text, directive) {
			return true
		}
	}
	return false
}

// importsPurego reports whether f imports purego or the module's wrapper
// of the CUDA driver.
func importsPurego(f *ast.File) bool {
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		if p == "github.com/ebitengine/purego" || strings.HasSuffix(p, "/internal/cudadrv") {
			return true
		}
	}
	return false
}
