#include "transport/shm/node_collectives.hpp"

#include "common/error.hpp"
#include "common/log.hpp"
#include "transport/shm/shm_direct.hpp"
#include "transport/shm/shm_staged.hpp"

namespace blink::transport {

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

}  // namespace blink::transport
