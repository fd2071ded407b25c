// What a process knows of its own memory: resident set size now and at its
// peak, and the peak of its anonymous and shared pages. Linux /proc and
// getrusage; MPI-free.
#pragma once

#include <cstdint>

namespace msd {

uint64_t peak_rss_bytes();
uint64_t current_rss_bytes();
// File descriptors this process holds now (entries of /proc/self/fd, the
// listing's own left out); 0 without /proc.
uint64_t open_file_descriptors();

// The most resident memory this process held outside file-backed pages, over
// the samples taken so far: RssAnon + RssShmem of /proc/self/status (heap,
// stacks, MPI's buffers, and the node-shared window pages it touched), so a
// rank's own start-up cost counts but the program and library pages that
// every process of the node maps do not (docs/summary.md). The kernel keeps
// no peak of these, so roles sample from their loops: sample_anon_shmem()
// reads /proc at most every 100 ms, or now with `now`. Thread-safe.
void sample_anon_shmem(bool now = false);
uint64_t peak_anon_shmem_bytes();

}  // namespace msd
