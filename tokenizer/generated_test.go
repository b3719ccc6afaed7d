package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Regenerating needs node and npm (the Rust core comes with npm's tokenizers).
//go:generate sh -c "cd ../scripts/goldens/tokenizer-goldens && npm ci && node gen.mjs"

// TestGeneratedGoldens checks the differential goldens that
// scripts/goldens/tokenizer-goldens/gen.mjs wrote with the Rust core of Hugging Face
// tokenizers: ~3000 random mixed-script strings for each shipped tokenizer,
// 600 for each synthetic variant (synth-*.tokenizer.json) that exercises
// the components the shipped files do not use.
func TestGeneratedGoldens(t *testing.T) {
	files, err := filepath.Glob("../testdata/tokenizers/generated/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		if base := filepath.Base(f); !strings.HasSuffix(base, ".tokenizer.json") {
			names = append(names, strings.TrimSuffix(base, ".json"))
		}
	}
	for _, want := range []string{"modernbert", "tiny-en", "tiny-ml", "synth-split-llama", "synth-metaspace-first"} {
		if !slices.Contains(names, want) {
			t.Errorf("generated golden %s.json is missing", want)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var g struct {
				Tokenizer string `json:"tokenizer"`
				SHA256    string `json:"tokenizer_sha256"`
				Cases     []struct {
					Text       string   `json:"text"`
					IDs        []int    `json:"ids"`
					IDsSpecial []int    `json:"ids_special"`
					Decoded    *string  `json:"decoded"`
					Tokens     []string `json:"tokens"`
				} `json:"cases"`
			}
			readJSON(t, filepath.Join("../testdata/tokenizers/generated", name+".json"), &g)
			path := filepath.Join("..", g.Tokenizer)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != g.SHA256 {
				t.Fatalf("%s changed since the goldens were generated; rerun gen.mjs", path)
			}
			tok, err := FromJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Cases) < 500 {
				t.Fatalf("only %d cases", len(g.Cases))
			}
			bad, decoded := 0, 0
			for i, c := range g.Cases {
				got := tok.Encode(c.Text)
				if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
					bad++
					if bad <= 10 {
						t.Errorf("case %d %+q:\n got  %v\n want %v", i, c.Text, got, c.IDs)
					}
				}
				if c.IDsSpecial != nil {
					if got := tok.EncodeWithSpecial(c.Text); !slices.Equal(got, c.IDsSpecial) {
						bad++
						t.Errorf("case %d %+q with special tokens:\n got  %v\n want %v", i, c.Text, got, c.IDsSpecial)
					}
				}
				if c.Tokens != nil {
					if got := tok.Tokens(c.Text); !slices.Equal(got, c.Tokens) && len(got)+len(c.Tokens) > 0 {
						bad++
						t.Errorf("case %d Tokens(%+q) = %q, want %q", i, c.Text, got, c.Tokens)
					}
				}
				if c.Decoded != nil {
					decoded++
					if got := tok.Decode(c.IDs); got != *c.Decoded {
						bad++
						t.Errorf("case %d Decode(%v) = %+q, want %+q", i, c.IDs, got, *c.Decoded)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d mismatches over %d cases (%d decodes)", bad, len(g.Cases), decoded)
			}
		})
	}
}
