// gen.mjs writes differential tokenizer goldens for the Go package
// github.com/laya-metal/laya/tokenizer, using Hugging Face's own Rust core
// through its official Node binding (npm tokenizers@0.23.2, which ships the
// linux-x64 and darwin-arm64 binaries inside the package).
//
// Regenerate (from the repository root):
//
//	cd scripts/goldens/tokenizer-goldens && npm install && node gen.mjs
//
// It reads the tokenizers listed in TOKENIZERS below and writes
// testdata/tokenizers/generated/<name>.json: ~3000 deterministic
// pseudo-random mixed-script strings per tokenizer (same seed, so the output
// only changes when this script or a tokenizer changes), each with
//   ids          tok.encode(text, {addSpecialTokens: false}).getIds()
// and, for every 25th case,
//   ids_special  tok.encode(text) with the post-processor
//   decoded      tok.decode(ids, false)
//   tokens       tok.idToToken(id) for each id
// node_modules/ is not committed (see .gitignore).

import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");
const tokenizersVersion = require("tokenizers/package.json").version;

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
const outDir = join(root, "testdata", "tokenizers", "generated");

const TOKENIZERS = {
  modernbert: "testdata/tokenizers/modernbert/tokenizer.json",
  "tiny-en": "testdata/oracle/checkpoints/tiny-en/tokenizer/tokenizer.json",
  "tiny-ml": "testdata/oracle/checkpoints/tiny-ml/tokenizer/tokenizer.json",
};
const CASES = 3000;
const SYNTH_CASES = 600;

// Synthetic variants of the oracle tokenizers: the same vocabularies behind
// other pipeline components (Split regexes with lookahead, every Split
// behavior, Lowercase/NFKC/NFD/Strip/Prepend normalizers, Metaspace
// first/never, BertProcessing, unk without byte fallback, single_word and
// rstrip tokens), so that components the shipped files do not use are
// differential-tested too. Each is written next to its goldens as
// <name>.tokenizer.json.
const LLAMA3_SPLIT = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const SYNTHETIC = {
  "synth-split-llama": {
    base: "tiny-en",
    edit: (j) => {
      j.normalizer = { type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Lowercase" }] };
      j.pre_tokenizer = {
        type: "Sequence",
        pretokenizers: [
          { type: "Split", pattern: { Regex: LLAMA3_SPLIT }, behavior: "Isolated", invert: false },
          { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
        ],
      };
    },
  },
  "synth-split-behaviors": {
    base: "tiny-en",
    edit: (j) => {
      j.normalizer = {
        type: "Sequence",
        normalizers: [
          { type: "NFD" },
          // Normalizers that delete characters (Replace \p{Mn} -> "",
          // Strip) make tokenizers 0.23.2 panic ("AddedVocabulary bad
          // split") on some inputs with normalized added tokens, so this
          // one only substitutes.
          { type: "Replace", pattern: { Regex: "\\p{Mn}+" }, content: "~" },
        ],
      };
      j.pre_tokenizer = {
        type: "Sequence",
        pretokenizers: [
          { type: "Split", pattern: { String: " " }, behavior: "MergedWithPrevious", invert: false },
          { type: "Split", pattern: { Regex: "\\d" }, behavior: "Contiguous", invert: false },
          { type: "Split", pattern: { String: "-" }, behavior: "Removed", invert: false },
          { type: "Split", pattern: { Regex: "[aeiou]+" }, behavior: "MergedWithNext", invert: true },
          { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
        ],
      };
    },
  },
  "synth-metaspace-first": {
    base: "tiny-ml",
    edit: (j) => {
      j.normalizer = {
        type: "Sequence",
        normalizers: [
          { type: "Strip", strip_left: true, strip_right: false },
          { type: "Prepend", prepend: "\u2581" },
          { type: "Replace", pattern: { String: " " }, content: "\u2581" },
        ],
      };
      j.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false };
      j.post_processor = { type: "BertProcessing", sep: ["<eos>", 1], cls: ["<bos>", 2] };
      j.decoder = {
        type: "Sequence",
        decoders: [
          { type: "Replace", pattern: { String: "\u2581" }, content: " " },
          { type: "ByteFallback" },
          { type: "Fuse" },
          { type: "Strip", content: " ", start: 1, stop: 0 },
        ],
      };
      const n = Object.keys(j.model.vocab).length;
      j.added_tokens.push(
        { id: n, content: "<sw>", single_word: true, lstrip: false, rstrip: true, normalized: false, special: true },
        { id: n + 1, content: "hello world", single_word: false, lstrip: false, rstrip: false, normalized: true, special: false },
        { id: n + 2, content: "ab", single_word: true, lstrip: true, rstrip: true, normalized: false, special: false },
      );
    },
  },
  "synth-metaspace-never-unk": {
    base: "tiny-ml",
    edit: (j) => {
      j.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "never", split: true };
      j.model.byte_fallback = false;
      j.model.fuse_unk = false;
      j.model.ignore_merges = true;
      j.decoder = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "never", split: true };
    },
  },
};
const SEED = 0x1a7a;

// mulberry32: a tiny seeded PRNG, so the strings are reproducible.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generator(seed, literals) {
  const rand = rng(seed);
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = (xs) => xs[int(0, xs.length - 1)];
  const range = (lo, hi) => String.fromCodePoint(int(lo, hi));
  const repeat = (f, lo, hi) => {
    let s = "";
    for (let n = int(lo, hi); n > 0; n--) s += f();
    return s;
  };

  const ascii = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const latinExtra = "éèêëàâäôöûüçñßøåæœÉÀÇÑÅØıİŁłŒſǅǈǋ";
  const combining = ["\u0300", "\u0301", "\u0302", "\u0303", "\u0308", "\u030A", "\u0327", "\u0331", "\u20DD", "\u0345"];
  const spaces = [" ", " ", " ", "\t", "\n", "\r", "\r\n", "\u00A0", "\u2000", "\u2003", "\u2009", "\u200A",
    "\u202F", "\u205F", "\u3000", "\u0085", "\u2028", "\u2029", "\u1680", "\u000B", "\u000C", "\u200B", "\uFEFF", "\u180E"];
  const punct = [".", ",", "!", "?", ";", ":", "'", "\"", "(", ")", "[", "]", "{", "}", "<", ">", "-", "_", "/", "\\",
    "|", "@", "#", "$", "%", "^", "&", "*", "+", "=", "~", "`", "…", "—", "–", "«", "»", "“", "”", "‘", "’", "¿", "¡",
    "。", "、", "「", "」", "！", "？", "؟", "،", "।", "॥", "·", "•", "§", "¶", "©", "®", "™", "€", "£", "¥", "₹"];
  const emoji = ["😀", "😂", "🤖", "🎉", "👍", "👍🏽", "👨‍👩‍👧‍👦", "👩🏾‍💻", "🏳️‍🌈", "🇫🇷", "🇯🇵", "❤️", "✔️", "1️⃣", "#️⃣",
    "🧑‍🤝‍🧑", "🐈‍⬛", "☃", "⭢", "∑", "𝐀𝐁", "𝔘𝔫𝔦", "🂡", "🀄"];
  const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "n't", "'"];
  const digits = () => pick([
    () => repeat(() => range(0x30, 0x39), 1, 12),
    () => repeat(() => range(0x660, 0x669), 1, 5), // Arabic-Indic
    () => repeat(() => range(0x966, 0x96f), 1, 5), // Devanagari
    () => pick(["²", "³", "½", "¾", "Ⅻ", "ⅷ", "①", "⑳", "𝟙𝟚", "٣", "१२३", "3.14", "1,000", "-42", "1e10", "0x1F"]),
  ])();
  const word = () => pick([
    () => repeat(() => pick(ascii), 1, 12),
    () => repeat(() => pick(ascii), 1, 6) + repeat(() => pick(latinExtra), 1, 2) + repeat(() => pick(ascii), 0, 5),
    () => repeat(() => pick(ascii), 1, 5) + pick(combining) + repeat(() => pick(ascii), 0, 4), // decomposed: NFC matters
    () => "e\u0301" + pick(["t", "cole", ""]) + "\u0041\u030A",
    () => repeat(() => range(0x4e00, 0x9fff), 1, 8), // CJK
    () => repeat(() => range(0x3041, 0x30ff), 1, 6), // kana
    () => repeat(() => range(0xac00, 0xd7a3), 1, 5), // Hangul syllables
    () => repeat(() => range(0x1100, 0x1112), 1, 2) + range(0x1161, 0x1175), // conjoining jamo: NFC composes
    () => repeat(() => range(0x0430, 0x044f), 1, 10), // Cyrillic
    () => repeat(() => range(0x0410, 0x042f), 1, 3) + repeat(() => range(0x0430, 0x044f), 1, 6),
    () => repeat(() => range(0x0627, 0x064a), 1, 8) + (rand() < 0.5 ? range(0x064b, 0x0652) : ""), // Arabic + harakat
    () => repeat(() => range(0x0915, 0x0939) + (rand() < 0.5 ? range(0x093e, 0x094d) : ""), 1, 5), // Devanagari
    () => repeat(() => range(0x0e01, 0x0e2e), 1, 6) + range(0x0e31, 0x0e3a), // Thai
    () => repeat(() => range(0x03b1, 0x03c9), 1, 8), // Greek
    () => repeat(() => range(0x05d0, 0x05ea), 1, 6), // Hebrew
    () => repeat(() => range(0x20000, 0x2a6df), 1, 3), // CJK ext B (astral)
    () => pick(contractions),
    () => repeat(() => pick(ascii), 1, 6) + pick(contractions),
    () => pick(["don't", "I'm", "we've", "they'll", "he'd", "it's", "Y'all", "rock'n'roll", "o'clock", "'tis"]),
  ])();
  const longWord = () => pick([
    () => repeat(() => pick(ascii), 100, 600),
    () => pick(ascii).repeat(int(50, 400)),
    () => repeat(() => range(0x4e00, 0x9fff), 50, 200),
    () => repeat(() => range(0x30, 0x39), 50, 300),
    () => "-".repeat(int(20, 200)),
    () => repeat(() => pick(emoji), 10, 40),
  ])();
  const space = () => pick([
    () => pick(spaces),
    () => " ".repeat(int(2, 30)),
    () => " ".repeat(int(24, 60)),
    () => repeat(() => pick(spaces), 2, 6),
    () => "\n".repeat(int(2, 5)),
    () => "\t".repeat(int(1, 4)),
    () => "▁".repeat(int(1, 4)),
  ])();
  const literal = () => pick([
    () => pick(literals),
    () => pick(literals),
    () => { const l = pick(literals); return l.slice(0, int(1, Math.max(1, l.length - 1))); }, // partial literal
    () => pick(literals).toLowerCase(),
    () => pick(["<0x41>", "<0xE2>", "<0xZZ>", "<0x0A><0x0A>", "<0x>", "<0x100>", "0x41", "<unk>", "[UNK]", "<mask>", "[MASK]"]),
  ])();
  const control = () => String.fromCodePoint(pick([0x0, 0x1, 0x7, 0x1b, 0x1f, 0x7f, 0x80, 0x9f, 0xad, 0x200d, 0x200e, 0x2066, 0xfffd, 0xe000]));

  const part = () => {
    const r = rand();
    if (r < 0.40) return word();
    if (r < 0.55) return space();
    if (r < 0.65) return pick(punct) + (rand() < 0.3 ? pick(punct) : "");
    if (r < 0.73) return digits();
    if (r < 0.80) return pick(emoji);
    if (r < 0.92) return literal();
    if (r < 0.96) return pick(combining) + (rand() < 0.5 ? control() : "");
    if (r < 0.985) return control();
    return longWord();
  };
  return () => {
    const n = int(1, 14);
    let s = "";
    for (let i = 0; i < n; i++) {
      s += part();
      const g = rand();
      if (g < 0.45) s += " ";
      else if (g < 0.5) s += space();
    }
    if (rand() < 0.15) s = space() + s;
    return s;
  };
}

async function main() {
  mkdirSync(outDir, { recursive: true });
  const jobs = Object.entries(TOKENIZERS).map(([name, rel]) => [name, join(root, rel), CASES]);
  for (const [name, synth] of Object.entries(SYNTHETIC)) {
    const j = JSON.parse(readFileSync(join(root, TOKENIZERS[synth.base]), "utf8"));
    synth.edit(j);
    const path = join(outDir, `${name}.tokenizer.json`);
    writeFileSync(path, JSON.stringify(j) + "\n");
    jobs.push([name, path, SYNTH_CASES]);
  }
  for (const [name, path, count] of jobs) {
    const bytes = readFileSync(path);
    const json = JSON.parse(bytes.toString("utf8"));
    const literals = (json.added_tokens || []).map((t) => t.content).filter((c) => c.trim() !== "");
    if (literals.length === 0) literals.push("[MASK]");
    const tok = Tokenizer.fromFile(path);
    const next = generator(SEED, literals);
    // Fixed edge cases first; among them runs of more than 30 combining
    // marks, where Go's x/text norm (stream-safe, inserts U+034F) and Rust's
    // unicode-normalization differ.
    const zalgo = (base, marks, n) => base + Array.from({ length: n }, (_, i) => marks[i % marks.length]).join("");
    const fixed = ["", " ", "  ", "\n", "a", "[MASK]", " [MASK] ", "\t[MASK]", "x \n [MASK]  y", "<mask>", " <mask> ",
      zalgo("a", ["\u0301"], 40), zalgo("e", ["\u0316", "\u0301", "\u0327"], 45) + " ok", zalgo("x ", ["\u0301"], 31),
      zalgo("\u1100\u1161", ["\u11A8", "\u0301"], 34), "Z" + zalgo("\u0041", ["\u030A", "\u0323", "\u0338"], 61) + "\u00C5",
      zalgo("o", ["\u0344", "\u0F73", "\u0308"], 33), zalgo("[MASK]", ["\u0301"], 35), zalgo("\u0301", ["\u0300"], 40)];
    const cases = [];
    literals.push("<sw>", "hello world", "ab", "hello  world");
    for (let i = 0; i < count; i++) {
      const text = i < fixed.length ? fixed[i] : next();
      const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      const c = { text, ids };
      if (i % 25 === 0) {
        c.ids_special = (await tok.encode(text)).getIds();
        c.decoded = await tok.decode(ids, false);
        c.tokens = ids.map((id) => tok.idToToken(id));
      }
      cases.push(c);
    }
    const out = {
      tokenizer: relative(root, path),
      tokenizer_sha256: createHash("sha256").update(bytes).digest("hex"),
      reference: `huggingface tokenizers ${tokenizersVersion} (npm binding)`,
      generator: "scripts/goldens/tokenizer-goldens/gen.mjs",
      seed: SEED,
      cases,
    };
    const file = join(outDir, `${name}.json`);
    writeFileSync(file, JSON.stringify(out) + "\n");
    console.log(`${relative(root, file)}: ${cases.length} cases`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
