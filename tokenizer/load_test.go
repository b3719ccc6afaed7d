package tokenizer

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tokenizerFiles lists every tokenizer.json in the repository's testdata:
// the bundled ones, the checkpoints' and the generated synthetic variants.
func tokenizerFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("../testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "goldens" {
			return filepath.SkipDir // expected outputs, not tokenizer files
		}
		if name := d.Name(); !d.IsDir() && (name == "tokenizer.json" || strings.HasSuffix(name, ".tokenizer.json")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d tokenizer files under ../testdata", len(files))
	}
	return files
}

// sameTokenizer reports the first difference between two loaded
// tokenizers, "" when they are the same in every table and component.
func sameTokenizer(a, b *Tokenizer) string {
	ma, mb := a.model, b.model
	switch {
	case !maps.Equal(maps.Collect(ma.vocab.all()), maps.Collect(mb.vocab.all())):
		return "model.vocab"
	case !sameByID(ma, mb):
		return "model vocabulary by id"
	case !maps.Equal(maps.Collect(ma.merges.all()), maps.Collect(mb.merges.all())):
		return "model.merges (pairs, ranks or merged ids)"
	case ma.unkID != mb.unkID || ma.fuseUnk != mb.fuseUnk || ma.byteFall != mb.byteFall ||
		ma.ignoreMerge != mb.ignoreMerge || ma.prefix != mb.prefix || ma.suffix != mb.suffix:
		return "model options"
	case ma.byteIDs != mb.byteIDs:
		return "byte-fallback ids"
	case !reflect.DeepEqual(a.added, b.added):
		return "added tokens"
	case !maps.Equal(a.addedByContent, b.addedByContent) || !maps.Equal(a.addedByID, b.addedByID) || !maps.Equal(a.special, b.special):
		return "added-token indexes"
	case !reflect.DeepEqual(a.raw, b.raw) || !reflect.DeepEqual(a.norm, b.norm):
		return "added-token matchers"
	case !reflect.DeepEqual(a.normalizer, b.normalizer):
		return "normalizer"
	case !reflect.DeepEqual(a.pre, b.pre):
		return "pre_tokenizer"
	case !reflect.DeepEqual(a.post, b.post):
		return "post_processor"
	case !reflect.DeepEqual(a.decoder, b.decoder):
		return "decoder"
	case a.size != b.size:
		return fmt.Sprintf("Len %d vs %d", a.size, b.size)
	}
	return ""
}

// sameByID: both models give a token for the same ids, and each is a token
// of that id. (Which of several tokens with one id is given was left to
// map iteration order before, so it is not compared.)
func sameByID(a, b *bpe) bool {
	if a.vocabR.len() != b.vocabR.len() {
		return false
	}
	for id, tok := range a.vocabR.all() {
		other, ok := b.vocabR.get(id)
		ida, _ := a.vocab.get(tok)
		idb, _ := b.vocab.get(other)
		if !ok || ida != id || idb != id {
			return false
		}
	}
	return true
}

// sameOutcome compares two parse results: the same tokenizer, or the same
// error text and error classes, and the same padding for LoadDir.
func sameOutcome(t1 *Tokenizer, f1 *fileJSON, err1 error, t2 *Tokenizer, f2 *fileJSON, err2 error) string {
	if (err1 == nil) != (err2 == nil) {
		return fmt.Sprintf("error %v vs %v", err1, err2)
	}
	if err1 != nil {
		if err1.Error() != err2.Error() {
			return fmt.Sprintf("error %q vs %q", err1, err2)
		}
		for _, class := range []error{ErrInvalid, ErrUnsupported, ErrMissingSpecial} {
			if errors.Is(err1, class) != errors.Is(err2, class) {
				return fmt.Sprintf("error %q: errors.Is(%v) differs", err1, class)
			}
		}
		return ""
	}
	if !reflect.DeepEqual(f1.Padding, f2.Padding) {
		return "padding"
	}
	return sameTokenizer(t1, t2)
}

// TestFastLoadMatchesSlow: on every tokenizer.json in testdata (and the
// one LAYA_GEMMA_TOKENIZER names, if set) the fast scanner is taken, and it
// builds what encoding/json alone builds (parseSlow) and what the loader
// before it built (legacyParse).
func TestFastLoadMatchesSlow(t *testing.T) {
	files := tokenizerFiles(t)
	if p := os.Getenv("LAYA_GEMMA_TOKENIZER"); p != "" {
		files = append(files, p)
	}
	for _, path := range files {
		t.Run(strings.TrimPrefix(path, "../testdata/"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fast, ff, ok := parseFast(data)
			if !ok {
				t.Fatal("the fast path gave up on a real tokenizer file")
			}
			slow, fs, err := parseSlow(data)
			if err != nil {
				t.Fatal(err)
			}
			if d := sameOutcome(fast, ff, nil, slow, fs, nil); d != "" {
				t.Errorf("fast and slow paths differ: %s", d)
			}
			old, fo, err := legacyParse(data, true)
			if err != nil {
				t.Fatal(err)
			}
			if d := sameOutcome(fast, ff, nil, old, fo, nil); d != "" {
				t.Errorf("fast path and the previous loader differ: %s", d)
			}
		})
	}
}

// edgeTokenizer is a small tokenizer.json with the model members to vary.
func edgeTokenizer(model string) string {
	return `{"version":"1.0","added_tokens":[{"id":0,"content":"<s>","special":true},{"id":1,"content":"x","normalized":false}],
 "normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false},"decoder":{"type":"ByteLevel"},
 "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
 "special_tokens":{"<s>":{"id":"<s>","ids":[0],"tokens":["<s>"]}}},"model":` + model + `}`
}

// loadEdgeCases are files around the scanner: escapes, duplicates, both
// merge formats, the shapes it hands to encoding/json, and errors.
var loadEdgeCases = []struct {
	name, data string
	fast       bool // the fast path must take it
}{
	{"escaped keys", edgeTokenizer(`{"type":"BPE","vocab":{"<s>":0,"\u0120":1,"a":2,"\u0120a":3,"\"":4,"\\":5,"\"\\":6,"\/":7,"\n\t\r\b\f":8},
	 "merges":["\u0120 a","\" \\"]}`), true},
	{"escaped pairs", edgeTokenizer(`{"type":"BPE","vocab":{"<s>":0,"Ġ":1,"a":2,"Ġa":3,"\"":4,"\\":5,"\"\\":6,"a b":7,"b":8,"a bb":9},
	 "merges":[["\u0120","a"],["\"","\\"],["a b","b"]]}`), true},
	{"space as an escape", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a\u0020b"]}`), true},
	{"surrogate pair and lone surrogate", edgeTokenizer(`{"type":"BPE","vocab":{"\ud83d\ude00":0,"\ud800":1,"\ud800\ud800":2,"\udfff":3},
	 "merges":["\ud800 \ud800"]}`), true},
	{"invalid UTF-8 in keys", edgeTokenizer("{\"type\":\"BPE\",\"vocab\":{\"\xff\":0,\"a\xc3\":1,\"\xef\xbf\xbd\":2},\"merges\":[]}"), true},
	{"non-ASCII keys", edgeTokenizer(`{"type":"BPE","vocab":{"日":0,"本":1,"日本":2,"▁":3},"merges":["日 本"]}`), true},
	{"duplicate vocab keys", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"a":2,"ab":3,"ab":4},"merges":["a b"]}`), true},
	{"duplicate merges", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"c":3,"abc":4},"merges":["a b","ab c","a b"]}`), true},
	{"duplicate merge pairs", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"],["a","b"]]}`), true},
	{"empty merges", edgeTokenizer(`{"type":"BPE","vocab":{"a":0},"merges":[]}`), true},
	{"empty vocab", edgeTokenizer(`{"type":"BPE","vocab":{},"merges":[]}`), true},
	{"empty model", edgeTokenizer(`{}`), false},
	{"no type, merges", edgeTokenizer(`{"vocab":{"a":0},"merges":[]}`), true},
	{"no type, no merges", edgeTokenizer(`{"vocab":{"a":0}}`), false},
	{"continuing prefix", edgeTokenizer(`{"type":"BPE","continuing_subword_prefix":"##","vocab":{"a":0,"##b":1,"ab":2},"merges":["a ##b"]}`), true},
	{"long tokens", edgeTokenizer(`{"type":"BPE","vocab":{"` + strings.Repeat("x", 200) + `":0,"` + strings.Repeat("y", 130) + `":1,"` +
		strings.Repeat("x", 200) + strings.Repeat("y", 130) + `":2},"merges":["` + strings.Repeat("x", 200) + " " + strings.Repeat("y", 130) + `"]}`), true},
	{"whitespace everywhere", " \n\t{ \"model\" : { \"type\" : \"BPE\" , \"vocab\" : { \"a\" : 0 , \"b\" :\r1, \"ab\"\n:\t2 } , \"merges\" : [ [ \"a\" , \"b\" ] ] } } \n", true},
	{"ids at the limits", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":-0,"c":123456789012345678},"merges":[]}`), true},
	{"members after the model", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":5,"content":"q"}],"version":"1.0"}`, true},
	{"repeated other members", `{"added_tokens":[{"id":5,"content":"q"}],"model":{"type":"BPE","type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":6,"content":"r"}]}`, true},

	// Shapes the scanner leaves to encoding/json.
	{"vocab null", edgeTokenizer(`{"type":"BPE","vocab":null,"merges":[]}`), false},
	{"merges null", edgeTokenizer(`{"type":"BPE","vocab":{"a":0},"merges":null}`), false},
	{"model null", `{"model":null}`, false},
	{"no model", `{"version":"1.0"}`, false},
	{"fractional id", edgeTokenizer(`{"type":"BPE","vocab":{"a":0.0},"merges":[]}`), false},
	{"exponent id", edgeTokenizer(`{"type":"BPE","vocab":{"a":1e2},"merges":[]}`), false},
	{"huge id", edgeTokenizer(`{"type":"BPE","vocab":{"a":99999999999999999999},"merges":[]}`), false},
	{"string id", edgeTokenizer(`{"type":"BPE","vocab":{"a":"0"},"merges":[]}`), false},
	{"negative id", edgeTokenizer(`{"type":"BPE","vocab":{"a":-1},"merges":[]}`), false},
	{"capitalized Model", `{"Model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, false},
	{"model and MODEL", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"MODEL":{"type":"BPE","vocab":{"b":0},"merges":[]}}`, false},
	{"escaped model name", `{"mod\u0065l":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, false},
	{"Vocab", edgeTokenizer(`{"type":"BPE","Vocab":{"a":0},"merges":[]}`), false},
	{"two vocabs", edgeTokenizer(`{"type":"BPE","vocab":{"a":0},"vocab":{"b":1},"merges":[]}`), false},
	{"two merges", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[],"merges":["a b"]}`), false},
	{"two models", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"model":{"type":"BPE","vocab":{"b":0},"merges":[]}}`, false},
	{"mixed merge formats", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b",["a","b"]]}`), false},
	{"mixed merge formats 2", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"],"a b"]}`), false},
	{"three-element pair", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b","c"]]}`), false},
	{"one-element pair", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a"]]}`), false},
	{"null pair", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[null]}`), false},
	{"number in merges", edgeTokenizer(`{"type":"BPE","vocab":{"a":0},"merges":[1]}`), false},
	{"merge without space", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["ab"]}`), false},
	{"merge with two spaces", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b c"]}`), false},
	{"merge of unknown token", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b","a c"]}`), false},
	{"merge to unknown token", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b"]}`), false},
	{"unknown unk", edgeTokenizer(`{"type":"BPE","unk_token":"<unk>","vocab":{"a":0},"merges":[]}`), false},
	{"WordPiece", `{"model":{"type":"WordPiece","vocab":{"a":0}}}`, false},
	{"dropout", edgeTokenizer(`{"type":"BPE","dropout":0.1,"vocab":{"a":0},"merges":[]}`), false},
	{"version 2", `{"version":"2.0","model":{"type":"BPE","vocab":{},"merges":[]}}`, false},
	{"bad added_tokens", `{"added_tokens":{},"model":{"type":"BPE","vocab":{},"merges":[]}}`, false},
	{"bad model member", edgeTokenizer(`{"type":5,"vocab":{"a":0},"merges":[]}`), false},

	// Invalid JSON around and inside the scanned members.
	{"empty", ``, false},
	{"not an object", `[]`, false},
	{"trailing data", `{"model":{"type":"BPE","vocab":{},"merges":[]}} {}`, false},
	{"trailing comma in vocab", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,},"merges":[]}`), false},
	{"trailing comma in merges", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b",]}`), false},
	{"trailing comma at top", `{"model":{"type":"BPE","vocab":{},"merges":[]},}`, false},
	{"missing colon", edgeTokenizer(`{"type":"BPE","vocab":{"a" 0},"merges":[]}`), false},
	{"leading zero", edgeTokenizer(`{"type":"BPE","vocab":{"a":01},"merges":[]}`), false},
	{"minus alone", edgeTokenizer(`{"type":"BPE","vocab":{"a":-},"merges":[]}`), false},
	{"bad escape", edgeTokenizer(`{"type":"BPE","vocab":{"\x":0},"merges":[]}`), false},
	{"short \\u", edgeTokenizer(`{"type":"BPE","vocab":{"\u12":0},"merges":[]}`), false},
	{"control character", edgeTokenizer("{\"type\":\"BPE\",\"vocab\":{\"a\x01\":0},\"merges\":[]}"), false},
	{"unterminated string", edgeTokenizer(`{"type":"BPE","vocab":{"a:0},"merges":[]}`), false},
	{"mismatched brackets", `{"normalizer":{"type":[1},"model":{"type":"BPE","vocab":{},"merges":[]}}`, false},
	{"bad literal in a skipped member", `{"padding":nul,"model":{"type":"BPE","vocab":{},"merges":[]}}`, false},
	{"bad number in a skipped member", `{"model":{"type":"BPE","dropout":1.,"vocab":{},"merges":[]}}`, false},
	{"BOM", "\xef\xbb\xbf" + `{"model":{"type":"BPE","vocab":{},"merges":[]}}`, false},
	{"unclosed pair", edgeTokenizer(`{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"}]}`), false},
}

// TestLoadEdgeCases: on small files around the scanner, parse (fast path
// with fallback) gives what encoding/json alone and the previous loader
// give, tokenizer or error; the cases marked fast must not fall back.
func TestLoadEdgeCases(t *testing.T) {
	for _, tc := range loadEdgeCases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			checkLoadAgrees(t, data)
			if _, _, ok := parseFast(data); ok != tc.fast {
				t.Errorf("parseFast ok = %v, want %v", ok, tc.fast)
			}
		})
	}
}

// checkLoadAgrees compares parse with parseSlow and legacyParse on data.
func checkLoadAgrees(t *testing.T, data []byte) {
	t.Helper()
	t1, f1, err1 := parse(data)
	t2, f2, err2 := parseSlow(data)
	t3, f3, err3 := legacyParse(data, true)
	if d := sameOutcome(t1, f1, err1, t2, f2, err2); d != "" {
		t.Errorf("parse and parseSlow differ: %s", d)
	}
	if d := sameOutcome(t1, f1, err1, t3, f3, err3); d != "" {
		t.Errorf("parse and the previous loader differ: %s", d)
	}
	if fast, ff, ok := parseFast(data); ok {
		if err1 != nil {
			t.Errorf("parseFast accepted a file parse rejects with %v", err1)
		} else if d := sameOutcome(fast, ff, nil, t1, f1, nil); d != "" {
			t.Errorf("parseFast and parse differ: %s", d)
		}
	}
}

// TestLoadTruncatedAndGarbled: cut and damaged real files are rejected (or
// accepted) exactly as encoding/json rejects them, with its error text,
// whether the damage falls in the vocabulary, the merges or elsewhere.
func TestLoadTruncatedAndGarbled(t *testing.T) {
	small, err := os.ReadFile(filepath.Join(oracleDir, "checkpoints", "tiny-en", "tokenizer", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	pairs := []byte(minimalTokenizerJSON)
	rng := rand.New(rand.NewPCG(11, 7))
	for _, file := range []struct {
		name string
		data []byte
		cuts int
	}{{"tiny-en", small, 150}, {"minimal", pairs, len(pairs)}} {
		t.Run(file.name+"/truncated", func(t *testing.T) {
			for i := range file.cuts {
				n := i
				if file.cuts < len(file.data) {
					n = rng.IntN(len(file.data))
				}
				if _, _, err := parse(file.data[:n]); err == nil {
					t.Errorf("%d of %d bytes: no error", n, len(file.data))
				} else if !errors.Is(err, ErrInvalid) {
					t.Errorf("%d of %d bytes: %v is not ErrInvalid", n, len(file.data), err)
				}
				checkLoadAgrees(t, file.data[:n])
			}
		})
		t.Run(file.name+"/garbled", func(t *testing.T) {
			for range 300 {
				data := append([]byte(nil), file.data...)
				at := rng.IntN(len(data))
				const garbage = `"\{}[],: 0-.e/u"x` + "\x01\xff"
				data[at] = garbage[rng.IntN(len(garbage))]
				if rng.IntN(3) == 0 { // or cut a byte out
					data = append(data[:at], data[at+1:]...)
				}
				checkLoadAgrees(t, data)
			}
		})
	}
}

// FuzzLoadFastMatchesSlow: on any input, the loader with its fast path
// gives what encoding/json alone and the previous loader give: the same
// tokenizer or the same error.
func FuzzLoadFastMatchesSlow(f *testing.F) {
	f.Add([]byte(minimalTokenizerJSON))
	for _, tc := range loadEdgeCases {
		f.Add([]byte(tc.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLoadAgrees(t, data)
	})
}
