// msd-bench memory: loader memory and fetched bytes, colocated against
// disaggregated, over a table of source counts S and training-rank counts R.
// Each row runs msd-run twice on the same generated many-source dataset (S
// sources, each with a realistic index: documents_per_source records) and
// the same hybrid layout of R client ranks, and reads each summary's
// loader_memory_bytes.total and per-step bytes_fetched / bytes_needed
// (docs/summary.md).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace msd::bench {

struct MemoryOptions {
  std::vector<int> sources = {8, 32, 128};  // S per row
  std::vector<int> ranks = {8, 32};         // R per row: client (training) ranks
  uint64_t documents_per_source = 20000;    // records in each source's index
  uint64_t steps = 3;                       // steps each run delivers
  int loaders = 4;                          // disaggregated loader ranks (at most S)
  uint32_t seq_len = 1024;
  std::string work_dir;                     // dataset, configurations, summaries, logs; default: a temp dir
};

// The hybrid layout of R client ranks: pp = cp = tp = 2 and dp = R / 8 when
// R is a multiple of 8; tp = 2 and cp = 2 for R = 4; tp = 2 for R = 2; one
// rank for R = 1. Throws ConfigError for any other R.
struct HybridLayout {
  int dp = 1, pp = 1, cp = 1, tp = 1;
};
HybridLayout hybrid_layout(int ranks);

struct MemoryMode {
  uint64_t loader_memory_bytes = 0;  // summary loader_memory_bytes.total
  uint64_t planner_bytes = 0, loader_bytes = 0, client_bytes = 0;
  double bytes_fetched_per_step = 0;  // mean over steps, summed over clients
  double bytes_needed_per_step = 0;
  double fetch_redundancy = 0;        // fetched / needed
  int world_size = 0;
};

// Ranks that load data under Megatron-LM's practice (colocated_tokens): TP
// rank 0 of each TP group only (it broadcasts to its TP peers), the first and
// the last pipeline stage only (tokens in, labels out; middle stages load
// nothing), every CP rank (each loads whole sequences and keeps its slice):
// dp * cp * min(pp, 2).
int megatron_loading_ranks(const HybridLayout& layout);

struct MemoryRow {
  int sources = 0, ranks = 0;
  HybridLayout layout;
  MemoryMode colocated, disaggregated;
  double ratio = 0;  // colocated / disaggregated loader memory
  // The Megatron-style baseline: the colocated run's measured loader memory
  // per client rank (every colocated rank opens every source alike) times
  // megatron_loading_ranks.
  uint64_t megatron_bytes = 0;
  double ratio_vs_megatron = 0;  // megatron_bytes / disaggregated loader memory
};

struct MemoryReport {
  std::vector<MemoryRow> rows;
  uint64_t documents_per_source = 0;
};

// Throws ConfigError for bad options and Error when a run fails (naming its log).
MemoryReport run_memory_bench(const MemoryOptions& options);
std::string memory_json(const MemoryReport& report);
void write_memory_text(const MemoryReport& report, std::ostream& out);

}  // namespace msd::bench
