// msd/place_tree.h — the trainer's device mesh (dp x pp x cp x tp) as the data
// loader sees it: which client ranks need different samples, slices of the same
// sequences, or identical data (Job::tree()), and the roles of a job's ranks
// (Job::role()). Where each role sits in the MPI job is msd's own
// (lib/topology/role_layout.h).
#pragma once

#include <array>
#include <string>
#include <vector>

namespace msd {

enum class Axis { tp = 0, cp = 1, dp = 2, pp = 3 };
const char* axis_name(Axis axis);

// Coordinates of one client (training) rank in the mesh.
struct Place {
  int dp = 0, pp = 0, cp = 0, tp = 0;
  int get(Axis axis) const;
  bool operator==(const Place&) const = default;
};

// Pure arithmetic, MPI-free. Client index c (0 .. size()-1) is the rank of the
// client among all clients; the rank order says which axis varies fastest
// (default "tp,cp,dp,pp": Megatron's, tp fastest).
class ClientPlaceTree {
 public:
  // Throws ConfigError for a dimension < 1 or an order that is not a
  // permutation of tp, cp, dp, pp.
  ClientPlaceTree(int dp, int pp, int cp, int tp, const std::string& order = "tp,cp,dp,pp");

  int size() const { return dp_ * pp_ * cp_ * tp_; }
  int dim(Axis axis) const;
  Place place(int client) const;
  int client(const Place& place) const;

  // Ranks that need different samples: one data group per DP index. Every
  // client of group d (all its pp, cp, tp peers) works on group d's batch.
  int data_groups() const { return dp_; }
  int data_group(int client) const { return place(client).dp; }
  std::vector<int> group_members(int data_group) const;  // sorted client indices

  // The ranks that share all coordinates but `axis` (the members of that
  // axis's sub-communicator), ordered by their coordinate on `axis`.
  std::vector<int> axis_peers(int client, Axis axis) const;

  // TP leader of a client's TP group (tp == 0): the one that fetches when
  // data is shared within TP.
  bool is_tp_leader(int client) const { return place(client).tp == 0; }
  bool is_first_stage(int client) const { return place(client).pp == 0; }
  bool is_last_stage(int client) const { return place(client).pp == pp_ - 1; }

 private:
  int dp_, pp_, cp_, tp_;
  std::array<Axis, 4> order_;   // fastest first
  std::array<int, 4> stride_;   // indexed by Axis
};

enum class Role { planner, loader, client };
const char* role_name(Role role);

}  // namespace msd
