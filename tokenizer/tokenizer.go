package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer encodes text to ids as the Hugging Face tokenizer.json it was
// loaded from does. It is immutable after loading (apart from an internal,
// synchronized word cache) and safe for concurrent use.
type Tokenizer struct {
	normalizer normalizer // nil: identity
	pre        preTokenizer
	model      *bpe
	post       postProcessor // nil: no special tokens are added
	decoder    decoder       // nil: tokens joined with spaces

	// added holds the added tokens with their final ids and flags.
	added []addedToken
	// addedByContent and addedByID index added.
	addedByContent map[string]int
	addedByID      map[int]int
	special        map[string]bool
	raw            *matcher // tokens with normalized=false, on raw text
	norm           *matcher // tokens with normalized=true, on normalized text

	size int // len(tokenizer) in Python
}

// fileJSON is the top level of tokenizer.json. "truncation" and "padding"
// do not change ids: transformers turns both off for a call that does not
// ask for them, so only padding.pad_token is read, as a PAD fallback.
type fileJSON struct {
	Version       string          `json:"version"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"`
	Padding       *paddingJSON    `json:"padding"`
}

type paddingJSON struct {
	PadToken *string `json:"pad_token"`
	PadID    *int    `json:"pad_id"`
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := fromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}

// FromJSON builds a tokenizer from the contents of a tokenizer.json file.
func FromJSON(data []byte) (*Tokenizer, error) {
	t, err := fromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

func fromJSON(data []byte) (*Tokenizer, error) {
	t, _, err := parse(data)
	return t, err
}

// parse also returns the decoded file, for LoadDir's fallbacks. The fast
// scanner (scan.go) handles every ordinary file; on anything it does not
// handle, and on every error, the file is decoded again with encoding/json
// alone, so that what is accepted, what is built and every error text stay
// those of encoding/json (TestFastLoadMatchesSlow holds both to that).
func parse(data []byte) (*Tokenizer, *fileJSON, error) {
	if t, f, ok := parseFast(data); ok {
		return t, f, nil
	}
	return parseSlow(data)
}

// parseSlow decodes the file with encoding/json alone.
func parseSlow(data []byte) (*Tokenizer, *fileJSON, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	if err := checkVersion(f.Version); err != nil {
		return nil, nil, err
	}
	model, err := newModel(f.Model)
	if err != nil {
		return nil, nil, err
	}
	t, err := finishTokenizer(model, &f)
	if err != nil {
		return nil, nil, err
	}
	return t, &f, nil
}

func checkVersion(v string) error {
	if v != "" && v != "1.0" {
		return fmt.Errorf("version %q, want \"1.0\": %w", v, ErrUnsupported)
	}
	return nil
}

// finishTokenizer builds the components around the model, in the order the
// file's errors are reported in.
func finishTokenizer(model *bpe, f *fileJSON) (*Tokenizer, error) {
	t := &Tokenizer{model: model}
	var err error
	if t.normalizer, err = newNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.pre, err = newPreTokenizer(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if t.decoder, err = newDecoder(f.Decoder, "decoder"); err != nil {
		return nil, err
	}
	t.addAddedTokens(f.AddedTokens)
	// The post-processor resolves its special tokens by id from the file,
	// so it is built last.
	if t.post, err = newPostProcessor(f.PostProcessor, "post_processor", t); err != nil {
		return nil, err
	}
	// len(tokenizer): the vocabulary plus the added contents outside it
	// (addedByContent has each content once).
	t.size = t.model.vocab.len()
	for tok := range t.addedByContent {
		if _, ok := t.model.vocab.get(tok); !ok {
			t.size++
		}
	}
	return t, nil
}

// addAddedTokens replays how tokenizers deserializes "added_tokens": one
// token at a time through add_tokens, which keeps the vocabulary id of a
// token already in the model and otherwise gives the next free id. The ids
// written in the file are only checked upstream (with a warning), never used.
func (t *Tokenizer) addAddedTokens(list []addedToken) {
	t.addedByContent = map[string]int{}
	t.addedByID = map[int]int{}
	t.special = map[string]bool{}
	var specialOrder, plainOrder []int // indexes into t.added, in insertion order
	maxID := -1
	vocabSize := t.model.vocab.len()
	for _, tok := range list {
		if tok.Content == "" {
			continue
		}
		if tok.Special && !t.special[tok.Content] {
			t.special[tok.Content] = true
		}
		dup := false
		for _, have := range t.added {
			if have.Content == tok.Content && have.SingleWord == tok.SingleWord && have.LStrip == tok.LStrip &&
				have.RStrip == tok.RStrip && have.isNormalized() == tok.isNormalized() && have.Special == tok.Special {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		id, ok := -1, false
		if i, found := t.addedByContent[tok.Content]; found {
			id, ok = t.added[i].ID, true
		} else if vid, found := t.model.vocab.get(tok.Content); found {
			id, ok = vid, true
		}
		if !ok {
			switch {
			case maxID < 0:
				id = vocabSize
			case maxID >= vocabSize || vocabSize == 0:
				id = maxID + 1
			default:
				id = vocabSize
			}
		}
		tok.ID = id
		if id > maxID {
			maxID = id
		}
		idx, exists := t.addedByID[id]
		if exists {
			t.added[idx] = tok
		} else {
			idx = len(t.added)
			t.added = append(t.added, tok)
			t.addedByID[id] = idx
		}
		t.addedByContent[tok.Content] = idx
		if t.special[tok.Content] {
			specialOrder = append(specialOrder, idx)
		} else {
			plainOrder = append(plainOrder, idx)
		}
	}
	// refresh_added_tokens: special tokens first, then the others; the
	// normalized ones are matched by their normalized form.
	t.raw, t.norm = newMatcher(), newMatcher()
	for i := range t.added {
		tok := &t.added[i]
		tok.form = tok.Content
		if tok.isNormalized() && t.normalizer != nil {
			tok.form = t.normalizer.normalize(tok.Content)
		}
	}
	for _, idx := range append(specialOrder, plainOrder...) {
		tok := t.added[idx]
		if tok.isNormalized() {
			t.norm.add(tok.form, idx)
		} else {
			t.raw.add(tok.Content, idx)
		}
	}
}

// Encode returns the ids of text without special tokens: Python's
// tok(text, add_special_tokens=False)["input_ids"]. Invalid UTF-8 is first
// replaced with U+FFFD, since the Rust core only ever sees valid strings.
func (t *Tokenizer) Encode(text string) []int {
	scratch := idScratch.Get().(*[]int)
	ids := t.encode(text, (*scratch)[:0])
	out := append([]int(nil), ids...) // nil when there are none, as before
	if cap(ids) <= maxScratchIDs {
		*scratch = ids
		idScratch.Put(scratch)
	}
	return out
}

// idScratch holds slices for Encode to collect ids in: the result is copied
// out at its size, where a fresh slice took an allocation and a copy for
// every doubling.
var idScratch = sync.Pool{New: func() any { return new([]int) }}

// maxScratchIDs bounds the slices idScratch keeps: one that grew for a long
// text is left to the collector.
const maxScratchIDs = 1 << 14

// EncodeWithSpecial returns the ids of text with the post-processor's
// special tokens, e.g. [CLS] ... [SEP]: tok(text)["input_ids"].
func (t *Tokenizer) EncodeWithSpecial(text string) []int {
	ids := t.Encode(text)
	if t.post == nil {
		return ids
	}
	return t.post.single(ids)
}

// Tokens returns the token strings of Encode(text), as
// tok.convert_ids_to_tokens would name them.
func (t *Tokenizer) Tokens(text string) []string {
	ids := t.Encode(text)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i], _ = t.Token(id)
	}
	return out
}

func (t *Tokenizer) encode(text string, ids []int) []int {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	var pieces []piece
	t.raw.split(text, t.added, func(rawText string, rawOff, tok int) {
		if tok >= 0 {
			ids = t.flush(pieces, ids)
			pieces = pieces[:0]
			ids = append(ids, t.added[tok].ID)
			return
		}
		if rawText == "" {
			return
		}
		normText := rawText
		if t.normalizer != nil {
			normText = t.normalizer.normalize(rawText)
		}
		t.norm.split(normText, t.added, func(s string, off, tok int) {
			if tok >= 0 {
				ids = t.flush(pieces, ids)
				pieces = pieces[:0]
				ids = append(ids, t.added[tok].ID)
				return
			}
			if s != "" {
				pieces = append(pieces, piece{text: s, first: rawOff == 0 && off == 0})
			}
		})
	})
	return t.flush(pieces, ids)
}

// flush pre-tokenizes and tokenizes the pending pieces.
func (t *Tokenizer) flush(pieces []piece, ids []int) []int {
	if len(pieces) == 0 {
		return ids
	}
	if bl, ok := t.pre.(byteLevelPre); ok {
		// Each word straight to the model, without a slice of them all.
		bl.eachWord(pieces, func(w piece) { ids = t.model.tokenize(w.text, ids) })
		return ids
	}
	words := pieces
	if t.pre != nil {
		words = t.pre.preTokenize(pieces, nil)
	}
	for _, w := range words {
		ids = t.model.tokenize(w.text, ids)
	}
	return ids
}

// TokenID returns the id of a token string, added tokens first (by their
// content as written in tokenizer.json).
func (t *Tokenizer) TokenID(token string) (int, bool) {
	if i, ok := t.addedByContent[token]; ok {
		return t.added[i].ID, true
	}
	id, ok := t.model.vocab.get(token)
	return id, ok
}

// Token returns the token string of an id, added tokens first. Like
// tokenizers' id_to_token, an added token with normalized=true is given in
// its normalized form (e.g. "▁hello▁world" for "hello world" under
// Replace(" "→"▁")), which is also what Decode feeds the decoder.
func (t *Tokenizer) Token(id int) (string, bool) {
	if i, ok := t.addedByID[id]; ok {
		return t.added[i].form, true
	}
	return t.model.vocabR.get(id)
}

// Len is len(tokenizer) in Python: the model vocabulary plus the added
// tokens that are not in it.
func (t *Tokenizer) Len() int { return t.size }

// IsSpecial reports whether token is an added token marked special.
func (t *Tokenizer) IsSpecial(token string) bool { return t.special[token] }

// Decode turns ids back into text through the file's decoder, keeping
// special tokens (Python's decode with skip_special_tokens=False). Unknown
// ids are skipped. It is meant for debugging: lstrip tokens and
// normalization make it lossy.
func (t *Tokenizer) Decode(ids []int) string {
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		if s, ok := t.Token(id); ok {
			tokens = append(tokens, s)
		}
	}
	if t.decoder == nil {
		return strings.Join(tokens, " ")
	}
	return strings.Join(t.decoder.decodeChain(tokens), "")
}

// parseSequence reads a Sequence component (normalizers, pretokenizers,
// processors or decoders under field) with build, naming each part by its
// path in errors; parts that build to nothing (a no-op) are left out.
func parseSequence[T comparable](raw json.RawMessage, field, where string, build func(json.RawMessage, string) (T, error)) ([]T, error) {
	var parts map[string]json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("%s (Sequence): %v: %w", where, err, ErrInvalid)
	}
	var subs []json.RawMessage
	if list, ok := parts[field]; ok {
		if err := json.Unmarshal(list, &subs); err != nil {
			return nil, fmt.Errorf("%s (Sequence): %v: %w", where, err, ErrInvalid)
		}
	}
	var zero T
	var seq []T
	for i, sub := range subs {
		part, err := build(sub, fmt.Sprintf("%s.%s[%d]", where, field, i))
		if err != nil {
			return nil, err
		}
		if part != zero {
			seq = append(seq, part)
		}
	}
	return seq, nil
}
