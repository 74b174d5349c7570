#include "blink_perf_bench.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "blink_perf_inputs.hpp"
#include "runtime/mpi_reference.hpp"
#include "runtime/process_device.hpp"
#include "runtime/reduce_cpu.hpp"

namespace blink_perf {

namespace rt = blink::runtime;
using rt::mpiOp;  // blink_perf's ops (kOps) all have one
using rt::mpiType;

[[noreturn]] void blinkFailed(const char* call, blinkResult_t rc, int rank) {
  std::fprintf(stderr, "blink_perf: rank %d: %s failed: %s: %s\n", rank, call,
               blinkGetErrorString(rc), blinkGetLastError());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

Bench::Bench(const Options& o, int rank, int n, blinkComm_t comm, std::size_t max_bytes)
    : o_(o), rank_(rank), n_(n), comm_(comm), es_(blinkDataTypeSize(o.type)), bytes_(max_bytes) {
  const std::size_t page = 4096;
  const std::size_t alloc = (std::max<std::size_t>(bytes_, 1) + page - 1) / page * page;
  send_ = static_cast<std::byte*>(std::aligned_alloc(page, alloc));
  recv_ = static_cast<std::byte*>(std::aligned_alloc(page, alloc));
  if (send_ == nullptr || recv_ == nullptr) {
    std::fprintf(stderr, "blink_perf: rank %d: cannot allocate 2 x %zu bytes\n", rank, alloc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // Touch every page now, so that no timing pays for a page fault.
  const std::size_t elements = bytes_ / es_;
  fillPeriodic(send_, elements, 0, inputPeriod(rank_, patternOp(), o_.type), es_);
  fillPeriodic(recv_, elements, 0, inputPeriod(rank_, patternOp(), o_.type), es_);
  mpi_type_ = mpiType(o_.type);
  if (mpi_type_ == MPI_DATATYPE_NULL && !reduces(o_.coll)) mpi_type_ = MPI_UINT16_T;
  if (o_.device_memory) {
    // The host buffers stay as the staging of inputs and results.
    device_ = rt::processDevice(0);  // made by blinkCommInitFromMPI with the local rank
    if (device_ == nullptr) {
      std::fprintf(stderr, "blink_perf: rank %d: --memory device, but %s\n", rank,
                   rt::processDeviceNote().c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    stream_ = device_->createStream();
    alloc_ = alloc;
    dsend_ = static_cast<std::byte*>(device_->allocate(alloc));
    drecv_ = static_cast<std::byte*>(device_->allocate(alloc));
    upload();
  }
  if (o_.baseline_nccl && device_ != nullptr) {
    nccl_ = std::make_unique<blink::perf::NcclBaseline>(o_.nccl_library, device_->emulated(),
                                                        o_.type, o_.op, reduces(o_.coll));
  }
}

Bench::~Bench() {
  nccl_.reset();
  if (device_ != nullptr) {
    device_->release(dsend_);
    device_->release(drecv_);
  }
  std::free(send_);
  std::free(recv_);
}

std::string Bench::mpiSkipReason() const {
  if (device_ != nullptr) {
    return "device buffers: the MPI baseline is skipped (it needs a CUDA-aware MPI)";
  }
  if (mpi_type_ == MPI_DATATYPE_NULL) {
    return rt::toString(o_.type) + " has no MPI datatype: the MPI baseline is skipped";
  }
  if (reduces(o_.coll) && o_.op == blinkAvg) {
    return "MPI has no avg op: the MPI baseline is skipped";
  }
  return "";
}

std::string Bench::ncclSkipReason() const {
  if (device_ == nullptr) return "host buffers (NCCL moves device memory: -m device)";
  return nccl_->skipReason();
}

Measurement Bench::memcpyBandwidth() {
  Measurement m;
  m.ran = true;
  if (rank_ == 0) {
    auto copy = [this] {
      if (device_ == nullptr) {
        std::memcpy(recv_, send_, bytes_);
        return;
      }
      device_->copy(drecv_, dsend_, bytes_, stream_);
      device_->synchronize(stream_);
    };
    for (int i = 0; i < o_.warmup; ++i) copy();
    const double t0 = PMPI_Wtime();
    for (int i = 0; i < o_.iters; ++i) copy();
    m.time_us = (PMPI_Wtime() - t0) / o_.iters * 1e6;
    if (device_ != nullptr) download();
    if (o_.check) {
      m.wrong = countWrong(recv_, bytes_ / es_, 0, inputPeriod(rank_, patternOp(), o_.type), es_);
    }
    m.algbw = m.busbw = m.time_us > 0 ? static_cast<double>(bytes_) / (m.time_us * 1e3) : 0;
  }
  sleepyBarrier();
  return m;
}

Measurement Bench::measure(Impl impl, bool in_place, std::size_t bytes) {
  const std::size_t count = bytes / es_ / (blocked(o_.coll) ? static_cast<std::size_t>(n_) : 1);
  Measurement m;
  m.ran = true;
  const int warmups = warmupCalls(o_, bytes), calls = timedCalls(o_, bytes);
  if (impl == Impl::Blink && !blink_set_up_) {
    blink_set_up_ = true;
    // The leaders take calls up to BLINK_ONE_SHOT_MAX_BYTES (32 KiB by default, at most 1 MiB).
    constexpr std::size_t kSetUpLargest = std::size_t{1} << 20;
    if (bytes <= kSetUpLargest) {
      for (int i = 0; i < o_.setup_calls; ++i) run(impl, in_place, count);
    }
  }
  for (int i = 0; i < warmups; ++i) run(impl, in_place, count);
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = PMPI_Wtime();
  for (int i = 0; i < calls; ++i) run(impl, in_place, count);
  const double mine = (PMPI_Wtime() - t0) / calls * 1e6;
  PMPI_Allreduce(&mine, &m.time_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  m.algbw = m.time_us > 0 ? static_cast<double>(bytes) / (m.time_us * 1e3) : 0;
  m.busbw = m.algbw * busFactor(o_.coll, n_);
  if (o_.check) {
    prepareCheck(in_place, count);
    if (device_ != nullptr) upload();
    run(impl, in_place, count);
    if (device_ != nullptr) download();
    const long long wrong = verify(impl, in_place, count);
    PMPI_Allreduce(&wrong, &m.wrong, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  }
  return m;
}

void Bench::sleepyBarrier() const {
  MPI_Request req = MPI_REQUEST_NULL;
  PMPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  while (!done) {
    PMPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) {
      const timespec pause{0, 200000};  // 0.2 ms
      nanosleep(&pause, nullptr);
    }
  }
}

void Bench::run(Impl impl, bool in_place, std::size_t count) {
  std::byte* s = device_ != nullptr ? dsend_ : send_;
  std::byte* r = device_ != nullptr ? drecv_ : recv_;
  const std::size_t block = count * es_;
  std::byte* mine = r + static_cast<std::size_t>(rank_) * block;
  const blinkDataType_t t = o_.type;
  if (impl == Impl::Blink) {
    switch (o_.coll) {
      case Coll::AllReduce:
        BLINK_PERF_CHECK(blinkAllReduce(in_place ? r : s, r, count, t, o_.op, comm_));
        break;
      case Coll::Broadcast:
        BLINK_PERF_CHECK(blinkBroadcast(in_place ? r : s, r, count, t, o_.root, comm_));
        break;
      case Coll::Reduce:
        BLINK_PERF_CHECK(blinkReduce(in_place ? r : s, r, count, t, o_.op, o_.root, comm_));
        break;
      case Coll::AllGather:
        BLINK_PERF_CHECK(blinkAllGather(in_place ? mine : s, r, count, t, comm_));
        break;
      case Coll::ReduceScatter:
        BLINK_PERF_CHECK(
            blinkReduceScatter(in_place ? r : s, in_place ? mine : r, count, t, o_.op, comm_));
        break;
    }
    return;
  }
  if (impl == Impl::Nccl) {
    using blink::perf::NcclCollective;
    switch (o_.coll) {
      case Coll::AllReduce:
        nccl_->run(NcclCollective::AllReduce, in_place ? r : s, r, count, 0);
        break;
      case Coll::Broadcast:
        nccl_->run(NcclCollective::Broadcast, in_place ? r : s, r, count, o_.root);
        break;
      case Coll::Reduce:
        nccl_->run(NcclCollective::Reduce, in_place ? r : s, r, count, o_.root);
        break;
      case Coll::AllGather:
        nccl_->run(NcclCollective::AllGather, in_place ? mine : s, r, count, 0);
        break;
      case Coll::ReduceScatter:
        nccl_->run(NcclCollective::ReduceScatter, in_place ? r : s, in_place ? mine : r, count, 0);
        break;
    }
    // NCCL's call returns once queued; Blink's once done: wait, as the caller would.
    device_->synchronizeCaller();
    return;
  }
  const int c = static_cast<int>(count);
  const MPI_Datatype mt = mpi_type_;
  const MPI_Op mo = mpiOp(o_.op);
  switch (o_.coll) {
    case Coll::AllReduce:
      PMPI_Allreduce(in_place ? MPI_IN_PLACE : s, r, c, mt, mo, MPI_COMM_WORLD);
      break;
    case Coll::Broadcast:
      // MPI_Bcast has one buffer: out of place, the root copies first.
      if (!in_place && rank_ == o_.root) std::memcpy(r, s, block);
      PMPI_Bcast(r, c, mt, o_.root, MPI_COMM_WORLD);
      break;
    case Coll::Reduce:
      if (in_place) {
        if (rank_ == o_.root) {
          PMPI_Reduce(MPI_IN_PLACE, r, c, mt, mo, o_.root, MPI_COMM_WORLD);
        } else {
          PMPI_Reduce(r, nullptr, c, mt, mo, o_.root, MPI_COMM_WORLD);
        }
      } else {
        PMPI_Reduce(s, r, c, mt, mo, o_.root, MPI_COMM_WORLD);
      }
      break;
    case Coll::AllGather:
      if (in_place) {
        PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, c, mt, MPI_COMM_WORLD);
      } else {
        PMPI_Allgather(s, c, mt, r, c, mt, MPI_COMM_WORLD);
      }
      break;
    case Coll::ReduceScatter:
      PMPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : s, r, c, mt, mo, MPI_COMM_WORLD);
      break;
  }
}

void Bench::upload() {
  device_->copy(dsend_, send_, alloc_, stream_);
  device_->copy(drecv_, recv_, alloc_, stream_);
  device_->synchronize(stream_);
}

void Bench::download() {
  device_->copy(send_, dsend_, alloc_, stream_);
  device_->copy(recv_, drecv_, alloc_, stream_);
  device_->synchronize(stream_);
}

void Bench::prepareCheck(bool in_place, std::size_t count) {
  const Period own = inputPeriod(rank_, patternOp(), o_.type);
  const std::size_t block = count * es_;
  const auto n = static_cast<std::size_t>(n_);
  switch (o_.coll) {
    case Coll::AllReduce:
    case Coll::Reduce:
      if (in_place) {
        fillPeriodic(recv_, count, 0, own, es_);
      } else {
        fillPeriodic(send_, count, 0, own, es_);
        poison(recv_, block);
      }
      break;
    case Coll::Broadcast: {
      const Period root = inputPeriod(o_.root, patternOp(), o_.type);
      poison(recv_, block);
      if (rank_ == o_.root) fillPeriodic(in_place ? recv_ : send_, count, 0, root, es_);
      break;
    }
    case Coll::AllGather:
      poison(recv_, n * block);
      fillPeriodic(in_place ? recv_ + static_cast<std::size_t>(rank_) * block : send_, count, 0,
                   own, es_);
      break;
    case Coll::ReduceScatter:
      if (in_place) {
        fillPeriodic(recv_, n * count, 0, own, es_);
      } else {
        fillPeriodic(send_, n * count, 0, own, es_);
        poison(recv_, block);
      }
      break;
  }
}

long long Bench::verify(Impl impl, bool in_place, std::size_t count) const {
  const std::size_t block = count * es_;
  const auto rank = static_cast<std::size_t>(rank_);
  switch (o_.coll) {
    case Coll::AllReduce:
      return countWrong(recv_, count, 0, expectedPeriod(n_, o_.op, o_.type), es_);
    case Coll::Reduce:
      if (rank_ != o_.root) return 0;
      return countWrong(recv_, count, 0, expectedPeriod(n_, o_.op, o_.type), es_);
    case Coll::Broadcast:
      return countWrong(recv_, count, 0, inputPeriod(o_.root, blinkSum, o_.type), es_);
    case Coll::AllGather: {
      long long wrong = 0;
      for (int q = 0; q < n_; ++q) {
        wrong += countWrong(recv_ + static_cast<std::size_t>(q) * block, count, 0,
                            inputPeriod(q, blinkSum, o_.type), es_);
      }
      return wrong;
    }
    case Coll::ReduceScatter: {
      // Blink (as NCCL) leaves the in-place result in the rank's own block; MPI at the start.
      const std::byte* got = in_place && impl != Impl::Mpi ? recv_ + rank * block : recv_;
      return countWrong(got, count, rank * count, expectedPeriod(n_, o_.op, o_.type), es_);
    }
  }
  return 0;
}

std::vector<std::size_t> sweepSizes(const Options& o, int n) {
  const std::size_t unit =
      blinkDataTypeSize(o.type) * (blocked(o.coll) ? static_cast<std::size_t>(n) : 1);
  std::vector<std::size_t> sizes;
  for (std::size_t b = o.min_bytes; b <= o.max_bytes;) {
    const std::size_t rounded = b / unit * unit;
    if (rounded > 0 && (sizes.empty() || sizes.back() != rounded)) sizes.push_back(rounded);
    if (b > o.max_bytes / o.step_factor) break;
    b = std::max<std::size_t>(b * o.step_factor, b + 1);
  }
  return sizes;
}

}  // namespace blink_perf
