// Package bundledtok carries the ModernBERT tokenizer inside the binaries
// that write synthetic checkpoints (laya synth, laya-bench --synthetic and
// --compare), so that they need neither the repository's testdata nor a
// download. It is testdata/tokenizers/modernbert/tokenizer.json, compressed
// (a test holds the two equal); its ids fit every synthetic preset's
// vocabulary.
package bundledtok

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

//go:generate sh -c "gzip -9 -n -c ../../testdata/tokenizers/modernbert/tokenizer.json > modernbert-tokenizer.json.gz"

//go:embed modernbert-tokenizer.json.gz
var modernBERTGzip []byte

// ModernBERT returns the bundled tokenizer.json.
func ModernBERT() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(modernBERTGzip))
	if err != nil {
		return nil, fmt.Errorf("bundledtok: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("bundledtok: %w", err)
	}
	return data, nil
}

// TempDir writes the bundled tokenizer.json into a new temporary directory,
// the form a synthetic.Spec's TokenizerDir takes, and returns the directory
// and the function that removes it.
func TempDir() (dir string, remove func(), err error) {
	data, err := ModernBERT()
	if err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp("", "laya-tokenizer-")
	if err != nil {
		return "", nil, fmt.Errorf("bundledtok: %w", err)
	}
	remove = func() { os.RemoveAll(dir) }
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		remove()
		return "", nil, fmt.Errorf("bundledtok: %w", err)
	}
	return dir, remove, nil
}
