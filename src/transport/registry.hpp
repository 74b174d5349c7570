// The transports a plan's streams can use, and which one serves a pair of ranks.
// Each transport registers what it can reach (ranks of the same node, of other
// nodes) and how to make it; the runtime asks the registry and never names a
// concrete transport. BLINK_TRANSPORT overrides the default choice.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transport/transport.hpp"

namespace blink::transport {

enum class Reach { WithinNode, BetweenNodes };

// What a transport needs to set itself up; collective over `comm`.
struct TransportSetUp {
  MPI_Comm comm = MPI_COMM_NULL;       // Blink's duplicate of the user's communicator
  MPI_Comm node_comm = MPI_COMM_NULL;  // the ranks of this node
  int rank = 0;                        // in comm
  std::vector<int> node_rank_of;       // per rank of comm: its rank in node_comm, -1 elsewhere
  std::vector<int> local_rank_of;      // per rank of comm: its rank within its own node
  std::vector<std::string> host_of;    // per rank of comm: its node's name (for messages)
  double timeout_seconds = 300.0;
  // Per rank of comm: the NICs (topology/host_nics.hpp order) the plan sends its
  // inter-node share through, one per port (plan/node_layout.hpp); empty where the
  // plan's topology has no NIC of this machine's list (BLINK_TOPO, a virtual NIC).
  std::vector<std::vector<int>> nics_of_rank;
};

struct TransportEntry {
  std::string name;         // "shm", "ucx", "pmpi", "sockets"
  std::string description;  // one line, for blink-info and explain
  bool within_node = false;
  bool between_nodes = false;
  std::function<std::unique_ptr<Transport>(const TransportSetUp&)> make;
  // Where the transport between nodes is the default one, this one is also set up for
  // the node leaders' rounds and measured against it (runtime: chooseLeadersTransport).
  bool leaders_alternative = false;
};

// Every transport of this build, in order of preference.
const std::vector<TransportEntry>& transportRegistry();

// Which transport serves each reach.
struct TransportSelection {
  const TransportEntry* within_node = nullptr;
  const TransportEntry* between_nodes = nullptr;
  bool between_chosen_by_default = true;  // BLINK_TRANSPORT did not name it
  std::string why_between;                // why between_nodes was chosen (INFO, explain)
  std::string describe() const;           // "shm within a node, pmpi between nodes"
};

// `spec` as BLINK_TRANSPORT: "" (the first registered for each reach), "NAME" (for
// both), or "within=NAME,between=NAME" (either may be left out). Throws
// blink::Error(blinkInvalidInput) for an unknown name or one that cannot serve the
// reach it is given.
TransportSelection selectTransports(std::string_view spec);

// Where the default transport between nodes could not be set up (it throws
// CollectiveError, i.e. on every rank together: one rank failing makes all fall
// back): pmpi instead, with `why` recorded.
void fallBackBetweenNodes(TransportSelection& selection, const std::string& why);

}  // namespace blink::transport
