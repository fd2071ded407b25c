// The integrity record of an HDF5 file msd writes — planner and loader
// checkpoints and the trace's header (docs/checkpoint.md, "Integrity").
//
// Sealing digests every item at the file's root — each attribute, then each
// dataset, in name order — and stores the names (@integrity_items), one
// digest per item (/integrity_digests) and a running digest over the (name,
// digest) pairs in that order (@integrity_digest). An item's digest covers its
// type class, element size, element count, compound member names and its
// values in a canonical form (native little-endian numbers, compound rows
// without padding, fixed-length strings as stored). Checking recomputes every
// digest and names the first item that differs, so any single changed value
// is found and located. The trace chains its appended steps onto
// @integrity_digest (trace.h).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace msd {

// Seals the items at `root`, except those named in `unsealed` (the trace's
// growing tables, which its step chain covers). Call after the last item is
// written. Throws IoError.
void seal_file(hid_t root, std::span<const std::string> unsealed = {});

// Checks a sealed root: nullopt when every item matches its record; else
// where the file was changed and how ("attribute @seed: its contents differ
// from the integrity record"). A file without a record is reported too.
// Throws IoError only for an unreadable file.
std::optional<std::string> check_seal(hid_t root, std::span<const std::string> unsealed = {});

// @integrity_digest of a sealed root. Throws IoError.
uint64_t seal_digest(hid_t root);

}  // namespace msd
