// msd-fuzz: a mutation fuzzer for every input msd parses (JSON lines, tar
// shards, JPEG, Megatron .idx/.bin, tiktoken vocabularies, INI configuration,
// HDF5 planner checkpoints and plan traces). From valid seeds it feeds seeded
// mutations to the real readers (tests/fuzz/targets.h) and requires of every
// input: no crash, no hang (a per-input time bound), and either acceptance
// under the reader's contract (a bad record as a bad-sample value) or a clear
// rejection: an msd::Error whose message names the input file (the INI file's
// errors name the option). Any other outcome is a finding: the input is kept
// under --work and the run exits 1. A crash or hang prints the input's path
// before the process dies.
//
//   msd-fuzz [--seconds N] [--format NAME[,NAME...]] [--seed S]
//            [--input-timeout-ms MS] [--work DIR] [--source DIR]
#include <hdf5.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "fuzz/targets.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace fs = std::filesystem;
using namespace msd;
using namespace msd::fuzz;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  double seconds = 30;
  std::vector<std::string> formats;  // empty: all
  uint64_t seed = 1;
  int64_t input_timeout_ms = 20000;
  std::string work_dir;
  std::string source_dir = MSD_SOURCE_DIR;
};

// The input being run, for the crash and hang reports (a fixed buffer: the
// signal handler may only write it out).
char current_input[1024] = "(none)";

void print_current_input() {
  const char prefix[] = "msd-fuzz: died on input ";
  (void)!::write(2, prefix, sizeof(prefix) - 1);
  (void)!::write(2, current_input, std::strlen(current_input));
  (void)!::write(2, "\n", 1);
}

void on_fatal_signal(int signal_number) {
  print_current_input();
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void install_crash_reporting() {
  for (const int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(s, on_fatal_signal);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_set_death_callback(print_current_input);
#endif
}

// Ends the process when one input runs longer than the bound: a hang.
class Watchdog {
 public:
  explicit Watchdog(int64_t timeout_ms) : timeout_ms_(timeout_ms), thread_([this] { watch(); }) {}
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }
  void arm() { started_ns_ = Clock::now().time_since_epoch().count(); }
  void disarm() { started_ns_ = 0; }

 private:
  void watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const int64_t started = started_ns_;
      const int64_t now = Clock::now().time_since_epoch().count();
      if (started != 0 && now - started > timeout_ms_ * 1000000) {
        std::fprintf(stderr, "msd-fuzz: HANG: an input ran longer than %lld ms\n",
                     static_cast<long long>(timeout_ms_));
        print_current_input();
        std::_Exit(3);
      }
    }
  }
  int64_t timeout_ms_;
  std::atomic<int64_t> started_ns_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct Tally {
  uint64_t inputs = 0, accepted = 0, rejected = 0, findings = 0, bad_samples = 0;
  double seconds = 0;
};

void print_tally(const Target& target, const Tally& t) {
  std::printf("%-10s %7llu inputs (%zu seeds) in %5.1f s: %llu accepted (%llu bad samples reported), "
              "%llu rejected with a clear error, %llu findings\n",
              target.name.c_str(), static_cast<unsigned long long>(t.inputs), target.seeds.size(), t.seconds,
              static_cast<unsigned long long>(t.accepted), static_cast<unsigned long long>(t.bad_samples),
              static_cast<unsigned long long>(t.rejected), static_cast<unsigned long long>(t.findings));
}

std::vector<std::string> write_input(const Input& input, const std::string& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::string> paths;
  for (const InputFile& file : input) {
    paths.push_back(dir + "/" + file.name);
    std::ofstream(paths.back(), std::ios::binary).write(file.bytes.data(), std::streamsize(file.bytes.size()));
  }
  return paths;
}

// Whether a rejection says what and where: not empty, and naming the file
// (or, for INI, an option "section.key" or the file).
bool clear_message(const Target& target, const std::string& message, const std::vector<std::string>& paths) {
  if (message.empty()) return false;
  for (const std::string& path : paths) {
    if (message.find(fs::path(path).filename().string()) != std::string::npos) return true;
  }
  static const std::regex option(R"([a-z_]+\.[a-z_.]+|unknown option|--config)");
  return !target.message_names_file && std::regex_search(message, option);
}

// Runs one input; returns an empty string when the reader behaved, else the
// finding.
std::string run_one(const Target& target, const std::vector<std::string>& paths, RunContext& context,
                    Tally& tally) {
  try {
    target.run(paths, context);
    ++tally.accepted;
    return "";
  } catch (const Violation& e) {
    return str("contract broken: ", e.what());
  } catch (const Error& e) {
    ++tally.rejected;
    return clear_message(target, e.what(), paths) ? "" : str("unclear rejection: '", e.what(), "'");
  } catch (const std::exception& e) {
    return str("an exception outside msd::Error: ", e.what());
  }
}

// Keeps the input of a finding (the first kMaxKept of a target; later ones are
// only counted) and prints what broke.
constexpr uint64_t kMaxKept = 20;
void keep_finding(const std::string& input_dir, const std::string& findings_dir, uint64_t number,
                  const std::string& finding, uint64_t found_before) {
  if (found_before >= kMaxKept) return;
  const std::string kept = str(findings_dir, "/", number);
  fs::create_directories(findings_dir);
  fs::rename(input_dir, kept);
  std::ofstream(kept + "/FINDING") << finding << "\n";
  std::cerr << "msd-fuzz: FINDING (input kept in " << kept << "): " << finding << "\n";
}

Tally fuzz_target(const Target& target, const Options& options, double seconds, RunContext& context,
                  Watchdog& watchdog) {
  Tally tally;
  Mutator mutator(options.seed ^ std::hash<std::string>{}(target.name));
  std::vector<Bytes> donors;
  for (const Input& seed : target.seeds) donors.push_back(seed[target.main_file].bytes);
  const std::string input_dir = options.work_dir + "/input-" + target.name;
  const uint64_t bad_before = context.bad_samples;
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  // Seeds first, unmutated: they must be accepted, or the fuzzer tests nothing.
  for (uint64_t n = 0; n < target.seeds.size() || elapsed() < seconds; ++n) {
    Input input = target.seeds[n % target.seeds.size()];
    if (n >= target.seeds.size()) {
      const size_t which = input.size() > 1 && mutator.rng().chance(0.25) ? mutator.rng().below(input.size())
                                                                           : target.main_file;
      input[which].bytes = mutator.mutate(input[which].bytes, donors);
      if (target.repair && mutator.rng().chance(0.5)) target.repair(input[which].bytes);
    }
    const std::vector<std::string> paths = write_input(input, input_dir);
    std::snprintf(current_input, sizeof(current_input), "%s #%llu in %s", target.name.c_str(),
                  static_cast<unsigned long long>(n), input_dir.c_str());
    const uint64_t accepted_before = tally.accepted;
    watchdog.arm();
    std::string finding = run_one(target, paths, context, tally);
    watchdog.disarm();
    if (n < target.seeds.size() && finding.empty() && tally.accepted == accepted_before) finding = "a valid seed was rejected";
    ++tally.inputs;
    if (!finding.empty()) {
      keep_finding(input_dir, options.work_dir + "/findings-" + target.name, n, finding, tally.findings);
    }
    tally.findings += finding.empty() ? 0 : 1;
    fs::remove_all(context.cache_dir);
    fs::create_directories(context.cache_dir);
  }
  tally.seconds = elapsed();
  tally.bad_samples = context.bad_samples - bad_before;
  return tally;
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw ConfigError(str(flag, ": needs a value"));
    const std::string value = argv[++i];
    if (flag == "--seconds") {
      options.seconds = std::stod(value);
    } else if (flag == "--format") {
      std::stringstream list(value);
      for (std::string name; std::getline(list, name, ',');) options.formats.push_back(name);
    } else if (flag == "--seed") {
      options.seed = std::stoull(value);
    } else if (flag == "--input-timeout-ms") {
      options.input_timeout_ms = std::stoll(value);
    } else if (flag == "--work") {
      options.work_dir = value;
    } else if (flag == "--source") {
      options.source_dir = value;
    } else {
      throw ConfigError(str("unknown option '", flag, "' (see the top of tests/fuzz/msd_fuzz.cc)"));
    }
  }
  if (options.seconds <= 0) throw ConfigError("--seconds: must be positive");
  return options;
}

std::vector<Target> selected_targets(const Options& options) {
  std::vector<Target> all = make_targets(options.work_dir, options.source_dir);
  if (options.formats.empty()) return all;
  std::vector<Target> chosen;
  for (const std::string& name : options.formats) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Target& t) { return t.name == name; });
    if (it == all.end()) throw ConfigError(str("--format: unknown format '", name, "'"));
    chosen.push_back(std::move(*it));
  }
  return chosen;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options options = parse_options(argc, argv);
    const bool own_work_dir = options.work_dir.empty();
    if (own_work_dir) options.work_dir = fs::temp_directory_path() / str("msd-fuzz.", ::getpid());
    fs::create_directories(options.work_dir);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // HDF5's own error printing: the readers report instead
    install_crash_reporting();
    const std::vector<Target> targets = selected_targets(options);
    set_log_level(LogLevel::quiet);  // readers warn about every damaged input; the tally says enough
    RunContext context{.cache_dir = options.work_dir + "/cache"};
    Watchdog watchdog(options.input_timeout_ms);
    uint64_t findings = 0;
    for (const Target& target : targets) {
      const Tally t = fuzz_target(target, options, options.seconds / double(targets.size()), context, watchdog);
      print_tally(target, t);
      std::fflush(stdout);
      findings += t.findings;
    }
    if (findings > 0) {
      std::printf("msd-fuzz: %llu findings; inputs kept under %s\n", static_cast<unsigned long long>(findings),
                  options.work_dir.c_str());
      return 1;
    }
    if (own_work_dir) fs::remove_all(options.work_dir);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "msd-fuzz: " << e.what() << "\n";
    return 2;
  }
}
