// The summary's "startup" object (docs/summary.md): where each role's
// start-up went, from every rank's StartupFigures.
#pragma once

#include <vector>

#include "common/json_writer.h"
#include "runtime/report.h"

namespace msd {

// Writes "startup": per role (planner, loaders, clients) each start-up point
// and the memory and descriptors held at its end, as min, mean and max over
// the role's ranks; origin_unix_s (the earliest Job construction) and
// first_batch_unix_s (the last client's first batch) on the system clock.
void write_startup_json(JsonWriter& w, const std::vector<RoleStats>& stats);

}  // namespace msd
