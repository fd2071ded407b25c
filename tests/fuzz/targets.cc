#include "fuzz/targets.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpoint/planner_checkpoint.h"
#include "checkpoint/trace.h"
#include "common/error.h"
#include "common/utf8.h"
#include "datagen/datagen.h"
#include "datagen/image_gen.h"
#include "msd/config.h"
#include "source/indexed/indexed_source.h"
#include "source/jsonl/jsonl_source.h"
#include "source/parquet/parquet_source.h"
#include "source/wds/tar.h"
#include "source/wds/wds_source.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd::fuzz {

namespace fs = std::filesystem;

namespace {

void require(bool condition, const std::string& what) {
  if (!condition) throw Violation(what);
}

// --- runners ----------------------------------------------------------------

// The Source contract on an accepted input: every record reads; a bad one has
// a kind and a reason; a good one is what its kind promises.
void check_sample(const RawSample& sample, const Source& source, uint64_t index, RunContext& context) {
  const std::string where = str("sample ", index);
  if (sample.bad != BadKind::none) {
    ++context.bad_samples;
    require(static_cast<int>(sample.bad) < bad_kind_count, where + ": bad kind out of range");
    require(!sample.reason.empty(), where + ": bad sample without a reason");
    return;
  }
  switch (source.kind()) {
    case SampleKind::text:
      require(is_valid_utf8(sample.text), where + ": good text sample that is not UTF-8");
      break;
    case SampleKind::image_text: {
      require(is_valid_utf8(sample.text), where + ": good caption that is not UTF-8");
      require(!sample.image.empty(), where + ": good image sample without image bytes");
      PatchedImage image;
      std::string error;
      if (!context.image.apply(sample.image, image, error)) {
        require(!error.empty(), where + ": decode failed silently");
        ++context.bad_samples;  // the loader reports it as corrupt_jpeg
      }
      break;
    }
    case SampleKind::tokens:
      require(sample.tokens.size() == source.length_hint(index), where + ": token count differs from the index");
      break;
  }
}

void drain(Source& source, RunContext& context) {
  RawSample sample;
  for (uint64_t i = 0; i < source.size(); ++i) {
    (void)source.length_hint(i);
    require(!source.locate(i).file.empty(), str("sample ", i, ": no location"));
    source.read(i, sample);
    check_sample(sample, source, i, context);
  }
}

void run_jsonl(const std::vector<std::string>& paths, RunContext& context) {
  JsonlSource source(paths, {.text_field = "text", .cache_dir = context.cache_dir});
  drain(source, context);
}

void run_wds(const std::vector<std::string>& paths, RunContext& context) {
  WdsSource source(paths, {.caption_field = "caption", .cache_dir = context.cache_dir});
  drain(source, context);
}

void run_parquet(const std::vector<std::string>& paths, RunContext& context) {
  ParquetOptions options;
  options.cache_dir = context.cache_dir;
  options.cache_bytes = 1 << 20;
  ParquetSource source(paths, options);
  drain(source, context);
}

void run_indexed(const std::vector<std::string>& paths, RunContext& context) {
  IndexedSource source({paths[0]});
  drain(source, context);
}

void run_jpeg(const std::vector<std::string>& paths, RunContext& context) {
  const Bytes jpeg = slurp(paths[0]);
  uint32_t width = 0, height = 0;
  std::string error;
  if (context.image.probe(jpeg, width, height, error)) require(width > 0 && height > 0, "probe: zero size");
  PatchedImage image;
  error.clear();
  if (!context.image.apply(jpeg, image, error)) {
    require(!error.empty(), "apply failed without a message");
    ++context.bad_samples;
    return;
  }
  require(image.patches >= 1 && image.pixels.size() == size_t{image.patches} * 16 * 16 * 3,
          "apply: patch count and pixel bytes disagree");
}

void run_tiktoken(const std::vector<std::string>& paths, RunContext&) {
  Tokenizer tokenizer(paths[0], {});
  const std::string text = "Hello, world! 1234 \xc3\xbcnic\xc3\xb6" "de  \n\ttabs";
  const std::vector<int32_t> ids = tokenizer.encode(text);
  for (const int32_t id : ids) require(id >= 0 && id < tokenizer.vocab_size(), "encode: id outside the vocabulary");
  require(tokenizer.decode(ids) == text, "decode does not invert encode");
}

void run_ini(const std::vector<std::string>& paths, RunContext&) {
  const char* argv[] = {"msd-run", "--config", paths[0].c_str()};
  const Invocation invocation = parse_command_line(3, argv);
  (void)to_ini(invocation.config);
}

void run_checkpoint(const std::vector<std::string>& paths, RunContext&) {
  const PlannerCheckpoint checkpoint = read_planner_checkpoint(paths[0]);
  require(checkpoint.consumed.size() == checkpoint.source_samples.size(), "per-source arrays of different sizes");
}

void run_trace(const std::vector<std::string>& paths, RunContext&) {
  TraceReader reader(paths[0]);
  require(reader.first_step() <= reader.end_step(), "steps run backwards");
  for (uint64_t step = reader.first_step(); step < reader.end_step(); ++step) {
    require(reader.step(step).step == step, str("step ", step, " reads back as another step"));
  }
}

}  // namespace

void repair_tar_checksums(Bytes& bytes) {
  constexpr size_t kMagicOffset = 257, kChecksumOffset = 148, kChecksumBytes = 8;
  for (size_t block = 0; block + tar_block_bytes <= bytes.size(); block += tar_block_bytes) {
    if (bytes.compare(block + kMagicOffset, 5, "ustar") != 0) continue;
    uint64_t sum = 0;
    for (size_t i = 0; i < tar_block_bytes; ++i) {
      const bool in_field = i >= kChecksumOffset && i < kChecksumOffset + kChecksumBytes;
      sum += in_field ? ' ' : static_cast<unsigned char>(bytes[block + i]);
    }
    char field[kChecksumBytes + 1];
    std::snprintf(field, sizeof(field), "%06llo", static_cast<unsigned long long>(sum & 0777777));
    bytes.replace(block + kChecksumOffset, 6, field, 6);
    bytes[block + kChecksumOffset + 6] = '\0';
    bytes[block + kChecksumOffset + 7] = ' ';
  }
}

std::vector<Target> make_targets(const std::string& work_dir, const std::string& source_dir) {
  DatasetSeeds data = dataset_seeds(work_dir);
  data.tiktoken.push_back({{"small.tiktoken", slurp(source_dir + "/tests/data/tokenizer/small.tiktoken")}});
  std::vector<Input> jpeg = jpeg_seeds(data.wds);
  return {
      {.name = "jsonl", .seeds = std::move(data.jsonl), .run = run_jsonl},
      {.name = "wds", .seeds = std::move(data.wds), .run = run_wds, .repair = repair_tar_checksums},
      {.name = "parquet", .seeds = parquet_seeds(source_dir), .run = run_parquet},
      {.name = "jpeg", .seeds = std::move(jpeg), .run = run_jpeg},
      {.name = "indexed", .seeds = std::move(data.indexed), .main_file = 0, .run = run_indexed},
      {.name = "tiktoken", .seeds = std::move(data.tiktoken), .run = run_tiktoken},
      {.name = "ini", .seeds = ini_seeds(source_dir), .run = run_ini, .message_names_file = false},
      {.name = "checkpoint", .seeds = checkpoint_seeds(work_dir), .run = run_checkpoint},
      {.name = "trace", .seeds = trace_seeds(work_dir), .run = run_trace},
  };
}

}  // namespace msd::fuzz
