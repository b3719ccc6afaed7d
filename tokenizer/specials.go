package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Specials are the role tokens a Laya checkpoint needs, resolved to ids.
type Specials struct {
	CLS, SEP, PAD, MASK int
	UNK                 int    // -1 if none
	MaskToken           string // the literal, e.g. "[MASK]" or "<mask>"
}

// lastResortNames are the usual literals of each role, tried only when
// neither tokenizer_config.json nor tokenizer.json names the role.
var lastResortNames = map[string][]string{
	"cls":  {"[CLS]", "<cls>", "<s>", "<bos>", "<|startoftext|>"},
	"sep":  {"[SEP]", "<sep>", "</s>", "<eos>", "<|endoftext|>"},
	"pad":  {"[PAD]", "<pad>", "<|padding|>"},
	"mask": {"[MASK]", "<mask>", "<|mask|>"},
	"unk":  {"[UNK]", "<unk>", "<|unk|>"},
}

// LoadDir reads DIR/tokenizer.json and DIR/tokenizer_config.json and
// resolves the role tokens. Roles come from tokenizer_config.json
// (cls_token, sep_token, pad_token, mask_token, unk_token: a string or
// {"content": ...}), which is where transformers reads them. A role the
// config lacks (or a missing config) falls back to tokenizer.json: the
// special tokens around $A in the post-processor for CLS and SEP,
// padding.pad_token for PAD, the BPE unk_token for UNK, and, as a last
// resort, an added token with a conventional literal such as "[MASK]" or
// "<mask>". CLS, SEP, PAD and MASK must resolve, or the error wraps
// ErrMissingSpecial.
func LoadDir(dir string) (*Tokenizer, Specials, error) {
	tokPath := filepath.Join(dir, "tokenizer.json")
	data, err := os.ReadFile(tokPath)
	if err != nil {
		return nil, Specials{}, fmt.Errorf("tokenizer: %w", err)
	}
	t, f, err := parse(data)
	if err != nil {
		return nil, Specials{}, fmt.Errorf("tokenizer: %s: %w", tokPath, err)
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfg := map[string]json.RawMessage{}
	cfgData, err := os.ReadFile(cfgPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		cfgPath = ""
	case err != nil:
		return nil, Specials{}, fmt.Errorf("tokenizer: %w", err)
	default:
		if err := json.Unmarshal(cfgData, &cfg); err != nil {
			return nil, Specials{}, fmt.Errorf("tokenizer: %s: %v: %w", cfgPath, err, ErrInvalid)
		}
	}
	var before, after []string
	if t.post != nil {
		before, after = t.post.roles()
	}
	fallback := map[string][]string{}
	if len(before) > 0 {
		fallback["cls"] = before[:1]
	}
	if len(after) > 0 {
		fallback["sep"] = after[:1]
	}
	if f.Padding != nil && f.Padding.PadToken != nil {
		fallback["pad"] = []string{*f.Padding.PadToken}
	}
	if t.model.unkID >= 0 {
		unk, _ := t.model.vocabR.get(t.model.unkID)
		fallback["unk"] = []string{unk}
	}

	resolve := func(role string) (id int, literal string, err error) {
		if raw, ok := cfg[role+"_token"]; ok && string(raw) != "null" {
			name, err := roleTokenName(raw)
			if err != nil {
				return -1, "", fmt.Errorf("tokenizer: %s: %s_token: %w", cfgPath, role, err)
			}
			id, ok := t.TokenID(name)
			if !ok {
				return -1, "", fmt.Errorf("tokenizer: %s: %s_token %q is not in %s: %w", cfgPath, role, name, tokPath, ErrMissingSpecial)
			}
			return id, name, nil
		}
		for _, name := range fallback[role] {
			if id, ok := t.TokenID(name); ok {
				return id, name, nil
			}
		}
		for _, name := range lastResortNames[role] {
			if i, ok := t.addedByContent[name]; ok {
				return t.added[i].ID, name, nil
			}
		}
		where := tokPath
		if cfgPath != "" {
			where = cfgPath + " and " + tokPath
		}
		return -1, "", fmt.Errorf("tokenizer: %s: no %s token: %w", where, role, ErrMissingSpecial)
	}

	var sp Specials
	for _, r := range []struct {
		role string
		dst  *int
	}{{"cls", &sp.CLS}, {"sep", &sp.SEP}, {"pad", &sp.PAD}, {"mask", &sp.MASK}} {
		id, literal, err := resolve(r.role)
		if err != nil {
			return nil, Specials{}, err
		}
		*r.dst = id
		if r.role == "mask" {
			sp.MaskToken = literal
		}
	}
	sp.UNK = -1
	if id, _, err := resolve("unk"); err == nil {
		sp.UNK = id
	} else if !errors.Is(err, ErrMissingSpecial) {
		return nil, Specials{}, err
	}
	return t, sp, nil
}

// roleTokenName reads a role token written as "[CLS]" or as an AddedToken
// object {"content": "[CLS]", ...}.
func roleTokenName(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("neither a string nor an object with \"content\": %w", ErrInvalid)
	}
	return *obj.Content, nil
}
