// The plan trace: every step's consumed samples (in stream order, bad ones
// included) and its packing layout with costs, appended by the planner to one
// HDF5 file (DIR/trace.h5 or --trace FILE). docs/trace.md is the layout.
// msd-replay (replay.h) reads it offline.
//
// Durability: the writer flushes every `flush_every` steps and at close. A
// job killed between flushes leaves a trace that reads up to an earlier
// flush; the planner syncs (flush and fsync) before each planner checkpoint,
// and close() writes the close record (end_step, end_chain) and syncs: a
// trace without the record was cut, and msd-replay verify says so. A resumed
// run's trace has every step before the checkpoint and continues it (the
// steps at and after the checkpoint are cut away and written again).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/hdf5.h"
#include "msd/config.h"
#include "plan/step/cost.h"
#include "plan/step/pack.h"
#include "source/fingerprint.h"
#include "transport/wire.h"

namespace msd {

// docs/trace.md: bump on any change of the layout. Version 2 added the
// integrity record, the step chain and the data fingerprint; version 3 the
// samples' from_step (the outlier hold's documents of earlier steps);
// version 4 each data file's samples (a version 3 trace still reads, without
// them).
inline constexpr uint64_t kTraceVersion = 4;

struct TraceHeader {
  std::string config_ini;  // to_ini of the run's configuration
  uint64_t seed = 0;
  std::vector<std::string> source_names;
  std::vector<uint64_t> source_samples;  // samples per source
  uint32_t dp = 1, pp = 1, cp = 1, tp = 1;
  uint32_t micro_batches = 1;
  uint32_t seq_len = 0;
  DataFingerprint data;  // the run's data files and vocabulary (empty when not taken)
  bool operator==(const TraceHeader&) const = default;
};
// The header of a run: from its configuration, its sources' sizes and the
// fingerprint of its data.
TraceHeader make_trace_header(const Config& config, std::vector<uint64_t> source_samples, DataFingerprint data = {});

// A sample the step consumed from a source's stream.
struct TraceSample {
  uint32_t source = 0;
  uint8_t bad = 0;  // BadKind; 0: used. A bad sample was skipped and holds no positions
  uint64_t cursor = 0;
  uint64_t index = 0;
  uint32_t positions = 0;  // tokens + patches
  uint32_t patches = 0;
  // The step whose stream consumed it: the record's own step, or for a
  // document the outlier hold delivers late, the step it was consumed at
  // (such rows follow the consumed ones).
  uint64_t from_step = 0;
  bool operator==(const TraceSample&) const = default;
};
TraceSample trace_sample(const SampleMeta& meta);

// A piece of a document in the step's layout.
struct TracePiece {
  uint32_t group = 0;        // data group (DP index)
  uint32_t micro_batch = 0;  // within the group
  uint32_t sequence = 0;     // within the micro-batch
  uint32_t sample = 0;       // index into StepRecord::samples
  uint32_t begin = 0;        // first position of the document in this piece
  uint32_t length = 0;
  double cost = 0.0;         // CostModel::document(length, patches in the piece)
  bool operator==(const TracePiece&) const = default;
};

struct StepRecord {
  uint64_t step = 0;
  // Per source in source order, cursors ascending: every cursor the step
  // consumed, the bad ones included (from_step == step); then the documents
  // of earlier steps the outlier hold delivers at this step, oldest first.
  std::vector<TraceSample> samples;
  // Group by group, micro-batch by micro-batch, sequence by sequence, in
  // packing order.
  std::vector<TracePiece> pieces;
  bool operator==(const StepRecord&) const = default;
};

// The planner's documents of a step: the good samples of `samples`, in order,
// doc i the i-th good one, costed by `cost` (what distribute_and_pack gets).
std::vector<PlanDoc> plan_docs(std::span<const TraceSample> samples, const CostModel& cost);
// The rows of step `step`'s record its documents are: its good consumed
// rows but those the hold keeps (held[i]: the i-th good consumed row waits;
// shorter: the rest do not), in order, then its rows of earlier steps.
std::vector<uint32_t> delivered_rows(uint64_t step, std::span<const TraceSample> samples,
                                     const std::vector<bool>& held);
// The documents of those rows: doc i is row rows[i].
std::vector<PlanDoc> plan_docs(std::span<const TraceSample> samples, const std::vector<uint32_t>& rows,
                               const CostModel& cost);
// The record of a step planned as `buckets` = distribute_and_pack(plan_docs(
// samples, cost), ...): pieces' docs are mapped back to rows of `samples`
// (doc i the i-th good row), or to row_of_doc[i].
StepRecord make_step_record(uint64_t step, std::vector<TraceSample> samples, const std::vector<BucketPlan>& buckets,
                            const CostModel& cost);
StepRecord make_step_record(uint64_t step, std::vector<TraceSample> samples, const std::vector<BucketPlan>& buckets,
                            const CostModel& cost, const std::vector<uint32_t>& row_of_doc);

// Appends steps to a trace. Serial HDF5, one writer (the planner); not
// thread-safe.
class TraceWriter {
 public:
  // first_step 0: a new trace at `path` (an existing file is unlinked, never truncated in place).
  // first_step > 0 (a resume): the existing trace is reopened and every step
  // >= first_step dropped; its header must agree with `header` on the seed,
  // the sources and their sizes (else ConfigError). When the file is missing,
  // unreadable, or ends before first_step (steps lost), it is moved aside to
  // PATH.before-<first_step> (with a warning) and a new trace starting at
  // first_step is begun. Throws IoError.
  // `changed` (a resume under a changed mixture, changed_mix.h): the existing
  // trace is moved aside to PATH.before-<first_step> whatever it holds, and a
  // new trace of the new configuration begins at first_step.
  TraceWriter(std::string path, const TraceHeader& header, uint64_t first_step = 0, uint32_t flush_every = 16,
              bool changed = false);
  ~TraceWriter();  // close(), logging a failure
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // REQUIRES record.step == next_step().
  void append_step(const StepRecord& record);
  void flush();
  void sync();   // flush, then fsync: on disk before a checkpoint that names it
  void close();  // writes the close record, syncs and closes; later calls do nothing
  uint64_t next_step() const { return next_step_; }
  uint64_t first_step() const { return first_step_; }
  const std::string& path() const { return path_; }

 private:
  struct Tables;
  void create(const TraceHeader& header, uint64_t first_step);
  bool reopen(const TraceHeader& header, uint64_t first_step);

  std::string path_;
  uint32_t flush_every_;
  uint64_t first_step_ = 0;
  uint64_t next_step_ = 0;
  uint64_t since_flush_ = 0;
  uint64_t chain_ = 0;  // the last row's chain (the header's seal before any)
  h5::File file_;
  std::unique_ptr<Tables> tables_;
};

// A row of the trace's /steps table (docs/trace.md).
struct TraceStepRow {
  uint64_t step = 0;
  uint64_t samples_end = 0;  // one past the step's last row of /samples
  uint64_t pieces_end = 0;   // one past the step's last row of /pieces
  uint64_t samples_digest = 0;  // of the step's /samples rows, field by field
  uint64_t pieces_digest = 0;   // of the step's /pieces rows
  // Digest of the previous row's chain (the header's @integrity_digest for
  // the first row) and this row's other five fields: the step chain.
  uint64_t chain = 0;
};

// Where the trace at `path` was changed after it was written: its header
// against its integrity record (integrity.h), then row by row each step's
// chain and the /samples and /pieces rows it covers. nullopt: intact. Throws
// IoError when the file does not open as HDF5 or lacks its tables.
std::optional<std::string> check_trace_integrity(const std::string& path);

// Reads a trace: header and steps. Serial HDF5; not thread-safe.
class TraceReader {
 public:
  explicit TraceReader(const std::string& path);  // throws IoError
  ~TraceReader();
  const TraceHeader& header() const { return header_; }
  uint64_t first_step() const { return first_step_; }           // the first step recorded
  uint64_t end_step() const { return first_step_ + steps_.size(); }  // one past the last
  // Whether the run closed the trace (its close record); a trace that is not
  // closed was cut: its run was killed after its last flush, or still runs.
  bool closed() const { return closed_end_.has_value(); }
  // REQUIRES first_step() <= step < end_step().
  StepRecord step(uint64_t step) const;

 private:
  struct Tables;
  std::string path_;
  TraceHeader header_;
  uint64_t first_step_ = 0;
  std::optional<uint64_t> closed_end_;
  h5::File file_;
  std::unique_ptr<Tables> tables_;
  std::vector<TraceStepRow> steps_;
};

}  // namespace msd
