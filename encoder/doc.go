// Package encoder is the ModernBERT encoder of a Laya model, written once
// against the backend.Stream operations so that the CPU reference and the
// Metal backend run the same model code.
//
// Sources: HF transformers 5.x modeling_modernbert.py (the sdpa path that
// upstream Laya uses) and laya-spec.md §3.1.
package encoder
