#include "plan/cluster/place_stream.h"

#include <utility>
#include <vector>

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
  if (mode == TrainingMode::megatron_dynamic_cp)
    throw ConfigError(str(option, ": megatron_dynamic_cp places samples on context-parallel ranks, and msd-plan "
                          "place places data-parallel ranks only (msd-plan simulate --compare --cp N models it)"));
  return {mode, varlen};
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
  const CostModel cost = CostModel::from(sim.model, sim.cost_a);
  PackOptions pack;
  pack.seq_len = sim.seq_len;
  pack.dp = sim.dp;
  pack.micro_batches = sim.micro_batches;
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
  JsonWriter w;
  w.begin_object().value("seq_len", sim.seq_len).value("dp", sim.dp).value("micro_batches", sim.micro_batches);
  w.value("seed", sim.seed).value("lengths", sim.lengths).value("cost_a", cost.a).value("positions", run.positions);
  w.value("dropped_positions", run.dropped_positions);
  w.begin_object("megatron_batch").value("micro_batch_size", run.stream.micro_batch_size);
  w.value("micro_batches", run.stream.micro_batches).end_object();
  w.begin_array("documents");
  for (const std::vector<PlanDoc>& step : run.steps)
    for (const PlanDoc& doc : step) w.value("", doc.positions);
  w.end_array().begin_object("placements");
  for (const std::string& name : placements) {
    const auto [mode, varlen] = parse_placement(name, option);
    pack.varlen = varlen;
    const auto placed = place_run(mode, run.steps, pack, cost, run.stream);
    uint64_t placed_positions = 0;
    for (const auto& step : placed)
      for (const BucketPlan& bucket : step) placed_positions += bucket.positions;
    MSD_CHECK_EQ(placed_positions, run.positions);  // every placement trains the same tokens
    w.begin_object(name).value("rows", varlen_rows(mode, varlen) ? "varlen" : "fixed");
    w.value("attention", attention_name(mode)).value("positions", placed_positions);
    if (is_stream_mode(mode)) write_document_order(w, run);
    write_placed(w, placed);
    w.end_object();
  }
  w.end_object().end_object();
  return w.str();
}

}  // namespace msd
