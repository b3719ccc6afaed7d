package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/laya-metal/laya/internal/bundledtok"
	"github.com/laya-metal/laya/internal/cli"
	"github.com/laya-metal/laya/weights"
	"github.com/laya-metal/laya/weights/synthetic"
)

func init() {
	register("synth", command{
		summary: "write a synthetic checkpoint (real layout, seeded random weights)",
		run:     runSynth,
	})
}

const synthUsage = `Usage: laya synth --preset english|multilingual|tiny --out DIR [--dtype f16|f32|bf16] [--seed N]
                  [--mlx-names] [--tokenizer DIR] [--force]

Writes a complete Laya checkpoint directory (rl_agent_config.json,
encoder/config.json, tokenizer/, model.safetensors) with deterministic random
weights of a real shape, for tests and benchmarks:
  english       ModernBERT-large, 421,293,827 parameters (~800 MB in f16)
  multilingual  mmBERT-base, 321,908,995 parameters (~615 MB in f16)
  tiny          64-wide, 4 layers, ModernBERT vocabulary (~7 MB in f16)
The same seed writes the same bytes. The tokenizer is ModernBERT's, built
into laya, or the files of --tokenizer DIR (tokenizer.json, plus
tokenizer_config.json when present). --out must be new or empty unless
--force is given. On a terminal, stderr shows how far the weights are.

Examples:
  $ laya synth --preset tiny --out /tmp/laya-tiny
  wrote /tmp/laya-tiny: preset tiny, 3486083 parameters, F16, seed 1
  $ laya inspect --model /tmp/laya-tiny --no-hash
  $ laya predict --model /tmp/laya-tiny --state 'Please refund me.' --preset triage

Flags:
`

func runSynth(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fl := newFlags("synth", synthUsage, stderr)
	preset := fl.String("preset", "tiny", "shape: english, multilingual or tiny")
	out := fl.String("out", "", "output `DIR` (created)")
	dtype := fl.String("dtype", "f16", "weights dtype: f16, f32 or bf16")
	seed := fl.Uint64("seed", 1, "random seed")
	mlxNames := fl.Bool("mlx-names", false, "use laya-mlx tensor names and write mlx_config.json")
	tokDir := fl.String("tokenizer", "", "`DIR` holding tokenizer.json (default: the ModernBERT tokenizer built into laya)")
	force := fl.Bool("force", false, "write into --out even when it holds files")
	if help, err := parseFlags(fl, args); help || err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out DIR is required")
	}
	var spec synthetic.Spec
	switch strings.ToLower(*preset) {
	case "english":
		spec = synthetic.English()
	case "multilingual":
		spec = synthetic.Multilingual()
	case "tiny":
		spec = synthetic.Tiny()
	default:
		return usagef("--preset %q: want english, multilingual or tiny", *preset)
	}
	switch strings.ToLower(*dtype) {
	case "f16", "float16":
		spec.DType = weights.F16
	case "f32", "float32":
		spec.DType = weights.F32
	case "bf16", "bfloat16":
		spec.DType = weights.BF16
	default:
		return usagef("--dtype %q: want f16, f32 or bf16", *dtype)
	}
	if err := checkOutDir(*out, *force); err != nil {
		return err
	}
	tokenizerDir, removeTokenizer, err := synthTokenizer(*tokDir)
	if err != nil {
		return err
	}
	defer removeTokenizer()
	spec.Seed, spec.MLXNames, spec.TokenizerDir = *seed, *mlxNames, tokenizerDir
	if err := ctx.Err(); err != nil {
		return err
	}
	if *force && !*mlxNames {
		// A previous --mlx-names checkpoint's marker would make the loader
		// read these tensors under laya-mlx names.
		if err := os.Remove(filepath.Join(*out, weights.MLXConfigFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	weightsFile := filepath.Join(*out, weights.WeightsFile)
	stopProgress := cli.WatchFile(stderr, "laya synth: writing "+weightsFile, weightsFile, spec.ParamCount()*int64(spec.DType.Size()))
	err = synthetic.Write(*out, spec)
	stopProgress()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: preset %s, %d parameters, %s, seed %d\n", *out, *preset, spec.ParamCount(), spec.DType, spec.Seed)
	return nil
}

// checkOutDir refuses to mix a new checkpoint into a directory that holds
// files, unless force.
func checkOutDir(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out: %w", err)
	case len(entries) > 0 && !force:
		return usagef("--out %s exists and is not empty; give an empty or new DIR, or --force to write into it", dir)
	}
	return nil
}

// synthTokenizer is the directory the tokenizer files are copied from:
// --tokenizer's, checked before anything is written, or a temporary one
// holding the built-in ModernBERT tokenizer.
func synthTokenizer(dir string) (string, func(), error) {
	if dir == "" {
		return bundledtok.TempDir()
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		return "", nil, usagef("--tokenizer %s: %w; give a DIR holding tokenizer.json, or leave --tokenizer out for the built-in ModernBERT one", dir, err)
	}
	return dir, func() {}, nil
}
