// The job's role layout over its nodes (docs/layout.md): the node of every
// world rank, as MPI reports it or as topology.ranks_per_node plans it.
#pragma once

#include <mpi.h>

#include <vector>

#include "msd/config.h"
#include "topology/role_layout.h"

namespace msd {

// The node of every rank of `world`: with ranks_per_node > 0, consecutive
// blocks of that many ranks; otherwise the ranks sharing memory
// (MPI_COMM_TYPE_SHARED), named by their lowest world rank. Collective over
// `world` when ranks_per_node is 0; throws MpiError.
std::vector<int> node_of_each_rank(MPI_Comm world, int ranks_per_node);

// The layout `config` asks for over these nodes (node_of_rank.size() must be
// config.world_size()); throws ConfigError naming topology.data_ranks when it
// cannot be honoured.
RoleLayout plan_layout(const Config& config, const std::vector<int>& node_of_rank);

// Offline: topology.ranks_per_node (0: one node).
RoleLayout plan_layout(const Config& config);

}  // namespace msd
