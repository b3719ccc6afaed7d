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
// Loading is built for the 17.5 MB, 256k-token tokenizer.json of the Gemma
// family (580k merges): a purpose-built scanner reads model.vocab and
// model.merges in one pass, straight into flat tables (scan.go, tables.go),
// and hands every other member to encoding/json. On anything it does not
// handle, and on every error, the file is decoded again with encoding/json
// alone, so the tokenizers built and the errors given are those of
// encoding/json; the load tests and FuzzLoadFastMatchesSlow hold the two
// paths, and the loader this one replaced, to that. BenchmarkLoad compares
// them.
//
// A *Tokenizer is safe for concurrent use.
package tokenizer
