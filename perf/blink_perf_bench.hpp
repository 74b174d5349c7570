// blink_perf's measurements: one Bench per sweep owns the buffers (host, and device
// with -m device), runs a collective through Blink, PMPI or NCCL, times it as
// nccl-tests does and checks the result against blink_perf_inputs.hpp.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "blink_perf_options.hpp"
#include "nccl_baseline.hpp"
#include "transport/cuda/device.hpp"

namespace blink_perf {

enum class Impl { Blink, Mpi, Nccl };
inline constexpr int kImpls = 3;

inline const char* implName(Impl i) {
  return i == Impl::Blink ? "blink" : i == Impl::Mpi ? "mpi" : "nccl";
}
inline int implIndex(Impl i) {
  return static_cast<int>(i);
}

struct Measurement {
  bool ran = false;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  long long wrong = -1;  // -1: not checked
};

// Prints the failed call and aborts the job.
[[noreturn]] void blinkFailed(const char* call, blinkResult_t rc, int rank);

// Needs an int rank_ in scope.
#define BLINK_PERF_CHECK(call)                               \
  do {                                                       \
    const blinkResult_t rc_ = (call);                        \
    if (rc_ != blinkSuccess) blinkFailed(#call, rc_, rank_); \
  } while (0)

class Bench {
 public:
  Bench(const Options& o, int rank, int n, blinkComm_t comm, std::size_t max_bytes);
  ~Bench();

  const char* memoryName() const { return device_ != nullptr ? "device" : "host"; }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  // Why the MPI library cannot run this benchmark ("" if it can).
  std::string mpiSkipReason() const;

  // Why NCCL cannot run this benchmark ("" if it can).
  std::string ncclSkipReason() const;

  // Rank 0 copies the largest size between the two buffers; the others sleep.
  Measurement memcpyBandwidth();

  // One measurement of `bytes` (the nccl-tests size: whole buffer for allgather and
  // reducescatter).
  Measurement measure(Impl impl, bool in_place, std::size_t bytes);

 private:
  // Broadcast and allgather do no arithmetic: they move the sum pattern.
  blinkRedOp_t patternOp() const { return reduces(o_.coll) ? o_.op : blinkSum; }

  void sleepyBarrier() const;

  // One call; `count` is the API's count (each rank's block for allgather/reducescatter).
  void run(Impl impl, bool in_place, std::size_t count);

  void poison(std::byte* p, std::size_t bytes) const { std::memset(p, 0x5a, bytes); }

  // The host buffers to the device buffers and back, whole (outside any timing).
  void upload();
  void download();

  void prepareCheck(bool in_place, std::size_t count);

  long long verify(Impl impl, bool in_place, std::size_t count) const;

  const Options& o_;
  int rank_;
  int n_;
  blinkComm_t comm_;
  std::size_t es_;
  std::size_t bytes_;
  std::byte* send_ = nullptr;
  std::byte* recv_ = nullptr;
  MPI_Datatype mpi_type_ = MPI_DATATYPE_NULL;
  bool blink_set_up_ = false;  // --setup-calls made (or not needed)
  // --memory device: the buffers the collectives run on.
  blink::device::Device* device_ = nullptr;
  blink::device::Device::Stream stream_ = -1;
  std::size_t alloc_ = 0;
  std::byte* dsend_ = nullptr;
  std::byte* drecv_ = nullptr;
  std::unique_ptr<blink::perf::NcclBaseline> nccl_;  // --baseline nccl with -m device
};

// The sweep's sizes, rounded down to whole elements (x ranks for allgather/reducescatter).
std::vector<std::size_t> sweepSizes(const Options& o, int n);

}  // namespace blink_perf
