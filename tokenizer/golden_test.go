package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const (
	modernbertDir = "../testdata/tokenizers/modernbert"
	oracleDir     = "../testdata/oracle"
)

type idCase struct {
	Text   string   `json:"text"`
	IDs    []int    `json:"ids"`
	Tokens []string `json:"tokens"`
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func mustLoad(t testing.TB, path string) *Tokenizer {
	t.Helper()
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// checkCases compares Encode (and Tokens, when the golden has them) for
// every case and reports the first few mismatches.
func checkCases(t *testing.T, tok *Tokenizer, cases []idCase) {
	t.Helper()
	bad := 0
	for i, c := range cases {
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
			bad++
			if bad <= 10 {
				t.Errorf("case %d %q:\n got  %v\n want %v", i, c.Text, got, c.IDs)
			}
			continue
		}
		if c.Tokens != nil {
			if got := tok.Tokens(c.Text); !slices.Equal(got, c.Tokens) && len(c.Tokens) > 0 {
				bad++
				if bad <= 10 {
					t.Errorf("case %d %q tokens:\n got  %q\n want %q", i, c.Text, got, c.Tokens)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ", bad, len(cases))
	}
}

func TestModernBERTGolden(t *testing.T) {
	var g struct {
		Cases []idCase `json:"cases"`
	}
	readJSON(t, filepath.Join(modernbertDir, "golden.json"), &g)
	if len(g.Cases) < 400 {
		t.Fatalf("golden has %d cases, expected the 445 HF cases", len(g.Cases))
	}
	checkCases(t, mustLoad(t, filepath.Join(modernbertDir, "tokenizer.json")), g.Cases)
}

type oracleGolden struct {
	SpecialTokens     map[string]any `json:"special_tokens"`
	LenTokenizer      int            `json:"len_tokenizer"`
	Cases             []idCase       `json:"cases"`
	WithSpecialTokens []idCase       `json:"with_special_tokens"`
}

var oracleNames = []string{"tiny-en", "tiny-ml", "real-en"}

func TestOracleTokenizerGoldens(t *testing.T) {
	for _, name := range oracleNames {
		t.Run(name, func(t *testing.T) {
			var g oracleGolden
			readJSON(t, filepath.Join(oracleDir, "goldens", name, "tokenizer.json"), &g)
			tok, sp, err := LoadDir(filepath.Join(oracleDir, "checkpoints", name, "tokenizer"))
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Cases) == 0 || len(g.WithSpecialTokens) == 0 {
				t.Fatal("golden has no cases")
			}
			checkCases(t, tok, g.Cases)
			for _, c := range g.WithSpecialTokens {
				if got := tok.EncodeWithSpecial(c.Text); !slices.Equal(got, c.IDs) {
					t.Errorf("EncodeWithSpecial(%q) = %v, want %v", c.Text, got, c.IDs)
				}
			}
			if got := tok.Len(); got != g.LenTokenizer {
				t.Errorf("Len() = %d, want %d", got, g.LenTokenizer)
			}
			want := func(key string) int {
				v, ok := g.SpecialTokens[key].(float64)
				if !ok {
					return -1
				}
				return int(v)
			}
			for _, r := range []struct {
				key string
				got int
			}{{"cls", sp.CLS}, {"sep", sp.SEP}, {"pad", sp.PAD}, {"mask", sp.MASK}, {"unk", sp.UNK}} {
				if r.got != want(r.key) {
					t.Errorf("special %s = %d, want %d", r.key, r.got, want(r.key))
				}
			}
			if mt, _ := g.SpecialTokens["mask_token"].(string); sp.MaskToken != mt {
				t.Errorf("MaskToken = %q, want %q", sp.MaskToken, mt)
			}
		})
	}
}

// TestLoadDirSpecials checks the ids listed in testdata/oracle/README.md,
// independently of the goldens above.
func TestLoadDirSpecials(t *testing.T) {
	tests := []struct {
		name                     string
		cls, sep, pad, mask, unk int
		maskToken                string
		size                     int
	}{
		{"tiny-en", 631, 632, 633, 634, -2, "[MASK]", 637},
		{"tiny-ml", 2, 1, 0, 4, 3, "<mask>", 986},
		{"tiny-ml-mlxnames", 2, 1, 0, 4, 3, "<mask>", 986},
		{"real-en", 50281, 50282, 50283, 50284, 50280, "[MASK]", 50368},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, sp, err := LoadDir(filepath.Join(oracleDir, "checkpoints", tt.name, "tokenizer"))
			if err != nil {
				t.Fatal(err)
			}
			got := []int{sp.CLS, sp.SEP, sp.PAD, sp.MASK}
			if want := []int{tt.cls, tt.sep, tt.pad, tt.mask}; !slices.Equal(got, want) {
				t.Errorf("CLS/SEP/PAD/MASK = %v, want %v", got, want)
			}
			if tt.unk != -2 && sp.UNK != tt.unk {
				t.Errorf("UNK = %d, want %d", sp.UNK, tt.unk)
			}
			if sp.MaskToken != tt.maskToken {
				t.Errorf("MaskToken = %q, want %q", sp.MaskToken, tt.maskToken)
			}
			if tok.Len() != tt.size {
				t.Errorf("Len() = %d, want %d", tok.Len(), tt.size)
			}
			if id, ok := tok.TokenID(sp.MaskToken); !ok || id != sp.MASK {
				t.Errorf("TokenID(%q) = %d, %v", sp.MaskToken, id, ok)
			}
			if s, ok := tok.Token(sp.MASK); !ok || s != sp.MaskToken {
				t.Errorf("Token(%d) = %q, %v", sp.MASK, s, ok)
			}
		})
	}
}

func ExampleTokenizer_EncodeWithSpecial() {
	tok, err := Load("../testdata/tokenizers/modernbert/tokenizer.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tok.EncodeWithSpecial("The capital of France is [MASK]."))
	// Output: [50281 510 5347 273 6181 310 50284 15 50282]
}
