// Communicator: the collectives (arguments checked, buffers placed, then the
// cached decision run: a plan, the board, the node leaders or the direct path) and
// what they share.
#include <array>
#include <cstring>

#include "common/datatype_size.hpp"
#include "common/error.hpp"
#include "runtime/communicator.hpp"
#include "runtime/memory_type.hpp"
#include "runtime/mpi_reference.hpp"
#include "runtime/reduce_cpu.hpp"

namespace blink::runtime {
namespace {

std::uint64_t checkedBytes(std::size_t count, std::size_t element, std::size_t factor = 1) {
  std::uint64_t bytes = 0;  // no division: every call passes here
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(count), element, &bytes) ||
      __builtin_mul_overflow(bytes, factor, &bytes)) {
    throw Error(blinkInvalidArgument, "count is too large");
  }
  return bytes;
}

void needBuffer(const void* p, std::uint64_t bytes, const char* which) {
  if (p == nullptr && bytes > 0) {
    throw Error(blinkInvalidArgument, std::string(which) + " is NULL with a count > 0");
  }
}

constexpr std::size_t kReductions = static_cast<std::size_t>(blinkNumTypes) * blinkNumOps;

constexpr std::size_t reductionIndex(blinkDataType_t type, blinkRedOp_t op) {
  return static_cast<std::size_t>(type) * blinkNumOps + static_cast<std::size_t>(op);
}

// MPI's twins for the leaders' Mpi way (avg: summed, the caller divides, as combineFor);
// none where MPI has no such reduction (fp16, bf16; MPI's bitwise and logical ops take
// integers only).
algorithms::NodeLeaders::MpiReduction mpiTwinsOf(blinkDataType_t type, blinkRedOp_t op) {
  const blinkRedOp_t combine_op = op == blinkAvg ? blinkSum : op;
  const bool arithmetic = combine_op == blinkSum || combine_op == blinkProd ||
                          combine_op == blinkMin || combine_op == blinkMax;
  const bool floating = type == blinkFloat32 || type == blinkFloat64;
  if (floating && !arithmetic) return {};
  const algorithms::NodeLeaders::MpiReduction twins{mpiType(type), mpiOp(combine_op),
                                                    static_cast<int>(datatypeSize(type))};
  if (twins.type == MPI_DATATYPE_NULL || twins.op == MPI_OP_NULL) return {};
  return twins;
}

// Per (type, op): made once when the library loads (MPI's handles are addresses, valid
// before MPI_Init), not per call: a small call across nodes is a few microseconds, of
// which building a std::function and looking MPI's twins up were a measurable part.
struct Reductions {
  std::array<Combine, kReductions> combine;
  std::array<algorithms::NodeLeaders::MpiReduction, kReductions> mpi;
  Reductions() {
    for (int t = 0; t < blinkNumTypes; ++t) {
      for (int o = 0; o < blinkNumOps; ++o) {
        const auto type = static_cast<blinkDataType_t>(t);
        const auto op = static_cast<blinkRedOp_t>(o);
        const blinkRedOp_t combine_op = op == blinkAvg ? blinkSum : op;  // the caller divides
        const std::size_t es = datatypeSize(type);
        combine[reductionIndex(type, op)] =
            [type, combine_op, es](std::byte* inout, const std::byte* incoming, std::size_t n) {
              reduceIntoChecked(inout, incoming, n / es, type, combine_op);
            };
        mpi[reductionIndex(type, op)] = mpiTwinsOf(type, op);
      }
    }
  }
};
const Reductions kReductionTables;

// Every caller has run checkReduction(type, op) on this call.
const Combine& combineFor(blinkDataType_t type, blinkRedOp_t op) {
  return kReductionTables.combine[reductionIndex(type, op)];
}

const algorithms::NodeLeaders::MpiReduction& mpiReduction(blinkDataType_t type, blinkRedOp_t op) {
  return kReductionTables.mpi[reductionIndex(type, op)];
}

const std::byte* asBytes(const void* p) {
  return static_cast<const std::byte*>(p);
}
std::byte* asBytes(void* p) {
  return static_cast<std::byte*>(p);
}

}  // namespace

std::byte* Communicator::scratch(std::size_t bytes, bool on_device) {
  if (on_device) {
    if (device_scratch_bytes_ < bytes) {
      if (device_scratch_ != nullptr) device_->release(device_scratch_);
      device_scratch_ = nullptr;
      device_scratch_bytes_ = 0;
      device_scratch_ = static_cast<std::byte*>(device_->allocate(bytes));
      device_scratch_bytes_ = bytes;
    }
    return device_scratch_;
  }
  // Kept between calls: fresh pages cost a fault each, which on some machines
  // is slower than the collective itself.
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

void Communicator::checkUsable() const {
  if (!broken_.empty()) {
    throw Error(blinkInvalidUsage, "this communicator failed earlier (" + broken_ +
                                       "); destroy it and create a new one");
  }
}

template <typename Body>
void Communicator::runOffPlan(Body&& body) {
  checkUsable();
  try {
    body();
  } catch (const Error& e) {
    broken_ = e.what();  // the peers are mid-call: the call counts are lost
    if (e.status() == blinkTimeout) throw Error(blinkTimeout, e.what() + health_.diagnose());
    throw;
  }
}

template <typename Body>
void Communicator::runLeaders(Body&& body) {
  runOffPlan([&] {
    body();
    settleAfterLeaders(*leaders_, leaders_between_);
    if (leaders_calls_ < kLeadersSteadyCalls && ++leaders_calls_ == kLeadersSteadyCalls) {
      measureLeadersAgain();
    }
  });
}

void Communicator::settleTransports() {
  for (const auto& transport : transport_objects_) transport->settle(timeout_s_);
}

void Communicator::settleAfterLeaders(const algorithms::NodeLeaders& leaders, Transport* between) {
  // Only the leaders' transport carried anything, and nothing where MPI's own collective
  // did. Settling what did not carry cost every small call across nodes several
  // microseconds (UCX's settle hands its workers back to the progress thread, which
  // arms them: system calls).
  if (!leaders.lastCallUsedTransport()) return;
  if (between != nullptr) {
    between->settle(timeout_s_);
  } else {
    settleTransports();
  }
}

void Communicator::moveBytes(bool on_device, void* to, const void* from, std::size_t bytes) {
  if (bytes == 0 || to == from) return;
  if (!on_device) {
    std::memmove(to, from, bytes);
    return;
  }
  device_->copy(to, from, bytes, device_stream_);
  device_->synchronize(device_stream_);
}

void Communicator::divideResult(bool on_device, void* buffer, std::size_t count,
                                blinkDataType_t type) {
  if (!on_device) {
    divideBy(buffer, count, type, size());
    return;
  }
  device_->divide(buffer, count, type, size(), device_stream_);
  device_->synchronize(device_stream_);
}

void Communicator::requireHostMemory(std::initializer_list<MemoryAgreement::Buffer> buffers) {
  checkUsable();
  try {
    memory_.requireHostMemory(buffers);
  } catch (const MemoryTypeError&) {
    throw;  // every rank refused together: the communicator goes on
  } catch (const Error& e) {
    broken_ = e.what();  // a rank missed the agreement: its reduction may still be pending
    throw;
  }
}

bool Communicator::placeBuffers(std::initializer_list<MemoryAgreement::Buffer> buffers) {
  checkUsable();
  if (!memory_.checksBuffers()) return false;  // no CUDA in the job: host memory, no agreement
  try {
    // Made at the first such call: on a GPU a stream costs a CUDA context, which
    // communicators that only ever see host buffers should not pay for. A CUDA
    // error here is agreed within the memory check (refused on every rank alike).
    return memory_.onDevice(buffers, device_path_, [this] {
      if (device_stream_ < 0) device_stream_ = device_->createStream();
      device_->synchronizeCaller();
    });
  } catch (const MemoryTypeError&) {
    throw;  // every rank refused together: the communicator goes on
  } catch (const Error& e) {
    broken_ = e.what();  // a rank missed the agreement: its reduction may still be pending
    throw;
  }
}

void Communicator::checkRoot(int root) const {
  if (root < 0 || root >= layout_.size) {
    throw Error(blinkInvalidArgument, "root " + std::to_string(root) + " is not a rank of this " +
                                          std::to_string(layout_.size) + "-rank communicator");
  }
}

void Communicator::runPlan(CachedChoice& cp, std::byte* work, const void* input,
                           std::uint64_t bytes, blinkDataType_t type, blinkRedOp_t op,
                           bool on_device) {
  checkUsable();
  const auto* in = static_cast<const std::byte*>(input);
  if (in == work) in = nullptr;
  if (in != nullptr && !cp.program.input_capable) {
    moveBytes(on_device, work, in, bytes);
    in = nullptr;
  }
  const Combine& combine = combineFor(type, op);
  DeviceRun device_run;
  RunOptions options;
  if (on_device) {
    device_run = {device_, device_stream_, &device_events_, {type, op}};
    options.device = &device_run;
    device_transport_->paceByShares(cp.plan.channel_shares);
  } else if (between_nodes_ != nullptr) {
    between_nodes_->paceByShares(cp.plan.channel_shares);
  }
  options.timeout_seconds = timeout_s_;
  options.what = plan::toString(cp.plan.collective) + " of " + std::to_string(bytes) + " bytes";
  try {
    execute(cp.program, work, in, combine, options);
    settleTransports();
  } catch (const Error& e) {
    // Streams stopped mid-message cannot be resynchronised with the peers.
    broken_ = e.what();
    if (e.status() == blinkTimeout) throw Error(blinkTimeout, e.what() + health_.diagnose());
    throw;
  }
}

void Communicator::allReduce(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                             blinkRedOp_t op) {
  checkReduction(type, op);
  const std::uint64_t bytes = checkedBytes(count, elementSize(type));
  needBuffer(send, bytes, "sendbuff");
  needBuffer(recv, bytes, "recvbuff");
  if (bytes == 0) return;
  const bool dev = placeBuffers({{send, "sendbuff"}, {recv, "recvbuff"}});
  if (size() == 1) {
    moveBytes(dev, recv, send, bytes);
  } else {
    CachedChoice& cp =
        choiceFor(plan::Collective::AllReduce, bytes, static_cast<int>(elementSize(type)), 0, dev);
    ++calls_[static_cast<std::size_t>(cp.algorithm)];
    if (cp.algorithm == Algorithm::Board) {
      runOffPlan(
          [&] { one_shot_->allReduce(asBytes(send), asBytes(recv), bytes, combineFor(type, op)); });
    } else if (cp.algorithm == Algorithm::Leaders) {
      runLeaders([&] {
        leaders_->allReduce(asBytes(send), asBytes(recv), bytes, combineFor(type, op),
                            mpiReduction(type, op));
      });
    } else if (cp.algorithm == Algorithm::Direct) {
      runOffPlan([&] {
        direct_->allReduce(asBytes(send), asBytes(recv), bytes, elementSize(type),
                           combineFor(type, op));
      });
    } else {
      runPlan(cp, static_cast<std::byte*>(recv), send, bytes, type, op, dev);
    }
  }
  if (op == blinkAvg) divideResult(dev, recv, count, type);
}

void Communicator::barrier() {
  const std::uint8_t arrived = 1;
  std::uint8_t all = 0;
  allReduce(&arrived, &all, 1, blinkUint8, blinkMax);
}

void Communicator::broadcast(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                             int root) {
  checkRoot(root);
  const std::uint64_t bytes = checkedBytes(count, elementSize(type));
  if (rank() == root) needBuffer(send, bytes, "sendbuff");
  needBuffer(recv, bytes, "recvbuff");
  if (bytes == 0) return;
  const bool dev =
      placeBuffers({{rank() == root ? send : nullptr, "sendbuff"}, {recv, "recvbuff"}});
  if (size() == 1) {
    moveBytes(dev, recv, send, bytes);
    return;
  }
  const int root_plan = job_.plan_rank_of[static_cast<std::size_t>(root)];
  CachedChoice& cp = choiceFor(plan::Collective::Broadcast, bytes,
                               static_cast<int>(elementSize(type)), root_plan, dev);
  ++calls_[static_cast<std::size_t>(cp.algorithm)];
  if (cp.algorithm == Algorithm::Board) {
    runOffPlan([&] { one_shot_->broadcast(asBytes(send), asBytes(recv), bytes, root); });
  } else if (cp.algorithm == Algorithm::Leaders) {
    runLeaders([&] { leaders_->broadcast(asBytes(send), asBytes(recv), bytes, root); });
  } else if (cp.algorithm == Algorithm::Direct) {
    runOffPlan([&] { direct_->broadcast(asBytes(send), asBytes(recv), bytes, root); });
  } else {
    runPlan(cp, static_cast<std::byte*>(recv), rank() == root ? send : nullptr, bytes, type,
            blinkSum, dev);
  }
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                          blinkRedOp_t op, int root) {
  checkReduction(type, op);
  checkRoot(root);
  const std::uint64_t bytes = checkedBytes(count, elementSize(type));
  needBuffer(send, bytes, "sendbuff");
  if (rank() == root) needBuffer(recv, bytes, "recvbuff");
  if (bytes == 0) return;
  const bool dev =
      placeBuffers({{send, "sendbuff"}, {rank() == root ? recv : nullptr, "recvbuff"}});
  std::byte* work = rank() == root ? static_cast<std::byte*>(recv) : nullptr;
  if (size() == 1) {
    moveBytes(dev, work, send, bytes);
  } else {
    const int root_plan = job_.plan_rank_of[static_cast<std::size_t>(root)];
    CachedChoice& cp = choiceFor(plan::Collective::Reduce, bytes,
                                 static_cast<int>(elementSize(type)), root_plan, dev);
    ++calls_[static_cast<std::size_t>(cp.algorithm)];
    if (cp.algorithm == Algorithm::Board) {
      runOffPlan([&] {
        one_shot_->reduce(asBytes(send), asBytes(recv), bytes, combineFor(type, op), root);
      });
    } else if (cp.algorithm == Algorithm::Leaders) {
      runLeaders([&] {
        leaders_->reduce(asBytes(send), asBytes(recv), bytes, combineFor(type, op), root,
                         mpiReduction(type, op));
      });
    } else {
      if (work == nullptr) work = scratch(bytes, dev);
      if (cp.algorithm == Algorithm::Direct) {
        runOffPlan([&] {
          direct_->reduce(asBytes(send), work, bytes, elementSize(type), combineFor(type, op),
                          root);
        });
      } else {
        runPlan(cp, work, send, bytes, type, op, dev);
      }
    }
  }
  if (op == blinkAvg && rank() == root) divideResult(dev, recv, count, type);
}

void Communicator::allGather(const void* send, void* recv, std::size_t send_count,
                             blinkDataType_t type) {
  const std::uint64_t block = checkedBytes(send_count, elementSize(type));
  const std::uint64_t bytes =
      checkedBytes(send_count, elementSize(type), static_cast<std::size_t>(size()));
  needBuffer(send, block, "sendbuff");
  needBuffer(recv, bytes, "recvbuff");
  if (bytes == 0) return;
  const bool dev = placeBuffers({{send, "sendbuff"}, {recv, "recvbuff"}});
  auto* out = static_cast<std::byte*>(recv);
  const auto me = static_cast<std::size_t>(rank());
  if (size() == 1) {
    moveBytes(dev, out, send, block);
    return;
  }
  CachedChoice& cp =
      choiceFor(plan::Collective::AllGather, bytes, static_cast<int>(elementSize(type)), -1, dev);
  ++calls_[static_cast<std::size_t>(cp.algorithm)];
  if (cp.algorithm == Algorithm::Board) {  // comm rank order: no plan ranks involved
    runOffPlan([&] { one_shot_->allGather(asBytes(send), out, block); });
    return;
  }
  if (cp.algorithm == Algorithm::Leaders) {  // comm rank order as well
    runLeaders([&] { leaders_->allGather(asBytes(send), out, block); });
    return;
  }
  if (cp.algorithm == Algorithm::Direct) {
    runOffPlan([&] { direct_->allGather(asBytes(send), out, block); });
    return;
  }
  if (identity_ranks_) {
    moveBytes(dev, out + me * block, send, block);
    runPlan(cp, out, nullptr, bytes, type, blinkSum, dev);
    return;
  }
  // Plan rank p's segment is the block of communicator rank comm_rank_of[p].
  std::byte* work = scratch(bytes, dev);
  const auto mine = static_cast<std::size_t>(job_.plan_rank_of[me]);
  moveBytes(dev, work + mine * block, send, block);
  runPlan(cp, work, nullptr, bytes, type, blinkSum, dev);
  for (std::size_t p = 0; p < static_cast<std::size_t>(size()); ++p) {
    moveBytes(dev, out + static_cast<std::size_t>(job_.comm_rank_of[p]) * block, work + p * block,
              block);
  }
}

void Communicator::reduceScatter(const void* send, void* recv, std::size_t recv_count,
                                 blinkDataType_t type, blinkRedOp_t op) {
  checkReduction(type, op);
  const std::uint64_t block = checkedBytes(recv_count, elementSize(type));
  const std::uint64_t bytes =
      checkedBytes(recv_count, elementSize(type), static_cast<std::size_t>(size()));
  needBuffer(send, bytes, "sendbuff");
  needBuffer(recv, block, "recvbuff");
  if (bytes == 0) return;
  const bool dev = placeBuffers({{send, "sendbuff"}, {recv, "recvbuff"}});
  const auto me = static_cast<std::size_t>(rank());
  const auto* in = static_cast<const std::byte*>(send);
  if (size() == 1) {
    moveBytes(dev, recv, send, block);
    if (op == blinkAvg) divideResult(dev, recv, recv_count, type);
    return;
  }
  CachedChoice& cp = choiceFor(plan::Collective::ReduceScatter, bytes,
                               static_cast<int>(elementSize(type)), -1, dev);
  ++calls_[static_cast<std::size_t>(cp.algorithm)];
  if (cp.algorithm == Algorithm::Board) {
    runOffPlan([&] { one_shot_->reduceScatter(in, asBytes(recv), block, combineFor(type, op)); });
  } else if (cp.algorithm == Algorithm::Leaders) {
    runLeaders([&] {
      leaders_->reduceScatter(in, asBytes(recv), block, combineFor(type, op),
                              mpiReduction(type, op));
    });
  } else if (cp.algorithm == Algorithm::Direct) {
    // A result that lands elsewhere in `send` than this rank's own block waits in
    // scratch unless the path allows it (MPI_IN_PLACE puts it at the start).
    auto* out = asBytes(recv);
    const auto at = reinterpret_cast<std::uintptr_t>(out);
    const auto from = reinterpret_cast<std::uintptr_t>(in);
    const bool overlaps = at < from + bytes && from < at + block && out != in + me * block &&
                          !(out == in && direct_->reduceScatterIntoInputStart());
    std::byte* result = overlaps ? scratch(block) : out;
    runOffPlan([&] { direct_->reduceScatter(in, result, block, combineFor(type, op)); });
    if (overlaps) std::memmove(out, result, block);
  } else {
    // The plan reduces in place, so it works on scratch: the send buffer stays intact.
    std::byte* work = scratch(bytes, dev);
    if (identity_ranks_) {
      runPlan(cp, work, send, bytes, type, op, dev);
    } else {
      for (std::size_t p = 0; p < static_cast<std::size_t>(size()); ++p) {
        moveBytes(dev, work + p * block,
                  in + static_cast<std::size_t>(job_.comm_rank_of[p]) * block, block);
      }
      runPlan(cp, work, nullptr, bytes, type, op, dev);
    }
    const auto mine = static_cast<std::size_t>(job_.plan_rank_of[me]);
    moveBytes(dev, recv, work + mine * block, block);
  }
  if (op == blinkAvg) divideResult(dev, recv, recv_count, type);
}

}  // namespace blink::runtime
