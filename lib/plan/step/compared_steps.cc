#include "plan/step/compared_steps.h"

#include <algorithm>
#include <deque>
#include <optional>

#include "common/error.h"

namespace msd {
namespace {

// Positions [begin, end) of the stream's document `index` still to place.
struct Pending {
  uint32_t index = 0;
  uint32_t begin = 0;
};

// Forms the steps one after another (compared_steps' contract).
class StepFormer {
 public:
  StepFormer(std::vector<PlanDoc> stream, const HoldOptions& hold, ComparedSteps& out)
      : stream_(std::move(stream)), hold_(hold), out_(out) {}

  void form(uint64_t step, uint64_t positions) {
    need_ = positions;
    std::vector<PlanDoc>& parts = out_.steps.emplace_back();
    std::vector<Pending> deferred;
    if (hold_.options().enabled()) release(step, hold_.step(step, {}).released);
    take_ready(parts, deferred);
    while (need_ > 0 && cursor_ < stream_.size()) {
      const uint32_t index = cursor_++;
      const PlanDoc& doc = stream_[index];
      if (!hold_.join(step, {0, index, doc.positions, doc.fixed, step})) take({index, 0}, parts, deferred, false);
    }
    while (need_ > 0 && !hold_.held().empty()) {  // the stream ran out while documents wait
      release(step, {hold_.release_oldest()});
      take_ready(parts, deferred);
    }
    for (size_t i = 0; i < deferred.size(); ++i) {
      if (need_ == 0) {
        ready_.insert(ready_.begin(), deferred.begin() + static_cast<std::ptrdiff_t>(i), deferred.end());
        break;
      }
      take(deferred[i], parts, deferred, true);  // nothing else is left: the patches are cut
    }
    MSD_CHECK_EQ(need_, uint64_t{0});
  }

  bool drained() const { return cursor_ == stream_.size() && ready_.empty() && hold_.held().empty(); }

 private:
  void release(uint64_t step, const std::vector<HeldDoc>& released) {
    for (const HeldDoc& doc : released) ready_.push_back({static_cast<uint32_t>(doc.cursor), 0});
    out_.hold.add(step, released);
  }

  void take_ready(std::vector<PlanDoc>& parts, std::vector<Pending>& deferred) {
    while (need_ > 0 && !ready_.empty()) {
      const Pending next = ready_.front();
      ready_.pop_front();
      take(next, parts, deferred, false);
    }
  }

  // Places what is left of a document, whole when it fits, else cut at the
  // step's edge (the rest first in the next step) or, when the edge would cut
  // its patches and `cut_patches` is false, deferred.
  void take(Pending p, std::vector<PlanDoc>& parts, std::vector<Pending>& deferred, bool cut_patches) {
    const PlanDoc& doc = stream_[p.index];
    const uint32_t left = doc.positions - p.begin;
    const uint32_t patches = doc.fixed > p.begin ? doc.fixed - p.begin : 0;
    if (left <= need_) {
      emit(parts, p, left, patches);
      need_ -= left;
      return;
    }
    if (patches > need_ && !cut_patches) {
      deferred.push_back(p);
      return;
    }
    const uint32_t head = static_cast<uint32_t>(need_);
    emit(parts, p, head, std::min(patches, head));
    ready_.push_front({p.index, p.begin + head});
    need_ = 0;
  }

  void emit(std::vector<PlanDoc>& parts, Pending p, uint32_t length, uint32_t patches) {
    PlanDoc part = stream_[p.index];  // its cost stays the whole document's (informational)
    part.id = checked_cast<uint32_t>(out_.origins.size());
    part.positions = length;
    part.fixed = patches;
    parts.push_back(part);
    out_.origins.push_back({stream_[p.index].id, p.begin});
  }

  std::vector<PlanDoc> stream_;
  OutlierHold hold_;
  ComparedSteps& out_;
  std::deque<Pending> ready_;  // left by earlier steps, and released, in the order the next steps take them
  uint32_t cursor_ = 0;        // the stream's next document
  uint64_t need_ = 0;          // positions the step still takes
};

}  // namespace

ComparedSteps compared_steps(const std::vector<std::vector<PlanDoc>>& steps, uint64_t step_positions,
                             HoldOptions hold) {
  MSD_CHECK_LT(uint64_t{0}, step_positions);
  std::vector<PlanDoc> stream;
  uint64_t total = 0;
  for (const std::vector<PlanDoc>& step : steps)
    for (const PlanDoc& doc : step) {
      stream.push_back(doc);
      total += doc.positions;
    }
  MSD_CHECK_EQ(total % step_positions, uint64_t{0});
  const uint64_t count = total / step_positions;
  if (count > 0) hold.last_step = std::min<uint64_t>(hold.last_step, count - 1);
  ComparedSteps out;
  StepFormer former(std::move(stream), hold, out);
  for (uint64_t t = 0; t < count; ++t) former.form(t, step_positions);
  MSD_CHECK(former.drained());
  return out;
}

void restore_pieces(std::vector<Piece>& pieces, const std::vector<PartOrigin>& origins) {
  for (Piece& p : pieces) {
    const PartOrigin& origin = origins.at(p.doc);
    p.doc = origin.doc;
    p.begin += origin.begin;
  }
}

void restore_pieces(std::vector<BucketPlan>& buckets, const std::vector<PartOrigin>& origins) {
  for (BucketPlan& bucket : buckets)
    for (MicroBatchPlan& mb : bucket.micro_batches)
      for (PackedSequence& sequence : mb.sequences) restore_pieces(sequence.pieces, origins);
}

}  // namespace msd
