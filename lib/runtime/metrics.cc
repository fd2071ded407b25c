#include "runtime/metrics.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <utility>

#include "common/error.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/memory.h"
#include "plan/step/cost.h"

namespace msd {

uint64_t RssSampler::bytes() {
  const auto now = std::chrono::steady_clock::now();
  if (!read_ || now - read_at_ >= refresh_) {
    bytes_ = current_rss_bytes();
    read_at_ = now;
    read_ = true;
  }
  return bytes_;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void WorkTimer::begin() {
  wall_at_ = std::chrono::steady_clock::now();
  cpu_at_ = thread_cpu_seconds();
}

void WorkTimer::end(bool worked) {
  if (!worked) return;
  wall_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_at_).count();
  cpu_ += thread_cpu_seconds() - cpu_at_;
}

namespace {
double max_over_mean(const std::vector<double>& values) {
  if (values.empty()) return std::nan("");
  double sum = 0.0, largest = 0.0;
  for (double v : values) {
    sum += v;
    largest = std::max(largest, v);
  }
  const double mean = sum / static_cast<double>(values.size());
  return mean > 0 ? largest / mean : std::nan("");
}
}  // namespace

MetricsWriter::MetricsWriter(MetricsOptions options) : options_(std::move(options)) {
  const std::string& path = options_.path;
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr)
    throw IoError(str("output.metrics: cannot write '", path, "': ", std::strerror(errno)));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::planned(uint64_t step, const std::vector<BucketPlan>& buckets, const std::vector<PlanDoc>& docs) {
  // The documents' cost without the padding the planner also charges, as
  // the summary's balance counts it from the clients' batches.
  // (Variable-length rows: the planner charged none.)
  const uint32_t seq_len = options_.seq_len;
  const bool varlen = options_.varlen;
  std::vector<double> cost, device;
  for (const BucketPlan& bucket : buckets) {
    uint64_t padding = 0;
    for (const MicroBatchPlan& mb : bucket.micro_batches)
      for (const PackedSequence& seq : mb.sequences) padding += varlen ? 0 : seq_len - seq.used;
    cost.push_back(bucket.cost - options_.cost.padding(padding));
    std::vector<MicroBatchShape> shapes;
    for (const MicroBatchPlan& mb : bucket.micro_batches)  // varlen rows under CP: THD, as the batches are built
      shapes.push_back(shape_of(mb, seq_len, docs, varlen, varlen ? RowAttention::thd : RowAttention::segments,
                                options_.parallel.cp));
    device.push_back(rank_time(options_.device, options_.parallel, shapes).seconds);
  }
  balance_[step] = Balance{max_over_mean(cost), max_over_mean(device)};
}

void MetricsWriter::loader_status(int loader_rank, const LoaderStatus& status) {
  loaders_[loader_rank].latest = status;
}

void MetricsWriter::client_rss(int client_rank, uint64_t rss_bytes) { clients_[client_rank] = rss_bytes; }

void MetricsWriter::completed(const MetricsStep& step) {
  const auto now = std::chrono::steady_clock::now();
  const double wall = std::chrono::duration<double>(now - start_).count();
  const double step_seconds = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  Balance balance{std::nan(""), std::nan("")};
  if (auto it = balance_.find(step.step); it != balance_.end()) {
    balance = it->second;
    balance_.erase(balance_.begin(), std::next(it));
  }
  // A loader's busy share between the reports it sent since the last line;
  // one that sent none is still doing what it did.
  for (auto& [rank, seen] : loaders_) {
    const double wall_delta = seen.latest.wall_seconds - seen.at_last_line.wall_seconds;
    if (wall_delta > 0)
      seen.busy_fraction =
          std::clamp((seen.latest.busy_seconds - seen.at_last_line.busy_seconds) / wall_delta, 0.0, 1.0);
    seen.at_last_line = seen.latest;
  }
  const std::string text = line(step, wall, step_seconds, balance);
  // One write and a flush per line: a crash leaves whole lines only (the
  // last one possibly cut, never a completed step's line missing).
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
    throw IoError(str("output.metrics: cannot write '", options_.path, "': ", std::strerror(errno)));
}

std::string MetricsWriter::line(const MetricsStep& step, double wall, double step_seconds, const Balance& balance) {
  JsonWriter w;
  w.begin_object();
  w.value("step", step.step);
  w.value("wall_s", wall);
  w.value("step_s", step_seconds);
  w.value("tokens", step.tokens);
  w.value("tokens_per_s", step_seconds > 0 ? static_cast<double>(step.tokens) / step_seconds : 0.0);
  w.begin_object("dp_max_over_mean").value("cost", balance.cost).value("device", balance.device).end_object();
  w.value("data_wait_max_s", step.wait_max_seconds);
  w.value("data_wait_s", step.clients > 0 ? step.wait_sum_seconds / step.clients : 0.0);
  w.value("planner_work_s", step.planner_work_seconds - planner_work_at_last_);
  planner_work_at_last_ = step.planner_work_seconds;
  w.begin_object("sources");
  for (size_t s = 0; s < step.backlog.size(); ++s) {
    double busy = 0.0;
    const auto& serving = step.source_loaders.at(s);
    for (int rank : serving) busy += loaders_[rank].busy_fraction;
    w.begin_object(options_.sources.at(s))
        .value("backlog", step.backlog[s])
        .value("busy", serving.empty() ? 0.0 : busy / static_cast<double>(serving.size()))
        .end_object();
  }
  w.end_object();
  uint64_t loader_max = 0, loader_total = 0, client_max = 0, client_total = 0;
  for (const auto& [rank, seen] : loaders_) {
    loader_max = std::max(loader_max, seen.latest.rss_bytes);
    loader_total += seen.latest.rss_bytes;
  }
  for (const auto& [rank, rss] : clients_) {
    client_max = std::max(client_max, rss);
    client_total += rss;
  }
  w.begin_object("rss_bytes")
      .value("planner", rss_.bytes())
      .value("loader_max", loader_max)
      .value("loader_total", loader_total)
      .value("client_max", client_max)
      .value("client_total", client_total)
      .end_object();
  w.end_object();
  return w.str() + "\n";
}

void ProgressLine::step_done(uint64_t step, uint64_t tokens, double max_wait_seconds, uint64_t total_tokens,
                             std::chrono::steady_clock::time_point now) {
  const double step_seconds = std::chrono::duration<double>(now - last_).count();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  last_ = now;
  if (every_ == 0 || log_level() > LogLevel::info) return;
  if ((step + 1) % every_ != 0 && step + 1 != steps_) return;
  char line[256];
  std::snprintf(line, sizeof line, "step %llu/%llu  tokens %llu  step %.0f ms  data wait (max over ranks) %.1f ms  %.0f tokens/s",
                static_cast<unsigned long long>(step + 1), static_cast<unsigned long long>(steps_),
                static_cast<unsigned long long>(tokens), step_seconds * 1e3, max_wait_seconds * 1e3,
                elapsed > 0 ? static_cast<double>(total_tokens) / elapsed : 0.0);
  log_info(line);
}

}  // namespace msd
