package synthetic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/laya-metal/laya/pyjson"
)

// The checkpoint's JSON files, written as upstream and transformers lay them out:
// members in a fixed order, one per line, each value as json.dumps writes it (so
// floats keep their ".0", as Python writes them).

// configFile renders an object with one member per line, indented two spaces.
func configFile(obj pyjson.Value) []byte {
	var b strings.Builder
	b.WriteString("{\n")
	for i, m := range obj.Members() {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString("  " + pyjson.String(m.Key).String() + ": " + m.Value.String())
	}
	b.WriteString("\n}\n")
	return []byte(b.String())
}

// member is one object member; the helpers below are its values.
func member(key string, v pyjson.Value) pyjson.Member { return pyjson.Member{Key: key, Value: v} }

func str(s string) pyjson.Value    { return pyjson.String(s) }
func integer(n int) pyjson.Value   { return pyjson.Int(int64(n)) }
func float(f float64) pyjson.Value { return pyjson.Float(f) }
func boolean(b bool) pyjson.Value  { return pyjson.Bool(b) }

func (s Spec) agentConfigJSON() []byte {
	var costs []pyjson.Member
	for _, c := range s.actCosts() {
		costs = append(costs, member(c, float(0.5)))
	}
	var buckets []pyjson.Member
	for _, e := range s.TemperatureByOptions {
		buckets = append(buckets, member(e.Key, float(e.Value)))
	}
	seed, _ := pyjson.ValueOf(s.Seed)
	return configFile(pyjson.Object(
		member("encoder", str("synthetic/"+s.Name+" (random weights; laya-metal)")),
		member("head_layers", integer(s.HeadLayers)),
		member("max_len", integer(s.MaxLen)),
		member("head_max_len", integer(s.HeadMaxLen)),
		member("max_prefixes", integer(6)),
		member("act_costs", pyjson.Object(costs...)),
		member("cost_wrong_act", float(3)),
		member("amp_dtype", str("bf16")),
		member("model_name", str("rl-agent")),
		member("temperature", pyjson.Array(float(s.Temperature[0]), float(s.Temperature[1]), float(s.Temperature[2]))),
		member("temperature_by_options", pyjson.Object(buckets...)),
		member("training", pyjson.Object(
			member("synthetic", boolean(true)),
			member("seed", seed),
			member("weights_dtype", str(dtypeLongName(s.dtype()))),
		)),
	))
}

// encoderConfigJSON writes a transformers-5 ModernBertConfig (rope_parameters
// and layer_types, no *_rope_theta keys), like the oracle checkpoints.
func (s Spec) encoderConfigJSON(cls, sep, pad int) []byte {
	var kinds []pyjson.Value
	for _, k := range s.layerKinds() {
		kinds = append(kinds, str(k.String()))
	}
	rope := func(theta float64) pyjson.Value {
		return pyjson.Object(member("rope_theta", float(theta)), member("rope_type", str("default")))
	}
	return configFile(pyjson.Object(
		member("architectures", pyjson.Array(str("ModernBertForMaskedLM"))),
		member("attention_bias", boolean(false)),
		member("attention_dropout", float(0)),
		member("bos_token_id", integer(cls)),
		member("classifier_activation", str("gelu")),
		member("classifier_bias", boolean(false)),
		member("classifier_dropout", float(0)),
		member("classifier_pooling", str("cls")),
		member("cls_token_id", integer(cls)),
		member("decoder_bias", boolean(true)),
		member("deterministic_flash_attn", boolean(false)),
		member("dtype", str("float32")),
		member("embedding_dropout", float(0)),
		member("eos_token_id", integer(sep)),
		member("global_attn_every_n_layers", integer(s.GlobalAttnEveryNLayers)),
		member("hidden_activation", str("gelu")),
		member("hidden_size", integer(s.HiddenSize)),
		member("initializer_cutoff_factor", float(2)),
		member("initializer_range", float(0.02)),
		member("intermediate_size", integer(s.IntermediateSize)),
		member("layer_types", pyjson.Array(kinds...)),
		member("local_attention", integer(s.LocalAttention)),
		member("max_position_embeddings", integer(s.MaxPositionEmbeddings)),
		member("mlp_bias", boolean(false)),
		member("mlp_dropout", float(0)),
		member("model_type", str("modernbert")),
		member("norm_bias", boolean(false)),
		member("norm_eps", float(1e-05)),
		member("num_attention_heads", integer(s.NumHeads)),
		member("num_hidden_layers", integer(s.NumLayers)),
		member("pad_token_id", integer(pad)),
		member("rope_parameters", pyjson.Object(
			member("full_attention", rope(s.RopeThetaFull)),
			member("sliding_attention", rope(s.RopeThetaSliding)),
		)),
		member("sep_token_id", integer(sep)),
		member("sparse_pred_ignore_index", integer(-100)),
		member("sparse_prediction", boolean(false)),
		member("tie_word_embeddings", boolean(true)),
		member("transformers_version", str("5.17.0")),
		member("vocab_size", integer(s.VocabSize)),
	))
}

// mlxConfigJSON writes laya-mlx's mlx_config.json.
func (s Spec) mlxConfigJSON() []byte {
	return configFile(pyjson.Object(
		member("format", str("laya-mlx")),
		member("format_version", integer(1)),
		member("dtype", str(dtypeLongName(s.dtype()))),
	))
}

// modernBertTokenizerConfig writes tokenizer_config.json in the shape of
// ModernBERT's: role tokens as strings, added_tokens_decoder with the
// flags of tokenizer.json (oracle README, real-en). It keeps the nested
// indentation of the file transformers writes.
func modernBertTokenizerConfig(added []addedToken) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"added_tokens_decoder\": {")
	for i, t := range added {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    \"%d\": {\n      \"content\": %s,\n      \"lstrip\": %t,\n      \"normalized\": %t,\n      \"rstrip\": %t,\n      \"single_word\": %t,\n      \"special\": %t\n    }",
			t.ID, str(t.Content), t.Lstrip, t.Normalized, t.Rstrip, t.SingleWord, t.Special)
	}
	b.WriteString("\n  },\n")
	b.WriteString(`  "clean_up_tokenization_spaces": true,
  "cls_token": "[CLS]",
  "mask_token": "[MASK]",
  "model_input_names": [
    "input_ids",
    "attention_mask"
  ],
  "model_max_length": 8192,
  "pad_token": "[PAD]",
  "sep_token": "[SEP]",
  "tokenizer_class": "PreTrainedTokenizerFast",
  "unk_token": "[UNK]"
}
`)
	return b.Bytes()
}

// addedToken is one entry of tokenizer.json "added_tokens".
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

func addedTokens(tokJSON []byte) ([]addedToken, error) {
	var doc struct {
		AddedTokens []addedToken `json:"added_tokens"`
	}
	if err := json.Unmarshal(tokJSON, &doc); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	return doc.AddedTokens, nil
}

// maxTokenID is the largest id of the vocabulary or the added tokens.
func maxTokenID(tokJSON []byte, added []addedToken) int {
	var doc struct {
		Model struct {
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
	}
	maxID := -1
	if json.Unmarshal(tokJSON, &doc) == nil {
		var byToken map[string]int // BPE / WordPiece
		var pieces [][2]json.RawMessage
		if json.Unmarshal(doc.Model.Vocab, &byToken) == nil {
			for _, id := range byToken {
				maxID = max(maxID, id)
			}
		} else if json.Unmarshal(doc.Model.Vocab, &pieces) == nil { // Unigram: [piece, score]
			maxID = len(pieces) - 1
		}
	}
	for _, t := range added {
		maxID = max(maxID, t.ID)
	}
	return maxID
}
