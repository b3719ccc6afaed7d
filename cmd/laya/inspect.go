package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/weights"
)

func init() {
	register("inspect", command{
		summary: "describe and validate a checkpoint directory",
		run:     runInspect,
	})
}

const inspectUsage = `Usage: laya inspect --model DIR [--json] [--no-hash]

Loads a Laya checkpoint the way predict does (strictly: every tensor the
configs imply, with its exact shape, nothing else) and prints its
architecture, parameter count, dtypes, tensor name scheme (upstream or
laya-mlx), calibration (raw and effective temperatures, load warnings), the
size and sha256 of every file, and every validation problem found. Exits
non-zero when there is any problem.

Examples:
  $ laya inspect --model testdata/oracle/checkpoints/real-en
  $ laya inspect --model testdata/oracle/checkpoints/tiny-ml --json --no-hash

Flags:
`

// inspectReport is the --json output.
type inspectReport struct {
	Dir         string            `json:"dir"`
	Valid       bool              `json:"valid"`
	Problems    []string          `json:"problems"`
	NameScheme  string            `json:"name_scheme,omitempty"`
	Encoder     *encoderReport    `json:"encoder,omitempty"`
	Head        *headReport       `json:"head,omitempty"`
	Budgets     *budgetReport     `json:"budgets,omitempty"`
	ParamCount  int64             `json:"param_count"`
	Tensors     int               `json:"tensors"`
	DTypes      map[string]int    `json:"dtypes"`
	Metadata    map[string]string `json:"safetensors_metadata,omitempty"`
	Calibration *calibration      `json:"calibration,omitempty"`
	Files       []fileReport      `json:"files"`
}

type encoderReport struct {
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumLayers             int      `json:"num_hidden_layers"`
	NumHeads              int      `json:"num_attention_heads"`
	HeadDim               int      `json:"head_dim"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	LocalAttention        int      `json:"local_attention"`
	NormEps               float64  `json:"norm_eps"`
	LayerTypes            []string `json:"layer_types"`
	RopeThetaFull         float64  `json:"rope_theta_full"`
	RopeThetaSliding      float64  `json:"rope_theta_sliding"`
}

type headReport struct {
	Layers    int      `json:"layers"`
	Heads     int      `json:"heads"`
	HeadDim   int      `json:"head_dim"`
	FFN       int      `json:"ffn"`
	ActHidden int      `json:"act_hidden"`
	NAct      int      `json:"n_act"`
	ActCosts  []string `json:"act_costs"`
}

type budgetReport struct {
	MaxLen     int `json:"max_len"`
	HeadMaxLen int `json:"head_max_len"`
}

type calibration struct {
	TemperatureRaw          []json.RawMessage `json:"temperature_raw"`
	temperatureText         []string          // the raw values as shipped, for the text report
	Temperature             [3]float64        `json:"temperature"`
	TemperatureByOptionsRaw []bucketReport    `json:"temperature_by_options"`
	// LangTemperatures are the effective per-language overrides.
	LangTemperatures map[string]weights.LangTemperatures `json:"lang_temperatures,omitempty"`
	Warnings         []string                            `json:"warnings"`
}

type bucketReport struct {
	Bucket    string          `json:"bucket"`
	Raw       json.RawMessage `json:"raw"`
	Effective float64         `json:"effective"`
	rawText   string          // Raw as shipped, for the text report
}

type fileReport struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
}

func runInspect(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fl := newFlags("inspect", inspectUsage, stderr)
	model := fl.String("model", "", "checkpoint `DIR`")
	asJSON := fl.Bool("json", false, "print a JSON report")
	noHash := fl.Bool("no-hash", false, "skip the sha256 of each file")
	if help, err := parseFlags(fl, args); help || err != nil {
		return err
	}
	if *model == "" {
		return usagef("--model DIR is required")
	}
	report, err := inspectCheckpoint(ctx, *model, !*noHash)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		printInspect(stdout, report)
	}
	if !report.Valid {
		return fmt.Errorf("%s: %d problem%s found", *model, len(report.Problems), map[bool]string{true: "", false: "s"}[len(report.Problems) == 1])
	}
	return nil
}

// inspectCheckpoint loads dir for diagnosis and gathers the report; an
// error is returned only when the report itself cannot be built
// (cancellation, unreadable files while hashing).
func inspectCheckpoint(ctx context.Context, dir string, hash bool) (*inspectReport, error) {
	// CheckCheckpoint returns the checkpoint even with an error (what it
	// could read is part of the report), so it is closed either way.
	ckpt, loadErr := weights.CheckCheckpoint(dir)
	//lint:ignore SA5001 the checkpoint comes back with the error, and is closed either way
	defer ckpt.Close()
	r := &inspectReport{Dir: dir, Valid: loadErr == nil, Problems: []string{}, DTypes: map[string]int{}, Files: []fileReport{}}
	if loadErr != nil {
		var joined interface{ Unwrap() []error }
		if errors.As(loadErr, &joined) {
			for _, e := range joined.Unwrap()[1:] { // [0] is the summary line
				r.Problems = append(r.Problems, e.Error())
			}
		} else {
			r.Problems = append(r.Problems, loadErr.Error())
		}
	}
	if e := ckpt.Encoder; e.NumLayers > 0 {
		kinds := make([]string, len(e.LayerKinds))
		for i, k := range e.LayerKinds {
			kinds[i] = k.String()
		}
		r.Encoder = &encoderReport{
			VocabSize: e.VocabSize, HiddenSize: e.HiddenSize, IntermediateSize: e.IntermediateSize,
			NumLayers: e.NumLayers, NumHeads: e.NumHeads, HeadDim: e.HeadDim(),
			MaxPositionEmbeddings: e.MaxPositionEmbeddings, LocalAttention: e.LocalAttention, NormEps: e.NormEps,
			LayerTypes: kinds, RopeThetaFull: e.RopeThetaFull, RopeThetaSliding: e.RopeThetaSliding,
		}
	}
	if a := ckpt.Agent; a.HeadLayers > 0 || a.MaxLen > 0 {
		h := ckpt.Head
		r.Head = &headReport{Layers: h.Layers, Heads: h.Heads, HeadDim: h.HeadDim, FFN: h.FFN, ActHidden: h.ActHidden, NAct: h.NAct, ActCosts: a.ActCosts}
		r.Budgets = &budgetReport{MaxLen: a.MaxLen, HeadMaxLen: a.HeadMaxLen}
		cal := &calibration{Temperature: a.Temperature, TemperatureByOptionsRaw: []bucketReport{},
			LangTemperatures: a.LangTemperatures, Warnings: a.Warnings}
		for _, raw := range a.TemperatureRaw {
			cal.TemperatureRaw = append(cal.TemperatureRaw, shippedJSON(raw))
			cal.temperatureText = append(cal.temperatureText, shipped(raw))
		}
		for _, k := range a.TemperatureByOptionsKeys {
			raw := a.TemperatureByOptionsRaw[k]
			cal.TemperatureByOptionsRaw = append(cal.TemperatureByOptionsRaw, bucketReport{k, shippedJSON(raw), a.TemperatureByOptions[k], shipped(raw)})
		}
		if cal.Warnings == nil {
			cal.Warnings = []string{}
		}
		r.Calibration = cal
	}
	if ckpt.Weights != nil {
		r.NameScheme = ckpt.NameScheme
		r.ParamCount = ckpt.ParamCount()
		r.Tensors = len(ckpt.Weights.Tensors)
		r.Metadata = ckpt.Weights.Metadata
		for d, n := range ckpt.DTypes() {
			r.DTypes[d.String()] = n
		}
	}
	files, err := checkpointFiles(ctx, dir, hash)
	if err != nil {
		return nil, err
	}
	r.Files = files
	return r, nil
}

// checkpointFiles lists every regular file under dir, sorted, with its
// size and (optionally) sha256.
func checkpointFiles(ctx context.Context, dir string, hash bool) ([]fileReport, error) {
	var out []fileReport
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return nil // the load problems already say the directory is missing
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := fileReport{Path: filepath.ToSlash(rel), Size: info.Size()}
		if hash {
			sum, err := sha256File(ctx, path)
			if err != nil {
				return err
			}
			f.SHA256 = sum
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b fileReport) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func sha256File(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func printInspect(w io.Writer, r *inspectReport) {
	fmt.Fprintf(w, "Checkpoint:   %s\n", r.Dir)
	if r.Valid {
		fmt.Fprintln(w, "Status:       valid")
	} else {
		fmt.Fprintf(w, "Status:       INVALID (%d problem(s))\n", len(r.Problems))
	}
	if e := r.Encoder; e != nil {
		full := 0
		short := make([]string, len(e.LayerTypes))
		for i, k := range e.LayerTypes {
			short[i] = "S"
			if k == "full_attention" {
				full++
				short[i] = "F"
			}
		}
		fmt.Fprintf(w, "Encoder:      ModernBERT, %d layers (%d full, %d sliding: %s), hidden %d, %d heads × %d, GeGLU %d, vocab %d\n",
			e.NumLayers, full, e.NumLayers-full, strings.Join(short, ""), e.HiddenSize, e.NumHeads, e.HeadDim, e.IntermediateSize, e.VocabSize)
		fmt.Fprintf(w, "              window %d, RoPE θ full %g / sliding %g, max positions %d, norm eps %g\n",
			e.LocalAttention, e.RopeThetaFull, e.RopeThetaSliding, e.MaxPositionEmbeddings, e.NormEps)
	}
	if h := r.Head; h != nil {
		fmt.Fprintf(w, "Head:         %d layers, %d heads × %d, FFN %d (ReLU); act head %d → %d (act, then act_costs: %s)\n",
			h.Layers, h.Heads, h.HeadDim, h.FFN, h.ActHidden, h.NAct, strings.Join(h.ActCosts, ", "))
	}
	if b := r.Budgets; b != nil {
		fmt.Fprintf(w, "Budgets:      max_len %d, head_max_len %d\n", b.MaxLen, b.HeadMaxLen)
	}
	if r.NameScheme != "" {
		dtypes := make([]string, 0, len(r.DTypes))
		for _, d := range slices.Sorted(maps.Keys(r.DTypes)) {
			dtypes = append(dtypes, fmt.Sprintf("%s ×%d", d, r.DTypes[d]))
		}
		fmt.Fprintf(w, "Parameters:   %s (excluding the temperature buffer)\n", groupDigits(r.ParamCount))
		fmt.Fprintf(w, "Tensors:      %d, %s, %s names\n", r.Tensors, strings.Join(dtypes, ", "), r.NameScheme)
		if len(r.Metadata) > 0 {
			var meta []string
			for _, k := range slices.Sorted(maps.Keys(r.Metadata)) {
				meta = append(meta, k+"="+r.Metadata[k])
			}
			fmt.Fprintf(w, "Metadata:     %s\n", strings.Join(meta, ", "))
		}
	}
	if c := r.Calibration; c != nil {
		raws := c.temperatureText
		fmt.Fprintf(w, "Calibration:  temperature [choice, score, noul] raw [%s] effective [%g, %g, %g]\n",
			strings.Join(raws, ", "), c.Temperature[0], c.Temperature[1], c.Temperature[2])
		for _, b := range c.TemperatureByOptionsRaw {
			fmt.Fprintf(w, "              %-12s raw %s effective %g\n", b.Bucket, b.rawText, b.Effective)
		}
		langs := make([]string, 0, len(c.LangTemperatures))
		for l := range c.LangTemperatures {
			langs = append(langs, l)
		}
		sort.Strings(langs)
		for _, l := range langs {
			lt := c.LangTemperatures[l]
			fmt.Fprintf(w, "              lang %-7s effective [%g, %g, %g] buckets %v\n", l,
				lt.Temperature[0], lt.Temperature[1], lt.Temperature[2], lt.TemperatureByOptions)
		}
		for _, warning := range c.Warnings {
			fmt.Fprintf(w, "Warning:      %s\n", warning)
		}
	}
	fmt.Fprintln(w, "Files:")
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %12d  %-64s  %s\n", f.Size, f.SHA256, f.Path)
	}
	if len(r.Problems) > 0 {
		fmt.Fprintln(w, "Problems:")
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
}

// groupDigits writes 421293827 as 421,293,827.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && c != '-' && !(i == 1 && s[0] == '-') {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// shipped is a config value as the checkpoint ships it: a number as written
// (NaN and Infinity included), anything else as json.dumps writes it.
func shipped(v pyjson.Value) string {
	if v.Kind() == pyjson.NumberKind {
		return v.Literal()
	}
	return v.String()
}

// shippedJSON is shipped as JSON: NaN and the infinities, which JSON lacks,
// become strings.
func shippedJSON(v pyjson.Value) json.RawMessage {
	text := shipped(v)
	if !json.Valid([]byte(text)) {
		quoted, _ := json.Marshal(text)
		return quoted
	}
	return json.RawMessage(text)
}
