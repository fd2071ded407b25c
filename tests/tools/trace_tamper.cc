// Test helper: copies a plan trace with one deliberate change. Through the
// trace library (a consistent trace that msd-replay verify must find a
// divergence in), or below it (raw-*: one stored value changed in place,
// which verify must report as tampering).
//
// Usage: trace_tamper IN OUT STEP piece-length|sample-index|raw-source-samples|raw-sample-cursor|foreign
//   piece-length: the step's middle piece one position shorter
//   sample-index: the step's first sample's file-order index changed
//   raw-source-samples: the header's first source's sample count + 1
//   raw-sample-cursor: the stored cursor of the step's first sample + 1
//   foreign: OUT is an HDF5 file of another program (one dataset /x); IN
//            is not read
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/trace.h"
#include "common/error.h"
#include "tools/h5_poke.h"

namespace {

// The change below the library: copy, then one value poked in place.
void tamper_raw(const msd::TraceReader& in, const std::string& from, const std::string& to, uint64_t step,
                const std::string& what) {
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  if (what == "raw-source-samples") {
    msd::test::poke_dataset(to, "source_samples", 0, "");
    std::printf("header: source_samples[0] + 1\n");
    return;
  }
  uint64_t row = 0;  // the step's first row of /samples
  for (uint64_t s = in.first_step(); s < step; ++s) row += in.step(s).samples.size();
  msd::test::poke_dataset(to, "samples", row, "cursor");
  std::printf("step %llu: /samples row %llu cursor + 1\n", static_cast<unsigned long long>(step),
              static_cast<unsigned long long>(row));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: trace_tamper IN OUT STEP "
                         "piece-length|sample-index|raw-source-samples|raw-sample-cursor|foreign\n");
    return 2;
  }
  try {
    if (std::string(argv[4]) == "foreign") {
      msd::h5::File file = msd::h5::create_file(argv[2]);
      const std::vector<uint64_t> values = {1, 2, 3};
      msd::h5::write_array<uint64_t>(file.get(), "x", values);
      return 0;
    }
    const msd::TraceReader in(argv[1]);
    const uint64_t step = std::strtoull(argv[3], nullptr, 10);
    const std::string what = argv[4];
    if (step < in.first_step() || step >= in.end_step()) throw msd::Error("STEP is not in the trace");
    if (what.rfind("raw-", 0) == 0) {
      tamper_raw(in, argv[1], argv[2], step, what);
      return 0;
    }
    msd::TraceWriter out(argv[2], in.header(), 0);
    for (uint64_t s = in.first_step(); s < in.end_step(); ++s) {
      msd::StepRecord record = in.step(s);
      if (s == step) {
        if (what == "piece-length" && !record.pieces.empty()) {
          msd::TracePiece& piece = record.pieces[record.pieces.size() / 2];
          std::printf("step %llu: piece %zu of group %u, length %u -> %u\n", static_cast<unsigned long long>(s),
                      record.pieces.size() / 2, piece.group, piece.length, piece.length - 1);
          piece.length -= 1;
        } else if (what == "sample-index" && !record.samples.empty()) {
          record.samples[0].index += 1;
          std::printf("step %llu: sample 0 index -> %llu\n", static_cast<unsigned long long>(s),
                      static_cast<unsigned long long>(record.samples[0].index));
        } else {
          throw msd::Error("nothing to tamper with: " + what);
        }
      }
      out.append_step(record);
    }
    out.close();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_tamper: %s\n", e.what());
    return 1;
  }
}
