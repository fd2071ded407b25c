// The owner lock of a checkpoint directory (checkpoint/ownership.h): held
// while the object lives, refused to a second holder, removed when it ends,
// and its refresher thread stopped at once, not after its 30 s wait (build/tsan
// runs this case too: the thread's start and stop under ThreadSanitizer).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <string>

#include "checkpoint/ownership.h"
#include "common/error.h"
#include "common/storage.h"
#include "unit/scratch.h"

using namespace msd;

TEST_CASE("owner lock: held while it lives, refused to a second holder, released at once", "[ownership]") {
  const test::TempDir dir;
  const std::string path = dir / "checkpoints/msd.lock";
  for (int round = 0; round < 5; ++round) {
    const auto begin = std::chrono::steady_clock::now();
    {
      const OwnerLock lock(path, "checkpoint.dir");
      const LockOwner owner = read_lock_owner(path);
      CHECK(owner.pid == static_cast<long>(::getpid()));
      CHECK(owner.host == this_lock_owner().host);
      CHECK_THROWS_AS(OwnerLock(path, "checkpoint.dir"), ConfigError);
      CHECK_THROWS_WITH(OwnerLock(path, "checkpoint.dir"),
                        Catch::StartsWith("checkpoint.dir: " + path + " is held by another job"));
    }
    CHECK_FALSE(file_exists(path));
    // The destructor wakes the refresher instead of waiting out kRefresh.
    CHECK(std::chrono::steady_clock::now() - begin < OwnerLock::kRefresh / 3);
  }
}
