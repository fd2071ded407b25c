// msd-train-bpe: learns a byte-level BPE vocabulary from plain-text or JSON
// lines files and writes it in tiktoken format.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "common/error.h"
#include "common/files.h"
#include "common/log.h"
#include "source/jsonl/json.h"
#include "transform/tokenizer/tokenizer.h"

namespace po = msd::cli::po;

namespace {

constexpr const char* kUsage =
    "Usage: msd-train-bpe --corpus FILE_OR_GLOB[,...] --vocab-size N --out FILE\n"
    "                     [--text-field text] [--pattern NAME|REGEX] [--max-corpus-mb M]\n"
    "\n"
    "Learns byte-level BPE merges and writes a tiktoken-format vocabulary (ranks\n"
    "0..255 are the single bytes, then one rank per merge). Files ending in\n"
    ".jsonl are JSON lines whose --text-field string is one document each; any\n"
    "other file is plain text with one document per line. Records that are not\n"
    "JSON objects with that string field, or not valid UTF-8, are skipped and\n"
    "counted.\n"
    "\n"
    "Options";

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

int main(int argc, char** argv) {
  std::string corpus;
  std::string text_field = "text";
  std::string out_path;
  uint64_t max_corpus_mb = 0;
  msd::BpeTrainOptions options;
  po::options_description described(kUsage);
  described.add_options()                                                                        //
      ("help,h", "print this help")                                                              //
      ("corpus", po::value(&corpus)->required(), "comma-separated files or globs")               //
      ("text-field", po::value(&text_field)->default_value(text_field), "JSON lines field")     //
      ("vocab-size", po::value(&options.vocab_size)->required(), "tokens, including the 256 bytes")  //
      ("out", po::value(&out_path)->required(), "vocabulary file to write")                      //
      ("pattern", po::value(&options.pattern)->default_value(options.pattern),                   //
       "pre-tokenization: cl100k, o200k, gpt2 (= r50k), p50k, or an ICU regex")                 //
      ("max-corpus-mb", po::value(&max_corpus_mb)->default_value(options.max_corpus_bytes >> 20),
       "read at most this many MiB of text");
  return msd::cli::guarded("msd-train-bpe", [&] {
    if (!msd::cli::parse_or_help(argc, argv, described)) return 0;
    options.max_corpus_bytes = max_corpus_mb << 20;
    std::vector<std::string> documents;
    uint64_t bytes = 0;
    uint64_t skipped = 0;
    std::string field_value;
    msd::JsonStatus status;
    for (const std::string& path : msd::expand_globs(corpus, "--corpus")) {
      if (bytes >= options.max_corpus_bytes) break;
      const msd::MappedFile file(path);
      const std::string_view content(reinterpret_cast<const char*>(file.bytes().data()), file.size());
      const bool is_jsonl = ends_with(path, ".jsonl");
      for (size_t pos = 0; pos < content.size() && bytes < options.max_corpus_bytes;) {
        size_t end = content.find('\n', pos);
        if (end == std::string_view::npos) end = content.size();
        const std::string_view line = content.substr(pos, end - pos);
        pos = end + 1;
        if (!is_jsonl) {
          documents.emplace_back(line);
        } else if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
          continue;
        } else if (msd::extract_string_field(line, text_field, field_value, status) == msd::JsonFieldResult::ok) {
          documents.push_back(field_value);
        } else {
          ++skipped;
          continue;
        }
        bytes += documents.back().size();
      }
      msd::log_info("msd-train-bpe: read ", path, " (", bytes >> 20, " MiB so far)");
    }
    if (skipped > 0) {
      msd::log_warn("msd-train-bpe: skipped ", skipped, " JSON lines records (not a JSON object with a string '",
                    text_field, "', or not valid UTF-8)");
    }
    const uint32_t tokens = msd::train_bpe(documents, options, out_path);
    msd::log_info("msd-train-bpe: wrote ", tokens, " tokens to ", out_path);
    if (tokens < options.vocab_size) {
      msd::log_warn("msd-train-bpe: the corpus has no more pairs to merge: ", tokens, " < --vocab-size ",
                    options.vocab_size);
    }
    return 0;
  });
}
