package laya_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/development.md's "Where to change what" names files; a rename that
// leaves it pointing at nothing fails here instead of misleading the next
// person.
func TestReadmePathsExist(t *testing.T) {
	const doc = "docs/development.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Where to change what\n")
	if !ok {
		t.Fatalf(`%s has no "## Where to change what" section`, doc)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	paths := regexp.MustCompile("`([a-z][a-z0-9_]*(?:/[a-z0-9_.]+)*(?:\\.go|\\.metal|\\.json|\\.sh|/))`").FindAllStringSubmatch(section, -1)
	if len(paths) < 15 {
		t.Fatalf("found only %d paths in the section; the pattern no longer matches how it names files", len(paths))
	}
	for _, m := range paths {
		p := strings.TrimSuffix(m[1], "/")
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s \"Where to change what\" names %s: %v", doc, m[1], err)
		}
	}
}

// The guides name scripts, commands and files by path (`go run ./cmd/laya`,
// `scripts/maccheck/mac-check.sh`, links between documents); a move that
// leaves one of them pointing at nothing fails here.
func TestDocPathsExist(t *testing.T) {
	docs := []string{"README.md", "BENCHMARKS.md", "scripts/README.md"}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, more...)
	// A path into one of the module's top-level folders, anywhere in the
	// text; the character after it tells placeholders (<name>, *) apart.
	inText := regexp.MustCompile(`(?:^|[\s\x60("'])(?:\./)?((?:backend|benchmarks|cmd|docs|encoder|heads|hub|internal|kernels|lang|metal|preset|pyjson|router|scripts|serve|snake|testdata|tokenizer|weights)/[A-Za-z0-9_./-]*)(.?)`)
	// A relative Markdown link, resolved from the document's folder.
	link := regexp.MustCompile(`\]\(([^)#:]+)(?:#[^)]*)?\)`)
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range inText.FindAllStringSubmatch(string(b), -1) {
			if m[2] == "<" || m[2] == "*" {
				continue
			}
			p := strings.TrimRight(m[1], ".:-")
			if notInTree[p] || strings.HasPrefix(p, "scripts/bench/bench-torch/bin") {
				continue
			}
			if dir, sym, ok := strings.Cut(p, "."); ok && sym != "" && sym[0] >= 'A' && sym[0] <= 'Z' {
				p = dir // a Go identifier: internal/forwardpass.RunPruned
			}
			checked++
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, p)
			}
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			p := filepath.Join(filepath.Dir(doc), m[1])
			checked++
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s (%s), which does not exist", doc, m[1], p)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d paths; the patterns no longer match how the documents name files", checked)
	}
}

// notInTree are paths the documents name that are not this repository's
// files: a checkpoint's own files and upstream's documents.
var notInTree = map[string]bool{
	"encoder/config.json": true, // inside a checkpoint directory
	"docs/http-api.md":    true, // upstream laya's
	"docs/serving.md":     true, // upstream laya's
}
