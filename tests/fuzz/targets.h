// The fuzz targets: one per input format msd parses, each with valid seed
// inputs (written by the project's own generators and writers) and a runner
// that feeds an input to the real reader through its public entry points and
// checks the reader's contract on what it accepts.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz/mutator.h"
#include "transform/image/image.h"

namespace msd::fuzz {

// A reader broke its contract on an input (not a rejection: a rejection is an
// msd::Error). Deliberately not an msd::Error.
class Violation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// One file of an input; most formats have one, indexed has the .idx/.bin pair.
struct InputFile {
  std::string name;  // file name the runner sees
  Bytes bytes;
};
using Input = std::vector<InputFile>;

// State runners reuse across inputs, as a loader reuses it across samples.
struct RunContext {
  std::string cache_dir;  // index caches (emptied after every input)
  ImageTransform image{ImageOptions{64, 16}};
  uint64_t bad_samples = 0;  // bad records (and undecodable images) seen in accepted inputs
};

struct Target {
  std::string name;
  std::vector<Input> seeds;
  // Which file of an input mutations go to, when it has several: index into
  // Input, chosen with probability 3/4 (else any file).
  size_t main_file = 0;
  // Runs the reader on the files at `paths` (parallel to the input's files).
  // Returns normally when the input was accepted (bad samples included),
  // throws msd::Error when it was rejected, Violation when a contract broke.
  void (*run)(const std::vector<std::string>& paths, RunContext& context) = nullptr;
  // Optional: repairs what guards the format against damage (tar header
  // checksums) so that mutations reach the parsing behind it; applied to half
  // of the mutated inputs.
  void (*repair)(Bytes& bytes) = nullptr;
  // Whether a rejection's message must name the input file (every format but
  // the INI file, whose errors name the option instead).
  bool message_names_file = true;
};

// Seeds (seeds.cc). The dataset's come from msd-datagen's generator at a
// small size, written under `work_dir`.
struct DatasetSeeds {
  std::vector<Input> jsonl, wds, indexed, tiktoken;
};
DatasetSeeds dataset_seeds(const std::string& work_dir);
std::vector<Input> jpeg_seeds(const std::vector<Input>& wds_seeds);  // members of the shards, plus small pictures
std::vector<Input> ini_seeds(const std::string& source_dir);         // configs/*.ini, tests/data/config
// msd's writer in each codec, plain and dictionary, and parquet-wasm's files
// of tests/data/parquet (each encoding and page version).
std::vector<Input> parquet_seeds(const std::string& source_dir);
std::vector<Input> checkpoint_seeds(const std::string& work_dir);    // planner checkpoints
std::vector<Input> trace_seeds(const std::string& work_dir);         // plan traces
Bytes slurp(const std::string& path);

// Recomputes the checksum of every 512-byte block that carries the ustar
// magic, so that a mutated header passes it.
void repair_tar_checksums(Bytes& bytes);

// Builds every target's seeds under `work_dir`. `source_dir` is the project's
// source tree (configs/ and tests/data/).
std::vector<Target> make_targets(const std::string& work_dir, const std::string& source_dir);

}  // namespace msd::fuzz
