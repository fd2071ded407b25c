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

namespace msd::packing {

std::vector<PlacedPiece> cut_evenly(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                    const CostModel& cost) {
  const uint32_t seq_len = options.seq_len;
  std::vector<PlacedPiece> pieces;
  pieces.reserve(docs.size());
  for (const PlanDoc& doc : docs) {
    MSD_CHECK_LT(0u, doc.positions);
    MSD_CHECK_LE(doc.fixed, doc.positions);
    MSD_CHECK_LE(doc.fixed, seq_len);
    if (doc.fixed > 0 || doc.positions <= seq_len || options.long_docs == LongDocs::truncate) {
      const uint32_t kept = std::min(doc.positions, seq_len);
      const uint32_t patches = std::min(doc.fixed, kept);
      pieces.push_back({Piece{doc.id, 0, kept}, patches, cost.document(kept, patches)});
      continue;
    }
    const uint32_t count = (doc.positions + seq_len - 1) / seq_len;
    const uint32_t base = doc.positions / count, longer = doc.positions % count;
    uint32_t begin = 0;
    for (uint32_t k = 0; k < count; ++k) {
      const uint32_t length = base + (k < longer ? 1 : 0);
      pieces.push_back({Piece{doc.id, begin, length}, 0, cost.document(length, 0)});
      begin += length;
    }
  }
  return pieces;
}

}  // namespace msd::packing
