#include "transport/registry.hpp"

#include "common/build_config.h"
#include "common/env.hpp"
#include "common/error.hpp"
#include "topology/host_nics.hpp"
#include "transport/pmpi/pmpi_transport.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/socket/socket_transport.hpp"
#if BLINK_HAVE_UCX
#include "transport/ucx/ucx_transport.hpp"
#endif

namespace blink::transport {
namespace {

SingleCopyMode singleCopyFromEnvironment() {
  const std::string mode = env::getChoice("BLINK_SHM_SINGLE_COPY");
  return mode == "1"   ? SingleCopyMode::On
         : mode == "0" ? SingleCopyMode::Off
                       : SingleCopyMode::Automatic;
}

// The IPv4 address of the NIC the plan sends this rank's share through ("" where
// the plan names none of this machine's NICs).
std::string planNicAddress(const TransportSetUp& s) {
  const auto rank = static_cast<std::size_t>(s.rank);
  if (rank >= s.nics_of_rank.size() || s.nics_of_rank[rank].empty()) return "";
  const auto nics = topo::hostNics();
  const auto nic = static_cast<std::size_t>(s.nics_of_rank[rank].front());
  return nic < nics.size() ? nics[nic].ipv4 : "";
}

const TransportEntry& byName(std::string_view spec, std::string_view name) {
  for (const auto& entry : transportRegistry()) {
    if (entry.name == name) return entry;
  }
  std::string known;
  for (const auto& entry : transportRegistry()) known += (known.empty() ? "" : ", ") + entry.name;
  throw Error(blinkInvalidInput, "BLINK_TRANSPORT='" + std::string(spec) +
                                     "': unknown transport '" + std::string(name) +
                                     "' (this build has: " + known + ")");
}

// The transports this build has besides the built-in ones, first: UCX is the
// default between nodes where it is built (pmpi where any rank fails to set it up;
// fallBackBetweenNodes). It was opt-in while a 32-byte send of the node leaders'
// Broadcast could stall over UCX 1.13's TCP transport; the progress thread
// (ucx/ucx_progress_thread.hpp) removed the cause of that stall; a message lost
// over TCP remains (README, known problem).
bool addOptionalTransports(std::vector<TransportEntry>& entries) {
#if BLINK_HAVE_UCX
  entries.insert(entries.begin(),
                 {"ucx",
                  "UCX tagged messages between nodes, one UCP context per NIC of the node "
                  "(BLINK_UCX_NICS) and a progress thread per process; the default between "
                  "nodes where every rank sets it up",
                  false, true,
                  [](const TransportSetUp& s) -> std::unique_ptr<Transport> {
                    UcxSetUp u;
                    u.comm = s.comm;
                    u.rank = s.rank;
                    u.local_rank_of = s.local_rank_of;
                    u.host_of = s.host_of;
                    u.timeout_seconds = s.timeout_seconds;
                    u.nics_of_rank = s.nics_of_rank;
                    return std::make_unique<UcxTransport>(u);
                  },
                  false});
#endif
  return true;
}

}  // namespace

const std::vector<TransportEntry>& transportRegistry() {
  static std::vector<TransportEntry> entries = {
      {"shm",
       "POSIX shared memory between the ranks of a node: FIFOs of slots, or one copy from "
       "the sender's memory by cross-memory attach (BLINK_SHM_SINGLE_COPY)",
       true, false,
       [](const TransportSetUp& s) -> std::unique_ptr<Transport> {
         ShmOptions options;
         options.timeout_seconds = s.timeout_seconds;
         options.single_copy = singleCopyFromEnvironment();
         return std::make_unique<ShmTransport>(s.node_comm, s.node_rank_of, s.rank, options);
       },
       false},
      {"pmpi",
       "MPI point-to-point (PMPI_Isend/Irecv) on Blink's duplicate communicator, one tag per "
       "channel",
       true, true,
       [](const TransportSetUp& s) -> std::unique_ptr<Transport> {
         return std::make_unique<PmpiTransport>(s.comm);
       },
       true},
      {"sockets",
       "TCP connections between nodes, one per peer and channel (no MPI matching or "
       "queueing: a small message costs a send and a receive); measured for the node leaders' "
       "rounds",
       false, true,
       [](const TransportSetUp& s) -> std::unique_ptr<Transport> {
         SocketSetUp set_up;
         set_up.comm = s.comm;
         set_up.rank = s.rank;
         set_up.host_of = s.host_of;
         set_up.timeout_seconds = s.timeout_seconds;
         set_up.preferred_address = planNicAddress(s);
         return std::make_unique<SocketTransport>(set_up);
       },
       true},
  };
  [[maybe_unused]] static const bool added = addOptionalTransports(entries);
  return entries;
}

std::string TransportSelection::describe() const {
  return within_node->name + " within a node, " + between_nodes->name + " between nodes";
}

TransportSelection selectTransports(std::string_view spec) {
  TransportSelection out;
  for (const std::string_view item : env::splitItems(spec)) {
    const auto equals = item.find('=');
    if (equals == std::string_view::npos) {
      out.within_node = out.between_nodes = &byName(spec, item);
      out.between_chosen_by_default = false;
      continue;
    }
    const std::string_view where = item.substr(0, equals);
    const TransportEntry& entry = byName(spec, item.substr(equals + 1));
    if (where == "within") {
      out.within_node = &entry;
    } else if (where == "between") {
      out.between_nodes = &entry;
      out.between_chosen_by_default = false;
    } else {
      throw Error(blinkInvalidInput, "BLINK_TRANSPORT='" + std::string(spec) + "': '" +
                                         std::string(where) +
                                         "' is neither 'within' nor 'between'");
    }
  }
  for (const auto& entry : transportRegistry()) {
    if (out.within_node == nullptr && entry.within_node) out.within_node = &entry;
    if (out.between_nodes == nullptr && entry.between_nodes) out.between_nodes = &entry;
  }
  if (out.between_chosen_by_default) {
    out.why_between = out.between_nodes->name == "ucx"
                          ? "the default: this build has UCX and every rank set it up"
                          : "the default: this build has no UCX";
  } else {
    out.why_between = "named by BLINK_TRANSPORT";
  }
  if (!out.within_node->within_node || !out.between_nodes->between_nodes) {
    const TransportEntry& bad =
        !out.within_node->within_node ? *out.within_node : *out.between_nodes;
    throw Error(blinkInvalidInput,
                "BLINK_TRANSPORT='" + std::string(spec) + "': " + bad.name +
                    " cannot carry streams " +
                    (!out.within_node->within_node ? "within a node" : "between nodes"));
  }
  return out;
}

void fallBackBetweenNodes(TransportSelection& selection, const std::string& why) {
  const std::string failed = selection.between_nodes->name;
  selection.between_nodes = &byName("pmpi", "pmpi");
  selection.why_between = failed + " could not be set up on every rank: " + why;
}

}  // namespace blink::transport
