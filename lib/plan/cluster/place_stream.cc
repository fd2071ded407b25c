#include "plan/cluster/place_stream.h"

#include <utility>

#include "common/error.h"
#include "common/json_writer.h"
#include "plan/step/modes.h"

namespace msd {
namespace {

// A placement name of msd-plan place: a mode, or an msd mode + "_varlen"
// (its micro-batches in variable-length rows).
std::pair<TrainingMode, bool> parse_placement(const std::string& name, const std::string& option) {
  const std::string suffix = "_varlen";
  const bool varlen = name.size() > suffix.size() && name.ends_with(suffix) && name.starts_with("msd_");
  const TrainingMode mode =
      parse_training_mode(varlen ? name.substr(0, name.size() - suffix.size()) : name, "greedy", option, true);
  return {mode, varlen || mode == TrainingMode::megatron_varlen};
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
  const CostModel cost = CostModel::from(sim.model, sim.cost_a);
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
  PackOptions pack;
  pack.seq_len = sim.seq_len;
  pack.dp = sim.dp;
  pack.micro_batches = sim.micro_batches;
  uint64_t positions = 0;
  for (uint32_t length : documents) positions += length;
  JsonWriter w;
  w.begin_object().value("seq_len", sim.seq_len).value("dp", sim.dp).value("micro_batches", sim.micro_batches);
  w.value("seed", sim.seed).value("lengths", sim.lengths).value("cost_a", cost.a).value("positions", positions);
  w.begin_array("documents");
  for (uint32_t length : documents) w.value("", length);
  w.end_array().begin_object("placements");
  for (const std::string& name : placements) {
    const auto [mode, varlen] = parse_placement(name, option);
    pack.varlen = varlen && !is_baseline(mode);
    const auto placed = place_run(mode, steps, pack, cost);
    uint64_t placed_positions = 0;
    for (const auto& step : placed)
      for (const BucketPlan& bucket : step) placed_positions += bucket.positions;
    MSD_CHECK_EQ(placed_positions, positions);  // every placement trains the same tokens
    w.begin_object(name).value("rows", varlen ? "varlen" : "fixed").value("positions", placed_positions);
    write_placed(w, placed);
    w.end_object();
  }
  w.end_object().end_object();
  return w.str();
}

}  // namespace msd
