// Test helper: a plan trace or a planner checkpoint as JSON, through the
// checkpoint library, for tests/tools/check_changed_mix.py (the test machine
// has no Python HDF5 module).
//
// Usage: mix_dump trace TRACE       {"sources": [{"name", "samples", "files": [{"path", "samples"}]}],
//                                    "global_batch", "rows": [[step, source, bad, cursor, index, from_step]],
//                                    "weights": {"STEP": [w per source]}}  (the schedule's, normalized)
//        mix_dump checkpoint FILE   {"step", "sources": [{"samples", "consumed", "key", "eras": [{"begin",
//                                    "tail", "first_epoch", "samples"}]}]}
#include <cstdio>
#include <iostream>
#include <string>

#include "checkpoint/planner_checkpoint.h"
#include "checkpoint/replay.h"
#include "checkpoint/trace.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "config/part_options.h"
#include "plan/step/mix.h"

namespace {

std::string dump_trace(const std::string& path) {
  const msd::TraceReader trace(path);
  const msd::TraceHeader& h = trace.header();
  const msd::Config config = msd::trace_config(h);
  msd::JsonWriter w;
  w.begin_object().value("global_batch", config.job.global_batch).begin_array("sources");
  for (uint32_t s = 0; s < h.source_names.size(); ++s) {
    w.begin_object().value("name", h.source_names[s]).value("samples", h.source_samples[s]).begin_array("files");
    for (const msd::FileFingerprint& f : h.data.files)
      if (f.source == s && !f.path.ends_with(".bin")) w.begin_object().value("path", f.path).value("samples", f.samples).end_object();
    w.end_array().end_object();
  }
  w.end_array().begin_array("rows");
  for (uint64_t step = trace.first_step(); step < trace.end_step(); ++step)
    for (const msd::TraceSample& s : trace.step(step).samples) {
      w.begin_array();
      for (uint64_t v : {step, uint64_t{s.source}, uint64_t{s.bad}, s.cursor, s.index, s.from_step}) w.value("", v);
      w.end_array();
    }
  w.end_array().begin_object("weights");
  const msd::Schedule schedule = msd::make_schedule(config);
  for (uint64_t step = trace.first_step(); step < trace.end_step(); ++step) {
    w.begin_array(std::to_string(step));
    for (double weight : schedule.weights(step)) w.exact_value("", weight);
    w.end_array();
  }
  w.end_object().end_object();
  return w.str();
}

std::string dump_checkpoint(const std::string& path) {
  const msd::PlannerCheckpoint c = msd::read_planner_checkpoint(path);
  msd::JsonWriter w;
  w.begin_object().value("step", c.step).begin_array("sources");
  for (uint32_t s = 0; s < c.source_samples.size(); ++s) {
    w.begin_object()
        .value("samples", c.source_samples[s])
        .value("consumed", c.consumed[s])
        .value("key", c.stream_keys.empty() ? s : c.stream_keys[s])
        .begin_array("eras");
    if (s < c.stream_eras.size())
      for (const msd::StreamEra& e : c.stream_eras[s])
        w.begin_object()
            .value("begin", e.begin)
            .value("tail", e.tail)
            .value("first_epoch", e.first_epoch)
            .value("samples", e.samples)
            .end_object();
    w.end_array().end_object();
  }
  w.end_array().end_object();
  return w.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "trace" && std::string(argv[1]) != "checkpoint")) {
    std::fprintf(stderr, "usage: mix_dump trace|checkpoint FILE\n");
    return 2;
  }
  try {
    std::cout << (std::string(argv[1]) == "trace" ? dump_trace(argv[2]) : dump_checkpoint(argv[2])) << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mix_dump: %s\n", e.what());
    return 1;
  }
  return 0;
}
