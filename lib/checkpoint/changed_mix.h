// A resume with a changed mixture (docs/checkpoint.md, "Resume with a changed
// mixture"): the weights changed, a source was added or removed, or files
// were added to or removed from a source. `--resume` refuses such a change
// unless checkpoint.accept_changed_mix; then the checkpoint's state is
// carried into the new configuration by continue_with_changed_mix, a pure
// function of the checkpoint, the new configuration and its data, and the
// run resumes from that as from any checkpoint. msd-replay does the same to
// plan across the change.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "checkpoint/planner_checkpoint.h"
#include "msd/config.h"
#include "source/fingerprint.h"
#include "source/permutation.h"

namespace msd {

// Option -> value of an INI text written by to_ini ("section.key" keys).
std::map<std::string, std::string> ini_values(const std::string& ini);

// Options that do not change which documents a step holds (how fast or by
// whom they are read, and the mesh): a resume may change them freely
// (docs/checkpoint.md, "What a resume may change").
bool stream_independent(const std::string& key);

// What a resume under `config`, over `data` (the data now), changes against
// the run that wrote `checkpoint`; the seed is not compared here.
struct ResumeChanges {
  // The first option that changed and may not, as "KEY was 'A' in the run
  // that wrote the checkpoint at step N and is 'B' now", or a kept source
  // whose shuffle order (source.NAME.shuffle and its block options, as they
  // resolve over its files then and now) differs; empty: none.
  std::string refused;
  // The mixture's changes, one line each: weights (source.NAME.weight,
  // mix.schedule), sources added or removed or reordered (mix.sources), a
  // source's path and the files it adds, removes or changes (matched by
  // name, size and contents).
  std::vector<std::string> mix;
  // Whether a source kept across the change has other files now (included
  // in `mix`; without accept_changed_mix, accept_changed_data may still
  // take them as the same data).
  bool files_changed = false;
  bool options_changed = false;  // a weight, the schedule or the source list
};
ResumeChanges resume_changes(const PlannerCheckpoint& checkpoint, const Config& config, const DataFingerprint& data);

// Each source's shuffle order (shuffle_order, source.h) under `config` over
// the files `data` lists for it (the globs' own names where it lists none):
// what the run's streams take, and a changed mixture's continued ones.
std::vector<ShuffleOrder> shuffle_orders(const Config& config, const DataFingerprint& data);

// The state from which the checkpoint's run continues under `config`, over
// `data` (which records each file's samples), as a checkpoint of the same
// step in `config`'s terms:
//   - a source kept keeps its cursor, stream key and realized total; when its
//     files changed, its stream gets an era (StreamOrder::changed): the rest
//     of the epoch in progress over its remaining documents and the added
//     ones, the removed files' unconsumed documents dropped;
//   - a source added starts at cursor 0 with a new stream key; a removed one
//     stops;
//   - the mixer's targets restart at the realized totals (mixer_origin), so
//     the new weights hold from the resume step on and no source is behind
//     or ahead of them;
//   - documents the outlier hold keeps stay held unless their source or file
//     is gone; the samples in flight and the loader assignment are dropped
//     (they are requested and assigned again).
// `lines` receives the warning: every change, and per removed file how many
// of its documents were dropped. Throws ConfigError naming the source when
// its files changed and the checkpoint does not record their samples
// (format version < 5), or when `data` lacks them.
PlannerCheckpoint continue_with_changed_mix(const PlannerCheckpoint& checkpoint, const Config& config,
                                            const DataFingerprint& data, std::vector<std::string>& lines);

}  // namespace msd
