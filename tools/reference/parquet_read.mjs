// Prints a Parquet file's rows as hyparquet (an independent JavaScript
// reader, with hyparquet-compressors' snappy, gzip and zstd) reads them, one
// line per row in parquet_write.mjs's format: the value's bytes in hex, or
// "null"; with an image column, the text's and the image's separated by a
// space. A column "a.b" is field b of the struct column a.
//
// Usage: node tools/reference/parquet_read.mjs FILE TEXT_COLUMN [IMAGE_COLUMN]
import { readFileSync } from "node:fs";
import { loadReader } from "./parquet_modules.mjs";

const { parquetReadObjects, compressors } = await loadReader();

const [file, textColumn, imageColumn] = process.argv.slice(2);
if (!file || !textColumn) {
  console.error("usage: parquet_read.mjs FILE TEXT_COLUMN [IMAGE_COLUMN]");
  process.exit(2);
}
const buffer = readFileSync(file);
const data = buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength);
const rows = await parquetReadObjects({ file: data, compressors, utf8: false });

const encoder = new TextEncoder();
const hex = (value) => {
  if (value === null || value === undefined) return "null";
  const bytes = typeof value === "string" ? encoder.encode(value) : value;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
};
const field = (row, path) => path.split(".").reduce((value, name) => (value == null ? null : value[name]), row);

const lines = rows.map((row) => {
  const text = hex(field(row, textColumn));
  return imageColumn ? `${text} ${hex(field(row, imageColumn))}` : text;
});
process.stdout.write(lines.join("\n") + "\n");
