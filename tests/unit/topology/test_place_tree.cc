#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <set>

#include "common/error.h"
#include "msd/place_tree.h"
#include "topology/role_layout.h"

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

TEST_CASE("group members are every client of the data group, ascending, in every rank order") {
  for (const char* order : {"tp,cp,dp,pp", "dp,tp,cp,pp", "pp,dp,cp,tp", "cp,pp,tp,dp"}) {
    ClientPlaceTree tree(3, 2, 2, 2, order);
    for (int g = 0; g < 3; ++g) {
      std::vector<int> expected;
      for (int c = 0; c < tree.size(); ++c)
        if (tree.place(c).dp == g) expected.push_back(c);
      CHECK(tree.group_members(g) == expected);
    }
  }
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

namespace {
// Clients per node, by node.
std::vector<int> clients_per_node(const RoleLayout& layout) {
  std::vector<int> count(static_cast<size_t>(layout.nodes()), 0);
  for (int c = 0; c < layout.clients; ++c) ++count[static_cast<size_t>(layout.node(layout.client_rank(c)))];
  return count;
}

bool all_multiples(const std::vector<int>& counts, int of) {
  return std::all_of(counts.begin(), counts.end(), [of](int n) { return n % of == 0; });
}
}  // namespace

TEST_CASE("the one-node default layout is the planner, the loaders, then clients in order") {
  for (int loaders : {1, 2, 5}) {
    ClientPlaceTree tree(2, 2, 1, 2);
    RoleLayout layout(loaders, 1, tree, false, consecutive_nodes(1 + loaders + 1 + tree.size(), 0), DataRanks::first);
    REQUIRE(layout.nodes() == 1);
    for (int i = 0; i < loaders + 1; ++i) REQUIRE(layout.loader_rank(i) == 1 + i);
    for (int c = 0; c < tree.size(); ++c) REQUIRE(layout.client_rank(c) == 2 + loaders + c);
  }
}

TEST_CASE("TP and CP groups lie inside nodes whenever the nodes' client slots allow it") {
  int checked_inside = 0;
  for (int per_node : {4, 6, 8, 10, 16})
    for (DataRanks placement : {DataRanks::first, DataRanks::per_node, DataRanks::dedicated_nodes})
      for (int loaders = 1; loaders <= 7; ++loaders)
        for (int tp : {1, 2, 4, 8})
          for (int cp : {1, 2})
            for (const char* order : {"tp,cp,dp,pp", "dp,tp,pp,cp"}) {
              ClientPlaceTree tree(4, 1, cp, tp, order);
              const int world = 1 + loaders + tree.size();
              const auto nodes = consecutive_nodes(world, per_node);
              std::optional<RoleLayout> made;
              try {
                made.emplace(loaders, 0, tree, false, nodes, placement);
              } catch (const ConfigError&) {
                // Only dedicated_nodes refuses, and only when the data ranks do not fill whole nodes.
                REQUIRE(placement == DataRanks::dedicated_nodes);
                REQUIRE(((1 + loaders) % per_node != 0 || world <= per_node));
                continue;
              }
              const RoleLayout& layout = *made;
              // Every world rank plays exactly one role; the planner is rank 0.
              std::set<int> ranks{0};
              REQUIRE(layout.role(0) == Role::planner);
              for (int i = 0; i < loaders; ++i) {
                REQUIRE(layout.role(layout.loader_rank(i)) == Role::loader);
                REQUIRE(layout.loader_index(layout.loader_rank(i)) == i);
                if (i > 0) REQUIRE(layout.loader_rank(i) > layout.loader_rank(i - 1));
                ranks.insert(layout.loader_rank(i));
              }
              for (int c = 0; c < tree.size(); ++c) {
                REQUIRE(layout.client_index(layout.client_rank(c)) == c);
                ranks.insert(layout.client_rank(c));
              }
              REQUIRE(static_cast<int>(ranks.size()) == world);
              const auto counts = clients_per_node(layout);
              if (all_multiples(counts, tp)) REQUIRE(groups_split_across_nodes(layout, tree, false) == 0);
              if (all_multiples(counts, tp * cp)) REQUIRE(groups_split_across_nodes(layout, tree, true) == 0);
              if (all_multiples(counts, tp * cp) && layout.nodes() > 1) ++checked_inside;
              if (placement == DataRanks::dedicated_nodes)
                for (int i = 0; i < loaders; ++i) REQUIRE(layout.node(layout.loader_rank(i)) < (1 + loaders) / per_node);
            }
  REQUIRE(checked_inside > 50);
}

TEST_CASE("per_node spreads the planner and loaders evenly and keeps whole TP groups per node") {
  // Two nodes of 10 ranks (8 GPUs + 2 data ranks each): planner + 3 loaders.
  ClientPlaceTree tree(2, 1, 1, 8);
  RoleLayout layout(3, 0, tree, false, consecutive_nodes(20, 10), DataRanks::per_node);
  REQUIRE(layout.nodes() == 2);
  REQUIRE(layout.loader_rank(0) == 1);
  REQUIRE(layout.loader_rank(1) == 10);
  REQUIRE(layout.loader_rank(2) == 11);
  REQUIRE(clients_per_node(layout) == std::vector<int>{8, 8});
  REQUIRE(groups_split_across_nodes(layout, tree, false) == 0);
  // The same job with the data ranks first splits the first TP group (ranks 4..11).
  RoleLayout first(3, 0, tree, false, consecutive_nodes(20, 10), DataRanks::first);
  REQUIRE(groups_split_across_nodes(first, tree, false) == 1);
  // Nodes named out of order (round-robin mapping) are numbered by their lowest rank.
  std::vector<int> round_robin;
  for (int r = 0; r < 20; ++r) round_robin.push_back(r % 2 == 0 ? 7 : 3);
  RoleLayout mapped(3, 0, tree, false, round_robin, DataRanks::per_node);
  REQUIRE(mapped.node(0) == 0);
  REQUIRE(mapped.node(1) == 1);
  REQUIRE(groups_split_across_nodes(mapped, tree, false) == 0);
}

TEST_CASE("format_layout prints one line per world rank") {
  ClientPlaceTree tree(2, 1, 1, 2);
  RoleLayout layout(1, 0, tree, false, consecutive_nodes(6, 3), DataRanks::per_node);
  const std::string text = format_layout(layout, tree, DataRanks::per_node);
  REQUIRE(text ==
          "# world_size 6, nodes 2, data_ranks per_node, TP groups split across nodes 0, CP groups split across "
          "nodes 0\n"
          "# rank node role    index   dp   pp   cp   tp\n"
          "     0    0 planner     0\n"
          "     1    0 client      0    0    0    0    0\n"
          "     2    0 client      1    0    0    0    1\n"
          "     3    1 loader      0\n"
          "     4    1 client      2    1    0    0    0\n"
          "     5    1 client      3    1    0    0    1\n");
  REQUIRE(find_option_value<DataRanks>("dedicated_nodes") == DataRanks::dedicated_nodes);
  REQUIRE(!find_option_value<DataRanks>("last"));
}
