package tokenizer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// withComponent returns minimalTokenizerJSON with one top-level component
// replaced.
func withComponent(t *testing.T, key, value string) []byte {
	t.Helper()
	start := strings.Index(minimalTokenizerJSON, `"`+key+`":`)
	if start < 0 {
		t.Fatalf("no %s in the minimal tokenizer", key)
	}
	// Components in the minimal file are followed by a newline.
	end := start + strings.Index(minimalTokenizerJSON[start:], "\n")
	return []byte(minimalTokenizerJSON[:start] + `"` + key + `":` + value + ",\n" + minimalTokenizerJSON[end+1:])
}

func TestFromJSONErrors(t *testing.T) {
	if _, err := FromJSON([]byte(minimalTokenizerJSON)); err != nil {
		t.Fatalf("minimal tokenizer: %v", err)
	}
	tests := []struct {
		name    string
		data    []byte
		want    error
		mention string
	}{
		{"not JSON", []byte(`{"model":`), ErrInvalid, ""},
		{"no model", []byte(`{"version":"1.0"}`), ErrInvalid, "model"},
		{"WordPiece model", []byte(`{"model":{"type":"WordPiece","vocab":{}}}`), ErrUnsupported, "WordPiece"},
		{"version", []byte(`{"version":"2.0","model":{"type":"BPE","vocab":{},"merges":[]}}`), ErrUnsupported, "2.0"},
		{"merge of unknown token", []byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":["a zz"]}}`), ErrInvalid, `"zz"`},
		{"merge result missing", []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[["a","b"]]}}`), ErrInvalid, `"ab"`},
		{"bad merge string", []byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":["a"]}}`), ErrInvalid, "merges[0]"},
		{"unk not in vocab", []byte(`{"model":{"type":"BPE","vocab":{},"merges":[],"unk_token":"<unk>"}}`), ErrInvalid, "<unk>"},
		{"dropout", []byte(`{"model":{"type":"BPE","vocab":{},"merges":[],"dropout":0.1}}`), ErrUnsupported, "dropout"},
		{"unknown normalizer", withComponent(t, "normalizer", `{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"BertNormalizer"}]}`), ErrUnsupported, "normalizer.normalizers[1]"},
		{"unknown pre-tokenizer", withComponent(t, "pre_tokenizer", `{"type":"Whitespace"}`), ErrUnsupported, "Whitespace"},
		{"lookahead inside a split regex", withComponent(t, "pre_tokenizer", `{"type":"Split","pattern":{"Regex":"a(?=b)"},"behavior":"Isolated"}`), ErrUnsupported, "pre_tokenizer"},
		{"bad split behavior", withComponent(t, "pre_tokenizer", `{"type":"Split","pattern":{"String":"a"},"behavior":"Sideways"}`), ErrUnsupported, "Sideways"},
		{"bad prepend scheme", withComponent(t, "pre_tokenizer", `{"type":"Metaspace","replacement":"_","prepend_scheme":"sometimes"}`), ErrUnsupported, "sometimes"},
		{"unknown decoder", withComponent(t, "decoder", `{"type":"WordPiece"}`), ErrUnsupported, "decoder"},
		{"unknown post-processor", withComponent(t, "post_processor", `{"type":"Magic"}`), ErrUnsupported, "post_processor"},
		{"template names a missing token", withComponent(t, "post_processor", `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"[X]","type_id":0}}],"special_tokens":{}}`), ErrInvalid, "[X]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromJSON(tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("err = %q, want it to mention %q", err, tt.mention)
			}
		})
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	if _, err := Load("does-not-exist.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(path, []byte(`{"model":{"type":"Unigram"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(unigram) = %v", err)
	}
}

func TestLoadDirFallbacks(t *testing.T) {
	tests := []struct {
		name   string
		config string // "" means no tokenizer_config.json
		want   Specials
		err    error
	}{
		{
			name: "no config: template, then conventional literals",
			err:  ErrMissingSpecial, // no SEP anywhere
		},
		{
			name:   "config strings and objects",
			config: `{"cls_token":"<s>","sep_token":{"content":"<s>","lstrip":false},"pad_token":"<pad>","mask_token":{"__type":"AddedToken","content":"<m>"}}`,
			want:   Specials{CLS: 0, SEP: 0, PAD: 9, MASK: 7, UNK: 1, MaskToken: "<m>"},
		},
		{
			name:   "partial config: the rest from tokenizer.json",
			config: `{"sep_token":"<s>"}`,
			want:   Specials{CLS: 0, SEP: 0, PAD: 9, MASK: 10, UNK: 1, MaskToken: "<mask>"},
		},
		{
			name:   "config names a token the tokenizer lacks",
			config: `{"cls_token":"[CLS]","sep_token":"<s>","pad_token":"<pad>","mask_token":"<m>"}`,
			err:    ErrMissingSpecial,
		},
		{
			name:   "config is not JSON",
			config: `{`,
			err:    ErrInvalid,
		},
	}
	tokJSON := strings.Replace(minimalTokenizerJSON, `{"id":8,"content":"  ","normalized":true,"special":false}`,
		`{"id":8,"content":"  ","normalized":true,"special":false},{"id":9,"content":"<pad>","special":true},{"id":10,"content":"<mask>","special":true}`, 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tokJSON), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.config != "" {
				if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(tt.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, sp, err := LoadDir(dir)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("err = %v, want %v naming %s", err, tt.err, dir)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sp != tt.want {
				t.Errorf("Specials = %+v, want %+v", sp, tt.want)
			}
		})
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := mustLoad(t, filepath.Join(modernbertDir, "tokenizer.json"))
	var g struct {
		Cases []idCase `json:"cases"`
	}
	readJSON(t, filepath.Join(modernbertDir, "golden.json"), &g)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for w := range 4 {
		wg.Go(func() {
			for i := range g.Cases {
				c := g.Cases[(i*7+w*13)%len(g.Cases)]
				if got := tok.Encode(c.Text); !slices.Equal(got, c.IDs) && len(got)+len(c.IDs) > 0 {
					errs <- c.Text
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for text := range errs {
		t.Errorf("concurrent Encode(%q) differs from the golden", text)
	}
}
