package tokenizer

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// minimalTokenizerJSON exercises most components in a few hundred bytes, as
// a seed for FuzzLoad.
const minimalTokenizerJSON = `{"version":"1.0","added_tokens":[
 {"id":0,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
 {"id":7,"content":"<m>","single_word":true,"lstrip":true,"rstrip":true,"normalized":false,"special":true},
 {"id":8,"content":"  ","normalized":true,"special":false}],
 "normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "},{"type":"Lowercase"}]},
 "pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\p{N}| ?\\p{L}+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]},
 "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[0],"tokens":["<s>"]}}},
 "decoder":{"type":"Sequence","decoders":[{"type":"ByteLevel"},{"type":"Strip","content":" ","start":1,"stop":0}]},
 "model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,"ignore_merges":true,
  "vocab":{"<s>":0,"<unk>":1,"a":2,"b":3,"ab":4,"<0x61>":5,"Ġ":6},"merges":[["a","b"]]}}`

func FuzzLoad(f *testing.F) {
	f.Add([]byte(minimalTokenizerJSON))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{},"merges":[]}}`))
	f.Add([]byte(`{"model":{"type":"WordPiece"}}`))
	// The committed corpus (testdata/fuzz/FuzzLoad) holds small files for
	// the other components; the real tokenizer.json files are too big to
	// mutate usefully.
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromJSON(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "ab ab", "<s> <m>  x", "a\u0301 日本 😀 12"} {
			ids := tok.Encode(s)
			for _, id := range tok.EncodeWithSpecial(s) {
				_ = id
			}
			for _, id := range ids {
				if _, ok := tok.Token(id); !ok {
					t.Fatalf("Encode(%q) gave id %d with no token", s, id)
				}
			}
			tok.Decode(ids)
			tok.Tokens(s)
		}
	})
}

var fuzzTokenizers = sync.OnceValues(func() ([]*Tokenizer, error) {
	var out []*Tokenizer
	for _, p := range []string{
		filepath.Join(modernbertDir, "tokenizer.json"),
		filepath.Join(oracleDir, "checkpoints", "tiny-ml", "tokenizer", "tokenizer.json"),
	} {
		tok, err := Load(p)
		if err != nil {
			return nil, err
		}
		out = append(out, tok)
	}
	return out, nil
})

func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"", " ", "The capital of France is [MASK].", "x \n [MASK]  y", "a  b   c    d",
		"don't I'm", "<mask>x <0x41> ▁▁x", "e\u0301t\u00e9 日本語 😀👨‍👩‍👧 مرحبا नमस्ते",
		strings.Repeat("a", 300), "\t\r\n\u3000\u00a0\u2028", "|||EMAIL_ADDRESS|||[unused0]<|endoftext|>",
		"\xff\xfe invalid \xe2\x98",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if utf8.ValidString(text) && len(text) <= 512 {
			// The unbounded fallback must agree with x/text wherever
			// x/text did not need to insert U+034F. (Short inputs only:
			// the fallback is slow, and minimization would crawl.)
			for _, form := range []norm.Form{norm.NFC, norm.NFD, norm.NFKC, norm.NFKD} {
				want := form.String(text)
				if strings.Count(want, cgj) != strings.Count(text, cgj) {
					continue
				}
				if got := unboundedNormalize(text, form); got != want {
					t.Fatalf("unboundedNormalize(%+q, %v) = %+q, x/text gives %+q", text, form, got, want)
				}
			}
		}
		toks, err := fuzzTokenizers()
		if err != nil {
			t.Fatal(err)
		}
		for i, tok := range toks {
			ids := tok.Encode(text)
			for _, id := range ids {
				if _, ok := tok.Token(id); !ok || id < 0 {
					t.Fatalf("tokenizer %d: Encode(%q) gave id %d with no token", i, text, id)
				}
			}
			if i != 0 || !utf8.ValidString(text) || hasStripToken(tok, text) {
				continue
			}
			// Byte-level BPE is lossless up to NFC, unless an lstrip or
			// rstrip token swallowed whitespace. (NFC without the
			// stream-safe limit, as in Rust; see formNormalizer.)
			if got, want := tok.Decode(ids), (formNormalizer{norm.NFC}).normalize(text); got != want {
				t.Fatalf("Decode(Encode(%+q)) = %+q, want NFC %+q", text, got, want)
			}
		}
	})
}

// hasStripToken reports whether text holds an added token with lstrip or
// rstrip, whose match drops the adjacent whitespace.
func hasStripToken(tok *Tokenizer, text string) bool {
	for _, a := range tok.added {
		if (a.LStrip || a.RStrip) && strings.Contains(text, a.Content) {
			return true
		}
	}
	return false
}
