// Test helper: copies a plan trace with one deliberate change, through the
// trace library, so that msd-replay verify has a divergence to find.
//
// Usage: trace_tamper IN OUT STEP piece-length|sample-index
//   piece-length: the step's middle piece one position shorter
//   sample-index: the step's first sample's file-order index changed
#include <cstdio>
#include <cstdlib>
#include <string>

#include "checkpoint/trace.h"
#include "common/error.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: trace_tamper IN OUT STEP piece-length|sample-index\n");
    return 2;
  }
  try {
    const msd::TraceReader in(argv[1]);
    const uint64_t step = std::strtoull(argv[3], nullptr, 10);
    const std::string what = argv[4];
    if (step < in.first_step() || step >= in.end_step()) throw msd::Error("STEP is not in the trace");
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
