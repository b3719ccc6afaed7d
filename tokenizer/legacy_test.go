package tokenizer

// This file keeps the tokenizer.json loader as it was before the fast
// scanner (commit 1baede4), unchanged apart from names and from keeping
// the vocabulary, id_to_token and the merges in Go maps of its own (the
// model gets a copy of the vocabulary, which the post-processor reads
// through TokenID), as an independent reference: the
// load tests compare every loaded table with it, and BenchmarkLoad times it
// side by side with FromJSON ("before", with convert=false). With
// convert=true the maps are copied into the model's current tables at the
// end, for comparison.

import (
	"encoding/json"
	"fmt"
	"strings"
)

func legacyParse(data []byte, convert bool) (*Tokenizer, *fileJSON, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	if f.Version != "" && f.Version != "1.0" {
		return nil, nil, fmt.Errorf("version %q, want \"1.0\": %w", f.Version, ErrUnsupported)
	}
	t := &Tokenizer{}
	var err error
	var vocabMap map[string]int
	if t.model, vocabMap, err = legacyNewModel(f.Model, convert); err != nil {
		return nil, nil, err
	}
	if t.normalizer, err = newNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, nil, err
	}
	if t.pre, err = newPreTokenizer(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, nil, err
	}
	if t.decoder, err = newDecoder(f.Decoder, "decoder"); err != nil {
		return nil, nil, err
	}
	legacyAddAddedTokens(t, vocabMap, f.AddedTokens)
	// The post-processor resolves its special tokens by id from the file,
	// so it is built last.
	if t.post, err = newPostProcessor(f.PostProcessor, "post_processor", t); err != nil {
		return nil, nil, err
	}
	vocab := make(map[string]struct{}, len(vocabMap)+len(t.added))
	for tok := range vocabMap {
		vocab[tok] = struct{}{}
	}
	for tok := range t.addedByContent {
		vocab[tok] = struct{}{}
	}
	t.size = len(vocab)
	return t, &f, nil
}

func legacyAddAddedTokens(t *Tokenizer, vocab map[string]int, list []addedToken) {
	t.addedByContent = map[string]int{}
	t.addedByID = map[int]int{}
	t.special = map[string]bool{}
	var specialOrder, plainOrder []int // indexes into t.added, in insertion order
	maxID := -1
	vocabSize := len(vocab)
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
		} else if vid, found := vocab[tok.Content]; found {
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

func legacyNewModel(raw json.RawMessage, convert bool) (*bpe, map[string]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, fmt.Errorf("model: missing: %w", ErrInvalid)
	}
	var m bpeJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, fmt.Errorf("model: %v: %w", err, ErrInvalid)
	}
	if m.Type != "BPE" && !(m.Type == "" && m.Merges != nil) {
		return nil, nil, fmt.Errorf("model: type %q: only BPE is implemented: %w", m.Type, ErrUnsupported)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		// Dropout makes encoding random; inference never uses it.
		return nil, nil, fmt.Errorf("model: BPE dropout %v: %w", *m.Dropout, ErrUnsupported)
	}
	b := &bpe{
		unkID:       -1,
		fuseUnk:     m.FuseUnk,
		byteFall:    m.ByteFallback,
		ignoreMerge: m.IgnoreMerges,
	}
	vocab := m.Vocab
	if vocab == nil {
		vocab = map[string]int{}
	}
	vocabR := make(map[int]string, len(m.Vocab))
	merges := map[uint64]mergeTarget{}
	for tok, id := range vocab {
		if id < 0 {
			return nil, nil, fmt.Errorf("model.vocab: token %q has negative id %d: %w", tok, id, ErrInvalid)
		}
		vocabR[id] = tok
	}
	if m.ContinuingSubwordPrefix != nil {
		b.prefix = *m.ContinuingSubwordPrefix
	}
	if m.EndOfWordSuffix != nil {
		b.suffix = *m.EndOfWordSuffix
	}
	if m.UnkToken != nil {
		id, ok := vocab[*m.UnkToken]
		if !ok {
			return nil, nil, fmt.Errorf("model.unk_token %q is not in the vocabulary: %w", *m.UnkToken, ErrInvalid)
		}
		b.unkID = id
	}
	for i := range b.byteIDs {
		b.byteIDs[i] = -1
		// Rust formats the byte with {:#04X}: "<0x0A>", upper-case digits.
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			b.byteIDs[i] = id
		}
	}
	pairs, err := legacyParseMerges(m.Merges)
	if err != nil {
		return nil, nil, err
	}
	for rank, p := range pairs {
		a, ok := vocab[p[0]]
		if !ok {
			return nil, nil, fmt.Errorf("model.merges[%d]: token %q is not in the vocabulary: %w", rank, p[0], ErrInvalid)
		}
		c, ok := vocab[p[1]]
		if !ok {
			return nil, nil, fmt.Errorf("model.merges[%d]: token %q is not in the vocabulary: %w", rank, p[1], ErrInvalid)
		}
		// With a continuing-subword prefix the right part loses it when
		// merged (models/bpe/model.rs, BpeBuilder::build).
		right := p[1]
		if b.prefix != "" && strings.HasPrefix(right, b.prefix) {
			right = right[len(b.prefix):]
		}
		n, ok := vocab[p[0]+right]
		if !ok {
			return nil, nil, fmt.Errorf("model.merges[%d]: merged token %q is not in the vocabulary: %w", rank, p[0]+right, ErrInvalid)
		}
		// A later duplicate overwrites an earlier one, as in the Rust HashMap collect.
		merges[pairKey(a, c)] = mergeTarget{rank: int32(rank), newID: int32(n)}
	}
	// The post-processor finds its tokens through the model's table.
	b.vocab = vocabTableFromMap(vocab)
	if convert {
		b.vocabR, b.merges = legacyTables(vocab, vocabR, merges)
	}
	return b, vocab, nil
}

func legacyParseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var asStrings []string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		out := make([][2]string, len(asStrings))
		for i, s := range asStrings {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("model.merges[%d]: %q is not two tokens separated by one space: %w", i, s, ErrInvalid)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var asPairs [][]string
	if err := json.Unmarshal(raw, &asPairs); err != nil {
		return nil, fmt.Errorf("model.merges: neither \"a b\" strings nor [a, b] pairs: %v: %w", err, ErrInvalid)
	}
	out := make([][2]string, len(asPairs))
	for i, p := range asPairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: %d elements, want 2: %w", i, len(p), ErrInvalid)
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// legacyTables copies the legacy maps into the model's tables.
func legacyTables(vocab map[string]int, vocabR map[int]string, merges map[uint64]mergeTarget) (*idTokens, *mergeTable) {
	maxID := -1
	for id := range vocabR {
		maxID = max(maxID, id)
	}
	byID := newIDTokens(len(vocab), maxID)
	for id, tok := range vocabR {
		byID.set(id, tok)
	}
	table := newMergeTable(len(merges))
	for k, m := range merges {
		table.put(k, m)
	}
	return byID, table
}
