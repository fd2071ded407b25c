// Reference tokenizer speed for `msd-bench transforms`, over the documents of
// a JSON-lines file, one {"text": ...} object per line: with --vocab, the npm
// package tiktoken's encode_ordinary (its WASM build of the Rust tokenizer);
// with --hf, transformers.js (@lenml/tokenizers, hf_lenml.mjs) as its users
// call it, tokenizer.encode(text) per document.
//
// Usage: node tools/reference/bench_encode.mjs (--vocab FILE.tiktoken --pattern NAME|REGEX | --hf TOKENIZER.JSON)
//          --input DOCS.jsonl [--seconds S] [--min-passes N]
//   NAME: cl100k, o200k, gpt2 (= r50k), p50k, as in encode.mjs.
//
// Reading and parsing the file and loading the tokenizer are not timed; one
// untimed pass warms the encoder up, then each pass encodes every document
// once and is timed whole. Prints one JSON object:
//   {"bytes": UTF-8 bytes per pass, "documents": N, "passes": P,
//    "seconds": median pass seconds, "pass_seconds": [every pass],
//    "tokens": [count per document], "digests": [FNV-1a of the ids per document]}
// The digest folds each 32-bit id into h = (h ^ id) * 16777619 mod 2^32 from
// 2166136261, so the benchmark can compare ids without printing them all.
// Packages: tools/reference/install.sh (<repo>/.cache/node), or $MSD_REFERENCE_DIR.
import { readFileSync } from "node:fs";

import { openEncoding, parseArgs } from "./tiktoken.mjs";

function digest(ids) {
  let h = 2166136261;
  for (const id of ids) h = Math.imul(h ^ id, 16777619);
  return h >>> 0;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const args = parseArgs(process.argv.slice(2), ["input"], { seconds: "2", "min-passes": "3" });
// encode(text) -> ids, and free() when done.
async function openEncoder() {
  if (args.hf !== undefined) {
    const { openTokenizer } = await import("./hf_lenml.mjs");
    const tokenizer = openTokenizer(args.hf);
    return { encode: (text) => tokenizer.encode(text), free: () => {} };
  }
  if (args.vocab === undefined || args.pattern === undefined) throw new Error("give --vocab and --pattern, or --hf");
  const encoding = openEncoding(args.vocab, args.pattern);
  return { encode: (text) => encoding.encode_ordinary(text), free: () => encoding.free() };
}
const encoder = await openEncoder();
const documents = readFileSync(args.input, "utf8")
  .split("\n")
  .filter((line) => line.length > 0)
  .map((line) => JSON.parse(line).text);
let bytes = 0;
for (const text of documents) bytes += Buffer.byteLength(text, "utf8");

const minSeconds = Number(args.seconds);
const minPasses = Math.max(1, Number(args["min-passes"]));
const passSeconds = [];
let total = 0;
let lastIds = [];
for (const text of documents) encoder.encode(text);  // the warm-up pass
while (passSeconds.length < minPasses || total < minSeconds) {
  const ids = new Array(documents.length);
  const start = process.hrtime.bigint();
  for (let i = 0; i < documents.length; ++i) ids[i] = encoder.encode(documents[i]);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  passSeconds.push(seconds);
  total += seconds;
  lastIds = ids;
}
encoder.free();

process.stdout.write(
  JSON.stringify({
    bytes,
    documents: documents.length,
    passes: passSeconds.length,
    seconds: median(passSeconds),
    pass_seconds: passSeconds,
    tokens: lastIds.map((ids) => ids.length),
    digests: lastIds.map(digest),
  }) + "\n",
);
