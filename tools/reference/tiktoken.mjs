// What the reference scripts share: loading the npm package tiktoken from
// tools/reference/install.sh's folder (<repo>/.cache/node, or
// $MSD_REFERENCE_DIR, a folder holding node_modules/), resolving a pattern
// name to tiktoken's own pat_str, and --name value argument pairs.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const referenceDir = process.env.MSD_REFERENCE_DIR || path.join(here, "..", "..", ".cache", "node");
const require = createRequire(path.join(referenceDir, "package.json"));
const { Tiktoken } = require("tiktoken/lite");

// --name value pairs over `defaults`; every name in `required` must be given.
export function parseArgs(argv, required, defaults = {}) {
  const args = { ...defaults };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
      throw new Error(`expected --name value pairs, got '${argv[i]}'`);
    }
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const name of required) {
    if (!(name in args)) throw new Error(`missing --${name}`);
  }
  return args;
}

const encoderFiles = { cl100k: "cl100k_base", o200k: "o200k_base", gpt2: "gpt2", r50k: "r50k_base", p50k: "p50k_base" };

// NAME (cl100k, o200k, gpt2 = r50k, p50k) is the pat_str of tiktoken's own
// encoder definition; anything else is used as the regex itself.
export function resolvePattern(nameOrRegex) {
  const encoder = encoderFiles[nameOrRegex.replace(/_base$/, "")];
  if (encoder === undefined) return nameOrRegex;
  return require(`tiktoken/encoders/${encoder}.json`).pat_str;
}

// A tiktoken encoding of a .tiktoken rank file under a pattern name or regex.
export function openEncoding(vocabFile, pattern) {
  return new Tiktoken(readFileSync(vocabFile, "utf8"), {}, resolvePattern(pattern));
}
