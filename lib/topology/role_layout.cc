// Which world rank plays which role, node by node (docs/layout.md).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "common/error.h"
#include "topology/role_layout.h"

namespace msd {

std::vector<int> consecutive_nodes(int world_size, int ranks_per_node) {
  std::vector<int> nodes(static_cast<size_t>(world_size), 0);
  if (ranks_per_node > 0)
    for (int r = 0; r < world_size; ++r) nodes[static_cast<size_t>(r)] = r / ranks_per_node;
  return nodes;
}

namespace {

// World ranks per node, nodes in the order of their lowest rank.
std::vector<std::vector<int>> ranks_by_node(const std::vector<int>& node_of_rank) {
  std::map<int, size_t> index;  // node id -> position
  std::vector<std::vector<int>> nodes;
  for (size_t r = 0; r < node_of_rank.size(); ++r) {
    auto [it, fresh] = index.emplace(node_of_rank[r], nodes.size());
    if (fresh) nodes.emplace_back();
    nodes[it->second].push_back(static_cast<int>(r));
  }
  return nodes;
}

// The world ranks of the planner (first) and loaders, ascending.
std::vector<int> data_slots(const std::vector<std::vector<int>>& nodes, int data_ranks, DataRanks placement) {
  std::vector<int> slots;
  const int node_count = static_cast<int>(nodes.size());
  if (placement == DataRanks::first) {
    for (int r = 0; r < data_ranks; ++r) slots.push_back(r);
  } else if (placement == DataRanks::per_node) {
    // Node k's quota; a node too small for its share passes the rest on,
    // the last node's leftover going back to the first nodes with room.
    std::vector<int> take(nodes.size(), 0);
    int left = data_ranks;
    for (int pass = 0; pass < 2 && left > 0; ++pass)
      for (int k = 0; k < node_count && left > 0; ++k) {
        const int size = static_cast<int>(nodes[static_cast<size_t>(k)].size());
        const int want = pass == 0 ? data_ranks / node_count + (k < data_ranks % node_count ? 1 : 0) : left;
        const int more = std::min({want, left, size - take[static_cast<size_t>(k)]});
        take[static_cast<size_t>(k)] += more;
        left -= more;
      }
    for (int k = 0; k < node_count; ++k)
      slots.insert(slots.end(), nodes[static_cast<size_t>(k)].begin(),
                   nodes[static_cast<size_t>(k)].begin() + take[static_cast<size_t>(k)]);
  } else {
    for (const auto& node : nodes) {
      if (static_cast<int>(slots.size()) >= data_ranks) break;
      slots.insert(slots.end(), node.begin(), node.end());
    }
    if (static_cast<int>(slots.size()) != data_ranks || node_count < 2)
      throw ConfigError(str("topology.data_ranks = dedicated_nodes: the ", data_ranks,
                            " planner and loader ranks (1 + topology.loaders + topology.shadow_loaders) must fill "
                            "whole nodes and leave nodes to the clients, but the job has ",
                            node_count, " node(s) of ", nodes.front().size(),
                            " ranks (the first); change topology.loaders or use per_node or first"));
  }
  std::sort(slots.begin(), slots.end());
  return slots;
}

// Client indexes in placement order: TP x CP group by group (ordered by the
// group's first client), cp then tp inside a group. For the default order
// (tp fastest, then cp) this is client-index order.
std::vector<int> placement_order(const ClientPlaceTree& tree) {
  std::vector<std::tuple<int, int, int, int>> keys;
  for (int c = 0; c < tree.size(); ++c) {
    Place base = tree.place(c);
    const Place p = base;
    base.tp = 0;
    base.cp = 0;
    keys.emplace_back(tree.client(base), p.cp, p.tp, c);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<int> order;
  for (const auto& key : keys) order.push_back(std::get<3>(key));
  return order;
}

}  // namespace

RoleLayout::RoleLayout(int loader_count, int shadow_count, int client_count, bool is_colocated)
    : RoleLayout(loader_count, shadow_count, ClientPlaceTree(client_count, 1, 1, 1), is_colocated,
                 std::vector<int>(static_cast<size_t>(is_colocated ? client_count
                                                                   : 1 + loader_count + shadow_count + client_count),
                                  0),
                 DataRanks::first) {}

RoleLayout::RoleLayout(int loader_count, int shadow_count, const ClientPlaceTree& tree, bool is_colocated,
                       const std::vector<int>& node_of_rank, DataRanks placement)
    : loaders(loader_count), shadows(shadow_count), clients(tree.size()), colocated(is_colocated) {
  MSD_CHECK(static_cast<int>(node_of_rank.size()) == world_size());
  const auto nodes = ranks_by_node(node_of_rank);
  nodes_ = static_cast<int>(nodes.size());
  node_of_rank_.assign(node_of_rank.size(), 0);
  for (size_t k = 0; k < nodes.size(); ++k)
    for (int r : nodes[k]) node_of_rank_[static_cast<size_t>(r)] = static_cast<int>(k);
  const int data = colocated ? 0 : 1 + loader_ranks();
  place(tree, nodes, data_slots(nodes, data, placement));
}

void RoleLayout::place(const ClientPlaceTree& tree, const std::vector<std::vector<int>>& nodes,
                       const std::vector<int>& data) {
  const size_t world = static_cast<size_t>(world_size());
  role_of_rank_.assign(world, Role::client);
  index_of_rank_.assign(world, -1);
  if (!data.empty()) {
    MSD_CHECK(data.front() == 0);  // the planner is world rank 0
    role_of_rank_[0] = Role::planner;
    for (size_t i = 1; i < data.size(); ++i) {
      role_of_rank_[static_cast<size_t>(data[i])] = Role::loader;
      index_of_rank_[static_cast<size_t>(data[i])] = static_cast<int>(rank_of_loader_.size());
      rank_of_loader_.push_back(data[i]);
    }
  }
  const std::set<int> taken(data.begin(), data.end());
  const std::vector<int> order = placement_order(tree);
  rank_of_client_.assign(order.size(), -1);
  size_t next = 0;
  for (const auto& node : nodes)
    for (int r : node) {
      if (taken.count(r)) continue;
      MSD_CHECK(next < order.size());
      rank_of_client_[static_cast<size_t>(order[next])] = r;
      index_of_rank_[static_cast<size_t>(r)] = order[next++];
    }
  MSD_CHECK(next == order.size());
}

Role RoleLayout::role(int world_rank) const { return role_of_rank_.at(static_cast<size_t>(world_rank)); }

int groups_split_across_nodes(const RoleLayout& layout, const ClientPlaceTree& tree, bool with_cp) {
  std::map<int, std::set<int>> nodes_of_group;  // group's first client -> nodes
  for (int c = 0; c < tree.size(); ++c) {
    Place base = tree.place(c);
    base.tp = 0;
    if (with_cp) base.cp = 0;
    nodes_of_group[tree.client(base)].insert(layout.node(layout.client_rank(c)));
  }
  int split = 0;
  for (const auto& [group, nodes] : nodes_of_group) split += nodes.size() > 1 ? 1 : 0;
  return split;
}

std::string format_layout_line(const RoleLayout& layout, const ClientPlaceTree& tree, int world_rank) {
  const Role role = layout.role(world_rank);
  const int index = role == Role::planner ? 0 : layout.client_index(world_rank);
  char line[128];
  if (role == Role::client) {
    const Place p = tree.place(index);
    std::snprintf(line, sizeof line, "%6d %4d %-7s %5d %4d %4d %4d %4d", world_rank, layout.node(world_rank),
                  role_name(role), index, p.dp, p.pp, p.cp, p.tp);
  } else {
    std::snprintf(line, sizeof line, "%6d %4d %-7s %5d", world_rank, layout.node(world_rank), role_name(role), index);
  }
  return line;
}

std::string format_layout(const RoleLayout& layout, const ClientPlaceTree& tree, DataRanks placement) {
  std::string out = str("# world_size ", layout.world_size(), ", nodes ", layout.nodes(), ", data_ranks ",
                        option_name(placement), ", TP groups split across nodes ",
                        groups_split_across_nodes(layout, tree, false), ", CP groups split across nodes ",
                        groups_split_across_nodes(layout, tree, true), "\n");
  out += "# rank node role    index   dp   pp   cp   tp\n";
  for (int r = 0; r < layout.world_size(); ++r) out += format_layout_line(layout, tree, r) + "\n";
  return out;
}

}  // namespace msd
