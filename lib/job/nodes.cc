#include "job/nodes.h"

#include "plan/step/modes.h"
#include "transport/mpi.h"

namespace msd {

std::vector<int> node_of_each_rank(MPI_Comm world, int ranks_per_node) {
  Comm all = Comm::duplicate(world, "duplicating the world to find its nodes");
  if (ranks_per_node > 0) return consecutive_nodes(all.size(), ranks_per_node);
  const Comm node = Comm::split_by_node(all.get(), "grouping ranks by node (MPI_COMM_TYPE_SHARED)");
  int leader = all.rank();  // the lowest world rank on this node names it
  MSD_MPI(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node.get()), "naming this node");
  std::vector<int> nodes(static_cast<size_t>(all.size()), 0);
  MPI_Request request;
  MSD_MPI(MPI_Iallgather(&leader, 1, MPI_INT, nodes.data(), 1, MPI_INT, all.get(), &request),
          "sharing every rank's node");
  wait(request, "sharing every rank's node");
  return nodes;
}

RoleLayout plan_layout(const Config& config, const std::vector<int>& node_of_rank) {
  const auto& topo = config.topology;
  const ClientPlaceTree tree(topo.dp, topo.pp, topo.cp, topo.tp, topo.order);
  return RoleLayout(topo.loaders, topo.shadow_loaders, tree, trainers_load(config.job.mode()),
                    node_of_rank,
                    topo.data_ranks);
}

RoleLayout plan_layout(const Config& config) {
  return plan_layout(config, consecutive_nodes(config.world_size(), config.topology.ranks_per_node));
}

}  // namespace msd
