// Where each rank of a communicator lives: which node, and its rank on that node.
// The first step of building a Communicator; uses PMPI only, so the interposer can
// call it from inside MPI_* wrappers.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace blink::runtime {

struct RankLayout {
  int rank = 0;
  int size = 1;
  int node = 0;        // this rank's node index, 0..num_nodes-1 in order of first rank
  int local_rank = 0;  // this rank's index among the ranks of its node
  int local_size = 1;
  int num_nodes = 1;
  std::vector<int> node_of_rank;        // node index of every rank
  std::vector<int> local_rank_of_rank;  // local rank of every rank
  std::vector<std::string> node_names;  // name of each node index
};

// The name of this process's node: BLINK_NODE_ID if set (to emulate several nodes
// on one machine), else the hostname.
std::string localNodeName();

// Collective over `comm`: every rank passes its node name and gets the same layout.
// Names longer than 255 bytes are an error (blinkInvalidInput).
RankLayout computeRankLayout(MPI_Comm comm, const std::string& node_name);

}  // namespace blink::runtime
