package weights

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

func TestClampTemperature(t *testing.T) {
	tests := []struct {
		raw  string
		want float64
	}{
		{`1.6`, 1.6},
		{`2`, 2},
		{`0.1006`, 0.5},
		{`10`, 5},
		{`-1`, 0.5},
		{`0`, 0.5},
		{`null`, 1},
		{`"invalid"`, 1},
		{`""`, 1},
		{`[]`, 1},
		{`{}`, 1},
		{`[2]`, 1},
		{`"2"`, 2},
		{`" 2 "`, 2},
		{`"\t1.5\n"`, 1.5},
		{`"NaN"`, 1},
		{`"nan"`, 1},
		{`"inf"`, 1},
		{`"-Infinity"`, 1},
		{`"+3"`, 3},
		{`"1_5"`, 5},  // Python float() accepts digit separators: 15.0
		{`"1__5"`, 1}, // but not doubled ones
		{`"_15"`, 1},
		{`"0x10"`, 1}, // hex is not float() syntax
		{`"1e1"`, 5},
		{`".75"`, 0.75},
		{`"4."`, 4},
		{`"."`, 1},
		{`"--1"`, 1},
		{`"1e"`, 1},
		{`true`, 1},
		{`false`, 0.5},
		{`1e400`, 1},
		{`123456789012345678901234567890`, 5},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			v, err := pyjson.Parse([]byte(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			if got := ClampTemperature(v); got != tt.want {
				t.Errorf("ClampTemperature(%s) = %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

const warnPrefix = "laya: this checkpoint ships invalid temperatures or values outside [0.5, 5]; using "
const warnSuffix = ". Treat confidence from the affected entries as uncalibrated."

// The scenarios of laya-mlx tests/test_temperature_loading.py (ported from
// upstream v0.3.20; laya-spec §6.4), plus the warning text of upstream
// laya/agent.py ("%s=%r -> %g").
func TestAgentConfigTemperatures(t *testing.T) {
	base := `"encoder": "x", "head_layers": 2, "act_costs": {"escalate": 0.5}`
	tests := []struct {
		name      string
		extra     string
		want      [3]float64
		byOptions map[string]float64
		warning   string // "" for none
	}{
		{"null first", `"temperature": [null, 2, 3]`, [3]float64{1, 2, 3}, nil, "temperature[0]=None -> 1"},
		{"invalid string", `"temperature": ["invalid", 2, 3]`, [3]float64{1, 2, 3}, nil, "temperature[0]='invalid' -> 1"},
		{"empty string", `"temperature": ["", 2, 3]`, [3]float64{1, 2, 3}, nil, "temperature[0]='' -> 1"},
		{"list", `"temperature": [[], 2, 3]`, [3]float64{1, 2, 3}, nil, "temperature[0]=[] -> 1"},
		{"dict", `"temperature": [{}, 2, 3]`, [3]float64{1, 2, 3}, nil, "temperature[0]={} -> 1"},
		{"out of range everywhere",
			`"temperature": [0.1, 10, -1], "temperature_by_options": {"choice:2": 9, "score:3-5": 0}`,
			[3]float64{0.5, 5, 0.5}, map[string]float64{"choice:2": 5, "score:3-5": 0.5},
			"choice:2=9 -> 5, score:3-5=0 -> 0.5, temperature[0]=0.1 -> 0.5, temperature[1]=10 -> 5, temperature[2]=-1 -> 0.5"},
		{"numeric strings accepted",
			`"temperature": [0.5, "2", 5], "temperature_by_options": {"choice:2": "1.5"}`,
			[3]float64{0.5, 2, 5}, map[string]float64{"choice:2": 1.5}, ""},
		{"missing fields", ``, [3]float64{1, 1, 1}, nil, ""},
		{"NaN string and bare NaN literal",
			`"temperature": ["NaN", NaN, 1.0], "temperature_by_options": {"noul:2": Infinity}`,
			[3]float64{1, 1, 1}, map[string]float64{"noul:2": 1},
			"noul:2=inf -> 1, temperature[0]='NaN' -> 1, temperature[1]=nan -> 1"},
		{"bool and float repr",
			`"temperature": [false, 1e-05, 2.50]`,
			[3]float64{0.5, 0.5, 2.5}, nil,
			"temperature[0]=False -> 0.5, temperature[1]=1e-05 -> 0.5"},
		{"duplicate key keeps the last value",
			`"temperature_by_options": {"choice:2": 0.1, "choice:3-5": 2, "choice:2": 3}`,
			[3]float64{1, 1, 1}, map[string]float64{"choice:2": 3, "choice:3-5": 2}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "{" + base
			if tt.extra != "" {
				doc += ", " + tt.extra
			}
			doc += "}"
			cfg, probs := ParseAgentConfig([]byte(doc))
			if len(probs) != 0 {
				t.Fatalf("problems: %v", probs)
			}
			if cfg.Temperature != tt.want {
				t.Errorf("Temperature = %v, want %v", cfg.Temperature, tt.want)
			}
			if len(cfg.TemperatureByOptions) != len(tt.byOptions) {
				t.Errorf("TemperatureByOptions = %v, want %v", cfg.TemperatureByOptions, tt.byOptions)
			}
			for k, v := range tt.byOptions {
				if cfg.TemperatureByOptions[k] != v {
					t.Errorf("TemperatureByOptions[%q] = %v, want %v", k, cfg.TemperatureByOptions[k], v)
				}
			}
			if tt.warning == "" {
				if len(cfg.Warnings) != 0 {
					t.Errorf("unexpected warnings %q", cfg.Warnings)
				}
				return
			}
			want := warnPrefix + tt.warning + warnSuffix
			if len(cfg.Warnings) != 1 || cfg.Warnings[0] != want {
				t.Errorf("warnings = %q\nwant       [%q]", cfg.Warnings, want)
			}
		})
	}
}

func TestAgentConfigRules(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		mention string
	}{
		{"invalid JSON", `{"encoder": `, "invalid JSON"},
		{"missing encoder", `{"head_layers": 2, "act_costs": {}}`, `"encoder"`},
		{"missing head_layers", `{"encoder": "x", "act_costs": {}}`, `"head_layers"`},
		{"fractional head_layers", `{"encoder": "x", "head_layers": 2.5, "act_costs": {}}`, "head_layers"},
		{"missing act_costs", `{"encoder": "x", "head_layers": 2}`, "act_costs"},
		{"head_max_len too small", `{"encoder": "x", "head_layers": 2, "act_costs": {}, "max_len": 64, "head_max_len": 4}`, "4 < head_max_len < max_len"},
		{"head_max_len equals max_len", `{"encoder": "x", "head_layers": 2, "act_costs": {}, "max_len": 64, "head_max_len": 64}`, "head_max_len 64, max_len 64"},
		{"default head_max_len over max_len", `{"encoder": "x", "head_layers": 2, "act_costs": {}, "max_len": 100}`, "head_max_len 192"},
		{"max_len not an integer", `{"encoder": "x", "head_layers": 2, "act_costs": {}, "max_len": "512"}`, "max_len"},
		{"two temperatures", `{"encoder": "x", "head_layers": 2, "act_costs": {}, "temperature": [1, 2]}`, "temperature"},
		{"temperature not a list", `{"encoder": "x", "head_layers": 2, "act_costs": {}, "temperature": 1.5}`, "temperature"},
		{"by_options not an object", `{"encoder": "x", "head_layers": 2, "act_costs": {}, "temperature_by_options": [1]}`, "temperature_by_options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, probs := ParseAgentConfig([]byte(tt.doc))
			if len(probs) == 0 {
				t.Fatal("no problem reported")
			}
			if !anyMentions(probs, tt.mention) {
				t.Errorf("problems %q do not mention %q", probs, tt.mention)
			}
		})
	}
	cfg, probs := ParseAgentConfig([]byte(`{"encoder": "x", "head_layers": 3, "act_costs": {"escalate": 0.5, "refund": 1}}`))
	if len(probs) != 0 || cfg.NAct != 3 || cfg.HeadLayers != 3 || cfg.MaxLen != 512 || cfg.HeadMaxLen != 192 ||
		strings.Join(cfg.ActCosts, ",") != "escalate,refund" {
		t.Errorf("defaults: cfg %+v, problems %v", cfg, probs)
	}
}

func anyMentions(errs []error, s string) bool {
	for _, e := range errs {
		if strings.Contains(e.Error(), s) {
			return true
		}
	}
	return false
}

func TestEncoderConfig(t *testing.T) {
	const base = `"model_type": "modernbert", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 96,
		"num_hidden_layers": 4, "num_attention_heads": 2, "max_position_embeddings": 512, "local_attention": 16`
	tests := []struct {
		name        string
		extra       string
		kinds       string
		full, slide float64
	}{
		{"default rule every 3", ``, "FSSF", 160000, 10000},
		{"every 2", `"global_attn_every_n_layers": 2`, "FSFS", 160000, 10000},
		{"layer_types override", `"global_attn_every_n_layers": 2, "layer_types": ["sliding_attention", "full_attention", "full_attention", "sliding_attention"]`, "SFFS", 160000, 10000},
		{"transformers 4 keys", `"global_rope_theta": 80000, "local_rope_theta": 20000`, "FSSF", 80000, 20000},
		{"rope_parameters per kind", `"rope_parameters": {"full_attention": {"rope_theta": 1e6, "rope_type": "default"}, "sliding_attention": {"rope_theta": 160000.0, "rope_type": "default"}}`, "FSSF", 1e6, 160000},
		{"rope_parameters one kind", `"rope_parameters": {"sliding_attention": {"rope_theta": 5000, "rope_type": "default"}}`, "FSSF", 160000, 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "{" + base
			if tt.extra != "" {
				doc += ", " + tt.extra
			}
			cfg, probs := ParseEncoderConfig([]byte(doc + "}"))
			if len(probs) != 0 {
				t.Fatalf("problems: %v", probs)
			}
			var kinds strings.Builder
			for _, k := range cfg.LayerKinds {
				kinds.WriteByte("FS"[k])
			}
			if kinds.String() != tt.kinds {
				t.Errorf("layer kinds %s, want %s", kinds.String(), tt.kinds)
			}
			if cfg.RopeThetaFull != tt.full || cfg.RopeThetaSliding != tt.slide {
				t.Errorf("RoPE θ %v/%v, want %v/%v", cfg.RopeThetaFull, cfg.RopeThetaSliding, tt.full, tt.slide)
			}
			for i, k := range cfg.LayerKinds {
				want := tt.full
				if k == SlidingAttention {
					want = tt.slide
				}
				if cfg.RopeTheta(i) != want {
					t.Errorf("RopeTheta(%d) = %v, want %v", i, cfg.RopeTheta(i), want)
				}
			}
			if cfg.HeadDim() != 32 || cfg.NormEps != 1e-5 {
				t.Errorf("HeadDim %d NormEps %v", cfg.HeadDim(), cfg.NormEps)
			}
		})
	}

	bad := []struct {
		name    string
		doc     string
		mention string
	}{
		{"model_type", `{"model_type": "bert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1}`, "model_type"},
		{"no model_type", `{"hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1}`, "model_type"},
		{"activation", `{"model_type": "modernbert", "hidden_activation": "silu", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1}`, "hidden_activation"},
		{"rope type", `{"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1, "rope_parameters": {"full_attention": {"rope_theta": 1.0, "rope_type": "linear"}}}`, "rope_type"},
		{"odd head dim", `{"model_type": "modernbert", "hidden_size": 6, "num_attention_heads": 2, "num_hidden_layers": 1}`, "even integer"},
		{"indivisible heads", `{"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 3, "num_hidden_layers": 1}`, "even integer"},
		{"layer_types length", `{"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2, "layer_types": ["full_attention"]}`, "layer_types"},
		{"layer_types value", `{"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1, "layer_types": ["chunked_attention"]}`, "layer_types[0]"},
		{"zero layers", `{"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 0}`, "num_hidden_layers"},
		{"norm bias", `{"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1, "norm_bias": true}`, "norm_bias"},
		{"bad eps", `{"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1, "norm_eps": -1}`, "norm_eps"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, probs := ParseEncoderConfig([]byte(tt.doc))
			if !anyMentions(probs, tt.mention) {
				t.Errorf("problems %q do not mention %q", probs, tt.mention)
			}
		})
	}
}

// TestLangTemperatures reads per-language overrides as laya-mlx's tests write
// them ({"de": {"temperature": [...], "temperature_by_options": {...}}}): keys
// by primary subtag, values clamped, missing per-type values from the base.
func TestLangTemperatures(t *testing.T) {
	base := `"encoder": "x", "head_layers": 2, "act_costs": {"escalate": 0.5}, "temperature": [1.5, 2, 3]`
	cfg, errs := ParseAgentConfig([]byte(`{` + base + `, "lang_temperatures": {
		"de-AT": {"temperature": [3, 0.1, "9"], "temperature_by_options": {"noul:2": 0.9}},
		"PT": {"temperature_by_options": {"choice:2": 1.2}}}}`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string]LangTemperatures{
		"de": {Temperature: [3]float64{3, 0.5, 5}, TemperatureByOptions: map[string]float64{"noul:2": 0.9}},
		"pt": {Temperature: [3]float64{1.5, 2, 3}, TemperatureByOptions: map[string]float64{"choice:2": 1.2}},
	}
	if !reflect.DeepEqual(cfg.LangTemperatures, want) {
		t.Errorf("LangTemperatures = %v, want %v", cfg.LangTemperatures, want)
	}
	for _, bad := range []string{`[1]`, `{"de": 3}`, `{"de": {"temperature": [1, 2]}}`, `{"de": {"temperature_by_options": [1]}}`} {
		_, errs := ParseAgentConfig([]byte(`{` + base + `, "lang_temperatures": ` + bad + `}`))
		if len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), "lang_temperatures") {
			t.Errorf("lang_temperatures %s: errors %v, want one naming lang_temperatures", bad, errs)
		}
	}
	for tag, key := range map[string]string{"de-AT": "de", "EN": "en", "en_US.UTF-8": "en", " pt ": "pt"} {
		if got := LangKey(tag); got != key {
			t.Errorf("LangKey(%q) = %q, want %q", tag, got, key)
		}
	}
}
