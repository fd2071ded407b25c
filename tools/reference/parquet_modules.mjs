// The Parquet references from tools/reference/install.sh parquet's folder
// (<repo>/.cache/node, or $MSD_REFERENCE_DIR, a folder holding
// node_modules/), loaded by path: their packages export ES modules that a
// script outside that folder cannot import by name.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const referenceDir = process.env.MSD_REFERENCE_DIR || path.join(here, "..", "..", ".cache", "node");
const load = (file) => import(pathToFileURL(path.join(referenceDir, "node_modules", file)).href);

export const loadWriter = async () => ({
  arrow: await load("apache-arrow/Arrow.node.mjs"),
  pw: await load("parquet-wasm/node/parquet_wasm.js"),
});
export const loadReader = async () => ({
  parquetReadObjects: (await load("hyparquet/src/node.js")).parquetReadObjects,
  compressors: (await load("hyparquet-compressors/src/index.js")).compressors,
});
