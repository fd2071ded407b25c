// Writes Parquet files with parquet-wasm (arrow-rs's writer, built to
// WebAssembly) for checking msd's reader: one file per value encoding
// (dictionary, PLAIN, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY) x data page
// version (1, 2) x codec (uncompressed, snappy, gzip, zstd), each holding the
// same texts (gen_text.mjs's varied multilingual lines, every 17th row null)
// in a nullable column `text` beside an int column `id`, in small row groups
// and small pages; then `repeats_v1_snappy` and `repeats_v2_snappy` (few
// distinct values, in runs), `required.parquet` (a non-nullable text column) and
// `images.parquet` (a nullable `caption` and a struct `image` {bytes, path},
// as Hugging Face datasets store images: the column `image.bytes`, null
// where the image or its bytes are).
//
// Beside each FILE.parquet, FILE.expected: the rows as written, one line each
// in the format parquet_read.mjs and msd's tests/tools/parquet_rows print:
// the text's UTF-8 bytes in hex, or "null"; images.parquet's lines are the
// caption's and the image's, separated by a space.
//
// Usage: node tools/reference/parquet_write.mjs --out DIR [--seed N] [--rows N]
//        [--row-group ROWS] [--page-bytes BYTES] [--max-chars N]
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadWriter } from "./parquet_modules.mjs";

const { arrow, pw } = await loadWriter();

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const out = option("out", null);
if (!out) {
  console.error("usage: parquet_write.mjs --out DIR [--seed N] [--rows N] [--row-group ROWS] [--page-bytes BYTES] [--max-chars N]");
  process.exit(2);
}
const seed = Number(option("seed", 1234));
const rows = Number(option("rows", 1000));
const rowGroup = Number(option("row-group", 300));
const pageBytes = Number(option("page-bytes", 4096));
const maxChars = Number(option("max-chars", 0));  // 0: the lines whole
mkdirSync(out, { recursive: true });

const here = dirname(fileURLToPath(import.meta.url));
const lines = execFileSync(process.execPath, [join(here, "gen_text.mjs"), "--seed", String(seed), "--lines", String(rows)],
  { encoding: "utf8", maxBuffer: 1 << 30 }).split("\n").slice(0, rows)
  .map((line) => (maxChars > 0 ? Array.from(line).slice(0, maxChars).join("") : line));
const texts = lines.map((line, i) => (i % 17 === 5 ? null : line));

const encoder = new TextEncoder();
const hex = (value) => {
  if (value === null || value === undefined) return "null";
  const bytes = typeof value === "string" ? encoder.encode(value) : value;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
};

function write(name, table, build, expected) {
  const props = build(new pw.WriterPropertiesBuilder().setMaxRowGroupSize(rowGroup).setDataPageSizeLimit(pageBytes)
    .setDictionaryPageSizeLimit(64 << 10).setWriteBatchSize(8)).build();
  const bytes = pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table, "stream")), props);
  writeFileSync(join(out, `${name}.parquet`), bytes);
  writeFileSync(join(out, `${name}.expected`), expected.join("\n") + "\n");
}

const textTable = new arrow.Table({
  id: arrow.vectorFromArray(Int32Array.from(texts.map((_, i) => i))),
  text: arrow.vectorFromArray(texts, new arrow.Utf8()),
});
const textExpected = texts.map(hex);
const codecs = { uncompressed: pw.Compression.UNCOMPRESSED, snappy: pw.Compression.SNAPPY, gzip: pw.Compression.GZIP,
  zstd: pw.Compression.ZSTD };
// Without a dictionary the writer takes the encoding it is given; with one it
// falls back to PLAIN only when the dictionary grows past its page limit.
const encodings = { dict: null, plain: pw.Encoding.PLAIN, delta_length: pw.Encoding.DELTA_LENGTH_BYTE_ARRAY,
  delta: pw.Encoding.DELTA_BYTE_ARRAY };
for (const [codecName, codec] of Object.entries(codecs)) {
  for (const [encodingName, encoding] of Object.entries(encodings)) {
    for (const version of [1, 2]) {
      write(`${encodingName}_v${version}_${codecName}`, textTable, (b) => {
        b = b.setCompression(codec).setWriterVersion(version === 1 ? pw.WriterVersion.V1 : pw.WriterVersion.V2)
          .setDictionaryEnabled(encoding === null);
        return encoding === null ? b : b.setColumnEncoding("text", encoding);
      }, textExpected);
    }
  }
}

// Few distinct values in runs: dictionary indices as RLE runs and
// bit-packed groups, through every page.
const pool = lines.slice(0, 23);
const repeats = texts.map((text, i) => (text === null ? null : pool[Math.floor(i / (1 + (i % 7))) % pool.length]));
const repeatsTable = new arrow.Table({ text: arrow.vectorFromArray(repeats, new arrow.Utf8()) });
for (const version of [1, 2]) {
  write(`repeats_v${version}_snappy`, repeatsTable, (b) => b.setCompression(pw.Compression.SNAPPY)
    .setWriterVersion(version === 1 ? pw.WriterVersion.V1 : pw.WriterVersion.V2).setDataPageSizeLimit(8),
  repeats.map(hex));
}

const required = lines.map((line) => line);
const requiredSchema = new arrow.Schema([new arrow.Field("text", new arrow.Utf8(), false)]);
const requiredTable = new arrow.Table(requiredSchema, {
  text: arrow.vectorFromArray(required, new arrow.Utf8()),
});
write("required", requiredTable, (b) => b.setCompression(pw.Compression.ZSTD), required.map(hex));

// Image bytes: not JPEGs (the reader does not decode them), any byte values.
let state = seed >>> 0;
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const images = texts.map((_, i) => {
  if (i % 13 === 4) return null;
  const bytes = Uint8Array.from({ length: 1 + Math.floor(random() * (maxChars > 0 ? 4 * maxChars : 600)) },
    () => Math.floor(random() * 256));
  return { bytes: i % 13 === 9 ? null : bytes, path: `image-${i}.jpg` };
});
const imageType = new arrow.Struct([new arrow.Field("bytes", new arrow.Binary(), true),
  new arrow.Field("path", new arrow.Utf8(), true)]);
const imageTable = new arrow.Table({
  caption: arrow.vectorFromArray(texts, new arrow.Utf8()),
  image: arrow.vectorFromArray(images, imageType),
});
write("images", imageTable, (b) => b.setCompression(pw.Compression.SNAPPY),
  texts.map((text, i) => `${hex(text)} ${hex(images[i] === null ? null : images[i].bytes)}`));
