package laya_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's "Where to change what" names files; a rename that leaves it
// pointing at nothing fails here instead of misleading the next person.
func TestReadmePathsExist(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Where to change what\n")
	if !ok {
		t.Fatal(`README.md has no "## Where to change what" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	paths := regexp.MustCompile("`([a-z][a-z0-9_]*(?:/[a-z0-9_.]+)*(?:\\.go|\\.metal|\\.json|\\.sh|/))`").FindAllStringSubmatch(section, -1)
	if len(paths) < 15 {
		t.Fatalf("found only %d paths in the section; the pattern no longer matches how it names files", len(paths))
	}
	for _, m := range paths {
		p := strings.TrimSuffix(m[1], "/")
		if _, err := os.Stat(p); err != nil {
			t.Errorf("README \"Where to change what\" names %s: %v", m[1], err)
		}
	}
}
