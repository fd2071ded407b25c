// msd/source_formats.h — the registered source formats, one line each: the
// value `source.NAME.format` names (SourceFormat in msd/source_config.h) and its
// entry, a FormatSpec in lib/source/<format>/<format>_format.cc. This list is
// the registration: adding a format is one folder under lib/source/ and one
// line here (docs/formats.md "Adding a format"). Append new formats at the end.
#pragma once

#define MSD_SOURCE_FORMATS(X) \
  X(jsonl, kJsonlFormat)      \
  X(wds, kWdsFormat)          \
  X(indexed, kIndexedFormat)  \
  X(parquet, kParquetFormat)
