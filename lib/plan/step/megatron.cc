#include "plan/step/megatron.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "common/digest.h"
#include "common/error.h"

namespace msd {

std::vector<uint32_t> seeded_permutation(uint64_t key, uint32_t n) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  uint64_t rng = key;
  for (size_t i = order.size(); i > 1; --i) {
    rng = mix64(rng + 0x9e3779b97f4a7c15ULL);
    std::swap(order[i - 1], order[rng % i]);
  }
  return order;
}

std::vector<uint32_t> gpt_document_order(uint64_t seed, uint32_t n) {
  return seeded_permutation(mix64(seed ^ 0xd0c5d0c5d0c5ULL), n);
}

std::vector<uint32_t> gpt_sample_order(uint64_t seed, uint32_t n) {
  return seeded_permutation(mix64(seed ^ 0x5a3b1e5a3b1eULL), n);
}

std::vector<PackedSequence> gpt_samples(const std::vector<PlanDoc>& docs, uint32_t seq_len) {
  MSD_CHECK_LT(0u, seq_len);
  uint64_t total = 0;
  for (const PlanDoc& doc : docs) total += doc.positions;
  const uint64_t count = total / seq_len;
  std::vector<PackedSequence> samples(count);
  uint64_t at = 0;  // stream position of the next document
  for (const PlanDoc& doc : docs) {
    for (uint32_t begin = 0; begin < doc.positions;) {
      const uint64_t sample = (at + begin) / seq_len;
      if (sample >= count) return samples;  // the last partial sample
      const uint32_t room = seq_len - samples[sample].used;
      const uint32_t length = std::min(room, doc.positions - begin);
      samples[sample].pieces.push_back({doc.id, begin, length});
      samples[sample].used += length;
      begin += length;
    }
    at += doc.positions;
  }
  return samples;
}

std::vector<std::vector<BucketPlan>> deal_gpt_samples(const std::vector<PackedSequence>& samples,
                                                      const std::vector<uint32_t>& order, uint32_t micro_batch_size,
                                                      uint32_t micro_batches, uint32_t dp) {
  MSD_CHECK_EQ(samples.size(), order.size());
  MSD_CHECK(micro_batch_size > 0 && micro_batches > 0 && dp > 0);
  const size_t block = size_t{micro_batch_size} * dp;
  const size_t global = block * micro_batches;
  std::vector<std::vector<BucketPlan>> steps(samples.size() / global);
  for (auto& step : steps) {
    step.resize(dp);
    for (BucketPlan& bucket : step) bucket.micro_batches.resize(micro_batches);
  }
  for (size_t k = 0; k < steps.size() * global; ++k) {
    const size_t b = k / block;  // the sampler's batch (one micro-batch per rank)
    const uint32_t rank = static_cast<uint32_t>((k % block) / micro_batch_size);
    steps[b / micro_batches][rank].micro_batches[b % micro_batches].sequences.push_back(samples[order[k]]);
  }
  return steps;
}

std::vector<Piece> step_pieces(const std::vector<PlanDoc>& docs, uint32_t seq_len) {
  std::vector<Piece> pieces;
  for (const PlanDoc& doc : docs) {
    MSD_CHECK_LE(doc.fixed, seq_len);
    const uint32_t length = doc.fixed > 0 ? std::min(doc.positions, seq_len) : doc.positions;
    for (uint32_t begin = 0; begin < length; begin += seq_len)
      pieces.push_back({doc.id, begin, std::min(seq_len, length - begin)});
  }
  return pieces;
}

std::vector<BucketPlan> dp_balanced_step(const std::vector<PlanDoc>& docs, uint32_t seq_len, uint32_t dp) {
  MSD_CHECK_LT(0u, dp);
  std::vector<PackedSequence> packs;
  for (const Piece& piece : step_pieces(docs, seq_len)) {
    if (packs.empty() || packs.back().used + piece.length > seq_len) packs.emplace_back();
    packs.back().pieces.push_back(piece);
    packs.back().used += piece.length;
  }
  if (packs.size() % dp != 0) {
    size_t to_move = dp - packs.size() % dp;
    for (size_t i = packs.size() - 1; to_move > 0 && i > 0;) {
      if (packs[i].pieces.size() > 1) {
        const Piece piece = packs[i].pieces.back();
        packs[i].pieces.pop_back();
        packs[i].used -= piece.length;
        packs.push_back({{piece}, piece.length});
        --to_move;
      } else {
        --i;
      }
    }
    packs.resize(packs.size() + to_move);  // where Megatron stops: empty micro-batches
  }
  std::vector<BucketPlan> buckets(dp);
  for (size_t i = 0; i < packs.size(); ++i) {
    MicroBatchPlan& mb = buckets[i % dp].micro_batches.emplace_back();
    if (!packs[i].pieces.empty()) mb.sequences.push_back(std::move(packs[i]));
  }
  return buckets;
}

uint32_t cp_ranks_needed(uint64_t length, uint64_t max_per_rank) {
  MSD_CHECK_LT(uint64_t{0}, max_per_rank);
  uint32_t ranks = 1;
  while (uint64_t{ranks} * max_per_rank < length) ranks *= 2;
  return ranks;
}

namespace {

// One call of BalancedCPScheduler's group forming (its next_hdp_group) over
// samples (indices into the step's pieces, with their lengths), as a group
// of teams plus the samples it leaves for later groups.
class GroupFormer {
 public:
  GroupFormer(const std::vector<Piece>& pieces, uint32_t ranks, uint64_t max_per_rank)
      : pieces_(pieces), total_(ranks), max_per_rank_(max_per_rank) {}

  // Forms one group from `samples` (in their order); returns the samples left.
  std::vector<uint32_t> form(const std::vector<uint32_t>& samples, CpGroup& group) {
    reset();
    std::vector<std::vector<uint32_t>> buckets = equal_work_buckets(samples);
    std::vector<size_t> head(buckets.size(), 0);
    size_t first_bucket = 0;
    uint32_t first_needed = 0;
    bool check_balance = false;
    while (first_bucket < buckets.size()) {
      size_t pick = buckets.size();
      for (size_t b = first_bucket; b < buckets.size() && pick == buckets.size(); ++b)
        if (head[b] < buckets[b].size() && fits(needed(buckets[b][head[b]]))) pick = b;
      if (pick == buckets.size()) break;  // nothing left can be placed in this group
      const uint32_t sample = buckets[pick][head[pick]++];
      const uint32_t need = needed(sample);
      if (first_needed == 0) first_needed = need;
      assign(sample, need);
      while (first_bucket < buckets.size() && head[first_bucket] == buckets[first_bucket].size()) ++first_bucket;
      if (need < first_needed) check_balance = true;
      if (check_balance && first_bucket < buckets.size() && spread() <= kSlack * max_load()) break;
    }
    std::vector<uint32_t> left;
    for (size_t b = first_bucket; b < buckets.size(); ++b)
      left.insert(left.end(), buckets[b].begin() + static_cast<std::ptrdiff_t>(head[b]), buckets[b].end());
    trim_overload(left);
    while (std::find(team_of_.begin(), team_of_.end(), kNone) != team_of_.end()) widen_smallest_team();
    for (const Team& team : teams_) {
      CpTeam& out = group.emplace_back();
      out.first_rank = team.first;
      out.ranks = team.ranks;
      for (uint32_t sample : team.samples) out.samples.push_back(pieces_[sample]);
    }
    std::sort(group.begin(), group.end(), [](const CpTeam& a, const CpTeam& b) { return a.first_rank < b.first_rank; });
    return left;
  }

 private:
  static constexpr double kSlack = 0.05;  // BalancedCPScheduler's delta
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  struct Team {
    uint32_t first = 0, ranks = 0;
    std::vector<uint32_t> samples;
    double load = 0.0;  // every member's
  };

  uint32_t needed(uint32_t sample) const { return cp_ranks_needed(pieces_[sample].length, max_per_rank_); }
  double work(uint32_t sample) const {
    const double length = pieces_[sample].length;
    return length * length / needed(sample);
  }
  void reset() {
    teams_.clear();
    team_of_.assign(total_, kNone);
    free_from_ = 0;
  }
  // Ranks are taken lowest first and never given back within a group, so
  // the free ones are [free_from_, total_).
  uint32_t free_ranks() const { return total_ - free_from_; }
  bool fits(uint32_t need) const {
    if (free_ranks() >= need) return true;
    return std::any_of(teams_.begin(), teams_.end(), [&](const Team& t) { return t.ranks == need; });
  }
  double max_load() const {
    double m = 0.0;
    for (const Team& t : teams_) m = std::max(m, t.load);
    return m;
  }
  double min_load() const { return free_ranks() > 0 || teams_.empty() ? 0.0 : min_team_load(); }
  double min_team_load() const {
    double m = std::numeric_limits<double>::infinity();
    for (const Team& t : teams_) m = std::min(m, t.load);
    return m;
  }
  double spread() const { return max_load() - min_load(); }

  // Consecutive runs of the samples, as many as there are distinct CP sizes,
  // each closed once it would pass 1.1 x the equal share of the work, or to
  // keep samples for the buckets still to come.
  std::vector<std::vector<uint32_t>> equal_work_buckets(const std::vector<uint32_t>& samples) const {
    std::vector<uint32_t> sizes;
    double total_work = 0.0;
    for (uint32_t s : samples) {
      sizes.push_back(needed(s));
      total_work += work(s);
    }
    std::sort(sizes.begin(), sizes.end());
    const int64_t kinds = std::unique(sizes.begin(), sizes.end()) - sizes.begin();
    const double target = total_work / static_cast<double>(kinds);
    std::vector<std::vector<uint32_t>> buckets;
    std::vector<uint32_t> current;
    double current_work = 0.0;
    int64_t remaining_kinds = kinds;
    for (size_t i = 0; i < samples.size(); ++i) {
      const double w = work(samples[i]);
      const int64_t left = static_cast<int64_t>(samples.size() - i);
      // As BalancedCPScheduler counts it: the kinds still to fill less the buckets made.
      if (!current.empty() && (current_work + w > 1.1 * target ||
                               left <= remaining_kinds - static_cast<int64_t>(buckets.size()))) {
        buckets.push_back(std::move(current));
        current.clear();
        current_work = 0.0;
        --remaining_kinds;
      }
      current.push_back(samples[i]);
      current_work += w;
    }
    if (!current.empty()) buckets.push_back(std::move(current));
    return buckets;
  }

  // A new team of the lowest free ranks while enough are free (a free rank
  // has no load, less than any team's), else the least-loaded team of this
  // CP size (the first on ties).
  void assign(uint32_t sample, uint32_t need) {
    Team* team = nullptr;
    if (free_ranks() >= need) {
      team = &teams_.emplace_back();
      team->first = free_from_;
      team->ranks = need;
      for (uint32_t r = free_from_; r < free_from_ + need; ++r) team_of_[r] = static_cast<uint32_t>(teams_.size() - 1);
      free_from_ += need;
    } else {
      for (Team& t : teams_)
        if (t.ranks == need && (team == nullptr || t.load < team->load)) team = &t;
    }
    MSD_CHECK(team != nullptr);
    team->samples.push_back(sample);
    team->load += work(sample);
  }

  // While the spread is over the slack and no rank is idle, the most-loaded
  // team (of the first most-loaded rank) gives back its last sample if that
  // narrows the spread and it keeps one.
  void trim_overload(std::vector<uint32_t>& left) {
    while (!teams_.empty() && free_ranks() == 0) {
      const double top = max_load(), spread_now = top - min_team_load();
      if (spread_now <= kSlack * top) return;
      Team* heaviest = nullptr;
      for (uint32_t r = 0; r < total_ && heaviest == nullptr; ++r)
        if (teams_[team_of_[r]].load == top) heaviest = &teams_[team_of_[r]];
      if (heaviest->samples.size() <= 1) return;
      const uint32_t last = heaviest->samples.back();
      const double lighter = heaviest->load - work(last);
      double high = lighter, low = lighter;
      for (const Team& t : teams_)
        if (&t != heaviest) high = std::max(high, t.load), low = std::min(low, t.load);
      if (high - low >= spread_now) return;
      heaviest->load = lighter;
      heaviest->samples.pop_back();
      left.push_back(last);
    }
  }

  // The first team of the smallest CP size takes twice the ranks (the whole
  // domain at most), the teams after it moving up by what it took.
  void widen_smallest_team() {
    uint32_t smallest = total_;
    for (const Team& t : teams_) smallest = std::min(smallest, t.ranks);
    const uint32_t grown = std::min(2 * smallest, total_), extra = grown - smallest;
    MSD_CHECK_LE(extra, free_ranks());  // dp x cp is a power of two
    size_t widened = 0;
    while (teams_[widened].ranks != smallest) ++widened;
    teams_[widened].ranks = grown;
    for (size_t t = widened + 1; t < teams_.size(); ++t) teams_[t].first += extra;
    free_from_ += extra;
    team_of_.assign(total_, kNone);
    for (size_t t = 0; t < teams_.size(); ++t)
      for (uint32_t r = teams_[t].first; r < teams_[t].first + teams_[t].ranks; ++r)
        team_of_[r] = static_cast<uint32_t>(t);
  }

  const std::vector<Piece>& pieces_;
  uint32_t total_;
  uint64_t max_per_rank_;
  std::vector<Team> teams_;
  std::vector<uint32_t> team_of_;  // per rank: its team, kNone when free
  uint32_t free_from_ = 0;
};

}  // namespace

std::vector<CpGroup> dynamic_cp_step(const std::vector<PlanDoc>& docs, uint32_t seq_len, uint32_t dp, uint32_t cp) {
  const uint32_t ranks = dp * cp;
  MSD_CHECK(ranks > 0 && (ranks & (ranks - 1)) == 0);
  MSD_CHECK_EQ(seq_len % cp, 0u);
  const std::vector<Piece> pieces = step_pieces(docs, seq_len);
  std::vector<uint32_t> samples(pieces.size());
  std::iota(samples.begin(), samples.end(), 0u);
  std::stable_sort(samples.begin(), samples.end(),
                   [&](uint32_t a, uint32_t b) { return pieces[a].length > pieces[b].length; });
  GroupFormer former(pieces, ranks, seq_len / cp);
  std::vector<CpGroup> groups;
  while (!samples.empty()) {
    const size_t before = samples.size();
    samples = former.form(samples, groups.emplace_back());
    MSD_CHECK_LT(samples.size(), before);  // every group places at least its first sample
  }
  return groups;
}

}  // namespace msd
