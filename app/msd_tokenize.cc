// msd-tokenize: encodes UTF-8 text lines to token ids (or decodes ids back),
// one output line per input line, with a tiktoken-format vocabulary or a
// Hugging Face tokenizer.json.
#include <charconv>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "common/error.h"
#include "common/utf8.h"
#include "transform/tokenizer/tokenizer.h"

namespace po = msd::cli::po;

namespace {

constexpr const char* kUsage =
    "Usage: msd-tokenize --vocab FILE [--pattern NAME|REGEX] [--normalize FORM] [--decode]\n"
    "       msd-tokenize --hf TOKENIZER.JSON [--append-eod] [--eod-token TEXT] [--decode]\n"
    "\n"
    "Reads UTF-8 text on stdin and prints, for each input line, the token ids of\n"
    "that line as one line of space-separated integers (with --hf, one document:\n"
    "the tokens the tokenizer's post-processor adds, such as a BOS, included).\n"
    "The line's trailing\n"
    "newline is not part of the text (a '\\r' before it is). With --decode, reads\n"
    "lines of space-separated ids and prints the decoded text of each line.\n"
    "\n"
    "A line that is not valid UTF-8 (or, with --decode, holds something other\n"
    "than ids of the vocabulary) is reported on stderr with its line number and\n"
    "printed as an empty line; the other lines are still processed, and the exit\n"
    "status is 1. Exit status 2: bad options or an unreadable vocabulary.\n"
    "\n"
    "Options";

// Parses one line of ids; false (with `problem` set) on anything else.
bool parse_ids(std::string_view line, std::vector<int32_t>& ids, std::string& problem) {
  ids.clear();
  size_t pos = 0;
  while (pos < line.size()) {
    if (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\r') {
      ++pos;
      continue;
    }
    int32_t id = 0;
    const auto [end, error] = std::from_chars(line.data() + pos, line.data() + line.size(), id);
    if (error != std::errc() || (end != line.data() + line.size() && *end != ' ' && *end != '\t' && *end != '\r')) {
      problem = msd::str("'", line.substr(pos, line.find(' ', pos) - pos), "' is not a token id");
      return false;
    }
    ids.push_back(id);
    pos = static_cast<size_t>(end - line.data());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string vocab;
  std::string hf;
  msd::TokenizerOptions options;
  msd::HfTokenizerOptions hf_options;
  po::options_description described(kUsage);
  described.add_options()                                                                  //
      ("help,h", "print this help")                                                        //
      ("vocab", po::value(&vocab), "tiktoken-format vocabulary file")                      //
      ("hf", po::value(&hf), "Hugging Face tokenizer.json (BPE family) instead of --vocab") //
      ("append-eod", po::bool_switch(&hf_options.append_eod), "with --hf: end each line with the EOD token") //
      ("eod-token", po::value(&hf_options.eod_token),                                      //
       "with --hf: the EOD token's text (default: tokenizer_config.json's eos_token)")    //
      ("pattern", po::value(&options.pattern)->default_value(options.pattern),             //
       "pre-tokenization: cl100k, o200k, gpt2 (= r50k), p50k, or an ICU regex")           //
      ("normalize", po::value(&options.normalize)->default_value(options.normalize),       //
       "Unicode normalization before splitting: none, nfc, nfkc, nfd, nfkd")               //
      ("decode", po::bool_switch(), "read ids, print text");
  return msd::cli::guarded("msd-tokenize", [&] {
    po::variables_map values;
    if (!msd::cli::parse_or_help(argc, argv, described, values)) return 0;
    if (vocab.empty() == hf.empty()) throw po::error("give exactly one of --vocab and --hf");
    const bool decode = values["decode"].as<bool>();
    std::ios::sync_with_stdio(false);
    msd::Tokenizer tokenizer = hf.empty() ? msd::Tokenizer(vocab, options) : msd::Tokenizer::hugging_face(hf, hf_options);
    std::string line;
    std::string out;
    std::vector<int32_t> ids;
    std::string problem;
    uint64_t line_number = 0;
    uint64_t bad_lines = 0;
    while (std::getline(std::cin, line)) {
      ++line_number;
      if (decode) {
        if (!parse_ids(line, ids, problem)) {
          std::cerr << "msd-tokenize: line " << line_number << ": " << problem << "\n";
          ++bad_lines;
        } else {
          try {
            out += tokenizer.decode(ids);
          } catch (const msd::Error& e) {
            std::cerr << "msd-tokenize: line " << line_number << ": " << e.what() << "\n";
            ++bad_lines;
          }
        }
      } else if (const size_t bad = msd::first_invalid_utf8(line); bad != line.size()) {
        std::cerr << "msd-tokenize: line " << line_number << ": invalid UTF-8 at byte " << bad << "\n";
        ++bad_lines;
      } else {
        ids.clear();
        tokenizer.encode(line, ids);
        char number[16];
        for (size_t i = 0; i < ids.size(); ++i) {
          if (i > 0) out += ' ';
          const auto [end, error] = std::to_chars(number, number + sizeof number, ids[i]);
          out.append(number, end);
        }
      }
      out += '\n';
      if (out.size() > (1 << 16)) {
        std::cout.write(out.data(), static_cast<std::streamsize>(out.size()));
        out.clear();
      }
    }
    std::cout.write(out.data(), static_cast<std::streamsize>(out.size()));
    std::cout.flush();
    if (bad_lines > 0) {
      std::cerr << "msd-tokenize: " << bad_lines << " of " << line_number << " lines could not be processed\n";
      return 1;
    }
    return 0;
  });
}
