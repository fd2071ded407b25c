// Reference encoder: prints the token ids tiktoken (the npm package's WASM
// build of the Rust tokenizer, encode_ordinary) gives each line of a text file,
// one line of space-separated ids per input line, exactly like msd-tokenize.
//
// Usage: node tools/reference/encode.mjs --vocab FILE.tiktoken --pattern NAME|REGEX --input TEXT_FILE
//   NAME: cl100k, o200k, gpt2 (= r50k), p50k: the pat_str of tiktoken's own encoder
//   definitions; anything else is used as the regex itself.
// The packages come from tools/reference/install.sh (<repo>/.cache/node), or
// from $MSD_REFERENCE_DIR (a folder holding node_modules/).
import { readFileSync } from "node:fs";

import { openEncoding, parseArgs } from "./tiktoken.mjs";

const args = parseArgs(process.argv.slice(2), ["vocab", "pattern", "input"]);
const encoding = openEncoding(args.vocab, args.pattern);
const lines = readFileSync(args.input, "utf8").split("\n");
if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
const out = [];
for (const line of lines) out.push(encoding.encode_ordinary(line).join(" "));
encoding.free();
process.stdout.write(out.length > 0 ? out.join("\n") + "\n" : "");
