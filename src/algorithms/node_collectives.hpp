// The large-message collectives of the ranks of one node that run without a plan
// (the "direct path"). Two implementations move the bytes: ShmStaged, through a
// staging area in shared memory (shm_staged.hpp), and ShmDirect, which reads the
// peers' buffers with cross-memory attach (shm_direct.hpp). makeNodeCollectives
// picks one when the path is first used, and the communicator keeps it.
//
// Every rank of the node must make the same calls in the same order (as MPI requires
// of collectives); every wait ends after the timeout with an error naming the peer.
// Each element of a reduction is combined by one rank only, so every rank gets the
// same bits.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "algorithms/host_memory_model.hpp"
#include "common/combine.hpp"

namespace blink::algorithms {

class NodeCollectives {
 public:
  virtual ~NodeCollectives() = default;

  // `in` may equal `out` (in place). `element_bytes` divides `bytes`; ranks' shares
  // are cut on element boundaries.
  virtual void allReduce(const std::byte* in, std::byte* out, std::size_t bytes,
                         std::size_t element_bytes, const Combine& combine) = 0;
  // The result lands in `out` on `root`; elsewhere `out` is working space of `bytes`
  // (its contents afterwards are unspecified). `in` may equal `out` on the root.
  virtual void reduce(const std::byte* in, std::byte* out, std::size_t bytes,
                      std::size_t element_bytes, const Combine& combine, int root) = 0;
  // `in` holds size() blocks; `out` may be in + rank * block_bytes.
  virtual void reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                             const Combine& combine) = 0;
  // `in` may be out + rank * block_bytes.
  virtual void allGather(const std::byte* in, std::byte* out, std::size_t block_bytes) = 0;
  // `in` is read on the root only; it may equal `out`.
  virtual void broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root) = 0;

  // How the bytes move, for blinkCommExplain and BLINK_DEBUG=INFO.
  virtual std::string describe() const = 0;
  // Whether a ReduceScatter result may land at the start of its own input (the
  // MPI_IN_PLACE layout) without a scratch copy.
  virtual bool reduceScatterIntoInputStart() const = 0;
};

// The cost model of the direct path through the staging area: what each rank
// writes to the area and reads from it for a call of `bytes` (the whole buffer, as
// for ShmOneShot::traffic), and the synchronisations of its rounds. The
// cross-memory-attach variant moves no more bytes and synchronises less, so the
// staging area's figures bound both.
Traffic directTraffic(plan::Collective collective, std::uint64_t bytes, int ranks, int root);

struct NodeCollectivesChoice {
  std::unique_ptr<NodeCollectives> mover;  // null when neither way could be set up
  std::string why_not;                     // then: why, for explain and the log
};

// Collective over `node_comm`: the staging area (unless `staging_max_bytes` is 0),
// else cross-memory attach (if `cross_memory_allowed`). Each attempt fails on every
// rank together, so every rank ends with the same choice; a timeout is rethrown.
// `log` (one rank) says at INFO what was unavailable and why.
NodeCollectivesChoice makeNodeCollectives(MPI_Comm node_comm, std::size_t staging_max_bytes,
                                          bool cross_memory_allowed, double timeout_seconds,
                                          bool log);

}  // namespace blink::algorithms
