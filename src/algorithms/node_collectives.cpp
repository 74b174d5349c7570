#include "algorithms/node_collectives.hpp"

#include <cmath>

#include "algorithms/shm_direct.hpp"
#include "algorithms/shm_staged.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

namespace blink::algorithms {
namespace {

// The staging area's rounds (shm_staged.hpp) for the collectives that are not
// reductions: rounds that fill the area's half.
constexpr double kAreaHalfBytes = 16.0 * 1024 * 1024;

}  // namespace

Traffic directTraffic(plan::Collective collective, std::uint64_t bytes, int ranks, int root) {
  const double b = static_cast<double>(bytes);
  const double n = static_cast<double>(ranks);
  const double others = (n - 1) / n * b;  // the peers' segments of a buffer
  Traffic t;
  t.ranks.resize(static_cast<std::size_t>(ranks));
  const bool reduction =
      collective == plan::Collective::AllReduce || collective == plan::Collective::Reduce;
  // Set-up and the last round's hand-back, plus one per round; a reduction's rounds
  // are pipelined (one piece staged while the last is reduced and the one before
  // copied out), so only filling the pipeline waits.
  t.syncs = reduction ? 3.0
                      : 2.0 + std::ceil((collective == plan::Collective::Broadcast ? b : b / n) /
                                        kAreaHalfBytes);
  for (int r = 0; r < ranks; ++r) {
    RankTraffic& mine = t.ranks[static_cast<std::size_t>(r)];
    switch (collective) {
      case plan::Collective::AllReduce:  // stage the peers' segments, reduce, copy out
        mine = {b, 2.0 * others, others};
        break;
      case plan::Collective::Reduce:  // the same, but only the root copies out
        mine = {b, r == root ? 2.0 * others : others, others};
        break;
      case plan::Collective::Broadcast:
        mine = r == root ? RankTraffic{b, 0.0, 0.0} : RankTraffic{0.0, b, 0.0};
        break;
      case plan::Collective::AllGather:
        mine = {b / n, others, 0.0};
        break;
      case plan::Collective::ReduceScatter:
        mine = {others, others, others};
        break;
    }
  }
  return t;
}

NodeCollectivesChoice makeNodeCollectives(MPI_Comm node_comm, std::size_t staging_max_bytes,
                                          bool cross_memory_allowed, double timeout_seconds,
                                          bool log) {
  NodeCollectivesChoice choice;
  auto unavailable = [&](const char* how, const Error& e) {
    if (e.status() == blinkTimeout) throw;
    if (log) BLINK_LOG(Info, "direct path: " << how << " is unavailable (" << e.what() << ")");
    choice.why_not += std::string(choice.why_not.empty() ? "" : "; ") + how + ": " + e.what();
  };
  if (staging_max_bytes > 0) {
    try {
      choice.mover = std::make_unique<ShmStaged>(node_comm, staging_max_bytes, timeout_seconds);
      return choice;
    } catch (const Error& e) {
      unavailable("the staging area", e);
    }
  } else {
    choice.why_not = "BLINK_SHM_STAGING_BYTES=0";
  }
  if (cross_memory_allowed) {
    try {
      choice.mover = std::make_unique<ShmDirect>(node_comm, timeout_seconds);
      return choice;
    } catch (const Error& e) {
      unavailable("cross-memory attach", e);
    }
  } else {
    choice.why_not += "; BLINK_SHM_SINGLE_COPY=0";
  }
  return choice;
}

}  // namespace blink::algorithms
