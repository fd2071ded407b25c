// The planner's checkpoint: the small state from which the batch stream
// continues exactly (docs/checkpoint.md, "Planner checkpoint"). Written often
// (checkpoint.planner_every steps) as DIR/planner-<step>.h5, one file per
// checkpoint, through a temporary file and a rename: a torn file is never
// taken for a checkpoint.
//
// Cost on the planner's step: PlannerCheckpointWriter writes the file (HDF5,
// into the page cache) on the caller's thread and leaves fsync and rename to
// a background thread, so the step pays about a tenth of a millisecond and
// not the several milliseconds of an fsync (docs/checkpoint.md has the
// measurements).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "msd/config.h"
#include "plan/step/outlier_hold.h"
#include "source/fingerprint.h"
#include "source/stream_order.h"

namespace msd {

// docs/checkpoint.md, "Planner checkpoint": bump on any change of the layout.
// Version 2 added the integrity record and the data fingerprint; version 3
// the loader assignment; version 4 the outlier hold's documents; version 5
// the streams' keys and eras, the mixer's origin and each data file's
// samples, which a resume with a changed mixture needs (version 2 to 4 files
// still read, without them).
inline constexpr uint64_t kPlannerCheckpointVersion = 5;

// A sample of the DGraph that is in flight beyond the checkpointed step.
enum class SampleState : uint8_t { requested = 0, loaded = 1, planned = 2, failed = 3 };
const char* sample_state_name(SampleState state);

struct InFlightSample {
  uint32_t source = 0;
  SampleState state = SampleState::requested;
  int32_t loader_rank = -1;  // world rank asked to load it
  uint64_t cursor = 0;       // position in the source's stream
  uint64_t index = 0;        // file-order index (the permutation's image of cursor)
  bool operator==(const InFlightSample&) const = default;
};

struct PlannerCheckpoint {
  uint64_t step = 0;  // the next step to deliver: every step < step was delivered
  uint64_t seed = 0;
  std::string config_ini;  // to_ini(config) of the run (a resume must match it)
  std::vector<uint64_t> source_samples;  // samples per source
  std::vector<uint64_t> consumed;        // per source: stream cursor before `step` (epoch = cursor / samples)
  std::vector<uint64_t> mixer_realized;  // Mixer::realized() before `step`: Mixer::restore(step, it) continues
  std::vector<uint64_t> bad_samples;     // per BadKind, counted in steps < step
  std::vector<InFlightSample> in_flight;  // DGraph: samples requested/loaded beyond `step`
  DataFingerprint data;                   // the run's data files and vocabulary
  // Per loader index (shadows included): the sources it served when the
  // checkpoint was taken (online scaling moves them; empty: not recorded).
  std::vector<std::vector<uint32_t>> loader_sources;
  // The outlier hold before `step` (OutlierHold::held(), oldest first):
  // documents of earlier steps not yet delivered. A resume loads them again
  // and holds them as the run did.
  std::vector<HeldDoc> held;
  // Per source: the key of its stream's permutations, the source's index in
  // the run that began its stream (StreamOrder, source/stream_order.h).
  // Empty: every source's own index (version < 5, and no source ever added
  // or removed).
  std::vector<uint32_t> stream_keys;
  // Per source: its stream's eras when a resume changed its data (eras[0]
  // the run's own); empty for a source whose data never changed. Empty: none
  // changed.
  std::vector<std::vector<StreamEra>> stream_eras;
  // The mixer's origin (Mixer::restore): the step from which a resume that
  // changed the mix restarted its targets, and each source's realized total
  // there. 0 and empty: targets from step 0.
  uint64_t mixer_origin_step = 0;
  std::vector<uint64_t> mixer_origin;
  bool operator==(const PlannerCheckpoint&) const = default;
};

// DIR/planner-<step, 12 digits>.h5
std::string planner_checkpoint_path(const std::string& dir, uint64_t step);

// Writes the checkpoint to `path` as it is (no temporary file, no fsync):
// the HDF5 part of write_planner_checkpoint. Throws IoError.
void write_planner_checkpoint_file(const std::string& path, const PlannerCheckpoint& checkpoint);

// Writes the checkpoint to planner_checkpoint_path(dir, step) now: temporary
// file, fsync, rename, fsync of the directory; then keeps only the newest
// `keep` planner checkpoints in `dir` (0: keep all). Creates `dir` if needed.
// Throws IoError.
void write_planner_checkpoint(const std::string& dir, const PlannerCheckpoint& checkpoint, uint32_t keep = 3);

// Reads one checkpoint file. Throws IoError when it is unreadable, torn, of
// another format version, changed after it was written (its integrity record
// disagrees: the message says where), or inconsistent (per-source arrays of
// different sizes, a step that disagrees with the file name).
PlannerCheckpoint read_planner_checkpoint(const std::string& path);

// Where a planner checkpoint file was changed after it was written (its
// integrity record, integrity.h), or nullopt when it is intact. Throws
// IoError when the file does not open as HDF5.
std::optional<std::string> check_planner_checkpoint_integrity(const std::string& path);

// The newest planner checkpoint in `dir` with step <= max_step that reads
// back whole, or nullopt when there is none. A file that does not read is
// skipped with a warning (and left in place for inspection), never used.
// `path` (optional) receives the file's path; `skipped` (optional), each
// file skipped and why.
std::optional<PlannerCheckpoint> latest_planner_checkpoint(const std::string& dir, std::string* path = nullptr,
                                                           uint64_t max_step = UINT64_MAX,
                                                           std::vector<std::string>* skipped = nullptr);

// Throws ConfigError when `config` would not continue the batch stream of the
// run that wrote `checkpoint`: a different seed or a different value of any
// option the stream depends on (the first differing option named). Options
// that cannot change the stream may differ: job.steps (a resumed run may go
// further), job.prefetch_steps, topology.loaders, .shadow_loaders, .scaling*
// and .broadcast_at, source.*.read_delay_us and .cache_mib, and the loader.,
// emulator., output., checkpoint. and fault. sections. A source's
// shuffle options are compared as the stream order they resolve to over its
// files then and now (shuffle_order; a checkpoint written before the option
// existed took the uniform order): the order holds for the whole stream, so
// a changed mixture may not change it either. Then compares the checkpoint's data fingerprint with `data` (the
// data as it is now): a changed, added or missing data file or a changed
// vocabulary throws ConfigError naming each difference, unless
// config.checkpoint.accept_changed_data, which logs them as a warning.
// A changed mixture (changed_mix.h: weights, sources added or removed, files
// added to or removed from a source) throws ConfigError listing every
// change, unless config.checkpoint.accept_changed_mix: then returns true, and
// the run continues from continue_with_changed_mix(checkpoint, config, data).
bool check_resumable(const PlannerCheckpoint& checkpoint, const Config& config, const DataFingerprint& data);

// A digest of the options the batch stream depends on: `config`'s to_ini
// lines but those check_resumable lets differ.
uint64_t stream_config_digest(const Config& config);

// The checkpoint a resume starts from (config.checkpoint.resuming()), checked
// by check_resumable against `data` (the data now). With
// checkpoint.resume_step N: the newest readable planner checkpoint at or
// before N (the run then fast-forwards to N); throws ConfigError when there is
// none and N > 0 (for N = 0: nullopt, a start at step 0). Without: the newest,
// or nullopt (with a warning) when `dir` holds none; when it holds some but
// none reads back, throws ConfigError listing each file and why, unless
// checkpoint.start_over (then nullopt: a start at step 0). After a changed
// mixture it accepted (check_resumable), the checkpoint returned is the
// state continued under `config` (continue_with_changed_mix), logged as a
// warning line by line; `changes` (optional) receives the lines, and stays
// empty when nothing changed.
std::optional<PlannerCheckpoint> find_resume_checkpoint(const Config& config, const DataFingerprint& data,
                                                        std::vector<std::string>* changes = nullptr);

// Makes planner checkpoints durable off the caller's thread. submit() writes
// the temporary file on the caller's thread (all HDF5 work stays there) and
// hands fsync, rename and retention to a writer thread. When the writer is
// still busy with an older checkpoint, a newer one replaces any queued one
// (the newest is the one a resume wants; the older temporary file is removed). A failure on the writer thread
// is rethrown by the next submit() or by finish(). Not thread-safe: one
// caller thread.
class PlannerCheckpointWriter {
 public:
  PlannerCheckpointWriter(std::string dir, uint32_t keep = 3);
  ~PlannerCheckpointWriter();  // finish(), swallowing (and logging) an error
  PlannerCheckpointWriter(const PlannerCheckpointWriter&) = delete;
  PlannerCheckpointWriter& operator=(const PlannerCheckpointWriter&) = delete;

  void submit(const PlannerCheckpoint& checkpoint);
  // Waits until every submitted checkpoint is on disk; rethrows a failure.
  void finish();
  // Seconds the last submit() spent writing the file on the caller's thread.
  double last_write_seconds() const { return last_write_seconds_; }

 private:
  struct Pending {
    uint64_t step = 0;
    std::string path;  // the final name; the file is at temporary_path(path)
  };
  void run();
  void rethrow_failure();

  std::string dir_;
  uint32_t keep_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Pending> pending_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr failure_;
  double last_write_seconds_ = 0.0;
  std::thread thread_;
};

}  // namespace msd
