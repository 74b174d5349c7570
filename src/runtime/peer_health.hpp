// Which ranks of a communicator run on this machine, and as which process, so that a
// timeout can say which of them is stopped or gone. A rank that times out names the
// peer it waited for; in a tree that peer may itself be waiting, alive, for the one
// that stopped. Every rank on the stopped one's machine can see it directly instead
// (/proc: state T, or no such process). Ranks on other machines cannot be looked at;
// for them the message keeps naming the peer waited for.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace blink::runtime {

class PeerHealth {
 public:
  PeerHealth() = default;
  // Collective over `comm` (one PMPI allgather of the machine's name and the pid).
  PeerHealth(MPI_Comm comm, int rank, double timeout_seconds);

  // "; rank 2 (pid 4711) on this machine is stopped (SIGSTOP?)" and the like for every
  // other rank on this machine that is stopped or has exited; "" when none is.
  std::string diagnose() const;

 private:
  std::vector<long> pid_of_rank_;  // 0: another machine (or this rank)
};

}  // namespace blink::runtime
