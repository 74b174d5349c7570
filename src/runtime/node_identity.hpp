// Ranks grouped as one node (by hostname or BLINK_NODE_ID) must really share shared
// memory before anything relies on it: a BLINK_NODE_ID given to ranks of different
// machines, or hosts that share a name, would otherwise fail deep inside a transport
// (shm_open: No such file or directory) or, worse, on every call. The proof is a
// token: local rank 0 of each node writes random bytes into a fresh segment, the
// other ranks of its node open the segment by name and compare.
#pragma once

#include <mpi.h>

#include "runtime/rank_layout.hpp"

namespace blink::runtime {

// Collective over `comm` (with `node_comm` its ranks on this node). Returns when
// every node's ranks share shared memory; otherwise throws CollectiveError
// (blinkInvalidUsage) on every rank, naming a rank that could not see its node's
// token, its host and the remedy. Nodes of one rank need no proof (no segment made).
void verifyNodeIdentity(MPI_Comm comm, MPI_Comm node_comm, const RankLayout& layout,
                        double timeout_seconds);

}  // namespace blink::runtime
