#include "loader/index_sharing.h"

#include <algorithm>

#include "common/log.h"

namespace msd {

std::optional<FileShare> file_share(const SourceAssignment& assignment, uint32_t source, int loader) {
  if (source >= assignment.loaders_of_source.size()) return std::nullopt;
  const std::vector<int>& serving = assignment.loaders_of_source[source];
  const auto it = std::find(serving.begin(), serving.end(), loader);
  if (it == serving.end()) return std::nullopt;
  return FileShare{static_cast<size_t>(it - serving.begin()), serving.size()};
}

namespace {
// Whether loader `loader` (not a shadow) shares any of its sources.
bool shares_a_source(const JobContext& job, int loader) {
  const auto& mine = job.assignment.sources_of_loader;
  if (static_cast<size_t>(loader) >= mine.size()) return false;
  return std::ranges::any_of(mine[static_cast<size_t>(loader)],
                             [&](uint32_t s) { return job.assignment.loaders_of_source[s].size() > 1; });
}
}  // namespace

std::set<int> index_peers(const JobContext& job, int loader) {
  std::set<int> peers;
  const RoleLayout& layout = job.layout;
  if (layout.is_shadow(loader)) {
    for (int other = 0; other < layout.loaders; ++other)
      if (shares_a_source(job, other)) peers.insert(other);
    return peers;
  }
  if (!shares_a_source(job, loader)) return peers;
  for (uint32_t s : job.assignment.sources_of_loader[static_cast<size_t>(loader)]) {
    const auto& serving = job.assignment.loaders_of_source[s];
    if (serving.size() > 1) peers.insert(serving.begin(), serving.end());
  }
  for (int shadow = layout.loaders; shadow < layout.loader_ranks(); ++shadow) peers.insert(shadow);
  peers.erase(loader);
  return peers;
}

std::vector<int> exchange_index_shares(const JobContext& job, int loader) {
  const std::set<int> peers = index_peers(job, loader);
  if (peers.empty()) return {};
  // The loader communicator orders its ranks as the world does.
  std::vector<int> loader_world;
  for (int i = 0; i < job.layout.loader_ranks(); ++i) loader_world.push_back(job.layout.loader_rank(i));
  std::vector<int> by_rank = loader_world;
  std::sort(by_rank.begin(), by_rank.end());
  const auto rank_in_loaders = [&](int index) {
    return static_cast<int>(std::lower_bound(by_rank.begin(), by_rank.end(), loader_world[static_cast<size_t>(index)]) -
                            by_rank.begin());
  };
  const char* hint = "telling the source's loaders that this loader's index caches are built";
  std::vector<MPI_Request> sends;
  for (int peer : peers) {
    sends.emplace_back();
    MSD_MPI(MPI_Isend(nullptr, 0, MPI_BYTE, rank_in_loaders(peer), kTagIndexShared, job.loaders.get(), &sends.back()),
            hint);
  }
  std::set<int> waiting;
  for (int peer : peers) waiting.insert(rank_in_loaders(peer));
  const uint64_t bound_ms = job.config.job.startup_timeout_s * 500;
  receive_from_each(job.loaders.get(), waiting, kTagIndexShared, bound_ms == 0 ? 0 : bound_ms,
                    "waiting for the source's loaders to build their index caches");
  for (MPI_Request& request : sends) wait(request, hint);
  std::vector<int> missing;
  for (int peer : peers)
    if (waiting.count(rank_in_loaders(peer))) missing.push_back(peer);
  if (!missing.empty()) {
    std::string names;
    for (int m : missing) names += str(names.empty() ? "" : ", ", m);
    log_warn("loader(s) ", names, " did not build their share of the index caches within job.startup_timeout_s / 2 = ",
             bound_ms / 1000.0, " s; this loader indexes what it does not find cached itself");
  }
  return missing;
}

}  // namespace msd
