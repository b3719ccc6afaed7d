package weights

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/pyjson"
)

// LayerKind is the attention kind of one encoder layer.
type LayerKind uint8

const (
	// FullAttention layers attend to the whole row and use the "full" RoPE θ.
	FullAttention LayerKind = iota
	// SlidingAttention layers attend within ±LocalAttention/2 and use the
	// "sliding" RoPE θ.
	SlidingAttention
)

// String returns the transformers spelling ("full_attention", "sliding_attention").
func (k LayerKind) String() string {
	switch k {
	case FullAttention:
		return "full_attention"
	case SlidingAttention:
		return "sliding_attention"
	}
	return fmt.Sprintf("LayerKind(%d)", uint8(k))
}

// EncoderConfig is the part of encoder/config.json (a transformers
// ModernBertConfig) that the forward pass needs, resolved: defaults
// applied, per-layer kinds and RoPE bases worked out.
type EncoderConfig struct {
	VocabSize, HiddenSize, IntermediateSize, NumLayers, NumHeads, MaxPositionEmbeddings, LocalAttention int
	NormEps                                                                                             float64
	LayerKinds                                                                                          []LayerKind // len NumLayers
	RopeThetaFull, RopeThetaSliding                                                                     float64
	PadTokenID                                                                                          int // informational; -1 when absent or null
	ModelType                                                                                           string
}

// HeadDim is the width of one encoder attention head.
func (c EncoderConfig) HeadDim() int {
	if c.NumHeads <= 0 {
		return 0
	}
	return c.HiddenSize / c.NumHeads
}

// RopeTheta is the RoPE base of the given layer, by its kind.
func (c EncoderConfig) RopeTheta(layer int) float64 {
	if layer >= 0 && layer < len(c.LayerKinds) && c.LayerKinds[layer] == SlidingAttention {
		return c.RopeThetaSliding
	}
	return c.RopeThetaFull
}

// AgentConfig is rl_agent_config.json: the decision-head shape, the
// sequence budgets and the calibration temperatures.
type AgentConfig struct {
	EncoderID                      string // "encoder": informational
	HeadLayers, MaxLen, HeadMaxLen int
	ActCosts                       []string // keys in file order
	NAct                           int      // len(ActCosts)+1
	// Temperature is the effective (clamped) per-type temperature, index 0
	// choice, 1 score, 2 noul.
	Temperature    [3]float64
	TemperatureRaw []pyjson.Value // as shipped ([1.0, 1.0, 1.0] when absent)
	// TemperatureByOptions maps a bucket ("choice:3-5") to its effective
	// temperature; it overrides Temperature for that bucket.
	TemperatureByOptions     map[string]float64
	TemperatureByOptionsRaw  map[string]pyjson.Value
	TemperatureByOptionsKeys []string // file order
	// LangTemperatures are per-language calibration overrides (upstream
	// #258, laya-mlx lang_temperatures), keyed by lower-case primary subtag
	// ("de" for "de-AT"). A request in that language uses its temperatures
	// instead of the ones above. Nil when the file has none.
	LangTemperatures map[string]LangTemperatures
	// Warnings holds the load warnings upstream emits (the temperature
	// clamp), in its exact wording.
	Warnings []string
}

// LangTemperatures is one language's effective (clamped) calibration: its
// per-type temperatures (the checkpoint's own where it gives none) and its
// buckets, which replace the checkpoint's buckets for that language.
type LangTemperatures struct {
	Temperature          [3]float64         `json:"temperature"`
	TemperatureByOptions map[string]float64 `json:"temperature_by_options"`
}

// LangKey is the key LangTemperatures uses for a language tag: its primary
// subtag, lower-cased ("de-AT", "DE" → "de").
func LangKey(tag string) string {
	primary, _, _ := strings.Cut(strings.TrimSpace(tag), "-")
	primary, _, _ = strings.Cut(primary, "_")
	return strings.ToLower(primary)
}

// HeadConfig is the derived shape of the decision head and readouts.
type HeadConfig struct {
	Dim       int // = encoder hidden size
	Layers    int // TransformerEncoderLayers
	Heads     int // max(1, Dim/64): oracle README fact 2
	HeadDim   int // Dim/Heads
	FFN       int // 4·Dim
	ActHidden int // 256
	NAct      int
}

// Calibration limits of upstream's clamp_temperature (laya-spec §3.5).
const (
	TempMin = 0.5
	TempMax = 5.0
)

// Defaults of rl_agent_config.json fields (laya-spec §1.3).
const (
	DefaultMaxLen     = 512
	DefaultHeadMaxLen = 192
)

// ClampTemperature is upstream's clamp_temperature on a JSON value: Python
// float() (numbers, bools, numeric strings incl. "NaN"/"inf"/" 2 "), 1.0
// when that fails or gives a non-finite value, else clamped to [0.5, 5].
func ClampTemperature(raw pyjson.Value) float64 {
	t, ok := pyjson.ToFloat(raw)
	if !ok || math.IsNaN(t) || math.IsInf(t, 0) {
		return 1.0
	}
	return math.Min(TempMax, math.Max(TempMin, t))
}

// problems collects every validation failure of one load.
type problems struct{ list []error }

func (p *problems) add(format string, args ...any) {
	p.list = append(p.list, fmt.Errorf(format, args...))
}

func (p *problems) addErr(err error) { p.list = append(p.list, err) }

// prefixed returns the problems as this package's errors: LoadCheckpoint
// lists them under one "weights: <dir>: invalid checkpoint" line, the
// exported parsers return them on their own, each with the package prefix.
func (p *problems) prefixed() []error {
	if len(p.list) == 0 {
		return nil
	}
	out := make([]error, len(p.list))
	for i, err := range p.list {
		out[i] = fmt.Errorf("weights: %w", err)
	}
	return out
}

// ParseAgentConfig parses rl_agent_config.json. It returns what it could
// resolve together with every rule broken (nil when valid); the
// max_position_embeddings bound is checked by LoadCheckpoint.
func ParseAgentConfig(data []byte) (AgentConfig, []error) {
	var p problems
	cfg := parseAgentConfig(data, &p)
	return cfg, p.prefixed()
}

func parseAgentConfig(data []byte, p *problems) AgentConfig {
	var cfg AgentConfig
	fields, err := parseObject(data)
	if err != nil {
		p.add("rl_agent_config.json: %w", err)
		return cfg
	}
	// Required keys (laya-mlx Agent.__init__; upstream _verify_compatibility).
	if raw, ok := fields["encoder"]; !ok {
		p.add("rl_agent_config.json: missing required key \"encoder\"")
	} else {
		cfg.EncoderID = raw.Str()
	}
	if raw, ok := fields["head_layers"]; !ok {
		p.add("rl_agent_config.json: missing required key \"head_layers\"")
	} else if n, ok := jsonInt(raw); !ok || n < 1 {
		p.add("rl_agent_config.json: head_layers = %s, want a positive integer", shown(raw))
	} else {
		cfg.HeadLayers = n
	}
	cfg.MaxLen = intField(fields, "max_len", DefaultMaxLen, "rl_agent_config.json", p)
	cfg.HeadMaxLen = intField(fields, "head_max_len", DefaultHeadMaxLen, "rl_agent_config.json", p)
	if !(4 < cfg.HeadMaxLen && cfg.HeadMaxLen < cfg.MaxLen) {
		p.add("rl_agent_config.json: need 4 < head_max_len < max_len, have head_max_len %d, max_len %d", cfg.HeadMaxLen, cfg.MaxLen)
	}

	// n_act = len(cfg["act_costs"]) + 1 (upstream build_model): required.
	if raw, ok := fields["act_costs"]; !ok {
		p.add("rl_agent_config.json: missing required key \"act_costs\"")
	} else if ks, _, ok := object(raw); ok {
		cfg.ActCosts = ks
	} else if raw.Kind() == pyjson.ArrayKind {
		for _, it := range raw.Items() {
			cfg.ActCosts = append(cfg.ActCosts, pyjson.Repr(it))
		}
	} else {
		p.add("rl_agent_config.json: act_costs = %s, want an object", shown(raw))
	}
	cfg.NAct = len(cfg.ActCosts) + 1

	parseTemperatures(&cfg, fields, p)
	parseLangTemperatures(&cfg, fields, p)
	return cfg
}

// parseLangTemperatures reads the optional lang_temperatures object:
// {"de": {"temperature": [c, s, n], "temperature_by_options": {bucket: T}}}.
// Values are clamped like the checkpoint's own.
func parseLangTemperatures(cfg *AgentConfig, fields map[string]pyjson.Value, p *problems) {
	raw, ok := fields["lang_temperatures"]
	if !ok || raw.Kind() == pyjson.NullKind {
		return
	}
	langs, values, ok := object(raw)
	if !ok {
		p.add("rl_agent_config.json: lang_temperatures = %s, want an object of language -> {\"temperature\": [...], \"temperature_by_options\": {...}}", shown(raw))
		return
	}
	cfg.LangTemperatures = map[string]LangTemperatures{}
	for _, lang := range langs {
		where := "rl_agent_config.json: lang_temperatures[" + strconv.Quote(lang) + "]"
		keys, entry, ok := object(values[lang])
		if !ok || LangKey(lang) == "" {
			p.add("%s = %s, want an object with \"temperature\" and/or \"temperature_by_options\"", where, shown(values[lang]))
			continue
		}
		lt := LangTemperatures{Temperature: cfg.Temperature, TemperatureByOptions: map[string]float64{}}
		for _, k := range keys {
			switch k {
			case "temperature":
				items := entry[k].Items()
				if entry[k].Kind() != pyjson.ArrayKind || len(items) != 3 {
					p.add("%s.temperature = %s, want a list of 3 values (choice, score, noul)", where, shown(entry[k]))
					continue
				}
				for i, it := range items {
					lt.Temperature[i] = ClampTemperature(it)
				}
			case "temperature_by_options":
				buckets, bv, ok := object(entry[k])
				if !ok {
					p.add("%s.temperature_by_options = %s, want an object", where, shown(entry[k]))
					continue
				}
				for _, b := range buckets {
					lt.TemperatureByOptions[b] = ClampTemperature(bv[b])
				}
			}
		}
		cfg.LangTemperatures[LangKey(lang)] = lt
	}
}

// parseTemperatures applies clamp_temperature to every entry and builds
// upstream's warning (laya/agent.py: by-options entries first in file
// order, then temperature[i]; "%s=%r -> %g").
func parseTemperatures(cfg *AgentConfig, fields map[string]pyjson.Value, p *problems) {
	cfg.Temperature = [3]float64{1, 1, 1}
	cfg.TemperatureRaw = []pyjson.Value{pyjson.Float(1), pyjson.Float(1), pyjson.Float(1)}
	cfg.TemperatureByOptions = map[string]float64{}
	cfg.TemperatureByOptionsRaw = map[string]pyjson.Value{}
	if raw, ok := fields["temperature"]; ok {
		items := raw.Items()
		if raw.Kind() != pyjson.ArrayKind || len(items) != 3 {
			p.add("rl_agent_config.json: temperature = %s, want a list of 3 values (choice, score, noul)", shown(raw))
		} else {
			cfg.TemperatureRaw = items
		}
	}
	if raw, ok := fields["temperature_by_options"]; ok && raw.Kind() != pyjson.NullKind {
		keys, values, ok := object(raw)
		if !ok {
			p.add("rl_agent_config.json: temperature_by_options = %s, want an object", shown(raw))
		} else {
			cfg.TemperatureByOptionsKeys = keys
			cfg.TemperatureByOptionsRaw = values
		}
	}
	type entry struct {
		name string
		raw  pyjson.Value
	}
	var entries []entry
	for _, k := range cfg.TemperatureByOptionsKeys {
		raw := cfg.TemperatureByOptionsRaw[k]
		cfg.TemperatureByOptions[k] = ClampTemperature(raw)
		entries = append(entries, entry{k, raw})
	}
	for i, raw := range cfg.TemperatureRaw {
		if i < 3 {
			cfg.Temperature[i] = ClampTemperature(raw)
		}
		entries = append(entries, entry{"temperature[" + strconv.Itoa(i) + "]", raw})
	}
	var rejected []string
	for _, e := range entries {
		applied := ClampTemperature(e.raw)
		if f, ok := pyjson.ToFloat(e.raw); ok && f == applied {
			continue
		}
		rejected = append(rejected, fmt.Sprintf("%s=%s -> %s", e.name, pyjson.Repr(e.raw), pyjson.FormatG(applied)))
	}
	if len(rejected) > 0 {
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf(
			"laya: this checkpoint ships invalid temperatures or values outside [%s, %s]; using %s. "+
				"Treat confidence from the affected entries as uncalibrated.",
			pyjson.FormatG(TempMin), pyjson.FormatG(TempMax), strings.Join(rejected, ", ")))
	}
}

// ModernBertConfig defaults (transformers ModernBertConfig.__init__), used
// for keys a config leaves out, as transformers does.
var modernBertDefaults = struct {
	vocab, hidden, intermediate, layers, heads, maxPos, local, globalEvery int
	normEps, globalTheta, localTheta                                       float64
}{50368, 768, 1152, 22, 12, 8192, 128, 3, 1e-5, 160000, 10000}

// ParseEncoderConfig parses encoder/config.json and resolves layer kinds
// and RoPE bases; it returns every rule broken (nil when valid).
func ParseEncoderConfig(data []byte) (EncoderConfig, []error) {
	var p problems
	cfg := parseEncoderConfig(data, &p)
	return cfg, p.prefixed()
}

func parseEncoderConfig(data []byte, p *problems) EncoderConfig {
	const file = "encoder/config.json"
	d := modernBertDefaults
	cfg := EncoderConfig{PadTokenID: -1}
	fields, err := parseObject(data)
	if err != nil {
		p.add("%s: %w", file, err)
		return cfg
	}
	if raw, ok := fields["model_type"]; ok {
		cfg.ModelType = raw.Str()
	}
	if raw, ok := fields["model_type"]; !ok || raw.Kind() != pyjson.StringKind || cfg.ModelType != "modernbert" {
		p.add("%s: model_type = %s, want \"modernbert\"", file, orMissing(raw, ok))
	}
	positive := func(key string, def int) int {
		v := intField(fields, key, def, file, p)
		if v < 1 {
			p.add("%s: %s = %d, want a positive integer", file, key, v)
		}
		return v
	}
	cfg.VocabSize = positive("vocab_size", d.vocab)
	cfg.HiddenSize = positive("hidden_size", d.hidden)
	cfg.IntermediateSize = positive("intermediate_size", d.intermediate)
	cfg.NumLayers = positive("num_hidden_layers", d.layers)
	cfg.NumHeads = positive("num_attention_heads", d.heads)
	cfg.MaxPositionEmbeddings = positive("max_position_embeddings", d.maxPos)
	cfg.LocalAttention = positive("local_attention", d.local)
	if raw, ok := fields["pad_token_id"]; ok {
		if n, ok := jsonInt(raw); ok {
			cfg.PadTokenID = n
		}
	} else {
		cfg.PadTokenID = 50283 // transformers' default
	}

	cfg.NormEps = d.normEps
	if raw, ok := fields["norm_eps"]; ok {
		if f, ok := jsonNumber(raw); ok && f > 0 && !math.IsInf(f, 0) {
			cfg.NormEps = f
		} else {
			p.add("%s: norm_eps = %s, want a positive number", file, shown(raw))
		}
	}
	if raw, ok := fields["hidden_activation"]; ok {
		if raw.Kind() != pyjson.StringKind || raw.Str() != "gelu" {
			p.add("%s: hidden_activation = %s, only \"gelu\" is supported", file, shown(raw))
		}
	}
	// The forward pass has no encoder biases, like every Laya checkpoint.
	for _, key := range []string{"norm_bias", "attention_bias", "mlp_bias"} {
		if raw, ok := fields[key]; ok && raw.Kind() != pyjson.NullKind && !(raw.Kind() == pyjson.BoolKind && !raw.Bool()) {
			p.add("%s: %s = %s, only false is supported", file, key, shown(raw))
		}
	}
	if cfg.NumHeads > 0 && cfg.HiddenSize > 0 {
		if cfg.HiddenSize%cfg.NumHeads != 0 || (cfg.HiddenSize/cfg.NumHeads)%2 != 0 {
			p.add("%s: head_dim = hidden_size/num_attention_heads = %d/%d must be an even integer", file, cfg.HiddenSize, cfg.NumHeads)
		}
	}

	cfg.LayerKinds = resolveLayerKinds(fields, cfg.NumLayers, d.globalEvery, file, p)
	cfg.RopeThetaFull, cfg.RopeThetaSliding = resolveRope(fields, d.globalTheta, d.localTheta, file, p)
	return cfg
}

// resolveLayerKinds reads layer_types, or applies transformers' rule
// "sliding_attention if i % global_attn_every_n_layers else full_attention".
func resolveLayerKinds(fields map[string]pyjson.Value, n, defEvery int, file string, p *problems) []LayerKind {
	if n < 1 || n > 1<<16 {
		return nil
	}
	kinds := make([]LayerKind, n)
	if raw, ok := fields["layer_types"]; ok && raw.Kind() != pyjson.NullKind {
		items := raw.Items()
		if raw.Kind() != pyjson.ArrayKind || len(items) != n {
			p.add("%s: layer_types = %s, want a list of num_hidden_layers = %d kinds", file, shown(raw), n)
			return kinds
		}
		for i, it := range items {
			switch it.Str() {
			case "full_attention":
				kinds[i] = FullAttention
			case "sliding_attention":
				kinds[i] = SlidingAttention
			default:
				p.add("%s: layer_types[%d] = %s, want \"full_attention\" or \"sliding_attention\"", file, i, shown(it))
			}
		}
		return kinds
	}
	every := intField(fields, "global_attn_every_n_layers", defEvery, file, p)
	if every < 1 {
		p.add("%s: global_attn_every_n_layers = %d, want a positive integer", file, every)
		return kinds
	}
	for i := range kinds {
		if i%every != 0 {
			kinds[i] = SlidingAttention
		}
	}
	return kinds
}

// resolveRope reads rope_parameters (transformers 5: one entry per layer
// kind, or one flat entry for all) and falls back to the transformers 4
// keys global_rope_theta / local_rope_theta. Only rope_type "default" is
// supported (laya-spec §1.4).
func resolveRope(fields map[string]pyjson.Value, defFull, defSliding float64, file string, p *problems) (full, sliding float64) {
	full, sliding = defFull, defSliding
	if raw, ok := fields["global_rope_theta"]; ok {
		if f, ok := jsonNumber(raw); ok && f > 0 {
			full = f
		} else {
			p.add("%s: global_rope_theta = %s, want a positive number", file, shown(raw))
		}
	}
	if raw, ok := fields["local_rope_theta"]; ok {
		if f, ok := jsonNumber(raw); ok && f > 0 {
			sliding = f
		} else {
			p.add("%s: local_rope_theta = %s, want a positive number", file, shown(raw))
		}
	}
	raw, ok := fields["rope_parameters"]
	if !ok || raw.Kind() == pyjson.NullKind {
		return full, sliding
	}
	_, params, ok := object(raw)
	if !ok {
		p.add("%s: rope_parameters = %s, want an object", file, shown(raw))
		return full, sliding
	}
	readEntry := func(where string, entry map[string]pyjson.Value, theta *float64) {
		if rt, ok := entry["rope_type"]; ok {
			if rt.Kind() != pyjson.StringKind || rt.Str() != "default" {
				p.add("%s: %s.rope_type = %s, only \"default\" RoPE is supported", file, where, shown(rt))
			}
		}
		if th, ok := entry["rope_theta"]; ok {
			if f, ok := jsonNumber(th); ok && f > 0 {
				*theta = f
			} else {
				p.add("%s: %s.rope_theta = %s, want a positive number", file, where, shown(th))
			}
		}
	}
	_, hasFull := params["full_attention"]
	_, hasSliding := params["sliding_attention"]
	if !hasFull && !hasSliding {
		readEntry("rope_parameters", params, &full)
		sliding = full
		if _, ok := params["rope_theta"]; !ok {
			sliding = defSliding
		}
		return full, sliding
	}
	for _, kind := range []struct {
		name  string
		theta *float64
	}{{"full_attention", &full}, {"sliding_attention", &sliding}} {
		entryRaw, ok := params[kind.name]
		if !ok {
			continue
		}
		_, entry, ok := object(entryRaw)
		if !ok {
			p.add("%s: rope_parameters.%s = %s, want an object", file, kind.name, shown(entryRaw))
			continue
		}
		readEntry("rope_parameters."+kind.name, entry, kind.theta)
	}
	return full, sliding
}

// DeriveHead is the decision-head shape of a checkpoint with these encoder
// and agent configs (what LoadCheckpoint puts in Checkpoint.Head); the error
// names a width its max(1, d/64) attention heads cannot split.
func DeriveHead(enc EncoderConfig, agent AgentConfig) (HeadConfig, error) {
	var p problems
	h := deriveHead(enc, agent, &p)
	return h, errors.Join(p.prefixed()...)
}

// deriveHead works out the decision-head shape from the encoder width:
// nn.MultiheadAttention with max(1, d // 64) heads (oracle README fact 2).
func deriveHead(enc EncoderConfig, agent AgentConfig, p *problems) HeadConfig {
	d := enc.HiddenSize
	h := HeadConfig{Dim: d, Layers: agent.HeadLayers, Heads: max(1, d/64), FFN: 4 * d, ActHidden: 256, NAct: agent.NAct}
	if d > 0 {
		if d%h.Heads != 0 {
			p.add("decision head: hidden_size %d is not divisible by its %d attention heads (max(1, d/64))", d, h.Heads)
		}
		h.HeadDim = d / h.Heads
	}
	return h
}

// intField reads an optional integer key, reporting a non-integer value.
func intField(fields map[string]pyjson.Value, key string, def int, file string, p *problems) int {
	raw, ok := fields[key]
	if !ok {
		return def
	}
	n, ok := jsonInt(raw)
	if !ok {
		p.add("%s: %s = %s, want an integer", file, key, shown(raw))
		return def
	}
	return n
}

// jsonInt accepts a JSON integer (Python int; 2.0 is a float and is
// rejected like torch would reject it as a size).
func jsonInt(raw pyjson.Value) (int, bool) {
	if raw.Kind() != pyjson.NumberKind || raw.IsFloat() {
		return 0, false
	}
	n, err := strconv.ParseInt(raw.Literal(), 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// jsonNumber accepts any JSON number (int or float) as written;
// NaN, Infinity and a literal past float64's range are not.
func jsonNumber(raw pyjson.Value) (float64, bool) {
	lit := raw.Literal()
	if raw.Kind() != pyjson.NumberKind || strings.ContainsAny(lit, "IN") {
		return 0, false
	}
	f, err := strconv.ParseFloat(lit, 64)
	return f, err == nil
}

func orMissing(raw pyjson.Value, ok bool) string {
	if !ok {
		return "(missing)"
	}
	return shown(raw)
}

// parseObject reads a JSON config as Python's json.loads does (the last of
// repeated keys wins, at the first one's position; NaN and Infinity
// accepted) and returns its members by key. Anything but an object fails.
func parseObject(data []byte) (map[string]pyjson.Value, error) {
	v, err := pyjson.Parse(data)
	if err != nil {
		return nil, err
	}
	_, fields, ok := object(v)
	if !ok {
		return nil, fmt.Errorf("%w: want a JSON object, got %s", pyjson.ErrInvalid, shown(v))
	}
	return fields, nil
}

// object returns the keys of a JSON object in file order and its values by
// key; ok is false for the other kinds.
func object(v pyjson.Value) (keys []string, values map[string]pyjson.Value, ok bool) {
	if v.Kind() != pyjson.ObjectKind {
		return nil, nil, false
	}
	values = make(map[string]pyjson.Value, len(v.Members()))
	for _, m := range v.Members() {
		keys = append(keys, m.Key)
		values[m.Key] = m.Value
	}
	return keys, values, true
}

// shown is a config value for a problem message: a number as written, any
// other value as json.dumps writes it, cut to 40 bytes.
func shown(v pyjson.Value) string {
	text := v.Literal()
	if v.Kind() != pyjson.NumberKind {
		text = v.String()
	}
	return truncate([]byte(text))
}
