#include "runtime/peer_health.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string_view>

#include "common/mpi_wait.hpp"

namespace blink::runtime {
namespace {

// The machine, not BLINK_NODE_ID: emulated nodes on one machine can see each other.
std::uint64_t machineHash() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::uint64_t h = 1469598103934665603ull;
  for (const char* c = name; *c != '\0'; ++c)
    h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  return h;
}

// The state letter of /proc/PID/stat (R, S, D, T, t, Z, ...), or 0 when unreadable.
char processState(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  const auto close = line.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= line.size()) return 0;
  return line[close + 2];
}

}  // namespace

PeerHealth::PeerHealth(MPI_Comm comm, int rank, double timeout_seconds) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  const std::uint64_t mine[2] = {machineHash(), static_cast<std::uint64_t>(getpid())};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size));
  allgatherWithin(mine, 2, MPI_UINT64_T, all.data(), comm, timeout_seconds,
                  "gathering the ranks' processes");
  pid_of_rank_.assign(static_cast<std::size_t>(size), 0);
  for (int r = 0; r < size; ++r) {
    const auto at = 2 * static_cast<std::size_t>(r);
    if (r != rank && all[at] == mine[0])
      pid_of_rank_[static_cast<std::size_t>(r)] = static_cast<long>(all[at + 1]);
  }
}

std::string PeerHealth::diagnose() const {
  std::ostringstream out;
  for (std::size_t r = 0; r < pid_of_rank_.size(); ++r) {
    const long pid = pid_of_rank_[r];
    if (pid <= 0) continue;
    const char state = processState(pid);
    const bool gone = (state == 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ||
                      state == 'Z' || state == 'X';
    if (state == 'T' || state == 't') {
      out << "; rank " << r << " (pid " << pid << ") on this machine is stopped (SIGSTOP?)";
    } else if (gone) {
      out << "; rank " << r << " (pid " << pid << ") on this machine has exited";
    }
  }
  return out.str();
}

}  // namespace blink::runtime
