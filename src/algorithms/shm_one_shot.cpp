#include "algorithms/shm_one_shot.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "common/backoff.hpp"
#include "common/error.hpp"
#include "transport/shm/node_segment.hpp"

namespace blink::algorithms {
namespace {

// Calls of at most kDeepMaxBytes take a ring of kDeepDepth slots, larger ones one of
// kDepth: a root (or a Reduce's non-roots) can run far ahead of a descheduled peer in
// a stream of small calls, while the shared memory stays bounded (about
// kDeepDepth * 4 KiB + kDepth * capacity per rank).
constexpr std::size_t kDepth = 4;
constexpr std::size_t kDeepDepth = 64;
constexpr std::size_t kDeepMaxBytes = 4096;

std::size_t roundUp(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

ShmOneShot::ShmOneShot(MPI_Comm node_comm, std::size_t capacity, double timeout_seconds)
    : capacity_(roundUp(capacity, 64)), timeout_seconds_(timeout_seconds) {
  transport::checkSetUpCall(PMPI_Comm_rank(node_comm, &rank_), "one-shot board", "MPI_Comm_rank");
  transport::checkSetUpCall(PMPI_Comm_size(node_comm, &size_), "one-shot board", "MPI_Comm_size");
  deep_slot_bytes_ = roundUp(sizeof(std::uint64_t) + std::min(capacity_, kDeepMaxBytes), 64);
  slot_bytes_ = capacity_ > kDeepMaxBytes ? roundUp(sizeof(std::uint64_t) + capacity_, 64) : 0;
  full_spin_rounds_ = spinRoundsFor(size_);
  spin_rounds_ = full_spin_rounds_;
  peer_done_.assign(static_cast<std::size_t>(size_), 0);
  const std::size_t bytes =
      static_cast<std::size_t>(size_) *
      (sizeof(Control) + kDeepDepth * deep_slot_bytes_ + kDepth * slot_bytes_);
  segment_ = transport::mapNodeSegment(node_comm, bytes, timeout_seconds_, "one-shot board");
}

ShmOneShot::Control& ShmOneShot::control(int rank) const {
  return reinterpret_cast<Control*>(segment_.data())[rank];
}

std::size_t ShmOneShot::depth() const {
  return bytes_ <= kDeepMaxBytes ? kDeepDepth : kDepth;
}

std::uint64_t& ShmOneShot::sequence(int rank, std::uint64_t call) const {
  // The deep ring of every rank, then the other.
  std::byte* slots = segment_.data() + static_cast<std::size_t>(size_) * sizeof(Control);
  const auto r = static_cast<std::size_t>(rank);
  std::byte* slot = bytes_ <= kDeepMaxBytes
                        ? slots + (r * kDeepDepth + call % kDeepDepth) * deep_slot_bytes_
                        : slots + static_cast<std::size_t>(size_) * kDeepDepth * deep_slot_bytes_ +
                              (r * kDepth + call % kDepth) * slot_bytes_;
  return *reinterpret_cast<std::uint64_t*>(slot);
}

std::byte* ShmOneShot::slotData(int rank, std::uint64_t call) const {
  return reinterpret_cast<std::byte*>(&sequence(rank, call)) + sizeof(std::uint64_t);
}

void ShmOneShot::begin(const char* collective, std::size_t bytes) {
  if (bytes > capacity_) {
    throw Error(blinkInternalError, std::string("one-shot board: ") + collective + " of " +
                                        std::to_string(bytes) + " bytes exceeds its " +
                                        std::to_string(capacity_));
  }
  ++call_;
  collective_ = collective;
  bytes_ = bytes;
}

void ShmOneShot::post(const std::byte* data, std::size_t bytes) {
  // The slot was last used by call_ - depth() or earlier: every peer must be done with
  // that call.
  if (call_ > depth()) {
    const std::uint64_t needed = call_ - depth();
    for (int r = 0; r < size_; ++r) {
      std::uint64_t& seen = peer_done_[static_cast<std::size_t>(r)];
      if (r == rank_ || seen >= needed) continue;
      seen = blink::awaitCounter(
          control(r).done, needed, timeout_seconds_,
          [&](double seconds) { timedOut(r, "to finish reading the call before last", seconds); },
          &spin_rounds_, full_spin_rounds_);
    }
  }
  std::memcpy(slotData(rank_, call_), data, bytes);
  std::atomic_ref(sequence(rank_, call_)).store(call_, std::memory_order_release);
}

const std::byte* ShmOneShot::await(int rank) {
  blink::awaitCounter(
      sequence(rank, call_), call_, timeout_seconds_,
      [&](double seconds) { timedOut(rank, "to post its data", seconds); }, &spin_rounds_,
      full_spin_rounds_);
  // Having posted this call, the peer has finished the one before.
  std::uint64_t& seen = peer_done_[static_cast<std::size_t>(rank)];
  if (seen < call_ - 1) seen = call_ - 1;
  return slotData(rank, call_);
}

void ShmOneShot::finish() {
  std::atomic_ref(control(rank_).done).store(call_, std::memory_order_release);
}

void ShmOneShot::timedOut(int rank, const char* what_for, double seconds) const {
  blink::throwPeerTimeout(collective_, bytes_, "one-shot shared memory", call_, rank_, rank,
                          what_for, seconds);
}

void ShmOneShot::allReduce(const std::byte* in, std::byte* out, std::size_t bytes,
                           const Combine& combine) {
  begin("AllReduce", bytes);
  post(in, bytes);
  std::memcpy(out, await(0), bytes);
  for (int r = 1; r < size_; ++r) combine(out, await(r), bytes);
  finish();
}

void ShmOneShot::broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root) {
  begin("Broadcast", bytes);
  if (rank_ == root) {
    post(in, bytes);
    if (out != in) std::memcpy(out, in, bytes);
  } else {
    std::memcpy(out, await(root), bytes);
  }
  finish();
}

void ShmOneShot::reduce(const std::byte* in, std::byte* out, std::size_t bytes,
                        const Combine& combine, int root) {
  begin("Reduce", bytes);
  post(in, bytes);
  if (rank_ == root) {
    std::memcpy(out, await(0), bytes);
    for (int r = 1; r < size_; ++r) combine(out, await(r), bytes);
  }
  finish();
}

void ShmOneShot::allGather(const std::byte* in, std::byte* out, std::size_t block_bytes) {
  begin("AllGather", block_bytes);
  post(in, block_bytes);
  for (int r = 0; r < size_; ++r) {
    std::memcpy(out + static_cast<std::size_t>(r) * block_bytes, await(r), block_bytes);
  }
  finish();
}

void ShmOneShot::gather(const std::byte* in, std::byte* out, std::size_t block_bytes, int root) {
  begin("Gather", block_bytes);
  post(in, block_bytes);
  if (rank_ == root) {
    for (int r = 0; r < size_; ++r) {
      std::memcpy(out + static_cast<std::size_t>(r) * block_bytes, await(r), block_bytes);
    }
  }
  finish();
}

void ShmOneShot::scatter(const std::byte* in, std::size_t bytes, std::byte* out, std::size_t at,
                         std::size_t part_bytes, int root) {
  begin("Scatter", bytes);
  if (rank_ == root) {
    post(in, bytes);
    std::memmove(out, in + at, part_bytes);
  } else {
    std::memcpy(out, await(root) + at, part_bytes);
  }
  finish();
}

void ShmOneShot::reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                               const Combine& combine) {
  const std::size_t bytes = static_cast<std::size_t>(size_) * block_bytes;
  begin("ReduceScatter", bytes);
  post(in, bytes);
  const std::size_t mine = static_cast<std::size_t>(rank_) * block_bytes;
  std::memcpy(out, await(0) + mine, block_bytes);
  for (int r = 1; r < size_; ++r) combine(out, await(r) + mine, block_bytes);
  finish();
}

Traffic ShmOneShot::traffic(plan::Collective collective, std::uint64_t bytes, int ranks, int root) {
  const double b = static_cast<double>(bytes);
  const double n = static_cast<double>(ranks);
  Traffic t;
  t.syncs = 1.0;
  t.ranks.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    RankTraffic& mine = t.ranks[static_cast<std::size_t>(r)];
    switch (collective) {
      case plan::Collective::AllReduce:  // post the input, read every other input
        mine = {b, (n - 1) * b, (n - 1) * b};
        break;
      case plan::Collective::Broadcast:
        mine = r == root ? RankTraffic{b, 0.0, 0.0} : RankTraffic{0.0, b, 0.0};
        break;
      case plan::Collective::Reduce:
        mine = r == root ? RankTraffic{0.0, (n - 1) * b, (n - 1) * b} : RankTraffic{b, 0.0, 0.0};
        break;
      case plan::Collective::AllGather:
        mine = {b / n, (n - 1) * b / n, 0.0};
        break;
      case plan::Collective::ReduceScatter:  // post every block, read its own from the others
        mine = {b, (n - 1) * b / n, (n - 1) * b / n};
        break;
    }
  }
  return t;
}

}  // namespace blink::algorithms
