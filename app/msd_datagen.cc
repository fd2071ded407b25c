// msd-datagen: writes the synthetic multi-source dataset (lib/datagen/datagen.h).
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli.h"
#include "common/error.h"
#include "common/log.h"
#include "datagen/datagen.h"

namespace po = msd::cli::po;

namespace {

template <typename T>
std::optional<T> optional_value(const po::variables_map& values, const char* name) {
  if (!values.count(name)) return std::nullopt;
  return values[name].as<T>();
}

}  // namespace

int main(int argc, char** argv) {
  msd::set_log_prefix("datagen");
  po::options_description described(
      "Usage: msd-datagen --out DIR [options]\n\n"
      "Writes a synthetic dataset of web text (web/*.jsonl, or .jsonl.zst / .jsonl.gz\n"
      "with --compress, or web/*.parquet with --format parquet), long documents (books/*.jsonl), image-text pairs\n"
      "(images/*.tar, WebDataset), a pre-tokenized corpus (corpus/*.bin/.idx,\n"
      "Megatron MMIDIDX) and the BPE vocabulary it was tokenized with\n"
      "(vocab.tiktoken). The same options give byte-identical files.\n"
      "A directory whose MANIFEST records the same options is left alone.\n\n"
      "Options");
  msd::datagen::DatagenOptions options;
  described.add_options()
      ("help,h", "print this help and exit")
      ("out,o", po::value(&options.out_dir), "dataset directory (required); its web/, books/, images/ and corpus/ "
                                             "folders are replaced when the dataset is (re)generated")
      ("seed", po::value(&options.seed)->default_value(options.seed), "random seed")
      ("scale", po::value(&options.scale)->default_value(options.scale),
       "tiny | demo | large: default counts (tiny: 300 web, 24 long, 64 images, 200 corpus docs; "
       "demo: 20000, 1500, 2000, 5000; large: 10x demo)")
      ("web-docs", po::value<uint64_t>(), "web documents (overrides the scale)")
      ("long-docs", po::value<uint64_t>(), "long documents (overrides the scale)")
      ("images", po::value<uint64_t>(), "image-text pairs (overrides the scale)")
      ("indexed-docs", po::value<uint64_t>(), "pre-tokenized corpus documents (overrides the scale)")
      ("vocab-size", po::value<uint32_t>(), "BPE vocabulary size, with the 256 byte tokens (tiny: 2048, else 8192)")
      ("bad-samples", po::value<uint64_t>(), "deliberately broken records (tiny: 0, demo: 6, large: 12)")
      ("web-shard-docs", po::value<uint64_t>(), "web documents per shard (default 2500; small values make many "
                                                "small shards)")
      ("long-shard-docs", po::value<uint64_t>(), "long documents per shard (default 200)")
      ("compress", po::value(&options.compress)->default_value("none"),
       "none | zst | gz: write the web text compressed, as web/*.jsonl.zst (zstd frames of about 256 KiB, so a "
       "random read decompresses one frame) or web/*.jsonl.gz (one gzip member); sources read either as format "
       "jsonl, with path web/*.jsonl*; with --format parquet, the pages' codec (none, zst, gz or snappy)")
      ("format", po::value(&options.format)->default_value(options.format),
       "jsonl | parquet: write the web text as JSON lines, or as Parquet (web/*.parquet: columns id, url and text, "
       "row groups of 1000 rows; read as format parquet)")
      ("threads", po::value(&options.threads)->default_value(0), "worker threads; 0: one per core (at most 8)")
      ("force", po::bool_switch(&options.force), "regenerate even when DIR holds this dataset already")
      ("quiet,q", "no progress lines");
  return msd::cli::guarded("msd-datagen", [&] {
    po::variables_map values;
    if (!msd::cli::parse_or_help(argc, argv, described, values)) return 0;
    if (values.count("quiet")) msd::set_log_level(msd::LogLevel::warn);
    options.web_docs = optional_value<uint64_t>(values, "web-docs");
    options.long_docs = optional_value<uint64_t>(values, "long-docs");
    options.images = optional_value<uint64_t>(values, "images");
    options.indexed_docs = optional_value<uint64_t>(values, "indexed-docs");
    options.vocab_size = optional_value<uint32_t>(values, "vocab-size");
    options.bad_samples = optional_value<uint64_t>(values, "bad-samples");
    options.web_shard_docs = optional_value<uint64_t>(values, "web-shard-docs");
    options.long_shard_docs = optional_value<uint64_t>(values, "long-shard-docs");
    const auto result = msd::datagen::generate_dataset(options);
    std::cout << msd::datagen::format_listing(result);
    return 0;
  });
}
