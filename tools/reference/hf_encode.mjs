// Reference encoder for Hugging Face tokenizer.json files: prints the ids
// transformers.js (the npm package @lenml/tokenizers) gives each line of a
// text file, one line of space-separated ids per input line, exactly like
// msd-tokenize --hf (special tokens the post-processor adds included).
//
// Usage: node tools/reference/hf_encode.mjs (--model NAME | --tokenizer FILE.json) --input TEXT_FILE
//   NAME: llama3, qwen3, gemma3, llama2, deepseek_v3: the tokenizer.json the
//   @lenml/tokenizer-NAME package ships.
import { readFileSync } from "node:fs";
import path from "node:path";

import { encodeDocument, modelDir, openTokenizer } from "./hf_lenml.mjs";
import { parseArgs } from "./tiktoken.mjs";

const args = parseArgs(process.argv.slice(2), ["input"]);
if ((args.model === undefined) === (args.tokenizer === undefined)) throw new Error("give one of --model and --tokenizer");
const jsonPath = args.tokenizer ?? path.join(modelDir(args.model), "tokenizer.json");
const tokenizer = openTokenizer(jsonPath);
const lines = readFileSync(args.input, "utf8").split("\n");
if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
const out = lines.map((line) => encodeDocument(tokenizer, line).join(" "));
process.stdout.write(out.length > 0 ? out.join("\n") + "\n" : "");
