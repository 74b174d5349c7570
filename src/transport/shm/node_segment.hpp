// One shared-memory segment for every rank of a node: rank 0 creates it, every
// rank maps it, and the name is removed once all have (a crash after that leaves
// nothing in /dev/shm; ShmSegment sweeps a name left by one before). Used by the
// small shared structures (the one-shot board, the direct path's control lines);
// the transport's FIFOs need one segment per sender.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "transport/shm/shm_segment.hpp"

namespace blink::transport {

// Throws blink::Error(blinkSystemError) "<what> set-up: <call> failed" unless `rc` is
// MPI_SUCCESS: how the node's shared structures report a failed MPI call.
void checkSetUpCall(int rc, const std::string& what, const char* call);

// Collective over `node_comm`. `what` names the structure in error messages. Throws
// blink::Error on every rank together when any rank cannot create or map it.
ShmSegment mapNodeSegment(MPI_Comm node_comm, std::size_t bytes, double timeout_seconds,
                          const std::string& what);

}  // namespace blink::transport
