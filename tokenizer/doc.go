// Package tokenizer is a pure-Go implementation of the Hugging Face
// tokenizers pipeline, reading a tokenizer.json file, for the tokenizers the
// Laya model families ship: the byte-level BPE of ModernBERT (NFC,
// ByteLevel, BPE, [CLS] $A [SEP]) and the Gemma/mmBERT-style SentencePiece
// BPE (Replace(" "→"▁"), Metaspace, BPE with byte_fallback and fuse_unk).
//
// The goal is exact id parity with Python's
// tok(text, add_special_tokens=False)["input_ids"] as computed by the Rust
// core of Hugging Face tokenizers 0.23. The pipeline follows that library
// step by step:
//
//  1. Added tokens that are not normalized (usually the special tokens) are
//     split out of the raw text, leftmost-longest, honouring lstrip, rstrip
//     and single_word.
//  2. Each remaining piece is normalized on its own, and added tokens with
//     normalized=true are split out of the normalized pieces.
//  3. The pre-tokenizer splits the remaining pieces into words.
//  4. The model (BPE) turns each word into ids.
//
// Components that the file names but this package does not implement are
// reported by Load and FromJSON as errors that wrap ErrUnsupported and name
// the component; nothing falls back silently.
//
// A *Tokenizer is safe for concurrent use.
package tokenizer
