// BLINK_PROBE_LINKS: what each NIC really carries between nodes, measured at set-up,
// for links whose nominal speed lies (a rate-limited port, a virtual NIC that sysfs
// calls 10 Gbit/s).
//
// How: the node leaders (local rank 0) form a ring over the nodes; on every NIC k
// that has an IPv4 address, each leader streams over TCP, from its NIC k's address to
// the next leader's NIC k, for kProbeSeconds, all NICs and all nodes at once (so a
// shared bottleneck, such as the cores that drive the sockets, shows too), and the
// receiver times what arrives from 50 ms after its first byte (TCP's slow start and a
// token bucket's burst are over by then) to the end. The rate of NIC k is the
// highest any node received on it (a disturbed probe only reads low: on a loaded
// machine a leader that is not scheduled stalls its streams), one rate per NIC
// index for every node. TCP over the NIC's own address is what UCX's TCP
// transport does; an InfiniBand port without an IPv4 address is not probed.
// Bounded: the whole probe takes at most about kProbeSeconds + kProbeGraceSeconds.
#pragma once

#include <mpi.h>

#include <vector>

#include "runtime/rank_layout.hpp"

namespace blink::runtime {

inline constexpr double kProbeSeconds = 0.3;
inline constexpr double kProbeGraceSeconds = 0.2;
inline constexpr int kMaxProbedNics = 8;

// Per NIC index (topology/host_nics.hpp order): the measured GB/s, 0 where none.
// Collective over `comm` (PMPI only; every rank calls it, non-leaders only take part
// in the exchanges). Never throws for a NIC that cannot be probed (it is left at 0
// and said at INFO); throws blinkSystemError when an MPI call fails.
std::vector<double> probeNicRates(const RankLayout& layout, MPI_Comm comm);

}  // namespace blink::runtime
