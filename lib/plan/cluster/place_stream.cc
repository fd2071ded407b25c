#include "plan/cluster/place_stream.h"

#include <utility>
#include <vector>

#include "common/error.h"
#include "common/json_writer.h"
#include "plan/step/modes.h"

namespace msd {
namespace {

// A placement name of msd-plan place: a mode, or an msd mode with suffixes
// that turn on its options: _varlen (variable-length rows), _cut (cuts =
// balance), _vmb (variable micro-batches), _hold (the outlier hold); _cut and
// _vmb place variable-length rows.
struct Placement {
  TrainingMode mode = TrainingMode::msd_greedy;
  bool varlen = false, cut = false, vmb = false, hold = false;
};

Placement parse_placement(std::string name, const std::string& option) {
  Placement p;
  const std::string full = name;
  const std::pair<const char*, bool Placement::*> suffixes[] = {
      {"_varlen", &Placement::varlen}, {"_cut", &Placement::cut}, {"_vmb", &Placement::vmb}, {"_hold", &Placement::hold}};
  for (bool found = name.starts_with("msd_"); found;) {
    found = false;
    for (const auto& [suffix, flag] : suffixes) {
      const std::string s = suffix;
      if (name.size() > s.size() && name.ends_with(s)) {
        p.*flag = true;
        name.resize(name.size() - s.size());
        found = true;
      }
    }
  }
  p.mode = parse_training_mode(name, "greedy", option, true);
  if (is_baseline(p.mode) && name != full)
    throw ConfigError(str(option, ": '", full, "': the suffixes _varlen, _cut, _vmb and _hold are msd placements' options"));
  if (p.mode == TrainingMode::megatron_dynamic_cp)
    throw ConfigError(str(option, ": megatron_dynamic_cp places samples on context-parallel ranks, and msd-plan "
                          "place places data-parallel ranks only (msd-plan simulate --compare --cp N models it)"));
  p.varlen = p.varlen || p.cut || p.vmb;
  return p;
}

// One placed run as "steps": [step][rank][micro-batch] = [sequence = [[doc, begin, length], ...], ...].
void write_placed(JsonWriter& w, const std::vector<std::vector<BucketPlan>>& placed) {
  w.begin_array("steps");
  for (const auto& step : placed) {
    w.begin_array();
    for (const BucketPlan& bucket : step) {
      w.begin_array();
      for (const MicroBatchPlan& mb : bucket.micro_batches) {
        w.begin_array();
        for (const PackedSequence& sequence : mb.sequences) {
          w.begin_array();
          for (const Piece& p : sequence.pieces)
            w.begin_array().value("", p.doc).value("", p.begin).value("", p.length).end_array();
          w.end_array();
        }
        w.end_array();
      }
      w.end_array();
    }
    w.end_array();
  }
  w.end_array();
}

// A stream mode's "document_order": the documents (ids) in the order
// GPTDataset concatenates them, as place_run orders them.
void write_document_order(JsonWriter& w, const ComparedRun& run) {
  std::vector<uint32_t> ids;
  for (const std::vector<PlanDoc>& step : run.steps)
    for (const PlanDoc& doc : step) ids.push_back(doc.id);
  w.begin_array("document_order");
  for (uint32_t i : gpt_document_order(run.stream.seed, static_cast<uint32_t>(ids.size()))) w.value("", ids[i]);
  w.end_array();
}

}  // namespace

std::string place_stream_json(const SimulateOptions& sim, const std::vector<std::string>& placements,
                              const std::string& option) {
  const CostModel cost = simulate_cost(sim);
  PackOptions pack = simulate_pack_options(sim, sim.dp);
  pack.cp = 1;
  std::vector<std::vector<PlanDoc>> steps;
  uint32_t next_id = 0;
  for (uint32_t s = 0; s < sim.steps; ++s) {
    const std::vector<PlanDoc> docs = synthetic_step(sim, cost, s);
    steps.emplace_back();
    for (uint32_t i : arrival_order(sim.seed, s, static_cast<uint32_t>(docs.size()))) {
      steps.back().push_back(docs[i]);
      steps.back().back().id = next_id++;
    }
  }
  const ComparedRun run = whole_global_batches(steps, pack, sim.seed, "--steps");
  const uint32_t hold_above = pack.hold.above;
  const uint64_t global = global_batch_positions(run.stream, pack);
  JsonWriter w;
  w.begin_object().value("seq_len", sim.seq_len).value("dp", sim.dp).value("micro_batches", sim.micro_batches);
  w.value("seed", sim.seed).value("lengths", sim.lengths).value("cost_a", cost.a).value("positions", run.positions);
  w.value("dropped_positions", run.dropped_positions).value("step_positions", global);
  w.begin_object("megatron_batch").value("micro_batch_size", run.stream.micro_batch_size);
  w.value("micro_batches", run.stream.micro_batches).end_object();
  w.value("cost_micro_batch", cost.micro_batch).value("hold_above", sim.hold_above).value("hold_steps", sim.hold_steps);
  w.begin_array("documents");
  for (const std::vector<PlanDoc>& step : run.steps)
    for (const PlanDoc& doc : step) w.value("", doc.positions);
  w.end_array().begin_object("placements");
  for (const std::string& name : placements) {
    const Placement p = parse_placement(name, option);
    pack.varlen = p.varlen && !is_baseline(p.mode);
    pack.cuts = p.cut ? Cuts::balance : Cuts::whole;
    pack.variable_micro_batches = p.vmb;
    pack.hold.above = p.hold ? hold_above : 0;
    HoldStats held;
    const auto placed = place_run(p.mode, run.steps, pack, cost, run.stream, &held);
    // Every placement trains the same tokens, the same positions in every step.
    MSD_CHECK_EQ(placed.size(), run.positions / global);
    uint64_t placed_positions = 0, pieces = 0;
    for (const auto& step : placed) {
      uint64_t step_positions = 0;
      for (const BucketPlan& bucket : step) {
        step_positions += bucket.positions;
        for (const MicroBatchPlan& mb : bucket.micro_batches)
          for (const PackedSequence& sequence : mb.sequences) pieces += sequence.pieces.size();
      }
      MSD_CHECK_EQ(step_positions, global);
      placed_positions += step_positions;
    }
    MSD_CHECK_EQ(placed_positions, run.positions);
    w.begin_object(name).value("rows", varlen_rows(p.mode, p.varlen) ? "varlen" : "fixed");
    w.value("attention", attention_name(p.mode)).value("positions", placed_positions);
    w.value("pieces", pieces).value("micro_batch_count", p.vmb ? "variable" : "fixed");
    w.begin_object("hold").value("held", held.held).value("mean_delay", held.mean_delay());
    w.value("max_delay", held.max_delay).end_object();
    if (is_stream_mode(p.mode)) write_document_order(w, run);
    write_placed(w, placed);
    w.end_object();
  }
  w.end_object().end_object();
  return w.str();
}

}  // namespace msd
