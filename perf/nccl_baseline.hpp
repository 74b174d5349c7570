// NCCL as blink_perf's baseline on device buffers (--baseline nccl): the same
// collectives through ncclAllReduce etc., one NCCL communicator per rank over
// MPI_COMM_WORLD (the unique id broadcast with PMPI). libnccl.so.2 is loaded with
// dlopen, never linked, so blink_perf builds and runs where NCCL is absent; the few
// declarations needed are written out here (NCCL's ABI: enums are ints, the unique id
// 128 bytes), as nccl.h has them.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "blink/blink.h"

namespace blink::perf {

enum class NcclCollective { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter };

class NcclBaseline {
 public:
  // Collective over MPI_COMM_WORLD. Every rank ends with the same skipReason():
  // "" when NCCL runs here, else why not (e.g. "libnccl.so.2 not found").
  // `emulated_device`: Blink's device is the emulation (NCCL needs GPU memory).
  // `reduces`: the collective reduces with `op`.
  NcclBaseline(const std::string& library, bool emulated_device, blinkDataType_t type,
               blinkRedOp_t op, bool reduces);
  ~NcclBaseline();
  NcclBaseline(const NcclBaseline&) = delete;
  NcclBaseline& operator=(const NcclBaseline&) = delete;

  const std::string& skipReason() const { return skip_; }
  // One call on the current GPU's default stream (the caller then waits for the
  // device); counts as blink_perf's (each rank's block for allgather and
  // reducescatter). Aborts the job on an NCCL error.
  void run(NcclCollective c, const void* send, void* recv, std::size_t count, int root);

 private:
  struct Api;
  std::string skip_;
  void* library_ = nullptr;
  Api* api_ = nullptr;
  void* comm_ = nullptr;  // ncclComm_t
  int type_ = 0;          // ncclDataType_t
  int op_ = 0;            // ncclRedOp_t
};

}  // namespace blink::perf
