#include "construct/batch_builder.h"

#include <algorithm>
#include <span>

#include "common/digest.h"
#include "common/error.h"
#include "transport/slot.h"

namespace msd {

uint64_t MicroBatch::tokens_used() const {
  uint64_t used = 0;
  for (const auto& doc : docs) used += doc.length;
  return used;
}

BuildStats build_batch(const StepPlan& plan, ByteFetcher& fetcher, const BuildOptions& options, Batch& out) {
  BuildStats stats;
  const uint32_t seq_len = plan.seq_len;
  out.step = plan.step;
  out.micro_batches.resize(plan.micro_batches.size());
  // First pass: size every array and queue every read (the reads land in
  // place, so nothing may be resized after this pass).
  for (size_t m = 0; m < plan.micro_batches.size(); ++m) {
    const auto& wire = plan.micro_batches[m];
    MicroBatch& mb = out.micro_batches[m];
    const size_t n = wire.sequences.size();
    mb.sequences = static_cast<uint32_t>(n);
    mb.seq_len = seq_len;
    mb.tokens.assign(n * seq_len, kPadTokenId);
    mb.labels.assign(n * seq_len, kIgnoreLabel);
    mb.positions.assign(n * seq_len, 0);
    mb.loss_mask.assign(n * seq_len, 0);
    mb.cu_seqlens.assign(1, 0);
    mb.patch_positions.clear();
    mb.docs.clear();
    mb.patch_bytes = 0;
    uint64_t patch_total = 0;
    for (size_t q = 0; q < n; ++q) {
      for (const auto& piece : wire.sequences[q].pieces) {
        const SampleMeta& s = plan.samples[piece.sample];
        const uint32_t lo = piece.begin;
        const uint32_t hi = piece.begin + piece.length;
        if (hi > s.positions() || piece.length == 0)
          throw ProtocolError(str("step ", plan.step, ": piece [", lo, ", ", hi, ") of a sample with ",
                                  s.positions(), " positions"));
        if (lo < s.patches) {
          if (mb.patch_bytes != 0 && mb.patch_bytes != s.patch_bytes)
            throw ProtocolError(str("step ", plan.step, ": samples with different patch sizes in one micro-batch"));
          mb.patch_bytes = s.patch_bytes;
          patch_total += std::min(hi, s.patches) - lo;
        }
      }
    }
    mb.patches.resize(patch_total * mb.patch_bytes);
    uint64_t patch_cursor = 0;
    for (size_t q = 0; q < n; ++q) {
      uint32_t offset = 0;
      for (const auto& piece : wire.sequences[q].pieces) {
        const SampleMeta& s = plan.samples[piece.sample];
        const uint32_t lo = piece.begin;
        const uint32_t hi = piece.begin + piece.length;
        if (offset + piece.length > seq_len)
          throw ProtocolError(str("step ", plan.step, ": sequence ", q, " overflows seq_len ", seq_len));
        const size_t base = q * seq_len + offset;
        // Image part: positions [lo, min(hi, patches)).
        const uint32_t patch_hi = std::min(hi, s.patches);
        if (lo < patch_hi) {
          const uint64_t count = patch_hi - lo;
          const uint64_t bytes = count * s.patch_bytes;
          fetcher.get(s.loader_rank, s.slot_offset + SlotLayout::patches_offset(s.text_tokens) + uint64_t{lo} * s.patch_bytes,
                      mb.patches.data() + patch_cursor * mb.patch_bytes, bytes);
          stats.bytes_fetched += bytes;
          stats.gets++;
          for (uint64_t k = 0; k < count; ++k) mb.patch_positions.push_back(static_cast<int32_t>(base + k));
          patch_cursor += count;
        }
        // Text part: positions [max(lo, patches), hi) are tokens [.. - patches).
        const uint32_t text_lo = std::max(lo, s.patches);
        if (text_lo < hi) {
          const uint64_t bytes = uint64_t{hi - text_lo} * sizeof(int32_t);
          fetcher.get(s.loader_rank,
                      s.slot_offset + SlotLayout::tokens_offset() + uint64_t{text_lo - s.patches} * sizeof(int32_t),
                      mb.tokens.data() + base + (text_lo - lo), bytes);
          stats.bytes_fetched += bytes;
          stats.gets++;
        }
        mb.docs.push_back({s.source, s.index, lo, piece.length, static_cast<uint32_t>(q), offset,
                           patch_hi > lo ? patch_hi - lo : 0});
        offset += piece.length;
      }
    }
  }
  fetcher.complete();
  // Second pass: fields derived from the layout.
  for (MicroBatch& mb : out.micro_batches) {
    uint32_t current_sequence = 0;
    uint32_t end_of_sequence = 0;  // offset of the first padding position
    auto close_sequence = [&](uint32_t q) {
      if (end_of_sequence < seq_len) mb.cu_seqlens.push_back(static_cast<int32_t>(uint64_t{q} * seq_len + seq_len));
    };
    for (const DocSpan& doc : mb.docs) {
      while (current_sequence < doc.sequence) {
        close_sequence(current_sequence);
        ++current_sequence;
        end_of_sequence = 0;
      }
      const size_t base = size_t{doc.sequence} * seq_len + doc.offset;
      for (uint32_t i = 0; i < doc.length; ++i) mb.positions[base + i] = static_cast<int32_t>(i);
      for (uint32_t i = 0; i < doc.patches; ++i) mb.tokens[base + i] = options.image_token_id;
      // A label is the next token of the same piece; patches have none, nor
      // does the last patch predict the first text token.
      for (uint32_t i = doc.patches; i + 1 < doc.length; ++i) {
        mb.labels[base + i] = mb.tokens[base + i + 1];
        mb.loss_mask[base + i] = 1;
      }
      end_of_sequence = doc.offset + doc.length;
      mb.cu_seqlens.push_back(static_cast<int32_t>(base + doc.length));
    }
    for (; current_sequence < mb.sequences; ++current_sequence) {
      close_sequence(current_sequence);
      end_of_sequence = 0;
    }
  }
  out.digest = batch_digest(out);
  return stats;
}

uint64_t batch_digest(const Batch& batch) {
  Digest digest;
  digest.update_u64(batch.step);
  for (const MicroBatch& mb : batch.micro_batches) {
    digest.update_u64(mb.sequences);
    digest.update_u64(mb.seq_len);
    digest.update(std::span<const int32_t>(mb.tokens));
    digest.update(std::span<const int32_t>(mb.labels));
    digest.update(std::span<const int32_t>(mb.positions));
    digest.update(std::span<const uint8_t>(mb.loss_mask));
    digest.update(std::span<const int32_t>(mb.cu_seqlens));
    digest.update(std::span<const int32_t>(mb.patch_positions));
    digest.update(std::span<const uint8_t>(mb.patches));
  }
  return digest.value();
}

}  // namespace msd
