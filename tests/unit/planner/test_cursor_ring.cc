// The planner's per-sample bookkeeping (planner/cursor_ring.h) against a
// std::map doing the same operations: lookups, inserts at either end and in
// the middle, erases anywhere, erase_from and ordered iteration agree.
#include <catch2/catch.hpp>

#include <map>

#include "common/digest.h"
#include "planner/cursor_ring.h"

namespace {
std::vector<std::pair<uint64_t, int>> contents(const msd::CursorRing<int>& ring) {
  std::vector<std::pair<uint64_t, int>> out;
  ring.for_each([&](uint64_t cursor, int value) { out.push_back({cursor, value}); });
  return out;
}
}  // namespace

TEST_CASE("cursor ring behaves as an ordered map of cursors", "[ring]") {
  msd::CursorRing<int> ring;
  std::map<uint64_t, int> model;
  uint64_t state = 7;
  for (int op = 0; op < 20000; ++op) {
    const uint64_t r = msd::splitmix64(state);
    const uint64_t cursor = 1000 + r % 64 + static_cast<uint64_t>(op / 100);  // a window that slides up
    switch ((r >> 32) % 5) {
      case 0:
      case 1:
        ring.insert(cursor, op);
        model[cursor] = op;
        break;
      case 2:
        CHECK(ring.erase(cursor) == (model.erase(cursor) > 0));
        break;
      case 3: {
        const int* found = ring.find(cursor);
        auto it = model.find(cursor);
        REQUIRE((found != nullptr) == (it != model.end()));
        if (found) CHECK(*found == it->second);
        CHECK(ring.any_from(cursor) == (model.lower_bound(cursor) != model.end()));
        break;
      }
      default:
        if (r % 97 == 0) {  // rarely: drop everything from a cursor on, in order
          std::vector<std::pair<uint64_t, int>> dropped;
          ring.erase_from(cursor, [&](uint64_t c, int v) { dropped.push_back({c, v}); });
          std::vector<std::pair<uint64_t, int>> want(model.lower_bound(cursor), model.end());
          model.erase(model.lower_bound(cursor), model.end());
          CHECK(dropped == want);
        }
    }
    REQUIRE(ring.size() == model.size());
  }
  CHECK(contents(ring) == std::vector<std::pair<uint64_t, int>>(model.begin(), model.end()));
}

TEST_CASE("pending requests per source, in source then cursor order", "[ring]") {
  msd::PendingRequests pending;
  pending.add({1, 10, 100});
  pending.add({0, 12, 120});
  pending.add({1, 11, 110});
  pending.add({0, 5, 50});
  CHECK(pending.size() == 4);
  CHECK(pending.of_source(0) == 2);
  CHECK(pending.any_from(1, 11));
  CHECK_FALSE(pending.any_from(1, 12));
  CHECK_FALSE(pending.answer(1, 12));  // never asked
  CHECK(pending.answer(1, 10));
  CHECK_FALSE(pending.answer(1, 10));  // answered already
  const auto items = pending.items();
  REQUIRE(items.size() == 3);
  CHECK((items[0].source == 0 && items[0].cursor == 5 && items[0].index == 50));
  CHECK((items[1].source == 0 && items[1].cursor == 12));
  CHECK((items[2].source == 1 && items[2].cursor == 11 && items[2].index == 110));
  pending.clear();
  CHECK(pending.empty());
  CHECK(pending.of_source(1) == 0);
}
