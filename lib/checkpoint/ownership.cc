#include "checkpoint/ownership.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "checkpoint/step_files.h"
#include "common/error.h"
#include "common/storage.h"
#include "common/log.h"

namespace msd {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

// Fields of /proc/PID/stat after the parenthesized command (which may hold
// spaces), from field 3 (the state) on; empty when the process is gone.
std::vector<std::string> stat_fields(long pid) {
  std::ifstream in(str("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 > text.size()) return {};
  std::istringstream fields(text.substr(close + 2));
  return {std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
}

// Field 22: when the process started, in clock ticks since boot.
unsigned long long process_start_of(long pid) {
  const std::vector<std::string> fields = stat_fields(pid);
  return fields.size() > 19 ? std::strtoull(fields[19].c_str(), nullptr, 10) : 0;
}

// A process that ended but was not reaped (an orphan in a container whose
// first process reaps nothing) still answers kill(pid, 0).
bool is_zombie(long pid) {
  const std::vector<std::string> fields = stat_fields(pid);
  return !fields.empty() && (fields[0] == "Z" || fields[0] == "X");
}

std::string describe(const LockOwner& owner) {
  char when[32] = "?";
  const std::time_t t = static_cast<std::time_t>(owner.started_unix);
  std::tm utc{};
  if (gmtime_r(&t, &utc) != nullptr) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return str("job ", owner.job, ", host ", owner.host, ", pid ", owner.pid, ", since ", when);
}

std::string lock_text(const LockOwner& owner) {
  return str("job = ", owner.job, "\nhost = ", owner.host, "\npid = ", owner.pid, "\nprocess_start = ",
             owner.process_start, "\nstarted_unix = ", owner.started_unix, "\n");
}

// Creates the lock file when none is there (O_EXCL); false when it exists.
bool create_lock(const std::string& path, const LockOwner& owner) {
  const std::string text = lock_text(owner);
  try {
    return default_storage().create_exclusive(
        path, std::span(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
  } catch (const IoError& e) {
    throw ConfigError(str("cannot create the lock: ", e.what()));
  }
}

std::chrono::seconds age_of(const std::string& path) {
  std::optional<FileStamp> stamp;
  try {
    stamp = default_storage().stat(path);
  } catch (const IoError&) {
  }
  if (!stamp) return std::chrono::seconds(0);
  const long long mtime_s = stamp->mtime_ns / 1000000000;
  return std::chrono::seconds(std::max<long long>(0, static_cast<long long>(std::time(nullptr)) - mtime_s));
}

}  // namespace

LockOwner this_lock_owner() {
  LockOwner me;
  me.host = host_name();
  me.pid = static_cast<long>(::getpid());
  me.process_start = process_start_of(me.pid);
  me.started_unix = static_cast<long long>(std::time(nullptr));
  if (!env("SLURM_JOB_ID").empty())
    me.job = str("slurm ", env("SLURM_JOB_ID"), ".", env("SLURM_STEP_ID").empty() ? "batch" : env("SLURM_STEP_ID"));
  else if (!env("PMIX_NAMESPACE").empty())
    me.job = str("mpirun ", env("PMIX_NAMESPACE"));
  else
    me.job = str("process ", me.pid, " on ", me.host);
  return me;
}

LockOwner read_lock_owner(const std::string& path) {
  const std::vector<unsigned char> bytes = default_storage().read_all(path);
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::map<std::string, std::string> values;
  std::string line;
  while (std::getline(in, line)) {
    const size_t equals = line.find(" = ");
    if (equals != std::string::npos) values[line.substr(0, equals)] = line.substr(equals + 3);
  }
  LockOwner owner;
  owner.job = values["job"];
  owner.host = values["host"];
  owner.pid = std::strtol(values["pid"].c_str(), nullptr, 10);
  owner.process_start = std::strtoull(values["process_start"].c_str(), nullptr, 10);
  owner.started_unix = std::strtoll(values["started_unix"].c_str(), nullptr, 10);
  if (owner.host.empty() || owner.pid <= 0) throw IoError(str(path, ": not an msd lock (no host or pid)"));
  return owner;
}

std::string why_owner_is_gone(const LockOwner& owner, const LockOwner& me, std::chrono::seconds age) {
  if (owner.host == me.host) {
    if (::kill(static_cast<pid_t>(owner.pid), 0) != 0 && errno == ESRCH) return "its process is gone";
    if (is_zombie(owner.pid)) return "its process has ended";
    if (owner.process_start != 0 && process_start_of(owner.pid) != owner.process_start)
      return "its pid now belongs to another process";
  }
  if (owner.job == me.job && owner.job.rfind("slurm ", 0) == 0) return "it is this Slurm job step, started again";
  if (age >= OwnerLock::kStale) return str("it was not refreshed for ", age.count(), " s");
  return {};
}

OwnerLock::OwnerLock(std::string path, std::string option) : path_(std::move(path)), mine_(this_lock_owner()) {
  const auto parent = fs::path(path_).parent_path();
  if (!parent.empty()) make_directory(parent.string());
  // Two tries: a stale lock is removed, then created anew; another job that
  // won that race is a live owner the second time.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (create_lock(path_, mine_)) {
      refresher_ = std::thread([this] { refresh_loop(); });
      return;
    }
    std::string owner_text = "an owner whose lock is being written", gone;
    try {
      const LockOwner owner = read_lock_owner(path_);
      owner_text = describe(owner);
      gone = why_owner_is_gone(owner, mine_, age_of(path_));
    } catch (const IoError& e) {
      // Being written right now by another job, or not a lock at all.
      if (age_of(path_) >= std::chrono::seconds(5)) gone = str("it does not read as a lock (", e.what(), ")");
    }
    if (gone.empty())
      throw ConfigError(str(option, ": ", path_, " is held by another job (", owner_text, "; refreshed ",
                            age_of(path_).count(), " s ago): a second job would overwrite its checkpoints and trace. "
                            "Use another ", option, ", or remove the lock once that job is gone"));
    log_warn("taking over the lock ", path_, " of ", owner_text, ": ", gone);
    try {
      default_storage().remove(path_);
    } catch (const IoError&) {
      // gone already, or not ours to remove: the next try says which
    }
  }
  throw ConfigError(str(option, ": another job took the lock ", path_, " while this one took it over"));
}

OwnerLock::~OwnerLock() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable()) refresher_.join();
  // Only a lock that still names this process: never another job's.
  try {
    const LockOwner owner = read_lock_owner(path_);
    if (owner.host == mine_.host && owner.pid == mine_.pid && owner.started_unix == mine_.started_unix)
      default_storage().remove(path_);
  } catch (const std::exception& e) {
    log_warn("leaving the lock ", path_, ": ", e.what());
  }
}

void OwnerLock::refresh_loop() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, kRefresh, [this] { return stop_; }))
    if (::utimes(path_.c_str(), nullptr) != 0) log_warn("cannot refresh the lock ", path_, ": ", std::strerror(errno));
}

std::vector<std::pair<std::string, std::string>> owner_lock_paths(const Config& config) {
  std::vector<std::pair<std::string, std::string>> locks;
  const CheckpointConfig& ckpt = config.checkpoint;
  if (!ckpt.dir.empty()) locks.emplace_back(join_path(ckpt.dir, "msd.lock"), "checkpoint.dir");
  // The trace has its own: another job's checkpoint.trace may name it.
  const std::string trace = !ckpt.trace.empty() ? ckpt.trace : ckpt.dir.empty() ? "" : join_path(ckpt.dir, "trace.h5");
  if (!trace.empty()) locks.emplace_back(trace + ".lock", "checkpoint.trace");
  return locks;
}

void prepare_fresh_start(const Config& config) {
  const std::string& dir = config.checkpoint.dir;
  if (dir.empty()) return;
  std::vector<std::pair<uint64_t, std::string>> files = list_step_files(dir, "planner");
  for (auto& file : list_step_files(dir, "loaders")) files.push_back(std::move(file));
  if (files.empty()) return;
  std::string steps;
  for (size_t i = 0; i < files.size() && i < 6; ++i) steps += str(i == 0 ? "" : ", ", fs::path(files[i].second).filename().string());
  if (files.size() > 6) steps += str(" and ", files.size() - 6, " more");
  if (!config.checkpoint.start_over)
    throw ConfigError(str("checkpoint.dir: ", dir, " holds the checkpoints of an earlier run (", steps,
                          "); a new run at step 0 would overwrite and mix with them. --resume continues that run; "
                          "checkpoint.start_over = true starts over, moving them aside; or use another checkpoint.dir"));
  const std::string aside = join_path(dir, str("replaced-", std::time(nullptr)));
  make_directory(aside);
  const std::string trace = config.checkpoint.trace.empty() ? join_path(dir, "trace.h5") : config.checkpoint.trace;
  Storage& storage = default_storage();
  if (storage.exists(trace) && fs::path(trace).parent_path() == fs::path(dir)) files.emplace_back(0, trace);
  for (const auto& [step, file] : files) {
    try {
      storage.rename(file, join_path(aside, fs::path(file).filename().string()));
    } catch (const IoError& error) {
      throw IoError(str("checkpoint.start_over: cannot move ", file, " to ", aside, ": ", error.what()));
    }
  }
  log_warn("checkpoint.start_over: moved ", files.size(), " file(s) of an earlier run (", steps, ") to ", aside,
           "; starting at step 0");
}

}  // namespace msd
