// msd-inspect: summarizes one source and shows one sample, stored and
// transformed (lib/inspect/inspect.h).
#include <iostream>

#include "cli.h"
#include "common/error.h"
#include "common/log.h"
#include "inspect/inspect.h"

namespace po = msd::cli::po;

int main(int argc, char** argv) {
  msd::set_log_prefix("inspect");
  msd::InspectOptions options;
  po::options_description described(
      "Usage: msd-inspect --source FORMAT:PATH_OR_GLOB [options]\n\n"
      "Opens a source as a loader would (building or reusing its index caches) and\n"
      "prints its file and sample counts, length statistics (tokens for indexed,\n"
      "stored bytes otherwise) and one sample in file order: where it is stored, its\n"
      "text, token ids (with --vocab, or always for indexed) and, for image-text, the\n"
      "stored size, resized size and patch count. A bad sample is reported as\n"
      "\"bad sample: <kind>: <reason>\" with exit code 0.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("source,s", po::value(&options.source), "FORMAT:PATH_OR_GLOB; FORMAT is jsonl, wds, indexed or parquet "
                                               "(indexed: the globs name the .idx files); comma-separated globs allowed")
      ("sample,i", po::value(&options.sample)->default_value(options.sample), "file-order index of the sample to show")
      ("vocab", po::value(&options.vocab), "tiktoken vocabulary: tokenize text and captions as a loader would")
      ("pattern", po::value(&options.pattern)->default_value(options.pattern),
       "pre-tokenization pattern: cl100k, o200k, gpt2, r50k, p50k or a regex")
      ("max-side", po::value(&options.max_side)->default_value(options.max_side), "longest image side after resizing, pixels")
      ("patch", po::value(&options.patch)->default_value(options.patch), "image patch side, pixels")
      ("text-field", po::value(&options.text_field)->default_value(options.text_field),
       "jsonl: field holding the text; parquet: its column")
      ("caption-field", po::value(&options.caption_field)->default_value(options.caption_field),
       "wds: field of a .json caption (else \"text\"); parquet with --image-field: the caption's column")
      ("image-field", po::value(&options.image_field),
       "parquet: column of the image bytes (\"a.b\": field b of struct column a); set: image-text samples")
      ("cache-dir", po::value(&options.cache_dir), "where index caches go (default: beside the data, else ~/.cache/msd)");
  return msd::cli::guarded("msd-inspect", [&] {
    if (!msd::cli::parse_or_help(argc, argv, described)) return 0;
    if (options.source.empty()) throw msd::ConfigError("--source is required (see --help)");
    if (options.patch == 0 || options.max_side < options.patch)
      throw msd::ConfigError("--patch must be at least 1 and at most --max-side");
    msd::run_inspect(options, std::cout);
    return 0;
  });
}
