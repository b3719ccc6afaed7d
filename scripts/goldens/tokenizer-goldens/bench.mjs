// bench.mjs times the Hugging Face Rust tokenizer (npm tokenizers@0.23.2) on
// the corpus the Go benchmark uses, so both numbers come from one run of
//
//	go test -bench Encode ./tokenizer/
//
// Usage: node bench.mjs TOKENIZER_JSON CORPUS_JSON MIN_SECONDS
// CORPUS_JSON is a JSON array of strings; one op encodes all of them with
// addSpecialTokens=false, one string at a time, as the Go benchmark does.
// Prints one JSON line: {"ns_per_op": ..., "bytes_per_op": ..., "ops": ...}.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");

const [tokPath, corpusPath, minSecondsArg] = process.argv.slice(2);
const tok = Tokenizer.fromFile(tokPath);
const corpus = JSON.parse(readFileSync(corpusPath, "utf8"));
const bytes = corpus.reduce((n, s) => n + Buffer.byteLength(s, "utf8"), 0);
const minNs = BigInt(Math.round(Number(minSecondsArg || "1") * 1e9));

const once = async () => {
  for (const s of corpus) await tok.encode(s, null, { addSpecialTokens: false });
};
await once(); // warm up caches, as the Go benchmark's first iteration does
let ops = 0;
const start = process.hrtime.bigint();
let elapsed = 0n;
while (elapsed < minNs || ops < 3) {
  await once();
  ops++;
  elapsed = process.hrtime.bigint() - start;
}
console.log(JSON.stringify({ ns_per_op: Number(elapsed) / ops, bytes_per_op: bytes, ops }));
