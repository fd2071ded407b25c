#include "plan/cluster/place_stream.h"

#include <utility>

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
  p.varlen = p.varlen || p.cut || p.vmb || p.mode == TrainingMode::megatron_varlen;
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

}  // namespace

std::string place_stream_json(const SimulateOptions& sim, const std::vector<std::string>& placements,
                              const std::string& option) {
  const CostModel cost = simulate_cost(sim);
  std::vector<std::vector<PlanDoc>> steps;
  std::vector<uint32_t> documents;
  for (uint32_t s = 0; s < sim.steps; ++s) {
    const std::vector<PlanDoc> docs = synthetic_step(sim, cost, s);
    steps.emplace_back();
    for (uint32_t i : arrival_order(sim.seed, s, static_cast<uint32_t>(docs.size()))) {
      steps.back().push_back(docs[i]);
      steps.back().back().id = static_cast<uint32_t>(documents.size());
      documents.push_back(docs[i].positions);
    }
  }
  uint64_t positions = 0;
  for (uint32_t length : documents) positions += length;
  JsonWriter w;
  w.begin_object().value("seq_len", sim.seq_len).value("dp", sim.dp).value("micro_batches", sim.micro_batches);
  w.value("seed", sim.seed).value("lengths", sim.lengths).value("cost_a", cost.a).value("positions", positions);
  w.value("cost_micro_batch", cost.micro_batch).value("hold_above", sim.hold_above).value("hold_steps", sim.hold_steps);
  w.begin_array("documents");
  for (uint32_t length : documents) w.value("", length);
  w.end_array().begin_object("placements");
  for (const std::string& name : placements) {
    const Placement p = parse_placement(name, option);
    PackOptions pack = simulate_pack_options(sim, sim.dp);
    pack.cp = 1;
    pack.varlen = p.varlen && !is_baseline(p.mode);
    pack.cuts = p.cut ? Cuts::balance : Cuts::whole;
    pack.variable_micro_batches = p.vmb;
    if (!p.hold) pack.hold.above = 0;
    HoldStats held;
    if (pack.hold.enabled()) hold_run(steps, pack.hold, &held);  // the delays place_run's hold gives
    const auto placed = place_run(p.mode, steps, pack, cost);
    uint64_t placed_positions = 0, pieces = 0;
    for (const auto& step : placed)
      for (const BucketPlan& bucket : step) {
        placed_positions += bucket.positions;
        for (const MicroBatchPlan& mb : bucket.micro_batches)
          for (const PackedSequence& sequence : mb.sequences) pieces += sequence.pieces.size();
      }
    MSD_CHECK_EQ(placed_positions, positions);  // every placement trains the same tokens
    w.begin_object(name).value("rows", p.varlen ? "varlen" : "fixed").value("positions", placed_positions);
    w.value("pieces", pieces).value("micro_batch_count", p.vmb ? "variable" : "fixed");
    w.begin_object("hold").value("held", held.held).value("mean_delay", held.mean_delay());
    w.value("max_delay", held.max_delay).end_object();
    write_placed(w, placed);
    w.end_object();
  }
  w.end_object().end_object();
  return w.str();
}

}  // namespace msd
