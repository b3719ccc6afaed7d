package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/laya-metal/laya/internal/bundledtok"
	"github.com/laya-metal/laya/internal/cli"
	"github.com/laya-metal/laya/weights"
	"github.com/laya-metal/laya/weights/synthetic"
)

// syntheticSpec is the synthetic preset --synthetic names (the live
// benchmark's checkpoint and --plan's shape-only one).
func syntheticSpec(name string) (synthetic.Spec, bool) {
	switch name {
	case "english":
		return synthetic.English(), true
	case "multilingual":
		return synthetic.Multilingual(), true
	case "tiny":
		return synthetic.Tiny(), true
	}
	return synthetic.Spec{}, false
}

// checkpointDir returns the directory to load and the checkpoint's name in
// the reports, writing the synthetic checkpoint into the user cache on
// first use.
func checkpointDir(o options, stderr io.Writer) (dir, name string, err error) {
	switch {
	case o.model != "" && o.synthetic != "":
		return "", "", cli.Usagef("give --model or --synthetic, not both")
	case o.model != "":
		return o.model, filepath.Base(filepath.Clean(o.model)), nil
	case o.synthetic == "":
		return "", "", cli.Usagef("no checkpoint: give --model DIR or --synthetic english|multilingual|tiny")
	}
	spec, ok := syntheticSpec(o.synthetic)
	if !ok {
		return "", "", cli.Usagef("--synthetic %q: use english, multilingual or tiny", o.synthetic)
	}
	if o.tokenizer != "" {
		if _, err := os.Stat(filepath.Join(o.tokenizer, "tokenizer.json")); err != nil {
			return "", "", cli.Usagef("--tokenizer %s: %w; give a DIR holding tokenizer.json, or leave --tokenizer out for the built-in ModernBERT one", o.tokenizer, err)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir = filepath.Join(cache, "laya-metal", "synthetic", o.synthetic)
	name = "synthetic-" + o.synthetic
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		return dir, name, nil
	}
	spec.TokenizerDir = o.tokenizer
	if spec.TokenizerDir == "" {
		tokDir, remove, err := bundledtok.TempDir()
		if err != nil {
			return "", "", err
		}
		defer remove()
		spec.TokenizerDir = tokDir
	}
	fmt.Fprintf(stderr, "laya-bench: writing synthetic %s checkpoint to %s (once)\n", o.synthetic, dir)
	tmp := dir + ".partial"
	os.RemoveAll(tmp)
	weightsFile := filepath.Join(tmp, weights.WeightsFile)
	stopProgress := cli.WatchFile(stderr, "laya-bench: writing "+weightsFile, weightsFile, spec.ParamCount()*int64(spec.DType.Size()))
	err = synthetic.Write(tmp, spec)
	stopProgress()
	if err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", "", err
	}
	return dir, name, nil
}
