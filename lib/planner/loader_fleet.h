// The planner's view of its loader ranks: the requests each has not
// answered, when it was last heard from, which loaders serve which source,
// and failover. A loader silent past loader.deadline_ms with requests
// pending, or one whose storage fails, is handed over to a free shadow
// (docs/fault-tolerance.md); with none left the job fails fast. Sends load
// requests through the planner's AsyncSender; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/checkpoint_round.h"
#include "runtime/context.h"
#include "planner/cursor_ring.h"
#include "runtime/report.h"
#include "transport/mpi.h"

namespace msd {

class LoaderFleet {
 public:
  struct Track {
    PendingRequests outstanding;
    std::chrono::steady_clock::time_point last_heard;  // last metadata, or when it went busy
    bool shadow = false;
    bool failed = false;  // handed over: gets no new requests
    bool in_use = true;   // shadows: taken over a loader
    // Online scaling: moving from one source to another; it gets no new
    // requests for `from`, and is told to switch once it answered them all.
    struct Move {
      uint32_t from = 0, to = 0;
    };
    std::optional<Move> move;
  };

  // Every loader rank of the layout, the active ones serving the sources
  // job.assignment gives them.
  LoaderFleet(const JobContext& job, AsyncSender& out, size_t sources);

  Track& track(int rank) { return tracks_.at(rank); }
  const Track& track(int rank) const { return tracks_.at(rank); }
  std::map<int, Track>& tracks() { return tracks_; }  // by world rank
  const std::map<int, Track>& tracks() const { return tracks_; }
  // The loader ranks serving `source`, in the order its requests are spread.
  std::vector<int>& serving(uint32_t source) { return serving_.at(source); }
  const std::vector<std::vector<int>>& serving() const { return serving_; }

  // Sends `rank` these load requests and records them as outstanding.
  void send_loads(int rank, const std::vector<LoadItem>& items);
  // Hands `rank`'s sources and unanswered requests to a free shadow; throws
  // Error naming the loader and `why` when no shadow is left.
  void take_over(int rank, const std::string& why, uint64_t step);
  // Takes over every loader silent past loader.deadline_ms with requests
  // pending, unless it is writing its part of the open loader checkpoint.
  void check_deadlines(uint64_t step, const CheckpointRound& round);

  unsigned threads_of(int rank) const;  // as LoaderRole chose them
  std::vector<uint32_t> sources_of(int rank) const;
  // Per loader index, its sources; a moving loader at its target.
  std::vector<std::vector<uint32_t>> assignment() const;
  size_t pending(uint32_t source) const;  // requests of `source` not yet answered
  const std::vector<Takeover>& takeovers() const { return takeovers_; }

 private:
  const JobContext& job_;
  AsyncSender& out_;
  std::map<int, Track> tracks_;
  std::vector<std::vector<int>> serving_;  // per source
  std::vector<Takeover> takeovers_;
};

}  // namespace msd
