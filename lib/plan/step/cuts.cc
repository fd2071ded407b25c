#include "plan/step/cuts.h"

#include <algorithm>

#include "common/error.h"

namespace msd {

uint64_t megatron_piece_count(const std::vector<PlanDoc>& docs, uint32_t seq_len, LongDocs long_docs) {
  std::vector<const PlanDoc*> order(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) order[i] = &docs[i];
  std::sort(order.begin(), order.end(), [](const PlanDoc* x, const PlanDoc* y) { return x->id < y->id; });
  uint64_t pieces = 0;
  uint64_t room = 0;  // positions left in the current row (0: none open)
  for (const PlanDoc* doc : order) {
    if (doc->fixed > 0) {
      const uint32_t length = std::min(doc->positions, seq_len);
      if (room < length) room = seq_len;  // a new row; the rest of the old one is padding
      room -= length;
      ++pieces;
      continue;
    }
    uint64_t left = long_docs == LongDocs::truncate ? std::min(doc->positions, seq_len) : doc->positions;
    while (left > 0) {
      if (room == 0) room = seq_len;
      const uint64_t length = std::min(room, left);
      room -= length;
      left -= length;
      ++pieces;
    }
  }
  return pieces;
}

}  // namespace msd
