#include "plan/step/baseline.h"

#include <algorithm>

#include "common/error.h"

namespace msd {

MicroBatchPlan pack_next_fit(const std::vector<PlanDoc>& docs, uint32_t seq_len, LongDocs long_docs) {
  MicroBatchPlan out;
  auto place = [&](uint32_t doc, uint32_t begin, uint32_t length) {
    if (out.sequences.empty() || out.sequences.back().used + length > seq_len) out.sequences.emplace_back();
    out.sequences.back().pieces.push_back({doc, begin, length});
    out.sequences.back().used += length;
  };
  for (const PlanDoc& doc : docs) {
    MSD_CHECK_LE(doc.fixed, seq_len);
    if (doc.positions <= seq_len) {
      place(doc.id, 0, doc.positions);
    } else if (doc.fixed > 0 || long_docs == LongDocs::truncate) {
      place(doc.id, 0, seq_len);  // patches and the text that fits
    } else {
      for (uint32_t begin = 0; begin < doc.positions; begin += seq_len)
        place(doc.id, begin, std::min(seq_len, doc.positions - begin));
    }
  }
  return out;
}

std::vector<MicroBatchPlan> baseline_micro_batches(const std::vector<PlanDoc>& docs, uint32_t micro_batches,
                                                   uint32_t seq_len, LongDocs long_docs) {
  MSD_CHECK(micro_batches > 0);
  std::vector<MicroBatchPlan> out;
  const size_t n = docs.size();
  size_t start = 0;
  for (uint32_t m = 0; m < micro_batches; ++m) {
    const size_t count = n / micro_batches + (m < n % micro_batches ? 1 : 0);
    std::vector<PlanDoc> run(docs.begin() + static_cast<std::ptrdiff_t>(start),
                             docs.begin() + static_cast<std::ptrdiff_t>(start + count));
    out.push_back(pack_next_fit(run, seq_len, long_docs));
    start += count;
  }
  return out;
}

}  // namespace msd
