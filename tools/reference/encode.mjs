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
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const referenceDir = process.env.MSD_REFERENCE_DIR || path.join(here, "..", "..", ".cache", "node");
const require = createRequire(path.join(referenceDir, "package.json"));
const { Tiktoken } = require("tiktoken/lite");

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
      throw new Error(`expected --name value pairs, got '${argv[i]}'`);
    }
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const required of ["vocab", "pattern", "input"]) {
    if (!(required in args)) throw new Error(`missing --${required}`);
  }
  return args;
}

const encoderFiles = { cl100k: "cl100k_base", o200k: "o200k_base", gpt2: "gpt2", r50k: "r50k_base", p50k: "p50k_base" };

function resolvePattern(nameOrRegex) {
  const encoder = encoderFiles[nameOrRegex.replace(/_base$/, "")];
  if (encoder === undefined) return nameOrRegex;
  return require(`tiktoken/encoders/${encoder}.json`).pat_str;
}

const args = parseArgs(process.argv.slice(2));
const encoding = new Tiktoken(readFileSync(args.vocab, "utf8"), {}, resolvePattern(args.pattern));
const lines = readFileSync(args.input, "utf8").split("\n");
if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
const out = [];
for (const line of lines) out.push(encoding.encode_ordinary(line).join(" "));
encoding.free();
process.stdout.write(out.length > 0 ? out.join("\n") + "\n" : "");
