#include "bench/step_stream.h"

#include <memory>

#include "common/error.h"
#include "config/part_options.h"
#include "plan/step/mix.h"
#include "plan/step/modes.h"
#include "source/permutation.h"
#include "source/source.h"
#include "transform/transform.h"

namespace msd::bench {

std::vector<StepDocuments> job_step_documents(const Config& config, uint64_t steps) {
  std::vector<std::unique_ptr<Source>> sources;
  std::vector<ShuffleOrder> orders;
  SourceOptions source_options;
  source_options.cache_dir = config.loader.cache_dir;
  bool text = false;
  for (const SourceConfig& source : config.sources) {
    std::vector<std::string> files = source_files(source);
    orders.push_back(shuffle_order(source, files));
    sources.push_back(open_source(source, std::move(files), source_options));
    text = text || source.format != "indexed";
  }
  std::unique_ptr<Tokenizer> tokenizer;
  if (text)
    tokenizer = open_tokenizer(config.tokenizer);
  SampleTransform transform(tokenizer.get(), ImageOptions{config.image.max_side, config.image.patch});
  Mixer mixer(make_schedule(config), config.job.global_batch);
  std::vector<uint64_t> cursor(sources.size(), 0);
  std::vector<StepDocuments> out;
  RawSample raw;
  TransformedSample sample;
  for (uint64_t step = 0; step < steps; ++step) {
    const std::vector<uint32_t> quota = mixer.next();
    std::vector<PlanDoc> docs;
    StepDocuments result;
    for (uint32_t s = 0; s < quota.size(); ++s) {
      for (uint32_t taken = 0, failures = 0; taken < quota[s];) {
        const StreamPosition pos = stream_position(config.job.seed, s, sources[s]->size(), cursor[s]++, orders[s]);
        sources[s]->read(pos.index, raw);
        std::string reason;
        if (raw.bad != BadKind::none || transform.apply(raw, sample, reason) != BadKind::none) {
          if (++failures >= 2 * sources[s]->size())
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
