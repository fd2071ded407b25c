#include "datagen/datagen.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/utf8.h"
#include "datagen/image_gen.h"
#include "datagen/random.h"
#include "datagen/text_gen.h"
#include "source/indexed/indexed_source.h"
#include "source/jsonl/compressed.h"
#include "source/parquet/parquet_writer.h"
#include "source/wds/tar.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd::datagen {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Stream labels for derive_seed: each part draws from its own streams.
enum Stream : uint64_t { web_stream = 1, books_stream, images_stream, corpus_stream, bad_stream };

// Document lengths in words: lognormal bodies with Pareto tails (a few web pages
// and books are far longer than the median, as in crawled data).
constexpr LengthDistribution web_words{.median = 130, .sigma = 0.75, .tail_share = 0.05, .tail_start = 400,
                                       .tail_alpha = 1.4, .minimum = 5, .maximum = 8000};
constexpr LengthDistribution book_words{.median = 2000, .sigma = 0.55, .tail_share = 0.10, .tail_start = 5000,
                                        .tail_alpha = 1.6, .minimum = 300, .maximum = 30000};
constexpr LengthDistribution corpus_words{.median = 350, .sigma = 0.9, .tail_share = 0.05, .tail_start = 1200,
                                          .tail_alpha = 1.3, .minimum = 8, .maximum = 12000};

// Records per shard; every part has at least a few shards so that readers meet
// more than one file even at tiny scale.
struct Sharding {
  uint64_t per_shard;
  uint64_t min_shards;
};
constexpr Sharding web_sharding{2500, 4};
constexpr Sharding books_sharding{200, 2};
constexpr Sharding images_sharding{250, 2};
constexpr Sharding corpus_sharding{2500, 2};

// The BPE vocabulary learns from at most this much text of each of web and books.
constexpr uint64_t bpe_text_bytes_per_part = 2ull << 20;

constexpr const char* manifest_name = "MANIFEST";
constexpr const char* manifest_magic = "msd-datagen dataset 1";

// `base` with the documents per shard of --web-shard-docs / --long-shard-docs.
Sharding sharding(Sharding base, std::optional<uint64_t> per_shard) {
  if (per_shard) base.per_shard = *per_shard;
  return base;
}

uint64_t shard_count(uint64_t records, Sharding sharding) {
  if (records == 0) return 0;
  return std::max(std::min(sharding.min_shards, records), (records + sharding.per_shard - 1) / sharding.per_shard);
}

// Record range [first, last) of shard `shard` of `shards`.
std::pair<uint64_t, uint64_t> shard_range(uint64_t records, uint64_t shards, uint64_t shard) {
  return {records * shard / shards, records * (shard + 1) / shards};
}

std::string shard_path(const std::string& part, uint64_t shard, const std::string& extension) {
  char number[24];
  std::snprintf(number, sizeof number, "%04llu", static_cast<unsigned long long>(shard));
  return str(part, "/", part, "-", number, extension);
}

std::string record_id(const char* prefix, uint64_t index) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%s%08llu", prefix, static_cast<unsigned long long>(index));
  return buffer;
}

// Runs fn(item, worker) for every item in [0, items) on `workers` threads and
// rethrows the first exception. Outputs must be placed by item, never by
// completion order, to keep the dataset independent of scheduling.
void parallel_for(uint64_t items, unsigned workers, const std::function<void(uint64_t, unsigned)>& fn) {
  workers = static_cast<unsigned>(std::min<uint64_t>(workers, items));
  if (workers <= 1) {
    for (uint64_t item = 0; item < items; ++item) fn(item, 0);
    return;
  }
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&](unsigned worker) {
    for (uint64_t item = next++; item < items && !failed; item = next++) {
      try {
        fn(item, worker);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned worker = 1; worker < workers; ++worker) threads.emplace_back(work, worker);
  work(0);
  for (auto& thread : threads) thread.join();
  if (first_error) std::rethrow_exception(first_error);
}

// How the web part is stored: --format (jsonl, parquet) and --compress
// (none, zst, gz; snappy for parquet only).
struct WebFormat {
  bool parquet = false;
  Compression compression = Compression::none;  // jsonl
  int32_t codec = static_cast<int32_t>(ParquetCodec::uncompressed);  // parquet
};

WebFormat web_format(const DatagenOptions& options) {
  WebFormat format;
  const std::string& name = options.compress;
  if (options.format != "jsonl" && options.format != "parquet")
    throw ConfigError(str("--format: unknown format '", options.format, "' (expected jsonl or parquet)"));
  format.parquet = options.format == "parquet";
  if (name.empty() || name == "none") return format;
  if (name == "zst") format.compression = Compression::zstd, format.codec = static_cast<int32_t>(ParquetCodec::zstd);
  else if (name == "gz") format.compression = Compression::gzip, format.codec = static_cast<int32_t>(ParquetCodec::gzip);
  else if (name == "snappy" && format.parquet) format.codec = static_cast<int32_t>(ParquetCodec::snappy);
  else throw ConfigError(str("--compress: unknown compression '", name, "' (expected none, zst or gz; snappy with --format parquet)"));
  if (format.parquet) format.compression = Compression::none;
  return format;
}

// Rows per row group of a Parquet web shard: about a MiB of this text, as
// common writers' batches of a thousand rows make.
constexpr uint64_t kParquetRowGroupRows = 1000;

// A web shard as stored: as it is, or compressed. zstd in frames of about
// kWebFrameBytes, each ending at a line's end, so a random read decompresses
// at most one frame (source/jsonl/compressed.h). 256 KiB: on this text
// (msd-bench compressed, docs/formats.md) random reads are about twice as fast
// as with 1 MiB frames for 4% more bytes.
constexpr size_t kWebFrameBytes = 256 << 10;
std::string stored_shard(std::string bytes, Compression compression) {
  if (compression == Compression::zstd) return zstd_compress_frames(bytes, kWebFrameBytes, 3);
  if (compression == Compression::gzip) return gzip_compress(bytes, 6);
  return bytes;
}

const char* shard_extension(Compression compression) {
  if (compression == Compression::zstd) return ".jsonl.zst";
  if (compression == Compression::gzip) return ".jsonl.gz";
  return ".jsonl";
}

void write_bytes(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, {reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()});
}

// std::filesystem reports failures as its own exception; the error model wants IoError.
void make_directory(const std::string& path) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) throw IoError(str("cannot create directory ", path, ": ", error.message()));
}

void remove_path(const std::string& path) {
  std::error_code error;
  fs::remove_all(path, error);
  if (error) throw IoError(str("cannot remove ", path, ": ", error.message()));
}

double megabytes(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// The broken records to plant: which part, which record, how it is broken.
enum class Damage {
  cut_json,          // web: the line ends inside the text string
  invalid_utf8,      // web: raw invalid bytes inside the text string
  missing_text,      // books: the object has no "text" field
  garbage_jpeg,      // images: headers intact, entropy-coded data replaced by garbage
  truncated_jpeg,    // images: the JPEG cut short
  caption_only,      // images: a caption member without an image member
};
constexpr Damage damage_cycle[] = {Damage::cut_json,     Damage::invalid_utf8,   Damage::missing_text,
                                   Damage::garbage_jpeg, Damage::truncated_jpeg, Damage::caption_only};

const char* damage_part(Damage damage) {
  switch (damage) {
    case Damage::cut_json:
    case Damage::invalid_utf8:
      return "web";
    case Damage::missing_text:
      return "books";
    default:
      return "images";
  }
}

BadKind damage_kind(Damage damage) {
  switch (damage) {
    case Damage::cut_json: return BadKind::invalid_json;
    case Damage::invalid_utf8: return BadKind::invalid_utf8;
    case Damage::missing_text: return BadKind::missing_field;
    case Damage::garbage_jpeg:
    case Damage::truncated_jpeg: return BadKind::corrupt_jpeg;
    case Damage::caption_only: return BadKind::missing_member;
  }
  return BadKind::none;
}

// part -> (record index -> damage)
using DamagePlan = std::map<std::string, std::map<uint64_t, Damage>>;

DamagePlan plan_damage(uint64_t seed, const DatasetCounts& counts) {
  const std::map<std::string, uint64_t> records = {
      {"web", counts.web_docs}, {"books", counts.long_docs}, {"images", counts.images}};
  DamagePlan plan;
  Rng rng(derive_seed(seed, {bad_stream}));
  for (uint64_t i = 0; i < counts.bad_samples; ++i) {
    const Damage damage = damage_cycle[i % std::size(damage_cycle)];
    const std::string part = damage_part(damage);
    auto& chosen = plan[part];
    const uint64_t available = records.at(part);
    // A part keeps at least half of its records good.
    if (chosen.size() + 1 > available / 2) continue;
    uint64_t index;
    do {
      index = rng.below(available);
    } while (chosen.contains(index));
    chosen[index] = damage;
  }
  return plan;
}

const std::map<uint64_t, Damage>& damage_of(const DamagePlan& plan, const std::string& part) {
  static const std::map<uint64_t, Damage> none;
  const auto it = plan.find(part);
  return it == plan.end() ? none : it->second;
}

struct ShardResult {
  DatasetFile file;
  std::vector<BadRecord> bad_records;
};

struct PartSummary {
  std::vector<ShardResult> shards;
  uint64_t bytes() const {
    uint64_t total = 0;
    for (const auto& shard : shards) total += shard.file.bytes;
    return total;
  }
};

class Generator {
 public:
  Generator(const DatagenOptions& options, const DatasetCounts& counts)
      : options_(options),
        counts_(counts),
        seed_(options.seed),
        text_(options.seed),
        damage_(plan_damage(options.seed, counts)),
        web_(web_format(options)),
        workers_(options.threads != 0 ? options.threads : std::clamp(std::thread::hardware_concurrency(), 1u, 8u)) {}

  void run(DatagenResult& result) {
    write_text_part("web", TextStyle::web, counts_.web_docs, sharding(web_sharding, options_.web_shard_docs), result);
    write_text_part("books", TextStyle::book, counts_.long_docs, sharding(books_sharding, options_.long_shard_docs),
                    result);
    train_vocabulary(result);
    write_images(result);
    write_corpus(result);
  }

 private:
  std::string path(const std::string& relative) const { return join_path(options_.out_dir, relative); }

  std::string document(TextStyle style, uint64_t index) const {
    const bool web = style == TextStyle::web;
    Rng rng(derive_seed(seed_, {web ? web_stream : books_stream, index}));
    const uint64_t words = (web ? web_words : book_words).draw(rng);
    std::string text;
    text_.document(rng, style, words, text);
    return text;
  }

  void append_record(std::string& out, TextStyle style, uint64_t index, const Damage* damage) const {
    const bool web = style == TextStyle::web;
    Rng rng(derive_seed(seed_, {web ? web_stream : books_stream, index, 1}));
    const std::string text = document(style, index);
    JsonWriter json;
    json.begin_object().value("id", record_id(web ? "web-" : "book-", index)).value("url", text_.url(rng));
    if (damage == nullptr || *damage == Damage::missing_text) {
      json.value(damage == nullptr ? "text" : "body", text).end_object();
      out += json.str();
      out += "\n";
      return;
    }
    // A broken line: the writer's valid start of the object, then the damage.
    out += json.str();
    out += ",\"text\":";
    std::string whole;
    switch (*damage) {
      case Damage::cut_json:
        append_json_string(whole, text);
        out += whole.substr(0, std::max<size_t>(2, whole.size() / 3));
        out += "\n";
        return;
      case Damage::invalid_utf8: {
        // The first 200 bytes; a character cut at the end stays as raw bytes.
        const std::string_view head = std::string_view(text).substr(0, 200);
        const size_t valid = first_invalid_utf8(head);
        append_json_string(whole, head.substr(0, valid));
        whole.pop_back();
        whole += head.substr(valid);
        // A lone continuation byte, a lead byte followed by ASCII, and 0xFF.
        out += whole + " \x80 \xC3( \xFF end\"}\n";
        return;
      }
      default:
        MSD_CHECK(false);
    }
  }

  static const char* damage_detail(Damage damage) {
    switch (damage) {
      case Damage::cut_json: return "line ends inside the text string";
      case Damage::invalid_utf8: return "bytes 80, C3 28 and FF inside the text string";
      case Damage::missing_text: return "object has \"body\" instead of \"text\"";
      case Damage::garbage_jpeg: return "JPEG headers intact, scan data replaced by garbage";
      case Damage::truncated_jpeg: return "JPEG cut short";
      case Damage::caption_only: return "caption without an image";
    }
    return "";
  }

  void write_text_part(const std::string& part, TextStyle style, uint64_t records, Sharding sharding,
                       DatagenResult& result) {
    const auto start = Clock::now();
    const uint64_t shards = shard_count(records, sharding);
    if (shards == 0) return;
    make_directory(path(part));
    PartSummary summary;
    summary.shards.resize(shards);
    const auto& damage = damage_of(damage_, part);
    const Compression compression = part == "web" ? web_.compression : Compression::none;
    const bool parquet = part == "web" && web_.parquet;
    parallel_for(shards, workers_, [&](uint64_t shard, unsigned) {
      const auto [first, last] = shard_range(records, shards, shard);
      ShardResult& out = summary.shards[shard];
      out.file.path = shard_path(part, shard, parquet ? ".parquet" : shard_extension(compression));
      if (parquet) {
        const std::string stored = parquet_shard(first, last, damage, out);
        write_bytes(path(out.file.path), stored);
        out.file.samples = last - first;
        out.file.bytes = stored.size();
        return;
      }
      std::string bytes;
      for (uint64_t index = first; index < last; ++index) {
        const auto planned = damage.find(index);
        if (planned != damage.end()) {
          out.bad_records.push_back({part, out.file.path, bytes.size(), damage_kind(planned->second),
                                     str(record_id(style == TextStyle::web ? "web-" : "book-", index), ": ",
                                         damage_detail(planned->second))});
        }
        append_record(bytes, style, index, planned == damage.end() ? nullptr : &planned->second);
      }
      const std::string stored = stored_shard(std::move(bytes), compression);
      write_bytes(path(out.file.path), stored);
      out.file.samples = last - first;
      out.file.bytes = stored.size();
    });
    log_info(part, ": ", records, " documents in ", shards, " shards, ", fixed(megabytes(summary.bytes()), 1), " MB, ",
             fixed(seconds_since(start), 2), " s");
    collect(summary, result);
  }

  // A web shard as Parquet (--format parquet): columns id, url and text in
  // row groups of kParquetRowGroupRows, PLAIN, one codec. A record the JSON
  // lines would cut has a null text (missing_field); an invalid_utf8 one
  // holds the same broken bytes. Bad records' offsets are rows of the file.
  std::string parquet_shard(uint64_t first, uint64_t last, const std::map<uint64_t, Damage>& damage,
                            ShardResult& out) const {
    ParquetWriteColumn id{"id", {}}, url{"url", {}}, text{"text", {}};
    for (uint64_t index = first; index < last; ++index) {
      Rng rng(derive_seed(seed_, {web_stream, index, 1}));
      std::string document_text = document(TextStyle::web, index);
      id.values.emplace_back(record_id("web-", index));
      url.values.emplace_back(text_.url(rng));
      const auto planned = damage.find(index);
      if (planned == damage.end()) {
        text.values.emplace_back(std::move(document_text));
        continue;
      }
      const bool cut = planned->second == Damage::cut_json;
      out.bad_records.push_back({"web", out.file.path, index - first, cut ? BadKind::missing_field : BadKind::invalid_utf8,
                                 str(record_id("web-", index), cut ? ": null text" : ": bytes 80, C3 28 and FF inside the text")});
      if (cut) text.values.emplace_back();
      else text.values.emplace_back(document_text.substr(0, 200) + " \x80 \xC3( \xFF end");
    }
    return write_parquet({id, url, text}, {.codec = web_.codec, .row_group_rows = kParquetRowGroupRows});
  }

  static void collect(PartSummary& summary, DatagenResult& result) {
    for (auto& shard : summary.shards) {
      result.files.push_back(std::move(shard.file));
      for (auto& bad : shard.bad_records) result.bad_records.push_back(std::move(bad));
    }
  }

  void train_vocabulary(DatagenResult& result) {
    const auto start = Clock::now();
    // A capped prefix of each text part: enough for the merges to settle, small
    // enough that training stays a fraction of the generation time.
    std::vector<std::string> documents;
    uint64_t text_bytes = 0;
    for (auto [style, records] : {std::pair{TextStyle::web, counts_.web_docs}, {TextStyle::book, counts_.long_docs}}) {
      uint64_t part_bytes = 0;
      for (uint64_t index = 0; index < records && part_bytes < bpe_text_bytes_per_part; ++index) {
        documents.push_back(document(style, index));
        part_bytes += documents.back().size();
      }
      text_bytes += part_bytes;
    }
    if (documents.empty()) documents.push_back(document(TextStyle::web, 0));
    BpeTrainOptions bpe;
    bpe.vocab_size = counts_.vocab_size;
    bpe.max_corpus_bytes = text_bytes + 1;
    const std::string vocab_path = path("vocab.tiktoken");
    const uint32_t tokens = train_bpe(documents, bpe, vocab_path);
    const uint64_t bytes = file_stamp(vocab_path).size_bytes;
    log_info("vocab: ", tokens, " tokens learned from ", fixed(megabytes(text_bytes), 1), " MB of text, ",
             fixed(seconds_since(start), 2), " s");
    result.files.push_back({"vocab.tiktoken", 0, bytes});
  }

  // The JPEG of image `index` as damaged by `damage`.
  static std::vector<unsigned char> damage_jpeg(std::vector<unsigned char> jpeg, Damage damage, Rng& rng) {
    if (damage == Damage::truncated_jpeg) {
      jpeg.resize(std::max<size_t>(jpeg.size() * 2 / 5, 64));
      return jpeg;
    }
    // Keep everything up to the end of the start-of-scan header, so the header
    // still parses, then write garbage in place of the scan and no end marker.
    size_t scan = 2;
    while (scan + 4 <= jpeg.size() && !(jpeg[scan] == 0xFF && jpeg[scan + 1] == 0xDA)) {
      scan += 2 + (size_t{jpeg[scan + 2]} << 8 | jpeg[scan + 3]);
    }
    MSD_CHECK_LT(scan + 4, jpeg.size());
    const size_t data = scan + 2 + (size_t{jpeg[scan + 2]} << 8 | jpeg[scan + 3]);
    for (size_t i = data; i < jpeg.size(); ++i) jpeg[i] = static_cast<unsigned char>(rng.below(256));
    // A second start-of-image marker inside the scan is a fatal error for
    // libjpeg, whatever the random bytes around it do.
    if (data + 8 < jpeg.size()) {
      jpeg[data + 4] = 0xFF;
      jpeg[data + 5] = 0xD8;
    }
    jpeg.resize(jpeg.size() - 2);
    return jpeg;
  }

  void write_images(DatagenResult& result) {
    const auto start = Clock::now();
    const uint64_t shards = shard_count(counts_.images, images_sharding);
    if (shards == 0) return;
    make_directory(path("images"));
    PartSummary summary;
    summary.shards.resize(shards);
    std::vector<JpegEncoder> encoders(std::min<uint64_t>(workers_, shards));
    const auto& damage = damage_of(damage_, "images");
    parallel_for(shards, workers_, [&](uint64_t shard, unsigned worker) {
      const auto [first, last] = shard_range(counts_.images, shards, shard);
      ShardResult& out = summary.shards[shard];
      out.file.path = shard_path("images", shard, ".tar");
      TarWriter tar(path(out.file.path));
      for (uint64_t index = first; index < last; ++index) {
        Rng rng(derive_seed(seed_, {images_stream, index}));
        const PictureSpec spec = draw_picture_spec(rng);
        std::vector<unsigned char> jpeg = encoders[worker].picture(rng, spec);
        const std::string caption = text_.caption(rng);
        const std::string key = record_id("s", index);
        const auto planned = damage.find(index);
        const Damage* harm = planned == damage.end() ? nullptr : &planned->second;
        if (harm != nullptr) {
          out.bad_records.push_back({"images", out.file.path, tar.bytes_written(), damage_kind(*harm),
                                     str(key, ": ", damage_detail(*harm))});
        }
        if (harm == nullptr || *harm != Damage::caption_only) {
          if (harm != nullptr) jpeg = damage_jpeg(std::move(jpeg), *harm, rng);
          tar.add(key + ".jpg", {reinterpret_cast<const char*>(jpeg.data()), jpeg.size()});
        }
        // Captions alternate between the two forms WebDataset uses.
        if (index % 2 == 0) {
          tar.add(key + ".txt", caption);
        } else {
          JsonWriter json;
          json.begin_object().value("caption", caption).end_object();
          tar.add(key + ".json", json.str());
        }
      }
      tar.finish();
      out.file.samples = last - first;
      out.file.bytes = file_stamp(path(out.file.path)).size_bytes;
    });
    log_info("images: ", counts_.images, " image-text pairs in ", shards, " shards, ",
             fixed(megabytes(summary.bytes()), 1), " MB, ", fixed(seconds_since(start), 2), " s");
    collect(summary, result);
  }

  void write_corpus(DatagenResult& result) {
    const auto start = Clock::now();
    const uint64_t shards = shard_count(counts_.indexed_docs, corpus_sharding);
    if (shards == 0) return;
    make_directory(path("corpus"));
    const std::string vocab_path = path("vocab.tiktoken");
    std::vector<std::optional<Tokenizer>> tokenizers(workers_);
    uint64_t total_tokens = 0;
    PartSummary summary;
    // Megatron's rule: 16-bit ids when the vocabulary fits them.
    const IndexedDtype dtype = counts_.vocab_size <= 65536 ? IndexedDtype::uint16 : IndexedDtype::int32;
    for (uint64_t shard = 0; shard < shards; ++shard) {
      const auto [first, last] = shard_range(counts_.indexed_docs, shards, shard);
      std::vector<std::vector<int32_t>> documents(last - first);
      // Tokenizing is the expensive step: spread the shard's documents over the workers.
      parallel_for(last - first, workers_, [&](uint64_t item, unsigned worker) {
        auto& tokenizer = tokenizers[worker];
        if (!tokenizer) tokenizer.emplace(vocab_path, TokenizerOptions{});
        const uint64_t index = first + item;
        Rng rng(derive_seed(seed_, {corpus_stream, index}));
        const uint64_t words = corpus_words.draw(rng);
        std::string text;
        text_.document(rng, words > 1500 ? TextStyle::book : TextStyle::web, words, text);
        tokenizer->encode(text, documents[item]);
      });
      for (const auto& tokens : documents) total_tokens += tokens.size();
      const std::string prefix = shard_path("corpus", shard, "");
      write_indexed_dataset(path(prefix), documents, dtype);
      ShardResult out;
      out.file = {prefix + ".bin", last - first, file_stamp(path(prefix + ".bin")).size_bytes};
      summary.shards.push_back(out);
      out.file = {prefix + ".idx", 0, file_stamp(path(prefix + ".idx")).size_bytes};
      summary.shards.push_back(out);
    }
    log_info("corpus: ", counts_.indexed_docs, " documents, ", total_tokens, " tokens in ", shards, " shards, ",
             fixed(megabytes(summary.bytes()), 1), " MB, ", fixed(seconds_since(start), 2), " s");
    collect(summary, result);
  }

  const DatagenOptions& options_;
  const DatasetCounts counts_;
  const uint64_t seed_;
  const TextGenerator text_;
  const DamagePlan damage_;
  const WebFormat web_;
  const unsigned workers_;
};

// The MANIFEST's first lines: everything the output depends on. A directory
// whose MANIFEST starts with the same lines holds exactly this dataset. The
// compression line is there only for a compressed web part, so the MANIFEST of
// an uncompressed JSON-lines dataset is what it was before the options
// existed; so are the shard sizes' lines, there only when given.
std::string manifest_options(const DatagenOptions& given, const DatasetCounts& counts) {
  const WebFormat web = web_format(given);
  std::string options = str(manifest_magic, "\nseed ", given.seed, "\nweb_docs ", counts.web_docs, "\nlong_docs ",
                            counts.long_docs, "\nimages ", counts.images, "\nindexed_docs ", counts.indexed_docs,
                            "\nvocab_size ", counts.vocab_size, "\nbad_samples ", counts.bad_samples, "\n");
  if (web.compression != Compression::none) options += str("web_compression ", compression_name(web.compression), "\n");
  if (web.parquet) options += str("web_format parquet ", parquet_codec_name(web.codec), "\n");
  if (given.web_shard_docs) options += str("web_shard_docs ", *given.web_shard_docs, "\n");
  if (given.long_shard_docs) options += str("long_shard_docs ", *given.long_shard_docs, "\n");
  return options;
}

std::string read_text(const std::string& path) {
  const auto bytes = read_file(path);
  return {bytes.begin(), bytes.end()};
}

// The files a complete MANIFEST lists, or nothing when one of them is missing
// or has another size (the dataset was changed after it was written).
std::optional<std::vector<DatasetFile>> manifest_files(const std::string& out_dir, const std::string& manifest) {
  std::vector<DatasetFile> files;
  std::istringstream lines(manifest);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string tag;
    DatasetFile file;
    if (!(fields >> tag) || tag != "file") continue;
    if (!(fields >> file.path >> file.samples >> file.bytes)) return std::nullopt;
    const std::string full = join_path(out_dir, file.path);
    if (!file_exists(full) || file_stamp(full).size_bytes != file.bytes) return std::nullopt;
    files.push_back(file);
  }
  return files;
}

std::vector<BadRecord> read_bad_records(const std::string& path) {
  std::vector<BadRecord> records;
  if (!file_exists(path)) return records;
  std::istringstream lines(read_text(path));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    BadRecord record;
    std::string kind;
    if (!std::getline(fields, record.source, '\t') || !std::getline(fields, record.file, '\t')) continue;
    std::string offset;
    if (!std::getline(fields, offset, '\t') || !std::getline(fields, kind, '\t')) continue;
    std::getline(fields, record.detail);
    record.offset = std::stoull(offset);
    for (int k = 0; k < bad_kind_count; ++k) {
      if (kind == bad_kind_name(static_cast<BadKind>(k))) record.kind = static_cast<BadKind>(k);
    }
    records.push_back(std::move(record));
  }
  return records;
}

void remove_previous_output(const std::string& out_dir) {
  // MANIFEST first: an interrupted regeneration must not look complete.
  for (const char* name : {manifest_name, "vocab.tiktoken", "bad_samples.txt", "web", "books", "images", "corpus"}) {
    remove_path(join_path(out_dir, name));
  }
}

}  // namespace

DatasetCounts counts_for_scale(const std::string& scale) {
  if (scale == "tiny") return {.web_docs = 300, .long_docs = 24, .images = 64, .indexed_docs = 200, .vocab_size = 2048, .bad_samples = 0};
  if (scale == "demo") return {.web_docs = 20000, .long_docs = 1500, .images = 2000, .indexed_docs = 5000, .vocab_size = 8192, .bad_samples = 6};
  if (scale == "large") return {.web_docs = 200000, .long_docs = 15000, .images = 20000, .indexed_docs = 50000, .vocab_size = 8192, .bad_samples = 12};
  throw ConfigError(str("--scale: unknown scale '", scale, "' (expected tiny, demo or large)"));
}

DatasetCounts resolve_counts(const DatagenOptions& options) {
  DatasetCounts counts = counts_for_scale(options.scale);
  if (options.web_docs) counts.web_docs = *options.web_docs;
  if (options.long_docs) counts.long_docs = *options.long_docs;
  if (options.images) counts.images = *options.images;
  if (options.indexed_docs) counts.indexed_docs = *options.indexed_docs;
  if (options.vocab_size) counts.vocab_size = *options.vocab_size;
  if (options.bad_samples) counts.bad_samples = *options.bad_samples;
  if (counts.vocab_size < 257 || counts.vocab_size > (1u << 31))
    throw ConfigError(str("--vocab-size: ", counts.vocab_size, " is outside 257..2147483648"));
  if (counts.web_docs + counts.long_docs == 0)
    throw ConfigError("--web-docs and --long-docs are both 0: the vocabulary needs text to learn from");
  return counts;
}

DatagenResult generate_dataset(const DatagenOptions& options) {
  if (options.out_dir.empty()) throw ConfigError("--out: the dataset directory is required");
  const auto start = Clock::now();
  const DatasetCounts counts = resolve_counts(options);
  for (const auto& [name, value] : {std::pair{"--web-shard-docs", options.web_shard_docs},
                                    {"--long-shard-docs", options.long_shard_docs}})
    if (value && *value == 0) throw ConfigError(str(name, ": a shard holds at least 1 document"));
  const std::string header = manifest_options(options, counts);
  const std::string manifest_path = join_path(options.out_dir, manifest_name);
  DatagenResult result;

  if (!options.force && file_exists(manifest_path)) {
    const std::string manifest = read_text(manifest_path);
    if (!manifest.starts_with(header + "scale ")) {  // the options end where the scale's line starts
      const std::string existing = manifest.substr(0, manifest.find("\nscale"));
      throw ConfigError(str(options.out_dir, " holds a dataset made with other options:\n", existing,
                            "\nrequested:\n", header, "pass --force to replace it, or choose another --out"));
    }
    if (auto files = manifest_files(options.out_dir, manifest)) {
      result.reused = true;
      result.files = std::move(*files);
      result.bad_records = read_bad_records(join_path(options.out_dir, "bad_samples.txt"));
      result.seconds = seconds_since(start);
      log_info(options.out_dir, " already holds this dataset (", manifest_path, "); left as it is");
      return result;
    }
    log_warn(options.out_dir, ": the dataset is incomplete or was changed since its MANIFEST; generating it again");
  }

  make_directory(options.out_dir);
  remove_previous_output(options.out_dir);
  log_info("generating the ", options.scale, " dataset in ", options.out_dir, " (seed ", options.seed, ")");
  Generator(options, counts).run(result);

  std::string bad_listing = "# source\tfile\toffset\tkind\tdetail\n";
  for (const auto& bad : result.bad_records) {
    bad_listing += str(bad.source, "\t", bad.file, "\t", bad.offset, "\t", bad_kind_name(bad.kind), "\t", bad.detail, "\n");
  }
  write_bytes(join_path(options.out_dir, "bad_samples.txt"), bad_listing);
  result.files.push_back({"bad_samples.txt", 0, bad_listing.size()});

  std::string manifest = str(header, "scale ", options.scale, "\n");
  for (const auto& file : result.files) manifest += str("file ", file.path, " ", file.samples, " ", file.bytes, "\n");
  write_bytes(manifest_path, manifest);
  result.seconds = seconds_since(start);
  return result;
}

std::string format_listing(const DatagenResult& result) {
  struct Totals {
    uint64_t files = 0, samples = 0, bytes = 0;
  };
  std::map<std::string, Totals> parts;
  Totals all;
  for (const auto& file : result.files) {
    const std::string part = file.path.find('/') == std::string::npos ? file.path : file.path.substr(0, file.path.find('/'));
    for (Totals* totals : {&parts[part], &all}) {
      totals->files += 1;
      totals->samples += file.samples;
      totals->bytes += file.bytes;
    }
  }
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%-18s %6s %10s %12s\n", "part", "files", "samples", "MB");
  out += line;
  for (const auto& [part, totals] : parts) {
    std::snprintf(line, sizeof line, "%-18s %6llu %10llu %12.2f\n", part.c_str(),
                  static_cast<unsigned long long>(totals.files), static_cast<unsigned long long>(totals.samples),
                  megabytes(totals.bytes));
    out += line;
  }
  std::snprintf(line, sizeof line, "%-18s %6llu %10llu %12.2f\n", "total", static_cast<unsigned long long>(all.files),
                static_cast<unsigned long long>(all.samples), megabytes(all.bytes));
  out += line;
  out += str(result.bad_records.size(), " bad records planted (bad_samples.txt); ",
             result.reused ? "existing dataset reused" : str("generated in ", fixed(result.seconds, 2), " s"), "\n");
  return out;
}

}  // namespace msd::datagen
