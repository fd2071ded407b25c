#include <catch2/catch.hpp>

#include <set>

#include "common/error.h"
#include "msd/place_tree.h"

using namespace msd;

TEST_CASE("place tree maps client indices to coordinates and back") {
  ClientPlaceTree tree(4, 2, 2, 2);
  REQUIRE(tree.size() == 32);
  std::set<std::tuple<int, int, int, int>> seen;
  for (int c = 0; c < tree.size(); ++c) {
    Place p = tree.place(c);
    REQUIRE(tree.client(p) == c);
    seen.insert({p.dp, p.pp, p.cp, p.tp});
  }
  REQUIRE(seen.size() == 32);
  // Default order: tp fastest, then cp, dp, pp.
  REQUIRE(tree.place(1) == Place{0, 0, 0, 1});
  REQUIRE(tree.place(2) == Place{0, 0, 1, 0});
  REQUIRE(tree.place(4) == Place{1, 0, 0, 0});
  REQUIRE(tree.place(16) == Place{0, 1, 0, 0});
}

TEST_CASE("a custom rank order changes which axis varies fastest") {
  ClientPlaceTree tree(2, 1, 1, 2, "dp,tp,cp,pp");
  REQUIRE(tree.place(1) == Place{1, 0, 0, 0});
  REQUIRE(tree.place(2) == Place{0, 0, 0, 1});
}

TEST_CASE("data groups and axis peers") {
  ClientPlaceTree tree(2, 2, 1, 2);
  auto members = tree.group_members(1);
  REQUIRE(members.size() == 4);
  for (int c : members) REQUIRE(tree.data_group(c) == 1);
  auto tp_peers = tree.axis_peers(5, Axis::tp);
  REQUIRE(tp_peers.size() == 2);
  for (int c : tp_peers) {
    REQUIRE(tree.place(c).dp == tree.place(5).dp);
    REQUIRE(tree.place(c).pp == tree.place(5).pp);
  }
  REQUIRE(tree.is_tp_leader(tp_peers[0]));
  REQUIRE_FALSE(tree.is_tp_leader(tp_peers[1]));
}

TEST_CASE("bad dimensions and orders are configuration errors") {
  REQUIRE_THROWS_AS(ClientPlaceTree(0, 1, 1, 1), ConfigError);
  REQUIRE_THROWS_AS(ClientPlaceTree(1, 1, 1, 1, "tp,cp,dp"), ConfigError);
  REQUIRE_THROWS_AS(ClientPlaceTree(1, 1, 1, 1, "tp,tp,dp,pp"), ConfigError);
  REQUIRE_THROWS_AS(ClientPlaceTree(1, 1, 1, 1, "tp,cp,dp,xx"), ConfigError);
}

TEST_CASE("role layout puts the planner first, then loaders, then clients") {
  RoleLayout layout{3, 0, 4, false};
  REQUIRE(layout.world_size() == 8);
  REQUIRE(layout.role(0) == Role::planner);
  REQUIRE(layout.role(1) == Role::loader);
  REQUIRE(layout.role(3) == Role::loader);
  REQUIRE(layout.role(4) == Role::client);
  REQUIRE(layout.client_index(4) == 0);
  REQUIRE(layout.client_rank(3) == 7);
  RoleLayout colocated{0, 0, 4, true};
  REQUIRE(colocated.world_size() == 4);
  RoleLayout shadowed{2, 1, 2, false};
  REQUIRE(shadowed.world_size() == 6);
  REQUIRE(shadowed.role(3) == Role::loader);
  REQUIRE(shadowed.is_shadow(shadowed.loader_index(3)));
  REQUIRE_FALSE(shadowed.is_shadow(shadowed.loader_index(2)));
  REQUIRE(shadowed.client_rank(0) == 4);
  REQUIRE(colocated.world_size() == 4);
  REQUIRE(colocated.role(0) == Role::client);
}
