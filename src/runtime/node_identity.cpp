#include "runtime/node_identity.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "common/error.hpp"
#include "common/mpi_wait.hpp"
#include "transport/shm/shm_segment.hpp"

namespace blink::runtime {
namespace {

constexpr std::size_t kTokenBytes = 16;

// What local rank 0 sends its node: the segment's name and the token it holds.
struct Proof {
  std::array<char, transport::ShmSegment::kMaxNameBytes> name{};
  std::array<unsigned char, kTokenBytes> token{};
  int failed = 0;  // local rank 0 could not make the segment
};

std::array<unsigned char, kTokenBytes> randomToken() {
  std::array<unsigned char, kTokenBytes> token{};
  std::ifstream random("/dev/urandom", std::ios::binary);
  random.read(reinterpret_cast<char*>(token.data()), token.size());
  if (!random) throw Error(blinkSystemError, "node identity: cannot read /dev/urandom");
  return token;
}

std::string hostName() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) return "?";
  return host.data();
}

}  // namespace

void verifyNodeIdentity(MPI_Comm comm, MPI_Comm node_comm, const RankLayout& layout,
                        double timeout_seconds) {
  Proof proof;
  std::string why;  // this rank's reason when its proof failed
  transport::ShmSegment segment;
  if (layout.local_size > 1 && layout.local_rank == 0) {
    try {
      segment = transport::ShmSegment::create(kTokenBytes);
      proof.token = randomToken();
      std::memcpy(segment.data(), proof.token.data(), kTokenBytes);
      std::memcpy(proof.name.data(), segment.name().c_str(),
                  std::min(segment.name().size(), proof.name.size() - 1));
    } catch (const Error& e) {
      proof.failed = 1;
      why = e.what();
    }
  }
  if (layout.local_size > 1) {
    MPI_Request request = MPI_REQUEST_NULL;
    if (PMPI_Ibcast(&proof, sizeof proof, MPI_BYTE, 0, node_comm, &request) != MPI_SUCCESS) {
      throw Error(blinkSystemError, "node identity: MPI_Ibcast failed");
    }
    waitWithin(request, timeout_seconds, "proving the ranks of a node share shared memory");
  }
  int bad = 0;
  if (layout.local_size > 1 && layout.local_rank != 0 && proof.failed == 0) {
    try {
      const transport::ShmSegment seen = transport::ShmSegment::open(proof.name.data());
      if (seen.size() < kTokenBytes ||
          std::memcmp(seen.data(), proof.token.data(), kTokenBytes) != 0) {
        why = "the segment of that name holds another token";
      }
    } catch (const Error& e) {
      why = e.what();
    }
    bad = why.empty() ? 0 : 1;
  }
  if (proof.failed != 0 && layout.local_rank == 0) bad = 1;
  // The lowest failing rank explains; every rank learns who that is.
  const int mine = bad != 0 ? layout.rank : layout.size;
  int first = layout.size;
  allreduceWithin(&mine, &first, 1, MPI_INT, MPI_MIN, comm, timeout_seconds,
                  "agreeing whether the ranks of each node share shared memory");
  segment.unlink();  // every peer has looked at it
  if (first == layout.size) return;
  // Every rank tells the same story (the interposer shows rank 0's only): the first
  // failing rank sends its host and reason.
  std::array<char, 512> story{};
  if (first == layout.rank) {
    const std::string text = "rank " + std::to_string(first) + " on host '" + hostName() +
                             "' cannot see the token its node's first rank put in /dev/shm (" +
                             why + ")";
    std::memcpy(story.data(), text.data(), std::min(text.size(), story.size() - 1));
  }
  MPI_Request request = MPI_REQUEST_NULL;
  if (PMPI_Ibcast(story.data(), static_cast<int>(story.size()), MPI_CHAR, first, comm, &request) !=
      MPI_SUCCESS) {
    throw Error(blinkSystemError, "node identity: MPI_Ibcast failed");
  }
  waitWithin(request, timeout_seconds, "reporting which rank does not share shared memory");
  story.back() = '\0';
  const std::string node = layout.node_names[static_cast<std::size_t>(
      layout.node_of_rank[static_cast<std::size_t>(first)])];
  throw CollectiveError(
      blinkInvalidUsage,
      "ranks grouped as node '" + node +
          "' (BLINK_NODE_ID, else the hostname) do not share shared memory: " + story.data() +
          "; ranks on different machines need different node names");
}

}  // namespace blink::runtime
