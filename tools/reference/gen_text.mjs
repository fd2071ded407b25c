// Writes deterministic, varied multilingual text, one document per line, for
// comparing msd-tokenize with the reference: every script and edge case the
// pre-tokenization patterns treat specially (contractions, digit runs,
// whitespace runs, '\r', emoji ZWJ sequences, combining marks, CJK, RTL
// scripts, Indic, long runs that take the long-piece merge path), mixed at
// random. Lines never contain '\n'.
//
// Usage: node tools/reference/gen_text.mjs [--seed N] [--lines N] > text.txt

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const seed = option("seed", 20240601);
const lineCount = option("lines", 2000);

// mulberry32: small, fast, and identical on every platform.
let state = seed >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(random() * n);
const pick = (items) => items[int(items.length)];
const fromRange = ([lo, hi]) => String.fromCodePoint(lo + int(hi - lo + 1));
const repeat = (n, make) => Array.from({ length: n }, make).join("");

const words = ["the", "The", "HELLO", "world", "data", "loader", "tokenizer", "a", "I", "x", "naïve",
  "café", "Straße", "résumé", "iPhone", "GPT", "MegaScale", "foo_bar", "camelCase", "URL", "don", "we", "they"];
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D",
  "'Ll", "'rE", "'ſ", "'x", "''", "’s", "'"];
const punctuation = [".", ",", "!", "?", "...", "—", "–", "-", "(", ")", "[", "]", "{", "}", "\"", "'", ";", ":",
  "/", "//", "\\", "@", "#", "$", "%", "^", "&", "*", "+", "=", "<", ">", "|", "~", "`", "«", "»", "¿", "¡",
  "。", "、", "！", "？", "「", "」", "،", "؟", "।", "॥", "•", "→", "€", "£", "¥", "©", "™", "°"];
const spaces = [" ", "  ", "   ", "\t", "\t\t", "\r", "\r\r", " \r", "\u00a0", "\u2003", "\u3000", "\u000b",
  "\u000c", "\u0085", "\u2028", "\u2029", "\u200b", " \t ", "\u202f", "\u1680"];
const emoji = ["😀", "👍", "👍🏽", "👨‍👩‍👧‍👦", "👩🏾‍💻", "🏳️‍🌈", "🇫🇷", "🇯🇵", "1️⃣", "#️⃣", "❤️", "✨", "🧑‍🤝‍🧑",
  "🐈‍⬛", "🫠", "☃", "♥️", "\u200d", "\ufe0f"];
// Ranges of long-assigned characters, by script.
const scripts = {
  latin: [[0x61, 0x7a], [0x41, 0x5a], [0xc0, 0xff], [0x100, 0x17f]],
  greek: [[0x391, 0x3a9], [0x3b1, 0x3c9]],
  cyrillic: [[0x410, 0x44f]],
  han: [[0x4e00, 0x9fa5]],
  kana: [[0x3041, 0x3096], [0x30a1, 0x30fa]],
  hangul: [[0xac00, 0xd7a3]],
  arabic: [[0x621, 0x64a], [0x660, 0x669]],
  hebrew: [[0x5d0, 0x5ea]],
  devanagari: [[0x905, 0x939], [0x93e, 0x94d], [0x966, 0x96f]],
  thai: [[0xe01, 0xe30], [0xe31, 0xe3a]],
  symbols: [[0x2200, 0x22ff], [0x2190, 0x21ff], [0x2500, 0x257f]],
  math_alnum: [[0x1d400, 0x1d4ff]],
  han_ext_b: [[0x20000, 0x2a6df]],
  fullwidth: [[0xff10, 0xff19], [0xff21, 0xff3a]],
};
const combining = [[0x300, 0x36f], [0x591, 0x5c7], [0x64b, 0x652], [0x93c, 0x94d]];
const digits = [[0x30, 0x39], [0x660, 0x669], [0x966, 0x96f], [0xff10, 0xff19], [0x1d7ce, 0x1d7ff]];
// Code points from several planes: blocks fully assigned by Unicode 15.0,
// private use, and a plane still unassigned. Blocks that gained characters
// after 15.0 are left out: ICU 72 (Unicode 15.0) and the reference's regex
// tables (Unicode 16) classify those differently, which is a difference of
// Unicode versions, not of tokenizers.
const anyPlane = [[0x20, 0x7e], [0xa0, 0x377], [0x400, 0x52f], [0x2000, 0x2064], [0x2100, 0x218b],
  [0x2190, 0x2426], [0x2460, 0x2b73], [0x3000, 0x303f], [0x3041, 0x3096], [0x30a0, 0x30ff],
  [0x4e00, 0x9fff], [0xa000, 0xa48c], [0xac00, 0xd7a3], [0xe000, 0xf8ff], [0xf900, 0xfa6d],
  [0xfe30, 0xfe52], [0xff01, 0xffbe], [0xfffe, 0xffff], [0x10400, 0x1049d], [0x12000, 0x12399],
  [0x13000, 0x1342e], [0x1d400, 0x1d454], [0x1d7ce, 0x1d7ff], [0x1f300, 0x1f64f], [0x20000, 0x2a6df],
  [0x50000, 0x5fffd], [0xe0020, 0xe007f], [0xe0100, 0xe01ef], [0xf0000, 0xffffd]];

const chunks = [
  () => pick(words),
  () => " " + pick(words),
  () => pick(words) + pick(contractions),
  () => " " + pick(words) + pick(contractions) + " ",
  () => repeat(1 + int(12), () => fromRange([0x30, 0x39])),
  () => repeat(1 + int(6), () => fromRange(pick(digits))),
  () => pick(punctuation),
  () => repeat(1 + int(4), () => pick(punctuation)),
  () => pick(spaces),
  () => repeat(1 + int(5), () => pick(spaces)),
  () => pick(emoji),
  () => repeat(1 + int(4), () => pick(emoji)),
  () => {
    const ranges = scripts[pick(Object.keys(scripts))];
    return repeat(1 + int(10), () => fromRange(pick(ranges)));
  },
  () => fromRange(pick(scripts.latin)) + repeat(1 + int(3), () => fromRange(pick(combining))),
  () => repeat(1 + int(6), () => fromRange(pick(anyPlane))),
  () => repeat(150 + int(300), () => fromRange(pick(scripts.han))),  // one long piece
  () => repeat(130 + int(200), () => pick(["a", "b", "ab", "ba"])),
  () => " ".repeat(130 + int(100)),
  () => repeat(40 + int(40), () => pick(["=", "-", "*", "#"])),
  () => "x\r\n" + pick(spaces),  // '\r\n' inside a document
];

const lines = [];
for (let i = 0; i < lineCount; ++i) {
  const parts = [];
  const chunkCount = int(4) === 0 ? int(3) : 1 + int(40);
  for (let k = 0; k < chunkCount; ++k) {
    // Long-run chunks are rare so the file stays small.
    let index = int(chunks.length);
    if (index >= chunks.length - 5 && int(6) !== 0) index = int(chunks.length - 5);
    parts.push(chunks[index]());
  }
  lines.push(parts.join(""));
}
process.stdout.write(lines.join("\n") + "\n");
