#include "bench/step_stream.h"

#include <memory>

#include "common/error.h"
#include "config/part_options.h"
#include "plan/step/mix.h"
#include "plan/step/modes.h"
#include "source/permutation.h"
#include "pipeline/pipeline.h"

namespace msd::bench {

std::vector<StepDocuments> job_step_documents(const Config& config, uint64_t steps) {
  SamplePipeline pipeline(pipeline_options(config));
  pipeline.open_all();
  Mixer mixer(make_schedule(config), config.job.global_batch);
  std::vector<uint64_t> cursor(pipeline.source_count(), 0);
  std::vector<StepDocuments> out;
  RawSample raw;
  TransformedSample sample;
  for (uint64_t step = 0; step < steps; ++step) {
    const std::vector<uint32_t> quota = mixer.next();
    std::vector<PlanDoc> docs;
    StepDocuments result;
    for (uint32_t s = 0; s < quota.size(); ++s) {
      for (uint32_t taken = 0, failures = 0; taken < quota[s];) {
        Source& source = *pipeline.source(s);
        const StreamPosition pos = stream_position(config.job.seed, s, source.size(), cursor[s]++, pipeline.order(s));
        source.read(pos.index, raw);
        std::string reason;
        if (raw.bad != BadKind::none || pipeline.transform().apply(raw, sample, reason) != BadKind::none) {
          if (++failures >= 2 * source.size())
            throw IoError(str("source '", config.sources[s].name, "': none of its samples can be loaded"));
          continue;
        }
        const uint32_t id = checked_cast<uint32_t>(docs.size());
        docs.push_back({id, sample.positions(), sample.image.patches, 0.0});
        result.keys.push_back(static_cast<uint64_t>(s) << 48 | pos.index);
        ++taken;
      }
    }
    for (uint32_t i : arrival_order(config.job.seed, step, checked_cast<uint32_t>(docs.size())))
      result.docs.push_back(docs[i]);
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace msd::bench
