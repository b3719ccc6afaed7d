package bundledtok

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The bundled copy is the repository's tokenizer, byte for byte (after
// go generate, if testdata changes).
func TestModernBERTIsTestdata(t *testing.T) {
	want, err := os.ReadFile("../../testdata/tokenizers/modernbert/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ModernBERT()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("bundled tokenizer.json (%d bytes) differs from testdata's (%d bytes): run go generate ./internal/bundledtok", len(got), len(want))
	}
	dir, remove, err := TempDir()
	if err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil || !bytes.Equal(written, want) {
		t.Errorf("TempDir wrote %d bytes (err %v), want the tokenizer", len(written), err)
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind (%v)", dir, err)
	}
}
