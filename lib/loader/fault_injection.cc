#include "loader/fault_injection.h"

#include <chrono>
#include <thread>
#include <utility>

#include "common/log.h"

namespace msd {

namespace {

// The rank the planner sends the fault to (PlannerRole::inject_fault).
int fault_target(const JobContext& job) {
  const FaultConfig& fault = job.config.fault;
  if (fault.rank >= 0) return fault.rank;
  return fault.loader >= 0 ? job.layout.loader_rank(fault.loader) : -1;
}

void sleep_ms(uint64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

FaultInjector::FaultInjector(const JobContext& job)
    : config_(job.config.fault), loader_index_(job.layout.loader_index(job.rank)) {
  if (config_.kind == "fail" && fault_target(job) == job.rank) {
    storage_ = std::make_unique<FaultyStorage>(default_storage());
    installed_.emplace(*storage_);
  }
}

FaultInjector::~FaultInjector() = default;

void FaultInjector::before_opening_sources() const {
  if (config_.kind != "startup_stall" || config_.loader != loader_index_) return;
  log_warn("fault injected: startup_stall for ", config_.stall_ms, " ms before opening the sources");
  sleep_ms(config_.stall_ms);
}

void FaultInjector::inject(const FaultMessage& fault) {
  const bool stall = fault.kind == "stall" || fault.kind == "checkpoint_stall";
  log_warn("fault injected: ", fault.kind, stall ? str(" for ", fault.stall_ms, " ms") : "");
  if (fault.kind == "crash") throw Error("injected crash (fault.kind = crash)");
  if (fault.kind == "hang") {
    hung_ = true;
  } else if (fault.kind == "fail") {
    if (!storage_) throw Error("told to fail its reads (fault.kind = fail) without a [fault] naming this loader");
    storage_->fail_reads({});  // every file, every offset: EIO
  } else if (fault.kind == "checkpoint_stall") {
    checkpoint_stall_ms_ = fault.stall_ms;
  } else {
    // A stall: the process does nothing at all for a while, as with
    // storage that stops answering; then it carries on.
    sleep_ms(fault.stall_ms);
  }
}

void FaultInjector::inside_checkpoint_write() {
  if (checkpoint_stall_ms_ > 0) sleep_ms(std::exchange(checkpoint_stall_ms_, 0));
}

}  // namespace msd
