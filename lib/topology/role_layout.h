// Where each role of a job sits: the planner, the loaders and the clients
// over MPI_COMM_WORLD and its nodes (docs/layout.md). msd's own; a trainer
// sees only its place in the mesh (msd/place_tree.h).
#pragma once

#include <string>
#include <vector>

#include "msd/options.h"  // DataRanks
#include "msd/place_tree.h"

namespace msd {

// Where each role sits in MPI_COMM_WORLD and on which node. Built once per job
// from the node of every world rank (MPI_COMM_TYPE_SHARED, or
// topology.ranks_per_node when planning offline); every rank computes the same
// table from the same inputs. Clients fill the slots the data ranks leave, node
// by node, in the order of their TP x CP groups, so a TP group (then a CP
// group) lies inside one node whenever every node's client slots are a
// multiple of its size. Immutable after construction; MPI-free.
class RoleLayout {
 public:
  // One node, data ranks first: planner 0, loaders 1..loaders+shadows, then
  // clients in client-index order (colocated: clients only).
  RoleLayout(int loaders, int shadows, int clients, bool colocated);
  // node_of_rank[r]: any id naming world rank r's node (size = world_size()).
  // Throws ConfigError when `placement` cannot be honoured (dedicated_nodes
  // with data ranks that do not fill whole nodes).
  RoleLayout(int loaders, int shadows, const ClientPlaceTree& tree, bool colocated,
             const std::vector<int>& node_of_rank, DataRanks placement);

  int loaders = 1;  // active loaders (topology.loaders)
  int shadows = 0;  // shadow loaders (topology.shadow_loaders)
  int clients = 1;
  bool colocated = false;  // colocated baseline: clients only

  int loader_ranks() const { return colocated ? 0 : loaders + shadows; }
  int world_size() const { return colocated ? clients : 1 + loader_ranks() + clients; }
  Role role(int world_rank) const;
  int planner_rank() const { return 0; }
  // Loader index i in [0, loaders + shadows): indexes >= loaders are shadows.
  // Loader indexes ascend with world ranks.
  int loader_rank(int loader_index) const { return rank_of_loader_.at(static_cast<size_t>(loader_index)); }
  int loader_index(int world_rank) const { return index_of_rank_.at(static_cast<size_t>(world_rank)); }
  bool is_shadow(int loader_index) const { return loader_index >= loaders; }
  int client_rank(int client_index) const { return rank_of_client_.at(static_cast<size_t>(client_index)); }
  int client_index(int world_rank) const { return index_of_rank_.at(static_cast<size_t>(world_rank)); }

  // Nodes are numbered 0.. in the order of their lowest world rank.
  int node(int world_rank) const { return node_of_rank_.at(static_cast<size_t>(world_rank)); }
  int nodes() const { return nodes_; }

 private:
  void place(const ClientPlaceTree& tree, const std::vector<std::vector<int>>& node_ranks,
             const std::vector<int>& data_slots);

  int nodes_ = 1;
  std::vector<Role> role_of_rank_;
  std::vector<int> index_of_rank_;  // loader or client index of each world rank; -1: planner
  std::vector<int> rank_of_loader_, rank_of_client_, node_of_rank_;
};

// Node of each of `world_size` ranks when every `ranks_per_node` consecutive
// ranks share a node (mpirun's default by-slot mapping); 0: all on one node.
std::vector<int> consecutive_nodes(int world_size, int ranks_per_node);

// Groups along the axes `tp` or `tp,cp` (the clients sharing every other
// coordinate) whose members sit on more than one node.
int groups_split_across_nodes(const RoleLayout& layout, const ClientPlaceTree& tree, bool with_cp);

// The text `msd-run --print-layout` prints: a header, then one line per world
// rank: rank, node, role, loader or client index, and a client's dp pp cp tp.
std::string format_layout(const RoleLayout& layout, const ClientPlaceTree& tree, DataRanks placement);
// One of those lines, without the line break.
std::string format_layout_line(const RoleLayout& layout, const ClientPlaceTree& tree, int world_rank);

}  // namespace msd
