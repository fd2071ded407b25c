#include "checkpoint/trace.h"

#include <bit>
#include <cstddef>
#include <filesystem>

#include "checkpoint/data_record.h"
#include "checkpoint/integrity.h"
#include "checkpoint/step_files.h"
#include "common/digest.h"
#include "common/error.h"
#include "common/log.h"
#include "common/storage.h"

namespace msd {

namespace {

// Rows as stored (docs/trace.md).
using StepRowData = TraceStepRow;
struct SampleRow {
  uint32_t source;
  uint8_t bad;
  uint32_t positions;
  uint32_t patches;
  uint64_t cursor;
  uint64_t index;
  uint64_t from_step;
};
struct PieceRow {
  uint32_t group, micro_batch, sequence, sample, begin, length;
  double cost;
};

// Chunk sizes of the extendable tables, in rows.
constexpr size_t kStepChunk = 256;
constexpr size_t kRowChunk = 4096;

h5::CompoundType step_type() {
  h5::CompoundType type(sizeof(StepRowData));
  type.add("step", offsetof(StepRowData, step), H5T_NATIVE_UINT64)
      .add("samples_end", offsetof(StepRowData, samples_end), H5T_NATIVE_UINT64)
      .add("pieces_end", offsetof(StepRowData, pieces_end), H5T_NATIVE_UINT64)
      .add("samples_digest", offsetof(StepRowData, samples_digest), H5T_NATIVE_UINT64)
      .add("pieces_digest", offsetof(StepRowData, pieces_digest), H5T_NATIVE_UINT64)
      .add("chain", offsetof(StepRowData, chain), H5T_NATIVE_UINT64);
  return type;
}

h5::CompoundType sample_type() {
  h5::CompoundType type(sizeof(SampleRow));
  type.add("source", offsetof(SampleRow, source), H5T_NATIVE_UINT32)
      .add("bad", offsetof(SampleRow, bad), H5T_NATIVE_UINT8)
      .add("positions", offsetof(SampleRow, positions), H5T_NATIVE_UINT32)
      .add("patches", offsetof(SampleRow, patches), H5T_NATIVE_UINT32)
      .add("cursor", offsetof(SampleRow, cursor), H5T_NATIVE_UINT64)
      .add("index", offsetof(SampleRow, index), H5T_NATIVE_UINT64)
      .add("from_step", offsetof(SampleRow, from_step), H5T_NATIVE_UINT64);
  return type;
}

h5::CompoundType piece_type() {
  h5::CompoundType type(sizeof(PieceRow));
  type.add("group", offsetof(PieceRow, group), H5T_NATIVE_UINT32)
      .add("micro_batch", offsetof(PieceRow, micro_batch), H5T_NATIVE_UINT32)
      .add("sequence", offsetof(PieceRow, sequence), H5T_NATIVE_UINT32)
      .add("sample", offsetof(PieceRow, sample), H5T_NATIVE_UINT32)
      .add("begin", offsetof(PieceRow, begin), H5T_NATIVE_UINT32)
      .add("length", offsetof(PieceRow, length), H5T_NATIVE_UINT32)
      .add("cost", offsetof(PieceRow, cost), H5T_NATIVE_DOUBLE);
  return type;
}

// The trace's tables that grow by appends; the step chain covers them, the
// header's integrity record covers every other item.
// Items the header's seal leaves out: the tables grow (the step chain covers
// them) and the close record is written last.
const std::string kTables[] = {"steps", "samples", "pieces", "end_step", "end_chain"};

// docs/trace.md, "Integrity": rows digested field by field, in row order.
uint64_t rows_digest(std::span<const SampleRow> rows) {
  Digest digest;
  for (const auto& r : rows)
    for (uint64_t field : {uint64_t{r.source}, uint64_t{r.bad}, uint64_t{r.positions}, uint64_t{r.patches}, r.cursor,
                           r.index, r.from_step})
      digest.update_u64(field);
  return digest.value();
}

uint64_t rows_digest(std::span<const PieceRow> rows) {
  Digest digest;
  for (const auto& r : rows)
    for (uint64_t field : {uint64_t{r.group}, uint64_t{r.micro_batch}, uint64_t{r.sequence}, uint64_t{r.sample},
                           uint64_t{r.begin}, uint64_t{r.length}, std::bit_cast<uint64_t>(r.cost)})
      digest.update_u64(field);
  return digest.value();
}

uint64_t step_chain(uint64_t previous, const StepRowData& row) {
  Digest digest;
  for (uint64_t field : {previous, row.step, row.samples_end, row.pieces_end, row.samples_digest, row.pieces_digest})
    digest.update_u64(field);
  return digest.value();
}

std::string join_names(const std::vector<std::string>& names) {
  std::string joined;
  for (const auto& name : names) joined += (joined.empty() ? "" : ",") + name;
  return joined;
}

std::vector<std::string> split_names(const std::string& joined) {
  std::vector<std::string> names;
  if (joined.empty()) return names;
  size_t start = 0;
  while (true) {
    const size_t comma = joined.find(',', start);
    names.push_back(joined.substr(start, comma - start));
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

void write_header(hid_t root, const TraceHeader& h, uint64_t first_step) {
  h5::write_attribute(root, "format_version", kTraceVersion);
  h5::write_attribute(root, "first_step", first_step);
  h5::write_attribute(root, "config_ini", h.config_ini);
  h5::write_attribute(root, "seed", h.seed);
  h5::write_attribute(root, "source_names", join_names(h.source_names));
  for (const auto& [name, value] : {std::pair<const char*, uint32_t>{"dp", h.dp}, {"pp", h.pp}, {"cp", h.cp},
                                    {"tp", h.tp}, {"micro_batches", h.micro_batches}, {"seq_len", h.seq_len}})
    h5::write_attribute(root, name, uint64_t{value});
  h5::write_array<uint64_t>(root, "source_samples", h.source_samples);
  write_data_fingerprint(root, h.data);
}

TraceHeader read_header(hid_t root, const std::string& path) {
  const uint64_t version = h5::read_u64_attribute(root, "format_version");
  if (version != kTraceVersion && version != 3)
    throw IoError(str(path, ": trace format version ", version, ", this msd reads versions 3 and ", kTraceVersion));
  TraceHeader h;
  h.config_ini = h5::read_string_attribute(root, "config_ini");
  h.seed = h5::read_u64_attribute(root, "seed");
  h.source_names = split_names(h5::read_string_attribute(root, "source_names"));
  auto u32 = [&](const char* name) { return checked_cast<uint32_t>(h5::read_u64_attribute(root, name)); };
  h.dp = u32("dp");
  h.pp = u32("pp");
  h.cp = u32("cp");
  h.tp = u32("tp");
  h.micro_batches = u32("micro_batches");
  h.seq_len = u32("seq_len");
  h.source_samples = h5::read_array<uint64_t>(root, "source_samples");
  if (h.source_samples.size() != h.source_names.size())
    throw IoError(str(path, ": ", h.source_names.size(), " source names but ", h.source_samples.size(), " sizes"));
  h.data = read_data_fingerprint(root, path);
  return h;
}

}  // namespace

// The compound types and the three tables of an open trace.
struct TraceWriter::Tables {
  h5::CompoundType step_type = msd::step_type();
  h5::CompoundType sample_type = msd::sample_type();
  h5::CompoundType piece_type = msd::piece_type();
  h5::AppendableDataset steps, samples, pieces;
};

struct TraceReader::Tables {
  h5::CompoundType step_type = msd::step_type();
  h5::CompoundType sample_type = msd::sample_type();
  h5::CompoundType piece_type = msd::piece_type();
  h5::AppendableDataset steps, samples, pieces;
};

TraceHeader make_trace_header(const Config& config, std::vector<uint64_t> source_samples, DataFingerprint data) {
  TraceHeader h;
  h.data = std::move(data);
  h.config_ini = to_ini(config);
  h.seed = config.job.seed;
  for (const auto& source : config.sources) h.source_names.push_back(source.name);
  h.source_samples = std::move(source_samples);
  MSD_CHECK_EQ(h.source_samples.size(), h.source_names.size());
  h.dp = checked_cast<uint32_t>(config.topology.dp);
  h.pp = checked_cast<uint32_t>(config.topology.pp);
  h.cp = checked_cast<uint32_t>(config.topology.cp);
  h.tp = checked_cast<uint32_t>(config.topology.tp);
  h.micro_batches = config.job.micro_batches;
  h.seq_len = config.job.seq_len;
  return h;
}

TraceSample trace_sample(const SampleMeta& meta) {
  TraceSample s;
  s.source = meta.source;
  s.bad = meta.bad;
  s.cursor = meta.cursor;
  s.index = meta.index;
  s.positions = meta.bad == 0 ? meta.positions() : 0;
  s.patches = meta.bad == 0 ? meta.patches : 0;
  return s;
}

std::vector<PlanDoc> plan_docs(std::span<const TraceSample> samples, const CostModel& cost) {
  std::vector<PlanDoc> docs;
  for (const auto& s : samples) {
    if (s.bad != 0) continue;
    const uint32_t id = static_cast<uint32_t>(docs.size());
    docs.push_back(PlanDoc{id, s.positions, s.patches, cost.document(s.positions, s.patches)});
  }
  return docs;
}

std::vector<uint32_t> delivered_rows(uint64_t step, std::span<const TraceSample> samples,
                                     const std::vector<bool>& held) {
  std::vector<uint32_t> rows, released;
  size_t good = 0;
  for (size_t row = 0; row < samples.size(); ++row) {
    if (samples[row].bad != 0) continue;
    if (samples[row].from_step < step) {
      released.push_back(static_cast<uint32_t>(row));
      continue;
    }
    if (!(good < held.size() && held[good])) rows.push_back(static_cast<uint32_t>(row));
    ++good;
  }
  rows.insert(rows.end(), released.begin(), released.end());
  return rows;
}

std::vector<PlanDoc> plan_docs(std::span<const TraceSample> samples, const std::vector<uint32_t>& rows,
                               const CostModel& cost) {
  std::vector<PlanDoc> docs;
  for (uint32_t row : rows) {
    const TraceSample& s = samples[row];
    docs.push_back(PlanDoc{static_cast<uint32_t>(docs.size()), s.positions, s.patches, cost.document(s.positions, s.patches)});
  }
  return docs;
}

StepRecord make_step_record(uint64_t step, std::vector<TraceSample> samples, const std::vector<BucketPlan>& buckets,
                            const CostModel& cost) {
  const std::vector<uint32_t> rows = delivered_rows(step, samples, {});
  return make_step_record(step, std::move(samples), buckets, cost, rows);
}

StepRecord make_step_record(uint64_t step, std::vector<TraceSample> samples, const std::vector<BucketPlan>& buckets,
                            const CostModel& cost, const std::vector<uint32_t>& row_of_doc) {
  StepRecord record;
  record.step = step;
  for (size_t group = 0; group < buckets.size(); ++group) {
    const auto& micro_batches = buckets[group].micro_batches;
    for (size_t mb = 0; mb < micro_batches.size(); ++mb) {
      const auto& sequences = micro_batches[mb].sequences;
      for (size_t seq = 0; seq < sequences.size(); ++seq) {
        for (const Piece& piece : sequences[seq].pieces) {
          MSD_CHECK_LT(piece.doc, row_of_doc.size());
          const uint32_t row = row_of_doc[piece.doc];
          const uint32_t fixed = samples[row].patches;
          const uint32_t patches = piece.begin < fixed ? std::min(fixed - piece.begin, piece.length) : 0;
          record.pieces.push_back({static_cast<uint32_t>(group), static_cast<uint32_t>(mb),
                                   static_cast<uint32_t>(seq), row, piece.begin, piece.length,
                                   cost.document(piece.length, patches)});
        }
      }
    }
  }
  record.samples = std::move(samples);
  return record;
}

// --- writer -------------------------------------------------------------------

TraceWriter::TraceWriter(std::string path, const TraceHeader& header, uint64_t first_step, uint32_t flush_every,
                         bool changed)
    : path_(std::move(path)), flush_every_(std::max<uint32_t>(flush_every, 1)) {
  const auto parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) make_directory(parent.string());
  if (first_step > 0 && !changed && reopen(header, first_step)) return;
  if (first_step > 0 && default_storage().exists(path_)) {
    const std::string aside = str(path_, ".before-", first_step);
    try {
      default_storage().rename(path_, aside);
    } catch (const IoError& error) {
      throw IoError(str("cannot move trace ", path_, " aside to ", aside, ": ", error.what()));
    }
    log_warn("trace ", path_, changed ? " holds the plans of the mixture before step " : " cannot continue at step ",
             first_step, "; moved to ", aside, " and a new trace begins at step ", first_step);
  }
  create(header, first_step);
}

TraceWriter::~TraceWriter() {
  try {
    close();
  } catch (const std::exception& e) {
    log_error("closing trace ", path_, ": ", e.what());
  }
}

void TraceWriter::create(const TraceHeader& header, uint64_t first_step) {
  h5::PropertyList access = h5::file_access();
  // Never truncated in place: an old trace is unlinked, so that a process
  // that still has it open keeps its steps whole.
  try {
    if (default_storage().remove(path_))
      log_info("trace ", path_, ": an earlier trace replaced (a start at step ", first_step, ")");
  } catch (const IoError& error) {
    throw IoError(str("cannot replace trace ", path_, ": ", error.what()));
  }
  file_ = h5::create_file(path_, access.get(), true);
  write_header(file_.get(), header, first_step);
  tables_ = std::make_unique<Tables>();
  tables_->steps = h5::AppendableDataset::create(file_.get(), "steps", tables_->step_type.get(), kStepChunk);
  tables_->samples = h5::AppendableDataset::create(file_.get(), "samples", tables_->sample_type.get(), kRowChunk);
  tables_->pieces = h5::AppendableDataset::create(file_.get(), "pieces", tables_->piece_type.get(), kRowChunk);
  seal_file(file_.get(), kTables);
  chain_ = seal_digest(file_.get());
  first_step_ = next_step_ = first_step;
  MSD_H5(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), str("flushing the new trace ", path_));
}

// Opens the trace for a resume at first_step; false when it cannot continue
// there (missing, unreadable, or ending before first_step).
bool TraceWriter::reopen(const TraceHeader& header, uint64_t first_step) {
  if (!default_storage().exists(path_)) return false;
  try {
    h5::PropertyList access = h5::file_access();
    h5::File file = h5::open_file(path_, true, access.get());
    const TraceHeader found = read_header(file.get(), path_);
    const auto mesh = [](const TraceHeader& h) {
      return str("dp ", h.dp, " x pp ", h.pp, " x cp ", h.cp, " x tp ", h.tp, ", ", h.micro_batches, " micro-batch(es)");
    };
    if (mesh(found) != mesh(header))
      throw ConfigError(str("checkpoint.trace: ", path_, " records plans for ", mesh(found), ", this run is ",
                            mesh(header), "; a resume on another mesh writes its plans to a new trace: set "
                            "checkpoint.trace to another path"));
    if (found.seed != header.seed || found.source_names != header.source_names ||
        found.source_samples != header.source_samples || found.seq_len != header.seq_len)
      throw ConfigError(str("trace ", path_, " was written by a run with other seed, sources, source sizes or "
                            "sequence length; a resume must continue the same run"));
    const uint64_t file_first = h5::read_u64_attribute(file.get(), "first_step");
    auto tables = std::make_unique<Tables>();
    tables->steps = h5::AppendableDataset::open(file.get(), "steps", tables->step_type.get());
    tables->samples = h5::AppendableDataset::open(file.get(), "samples", tables->sample_type.get());
    tables->pieces = h5::AppendableDataset::open(file.get(), "pieces", tables->piece_type.get());
    std::vector<StepRowData> rows(tables->steps.size());
    tables->steps.read(0, rows.size(), rows.data());
    if (first_step < file_first || file_first + rows.size() < first_step) {
      log_warn("trace ", path_, " holds steps ", file_first, "..", file_first + rows.size(), ", not every step before ",
               first_step);
      return false;
    }
    const size_t keep = static_cast<size_t>(first_step - file_first);
    for (size_t i = 0; i < keep; ++i)
      if (rows[i].step != file_first + i) throw IoError(str(path_, ": /steps row ", i, " holds step ", rows[i].step));
    const StepRowData end = keep > 0 ? rows[keep - 1] : StepRowData{0, 0, 0, 0, 0, seal_digest(file.get())};
    if (end.samples_end > tables->samples.size() || end.pieces_end > tables->pieces.size())
      throw IoError(str(path_, ": /steps points past the end of /samples or /pieces"));
    for (const char* name : {"end_step", "end_chain"})
      if (MSD_H5(H5Aexists(file.get(), name), path_) > 0) MSD_H5(H5Adelete(file.get(), name), path_);
    tables->steps.truncate(keep);
    tables->samples.truncate(end.samples_end);
    tables->pieces.truncate(end.pieces_end);
    MSD_H5(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), str("flushing the truncated trace ", path_));
    file_ = std::move(file);
    tables_ = std::move(tables);
    first_step_ = file_first;
    next_step_ = first_step;
    chain_ = end.chain;
    if (keep < rows.size())
      log_info("trace ", path_, ": dropped steps ", first_step, "..", file_first + rows.size() - 1,
               " (they are planned again)");
    return true;
  } catch (const IoError& e) {
    log_warn("trace ", path_, " cannot be reopened: ", e.what());
    return false;
  }
}

void TraceWriter::append_step(const StepRecord& record) {
  MSD_CHECK(tables_ != nullptr);
  MSD_CHECK_EQ(record.step, next_step_);
  std::vector<SampleRow> samples;
  samples.reserve(record.samples.size());
  for (const auto& s : record.samples)
    samples.push_back({s.source, s.bad, s.positions, s.patches, s.cursor, s.index, s.from_step});
  std::vector<PieceRow> pieces;
  pieces.reserve(record.pieces.size());
  for (const auto& p : record.pieces)
    pieces.push_back({p.group, p.micro_batch, p.sequence, p.sample, p.begin, p.length, p.cost});
  // The step row goes last: a reader trusts only rows a step row covers.
  tables_->samples.append(samples.data(), samples.size());
  tables_->pieces.append(pieces.data(), pieces.size());
  StepRowData row{record.step, tables_->samples.size(), tables_->pieces.size(), rows_digest(samples),
                  rows_digest(pieces), 0};
  row.chain = chain_ = step_chain(chain_, row);
  tables_->steps.append(&row, 1);
  ++next_step_;
  if (++since_flush_ >= flush_every_) flush();
}

void TraceWriter::flush() {
  if (!file_.valid()) return;
  MSD_H5(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), str("flushing trace ", path_));
  since_flush_ = 0;
}

void TraceWriter::sync() {
  if (!file_.valid()) return;
  flush();
  sync_path(path_);
}

void TraceWriter::close() {
  if (!file_.valid()) return;
  // The close record: a trace without it was cut (its run was killed), one
  // whose steps end elsewhere lost rows (check_trace_integrity).
  h5::write_attribute(file_.get(), "end_step", next_step_);
  h5::write_attribute(file_.get(), "end_chain", chain_);
  sync();
  tables_.reset();
  file_.close(str("closing trace ", path_));
}

// --- reader -------------------------------------------------------------------

TraceReader::TraceReader(const std::string& path) : path_(path) {
  h5::PropertyList access = h5::file_access();
  file_ = h5::open_file(path, false, access.get());
  header_ = read_header(file_.get(), path);
  first_step_ = h5::read_u64_attribute(file_.get(), "first_step");
  if (MSD_H5(H5Aexists(file_.get(), "end_step"), path) > 0)
    closed_end_ = h5::read_u64_attribute(file_.get(), "end_step");
  tables_ = std::make_unique<Tables>();
  tables_->steps = h5::AppendableDataset::open(file_.get(), "steps", tables_->step_type.get());
  tables_->samples = h5::AppendableDataset::open(file_.get(), "samples", tables_->sample_type.get());
  tables_->pieces = h5::AppendableDataset::open(file_.get(), "pieces", tables_->piece_type.get());
  steps_.resize(tables_->steps.size());
  tables_->steps.read(0, steps_.size(), steps_.data());
  uint64_t samples_end = 0, pieces_end = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const TraceStepRow& row = steps_[i];
    if (row.step != first_step_ + i || row.samples_end < samples_end || row.pieces_end < pieces_end ||
        row.samples_end > tables_->samples.size() || row.pieces_end > tables_->pieces.size())
      throw IoError(str(path, ": /steps row ", i, " (step ", row.step, ") is inconsistent with the trace"));
    samples_end = row.samples_end;
    pieces_end = row.pieces_end;
  }
}

TraceReader::~TraceReader() = default;

StepRecord TraceReader::step(uint64_t step) const {
  MSD_CHECK(step >= first_step_ && step < end_step());
  const size_t i = static_cast<size_t>(step - first_step_);
  const uint64_t samples_begin = i > 0 ? steps_[i - 1].samples_end : 0;
  const uint64_t pieces_begin = i > 0 ? steps_[i - 1].pieces_end : 0;
  std::vector<SampleRow> samples(steps_[i].samples_end - samples_begin);
  std::vector<PieceRow> pieces(steps_[i].pieces_end - pieces_begin);
  tables_->samples.read(samples_begin, samples.size(), samples.data());
  tables_->pieces.read(pieces_begin, pieces.size(), pieces.data());
  StepRecord record;
  record.step = step;
  for (const auto& s : samples)
    record.samples.push_back({s.source, s.bad, s.cursor, s.index, s.positions, s.patches, s.from_step});
  for (const auto& p : pieces) {
    if (p.sample >= samples.size())
      throw IoError(str(path_, ": step ", step, " has a piece of sample ", p.sample, " of ", samples.size()));
    record.pieces.push_back({p.group, p.micro_batch, p.sequence, p.sample, p.begin, p.length, p.cost});
  }
  return record;
}

// --- integrity ----------------------------------------------------------------

// A closed trace's steps end where its close record says, on its chain.
std::optional<std::string> check_close_record(hid_t root, size_t rows, uint64_t chain) {
  if (MSD_H5(H5Aexists(root, "end_step"), h5::in_file(root, "reading the close record")) <= 0) return std::nullopt;
  const uint64_t first = h5::read_u64_attribute(root, "first_step");
  const uint64_t end = h5::read_u64_attribute(root, "end_step");
  if (end != first + rows)
    return str("/steps: the run closed the trace with steps ", first, " up to ", end, " (exclusive) but it holds ",
               rows, " step rows (rows were cut)");
  if (h5::read_u64_attribute(root, "end_chain") != chain)
    return str("/steps: the last row's chain is not the one the run closed the trace with");
  return std::nullopt;
}

std::optional<std::string> check_trace_integrity(const std::string& path) {
  h5::PropertyList access = h5::file_access();
  h5::File file = h5::open_file(path, false, access.get());
  const hid_t root = file.get();
  if (auto changed = check_seal(root, kTables)) return str("header: ", *changed);
  const h5::CompoundType steps_type = step_type(), samples_type = sample_type(), pieces_type = piece_type();
  const auto steps = h5::AppendableDataset::open(root, "steps", steps_type.get());
  const auto samples = h5::AppendableDataset::open(root, "samples", samples_type.get());
  const auto pieces = h5::AppendableDataset::open(root, "pieces", pieces_type.get());
  std::vector<StepRowData> rows(steps.size());
  steps.read(0, rows.size(), rows.data());
  uint64_t chain = seal_digest(root), samples_begin = 0, pieces_begin = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const StepRowData& row = rows[i];
    const std::string step = str(" (step ", row.step, ")");
    // A row whose chain field was changed fails here, so the next row can
    // start from its stored chain.
    if (step_chain(chain, row) != row.chain)
      return str("/steps row ", i, step, ": does not continue the step chain (a field of this row was changed)");
    if (row.samples_end < samples_begin || row.samples_end > samples.size() || row.pieces_end < pieces_begin ||
        row.pieces_end > pieces.size())
      return str("/steps row ", i, step, ": points outside /samples or /pieces (a table was cut)");
    std::vector<SampleRow> sample_rows(row.samples_end - samples_begin);
    samples.read(samples_begin, sample_rows.size(), sample_rows.data());
    if (rows_digest(sample_rows) != row.samples_digest)
      return str("/samples rows ", samples_begin, "..", row.samples_end - 1, step,
                 ": their contents differ from the step's samples_digest");
    std::vector<PieceRow> piece_rows(row.pieces_end - pieces_begin);
    pieces.read(pieces_begin, piece_rows.size(), piece_rows.data());
    if (rows_digest(piece_rows) != row.pieces_digest)
      return str("/pieces rows ", pieces_begin, "..", row.pieces_end - 1, step,
                 ": their contents differ from the step's pieces_digest");
    chain = row.chain;
    samples_begin = row.samples_end;
    pieces_begin = row.pieces_end;
  }
  return check_close_record(root, rows.size(), chain);
}

}  // namespace msd
