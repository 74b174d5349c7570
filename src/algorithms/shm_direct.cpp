#include "algorithms/shm_direct.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/backoff.hpp"
#include "common/error.hpp"
#include "common/mpi_wait.hpp"
#include "transport/shm/cross_memory.hpp"
#include "transport/shm/node_segment.hpp"

namespace blink::algorithms {
namespace {

constexpr std::uint64_t kMagic = 0x424c494e4b444952ULL;  // "BLINKDIR"
// A peer's piece and the output it is combined into stay in L2 together.
constexpr std::size_t kPieceBytes = 256 * 1024;

std::uint64_t addressOf(const std::byte* p) {
  return reinterpret_cast<std::uint64_t>(p);
}

}  // namespace

ShmDirect::ShmDirect(MPI_Comm node_comm, double timeout_seconds)
    : timeout_seconds_(timeout_seconds), probe_word_(kMagic) {
  transport::checkSetUpCall(PMPI_Comm_rank(node_comm, &rank_), "direct path", "MPI_Comm_rank");
  transport::checkSetUpCall(PMPI_Comm_size(node_comm, &size_), "direct path", "MPI_Comm_size");
  segment_ = transport::mapNodeSegment(node_comm, static_cast<std::size_t>(size_) * sizeof(Control),
                                       timeout_seconds_, "direct path");

  // Every rank reads a word of every other; the path exists only if all reads work.
  const std::uint64_t mine[2] = {static_cast<std::uint64_t>(getpid()),
                                 reinterpret_cast<std::uint64_t>(&probe_word_)};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size_));
  allgatherWithin(mine, 2, MPI_UINT64_T, all.data(), node_comm, timeout_seconds_,
                  "direct path: exchanging process ids");
  std::string failure;
  pids_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const auto at = 2 * static_cast<std::size_t>(r);
    pids_[static_cast<std::size_t>(r)] = static_cast<long>(all[at]);
    if (r != rank_ && failure.empty() &&
        !transport::canReadPeerWord(static_cast<long>(all[at]), all[at + 1], kMagic)) {
      failure = "direct path: node rank " + std::to_string(rank_) +
                " cannot read the memory of node rank " + std::to_string(r) + " (pid " +
                std::to_string(all[at]) + "): " + std::strerror(errno);
    }
  }
  const bool all_ok = everyRankOk(failure.empty(), node_comm, timeout_seconds_,
                                  "direct path: agreeing that every rank can read the others");
  if (!failure.empty()) throw Error(blinkUnsupported, failure);
  if (!all_ok) {
    throw Error(blinkUnsupported,
                "direct path: a rank of this node cannot read the others' memory (see its error)");
  }
  piece_.resize(kPieceBytes);
}

ShmDirect::Control& ShmDirect::control(int rank) const {
  return reinterpret_cast<Control*>(segment_.data())[rank];
}

void ShmDirect::begin(const char* collective, std::size_t bytes) {
  ++call_;
  collective_ = collective;
  bytes_ = bytes;
}

void ShmDirect::post(const std::byte* in, const std::byte* out) {
  // No peer reads these before `posted` says they belong to this call, and every
  // peer finished with the last call's before it returned.
  Control& c = control(rank_);
  std::atomic_ref(c.in).store(addressOf(in), std::memory_order_relaxed);
  std::atomic_ref(c.out).store(addressOf(out), std::memory_order_relaxed);
  std::atomic_ref(c.posted).store(call_, std::memory_order_release);
}

void ShmDirect::publish(std::uint64_t Control::*field) {
  std::atomic_ref(control(rank_).*field).store(call_, std::memory_order_release);
}

void ShmDirect::awaitCounter(int rank, std::uint64_t Control::*field, const char* what_for) {
  blink::awaitCounter(control(rank).*field, call_, timeout_seconds_,
                      [&](double seconds) { timedOut(rank, what_for, seconds); });
}

std::uint64_t ShmDirect::peerAddress(int rank, std::uint64_t Control::*field) const {
  return std::atomic_ref(control(rank).*field).load(std::memory_order_relaxed);
}

void ShmDirect::read(int rank, std::uint64_t address, std::byte* to, std::size_t n) const {
  if (n > 0) transport::readPeerMemory(pids_[static_cast<std::size_t>(rank)], address, to, n, rank);
}

void ShmDirect::reduceSegment(const std::byte* mine, std::byte* out, std::size_t offset,
                              std::size_t n, const Combine& combine) {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) awaitCounter(r, &Control::posted, "to post its buffers");
  }
  for (std::size_t at = 0; at < n; at += kPieceBytes) {
    const std::size_t piece = std::min(kPieceBytes, n - at);
    // Peers in turn from the next rank on, so that ranks do not all read one peer.
    int step = 1;
    if (out != mine) {
      // Out of place the first peer's piece lands in the output, which saves a copy
      // of this rank's own: every op here is commutative, up to which NaN or which
      // zero of a min/max tie comes out (one rank computes each segment, so every
      // rank still gets the same bits).
      const int peer = (rank_ + step++) % size_;
      read(peer, peerAddress(peer, &Control::in) + offset + at, out + at, piece);
      combine(out + at, mine + at, piece);
    }
    for (; step < size_; ++step) {
      const int peer = (rank_ + step) % size_;
      read(peer, peerAddress(peer, &Control::in) + offset + at, piece_.data(), piece);
      combine(out + at, piece_.data(), piece);
    }
  }
}

void ShmDirect::finish() {
  publish(&Control::done);
  for (int step = 1; step < size_; ++step) {
    awaitCounter((rank_ + step) % size_, &Control::done, "to finish reading this rank's buffers");
  }
}

void ShmDirect::timedOut(int rank, const char* what_for, double seconds) const {
  blink::throwPeerTimeout(collective_, bytes_, "direct path, cross-memory attach", call_, rank_,
                          rank, what_for, seconds);
}

void ShmDirect::allReduce(const std::byte* in, std::byte* out, std::size_t bytes,
                          std::size_t element_bytes, const Combine& combine) {
  begin("AllReduce", bytes);
  post(in, out);
  const std::size_t elements = bytes / element_bytes;
  const std::size_t per_rank = (elements + static_cast<std::size_t>(size_) - 1) / size_;
  auto segment = [&](int r, std::size_t& offset, std::size_t& n) {
    const std::size_t first = std::min(elements, per_rank * static_cast<std::size_t>(r));
    const std::size_t last = std::min(elements, first + per_rank);
    offset = first * element_bytes;
    n = (last - first) * element_bytes;
  };
  std::size_t offset = 0, n = 0;
  segment(rank_, offset, n);
  reduceSegment(in + offset, out + offset, offset, n, combine);
  publish(&Control::reduced);
  // An owner's `reduced` also says it has read every input of its segment, so in
  // place this rank may now overwrite that segment of its own buffer.
  for (int step = 1; step < size_; ++step) {
    const int owner = (rank_ + step) % size_;
    segment(owner, offset, n);
    awaitCounter(owner, &Control::reduced, "to finish its segment");
    read(owner, peerAddress(owner, &Control::out) + offset, out + offset, n);
  }
  finish();
}

void ShmDirect::reduce(const std::byte* in, std::byte* out, std::size_t bytes,
                       std::size_t element_bytes, const Combine& combine, int /*root*/) {
  allReduce(in, out, bytes, element_bytes, combine);
}

void ShmDirect::reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                              const Combine& combine) {
  begin("ReduceScatter", static_cast<std::size_t>(size_) * block_bytes);
  post(in, out);
  const std::size_t offset = static_cast<std::size_t>(rank_) * block_bytes;
  reduceSegment(in + offset, out, offset, block_bytes, combine);
  finish();
}

void ShmDirect::allGather(const std::byte* in, std::byte* out, std::size_t block_bytes) {
  begin("AllGather", static_cast<std::size_t>(size_) * block_bytes);
  post(in, out);
  std::byte* own = out + static_cast<std::size_t>(rank_) * block_bytes;
  if (own != in) std::memcpy(own, in, block_bytes);
  for (int step = 1; step < size_; ++step) {
    const int peer = (rank_ + step) % size_;
    awaitCounter(peer, &Control::posted, "to post its buffers");
    read(peer, peerAddress(peer, &Control::in), out + static_cast<std::size_t>(peer) * block_bytes,
         block_bytes);
  }
  finish();
}

std::string ShmDirect::describe() const {
  return "every rank reads its peers' buffers with cross-memory attach";
}

void ShmDirect::broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root) {
  begin("Broadcast", bytes);
  if (rank_ == root) {
    post(in, out);
    if (out != in) std::memcpy(out, in, bytes);
    finish();
    return;
  }
  post(nullptr, out);
  awaitCounter(root, &Control::posted, "to post its buffer");
  read(root, peerAddress(root, &Control::in), out, bytes);
  publish(&Control::done);  // nobody reads this rank's buffers
}

}  // namespace blink::algorithms
