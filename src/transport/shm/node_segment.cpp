#include "transport/shm/node_segment.hpp"

#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "common/mpi_wait.hpp"

namespace blink::transport {
namespace {

constexpr std::size_t kNameBytes = 64;

}  // namespace

void checkSetUpCall(int rc, const std::string& what, const char* call) {
  if (rc != MPI_SUCCESS) throw Error(blinkSystemError, what + " set-up: " + call + " failed");
}

ShmSegment mapNodeSegment(MPI_Comm node_comm, std::size_t bytes, double timeout_seconds,
                          const std::string& what) {
  int rank = 0, size = 0;
  checkSetUpCall(PMPI_Comm_rank(node_comm, &rank), what, "MPI_Comm_rank");
  checkSetUpCall(PMPI_Comm_size(node_comm, &size), what, "MPI_Comm_size");
  ShmSegment segment;
  std::string failure;
  char name[kNameBytes] = {};
  if (rank == 0) {
    try {
      segment = ShmSegment::create(bytes);
      std::memcpy(name, segment.name().c_str(), segment.name().size() + 1);
    } catch (const Error& e) {
      failure = e.what();
      name[0] = '!';  // tells the others there is nothing to map
    }
  }
  std::vector<char> names(static_cast<std::size_t>(size) * kNameBytes);
  allgatherWithin(name, static_cast<int>(kNameBytes), MPI_CHAR, names.data(), node_comm,
                  timeout_seconds, what + ": exchanging its name");
  if (rank != 0 && names[0] != '!') {
    try {
      segment = ShmSegment::open(std::string(names.data()));
      if (segment.size() != bytes) {
        throw Error(blinkInternalError, what + ": rank 0 made " + std::to_string(segment.size()) +
                                            " bytes, not " + std::to_string(bytes) +
                                            " (do the BLINK_* settings differ?)");
      }
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  const bool all_ok = everyRankOk(failure.empty() && names[0] != '!', node_comm, timeout_seconds,
                                  what + ": confirming the mappings");
  segment.unlink();
  if (!failure.empty()) throw Error(blinkSystemError, failure);
  if (!all_ok) {
    throw Error(blinkSystemError,
                what + ": another rank of this node could not set it up (see its error)");
  }
  return segment;
}

}  // namespace blink::transport
