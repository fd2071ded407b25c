// Valid seed inputs for the fuzz targets, written by the project's own
// generators and writers so they follow the formats exactly as msd writes
// and reads them.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>

#include "checkpoint/planner_checkpoint.h"
#include "checkpoint/trace.h"
#include "common/error.h"
#include "datagen/datagen.h"
#include "datagen/image_gen.h"
#include "fuzz/targets.h"
#include "source/parquet/parquet_writer.h"
#include "source/wds/tar.h"

namespace msd::fuzz {

namespace fs = std::filesystem;

Bytes slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw IoError(str("fuzz: cannot read seed ", path));
  return bytes.str();
}

namespace {

InputFile file_of(const fs::path& path) { return {path.filename().string(), slurp(path.string())}; }

bool has_extension(const std::string& path, const std::string& extension) {
  return fs::path(path).extension() == extension;
}

}  // namespace

DatasetSeeds dataset_seeds(const std::string& work_dir) {
  datagen::DatagenOptions options;
  options.out_dir = work_dir + "/dataset";
  options.seed = 11;
  options.scale = "tiny";
  options.web_docs = 12;
  options.long_docs = 2;
  options.images = 8;
  options.indexed_docs = 24;
  options.vocab_size = 320;
  options.bad_samples = 4;
  options.force = true;
  options.threads = 1;
  const datagen::DatagenResult result = datagen::generate_dataset(options);
  DatasetSeeds seeds;
  for (const datagen::DatasetFile& file : result.files) {
    const fs::path path = fs::path(options.out_dir) / file.path;
    if (has_extension(file.path, ".jsonl")) seeds.jsonl.push_back({file_of(path)});
    if (has_extension(file.path, ".tar")) seeds.wds.push_back({file_of(path)});
    if (has_extension(file.path, ".tiktoken")) seeds.tiktoken.push_back({file_of(path)});
    if (has_extension(file.path, ".idx")) {
      seeds.indexed.push_back({file_of(path), file_of(fs::path(path).replace_extension(".bin"))});
    }
  }
  if (seeds.jsonl.empty() || seeds.wds.empty() || seeds.indexed.empty() || seeds.tiktoken.empty()) {
    throw Error("fuzz: the generated dataset lacks a format");
  }
  return seeds;
}

std::vector<Input> jpeg_seeds(const std::vector<Input>& wds_seeds) {
  std::vector<Input> seeds;
  for (const Input& shard : wds_seeds) {
    const Bytes& tar = shard[0].bytes;
    TarScanner scanner({reinterpret_cast<const unsigned char*>(tar.data()), tar.size()});
    TarMember member;
    while (scanner.next(member) && seeds.size() < 4) {
      if (!member.truncated && has_extension(member.name, ".jpg")) {
        seeds.push_back({{"image.jpg", tar.substr(member.data_offset, member.size_bytes)}});
      }
    }
  }
  // Small pictures decode fast: more inputs per second. Gray, 4:2:0, 4:4:4.
  datagen::JpegEncoder encoder;
  datagen::Rng rng(5);
  for (const datagen::PictureSpec spec : {datagen::PictureSpec{40, 30, false, false, 85},
                                          datagen::PictureSpec{17, 9, true, false, 70},
                                          datagen::PictureSpec{48, 48, false, true, 95}}) {
    const std::vector<unsigned char> jpeg = encoder.picture(rng, spec);
    seeds.push_back({{"image.jpg", Bytes(jpeg.begin(), jpeg.end())}});
  }
  return seeds;
}

std::vector<Input> ini_seeds(const std::string& source_dir) {
  std::vector<Input> seeds;
  for (const char* name : {"configs/demo.ini", "configs/bench-longctx.ini", "tests/data/config/full.ini"}) {
    seeds.push_back({{"job.ini", slurp(source_dir + "/" + name)}});
  }
  return seeds;
}

std::vector<Input> parquet_seeds(const std::string& source_dir) {
  std::vector<Input> seeds;
  std::vector<std::optional<std::string>> texts;
  for (int i = 0; i < 40; ++i)
    texts.push_back(i % 9 == 4 ? std::nullopt : std::optional<std::string>(str("row ", i % 7, " text ", i)));
  for (const auto codec : {ParquetCodec::uncompressed, ParquetCodec::snappy, ParquetCodec::gzip, ParquetCodec::zstd}) {
    const ParquetWriteOptions options{.codec = static_cast<int32_t>(codec),
                                      .dictionary = codec == ParquetCodec::snappy || codec == ParquetCodec::zstd,
                                      .row_group_rows = 16,
                                      .page_bytes = 64};
    seeds.push_back({{"rows.parquet", write_parquet({{"text", texts}}, options)}});
  }
  for (const char* name : {"dict_v1_snappy", "dict_v2_zstd", "plain_v2_gzip", "delta_v1_zstd", "delta_length_v2_snappy",
                           "repeats_v2_snappy", "required"})
    seeds.push_back({{"rows.parquet", slurp(source_dir + "/tests/data/parquet/" + name + ".parquet")}});
  return seeds;
}

std::vector<Input> checkpoint_seeds(const std::string& work_dir) {
  PlannerCheckpoint checkpoint;
  checkpoint.step = 7;
  checkpoint.seed = 5;
  checkpoint.config_ini = "[job]\nseed = 5\nsteps = 20\n";
  checkpoint.source_samples = {40, 25, 9};
  checkpoint.consumed = {31, 12, 4};
  checkpoint.mixer_realized = {30, 12, 5};
  checkpoint.bad_samples.assign(bad_kind_count, 0);
  checkpoint.bad_samples[1] = 2;
  for (uint64_t cursor = 31; cursor < 37; ++cursor) {
    checkpoint.in_flight.push_back({0, static_cast<SampleState>(cursor % 4), 1 + static_cast<int32_t>(cursor % 2),
                                    cursor, (cursor * 17) % 40});
  }
  std::vector<Input> seeds;
  const std::string path = planner_checkpoint_path(work_dir, checkpoint.step);
  write_planner_checkpoint_file(path, checkpoint);
  seeds.push_back({file_of(path)});
  checkpoint.in_flight.clear();  // a second shape: nothing in flight
  write_planner_checkpoint_file(path, checkpoint);
  seeds.push_back({file_of(path)});
  fs::remove(path);
  return seeds;
}

std::vector<Input> trace_seeds(const std::string& work_dir) {
  TraceHeader header{.config_ini = "[job]\nseed = 5\n", .seed = 5, .source_names = {"web", "images"},
                     .source_samples = {40, 25}, .dp = 2, .micro_batches = 2, .seq_len = 512, .data = {}};
  const std::string path = work_dir + "/trace.h5";
  {
    TraceWriter writer(path, header, 0, 2);
    for (uint64_t step = 0; step < 4; ++step) {
      StepRecord record;
      record.step = step;
      for (uint32_t i = 0; i < 3; ++i) {
        const uint64_t cursor = step * 3 + i;
        record.samples.push_back({i % 2, static_cast<uint8_t>(i == 2 ? 1 : 0), cursor, (cursor * 7) % 40,
                                  i == 2 ? 0u : 100 + i, i == 1 ? 16u : 0u});
      }
      record.pieces.push_back({0, 0, 0, 0, 0, 100, 1.5});
      record.pieces.push_back({1, 1, 0, 1, 0, 101, 2.5});
      writer.append_step(record);
    }
    writer.close();
  }
  std::vector<Input> seeds{{file_of(path)}};
  fs::remove(path);
  return seeds;
}

}  // namespace msd::fuzz
