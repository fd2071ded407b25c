// The upper bound on every count, size, wait and number an option holds, and
// the options that do nothing without another one (docs/errors.md "Checked
// before any work"). Internal to lib/config: validate() calls it.
#pragma once

#include <cstdint>

#include "msd/config.h"

namespace msd {

// Steps are named with 12 digits in checkpoint files (docs/checkpoint.md).
inline constexpr uint64_t kMaxSteps = 999'999'999'999;

// Throws ConfigError naming the first option out of its bounds (a count, a
// size, a wait or a weight; numbers are finite), or set although what it
// needs is not (tokenizer.eod_token without tokenizer.append_eod, ...).
void validate_bounds(const Config& config);

}  // namespace msd
