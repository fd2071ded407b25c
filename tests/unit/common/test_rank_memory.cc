// The summary's loader_rank_memory_bytes rests on sample_anon_shmem()
// (runtime/context.h): a rank's anonymous pages and the shared pages it
// touched (a node-shared window's) raise its peak; freeing them does not
// lower it.
#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <cstring>
#include <memory>

#include "common/memory.h"

namespace {
constexpr uint64_t kBlockBytes = 16u << 20;
}

TEST_CASE("the anonymous and shared memory peak counts touched pages and never drops", "[memory]") {
  msd::sample_anon_shmem(true);
  const uint64_t start = msd::peak_anon_shmem_bytes();
  REQUIRE(start > 0);  // heap and stacks: every process has some
  {
    auto anonymous = std::make_unique<char[]>(kBlockBytes);
    std::memset(anonymous.get(), 1, kBlockBytes);
    msd::sample_anon_shmem(true);
  }
  const uint64_t after_anonymous = msd::peak_anon_shmem_bytes();
  CHECK(after_anonymous >= start + kBlockBytes);
  // The block is freed (unmapped, here; an allocator that keeps freed
  // memory, as AddressSanitizer's quarantine does, keeps it resident): the
  // peak stays at least where it was, though the process now holds less.
  msd::sample_anon_shmem(true);
  CHECK(msd::peak_anon_shmem_bytes() >= after_anonymous);

  // Shared memory, as an MPI_Win_allocate_shared segment is, counts only
  // once touched: mapped and untouched it adds nothing.
  void* shared = mmap(nullptr, 2 * kBlockBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(shared != MAP_FAILED);
  msd::sample_anon_shmem(true);
  CHECK(msd::peak_anon_shmem_bytes() < after_anonymous + kBlockBytes);
  std::memset(shared, 1, 2 * kBlockBytes);
  msd::sample_anon_shmem(true);
  CHECK(msd::peak_anon_shmem_bytes() >= after_anonymous + kBlockBytes / 2);  // 2 blocks in, 1 block out
  munmap(shared, 2 * kBlockBytes);
}
