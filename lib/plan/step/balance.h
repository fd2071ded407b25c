// balance(method): split weighted items into k bins so that the heaviest bin
// is as light as possible (multiway number partitioning). The planner uses it
// for sequences or pieces over DP buckets, then each bucket's sequences over
// its micro-batches, under a capacity of positions (balance_within,
// plan/step/pack.h). docs/cost-and-balance.md compares the
// methods. MPI-free; no state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "msd/options.h"  // BalanceMethod

namespace msd {


// "tokens", "greedy", "karmarkar_karp" (also "karmarkar-karp", "kk").
// Throws ConfigError naming `what` for anything else.
BalanceMethod parse_balance_method(const std::string& name, const std::string& what = "balance");

// Assigns items to `bins` bins and returns each item's bin.
//
// REQUIRES: bins >= 1; weights >= 0 and sorted descending (callers sort with a
// total order, ties broken by identity, so the result is deterministic and
// independent of how items arrived).
//
// tokens: plain LPT (pass positions as weights). greedy and karmarkar_karp
// then improve their partition by moves and swaps out of the heaviest bin
// against the 8 lightest (at most min(4 * bins, 2048) rounds, each lowering
// the heaviest bin or the number of bins at its load; O(log bins) a round to
// find those bins when there are more than 64), which makes coarse
// steps (few pieces per bin) reach the pigeonhole bound far more often.
//
// greedy: O(n log k). karmarkar_karp: each partial partition keeps only its
// non-empty bins in a min-heap and a merge touches only the smaller side's
// bins, so a run costs O(n log n log k) rather than the textbook O(n k log k):
// 100k items into 4096 bins take milliseconds.
//
// Bin numbering before the swaps: greedy fills bins in index order (ties:
// lower index); for karmarkar_karp bin 0 is the heaviest bin of the
// differencing result, then descending (ties: the bin holding the lower item
// index first), empty bins last.
std::vector<uint32_t> balance(std::span<const double> weights, uint32_t bins, BalanceMethod method);

// balance() under a capacity: no bin holds more than `capacity` of `sizes`
// (sizes[i] of item i, e.g. positions against the memory budget). LPT puts
// each item in the lightest bin with room (plain LPT when the capacity never
// binds), and the swaps make no move that overfills a bin; karmarkar_karp's
// partition is kept (and swapped within the capacity) when it fits. An item that fits in no bin goes to the bin with the
// most room, which the caller sees over capacity. Deterministic like
// balance(); REQUIRES the same, and sizes.size() == weights.size().
std::vector<uint32_t> balance_within(std::span<const double> weights, std::span<const uint64_t> sizes,
                                     uint64_t capacity, uint32_t bins, BalanceMethod method);

}  // namespace msd
