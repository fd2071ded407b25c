// The names of data and of msd's own files: glob expansion of the sources'
// paths and the files msd keeps beside data. The I/O itself is the storage
// seam's (common/storage.h, included here for the callers of its
// whole-file helpers).
#pragma once

#include <string>
#include <vector>

#include "common/storage.h"

namespace msd {

// Expands comma-separated glob patterns into a sorted, de-duplicated list of
// regular files. A pattern that matches nothing throws ConfigError naming it
// and `what` (e.g. "source.web.path"), and so does one that matches msd's own
// files (is_msd_own_file): they are never data.
// Globs go through `storage`.
std::vector<std::string> expand_globs(const std::string& patterns, const std::string& what,
                                      Storage& storage = default_storage());

// msd's own files beside data: index caches live in a hidden folder there
// (no glob such as `*` matches them), as "<data file>.msdidx"; a file being
// written is "<path>.tmp.<pid>" until its rename (write_file_atomic).
inline constexpr char kIndexCacheFolder[] = ".msd";
inline constexpr char kIndexCacheSuffix[] = ".msdidx";
// Whether `path` names an index cache or a temporary file of
// write_file_atomic, by its name.
bool is_msd_own_file(const std::string& path);
// The comma-separated items of `patterns`, as written (not trimmed; an empty
// text is one empty item).
std::vector<std::string> split_patterns(const std::string& patterns);

}  // namespace msd
