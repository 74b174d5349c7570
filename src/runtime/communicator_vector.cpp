// The collectives Blink has no algorithm of its own for, built on those it has, so
// that every byte still moves on a path the planner chose for its size: AllGatherV
// as one AllGather of blocks padded to the largest, Gather as an AllGather whose
// other ranks drop the blocks, ReduceScatterV as one ReduceScatter of padded blocks
// or, where padding would more than double the data, one AllReduce of the input.
#include <algorithm>
#include <cstring>
#include <limits>

#include "common/error.hpp"
#include "runtime/communicator.hpp"
#include "runtime/reduce_cpu.hpp"

namespace blink::runtime {
namespace {

// count * element bytes, refusing what does not fit in 64 bits.
std::uint64_t bytesOf(std::size_t count, std::size_t element) {
  if (count > std::numeric_limits<std::uint64_t>::max() / element) {
    throw Error(blinkInvalidArgument, "count is too large");
  }
  return static_cast<std::uint64_t>(count) * element;
}

void needArray(const std::size_t* a, const char* which) {
  if (a == nullptr) throw Error(blinkInvalidArgument, std::string(which) + " is NULL");
}

void needBuffer(const void* p, std::uint64_t bytes, const char* which) {
  if (p == nullptr && bytes > 0) {
    throw Error(blinkInvalidArgument, std::string(which) + " is NULL with a count > 0");
  }
}

// The largest count, and whether every count equals it.
std::pair<std::size_t, bool> largestOf(const std::size_t* counts, int n) {
  const std::size_t largest = *std::max_element(counts, counts + n);
  return {largest, std::all_of(counts, counts + n, [&](std::size_t c) { return c == largest; })};
}

}  // namespace

void Communicator::allGatherV(const void* send, std::size_t send_count, void* recv,
                              const std::size_t* recv_counts, const std::size_t* displs,
                              blinkDataType_t type) {
  const std::size_t es = elementSize(type);
  needArray(recv_counts, "recvcounts");
  needArray(displs, "displs");
  const auto me = static_cast<std::size_t>(rank());
  const auto n = static_cast<std::size_t>(size());
  if (send_count != recv_counts[me]) {
    throw Error(blinkInvalidArgument, "sendcount " + std::to_string(send_count) +
                                          " is not this rank's recvcounts entry " +
                                          std::to_string(recv_counts[me]));
  }
  const auto [largest, equal] = largestOf(recv_counts, size());
  const std::uint64_t block = bytesOf(largest, es);
  needBuffer(send, bytesOf(send_count, es), "sendbuff");
  std::uint64_t extent = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (recv_counts[r] > 0) extent = std::max(extent, bytesOf(displs[r] + recv_counts[r], es));
  }
  needBuffer(recv, extent, "recvbuff");
  if (block == 0) return;
  // Which path is taken depends on the counts alone (equal on every rank): the
  // displacements are this rank's own layout, so they only decide copies.
  requireHostMemory({{send, "sendbuff"}, {recv, "recvbuff"}});
  auto* out = static_cast<std::byte*>(recv);
  const bool packed = equal && [&] {
    for (std::size_t r = 0; r < n; ++r) {
      if (displs[r] != r * largest) return false;
    }
    return true;
  }();
  if (packed) return allGather(send, recv, largest, type);
  const std::uint64_t all = bytesOf(largest, es * n);
  if (padded_.size() < all) padded_.resize(all);
  std::byte* work = padded_.data();
  if (equal) {
    allGather(send, work, largest, type);
  } else {
    std::memmove(work + me * block, send, send_count * es);
    allGather(work + me * block, work, largest, type);
  }
  for (std::size_t r = 0; r < n; ++r) {
    std::byte* at = out + displs[r] * es;
    if (at != work + r * block) std::memmove(at, work + r * block, recv_counts[r] * es);
  }
}

void Communicator::gather(const void* send, void* recv, std::size_t send_count,
                          blinkDataType_t type, int root) {
  checkRoot(root);
  const std::size_t es = elementSize(type);
  const std::uint64_t block = bytesOf(send_count, es);
  needBuffer(send, block, "sendbuff");
  if (rank() == root) needBuffer(recv, bytesOf(send_count, es * size()), "recvbuff");
  if (block == 0) return;
  if (rank() == root) return allGather(send, recv, send_count, type);
  const std::uint64_t all = bytesOf(send_count, es * size());
  if (padded_.size() < all) padded_.resize(all);
  allGather(send, padded_.data(), send_count, type);
}

void Communicator::reduceScatterV(const void* send, void* recv, const std::size_t* recv_counts,
                                  blinkDataType_t type, blinkRedOp_t op) {
  checkReduction(type, op);
  needArray(recv_counts, "recvcounts");
  const std::size_t es = elementSize(type);
  const auto me = static_cast<std::size_t>(rank());
  const auto n = static_cast<std::size_t>(size());
  const auto [largest, equal] = largestOf(recv_counts, size());
  std::size_t total = 0, before_me = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (r == me) before_me = total;
    total += recv_counts[r];
    if (total < recv_counts[r]) throw Error(blinkInvalidArgument, "counts are too large");
  }
  needBuffer(send, bytesOf(total, es), "sendbuff");
  needBuffer(recv, bytesOf(recv_counts[me], es), "recvbuff");
  if (largest == 0) return;
  if (equal) return reduceScatter(send, recv, largest, type, op);
  requireHostMemory({{send, "sendbuff"}, {recv, "recvbuff"}});
  const auto* in = static_cast<const std::byte*>(send);
  const std::uint64_t block = bytesOf(largest, es);
  const std::uint64_t all = bytesOf(largest, es * n);
  if (all <= 2 * bytesOf(total, es)) {
    // Block r of the input at r * block; the padding is reduced along, never read.
    if (padded_.size() < all) padded_.resize(all);
    std::byte* work = padded_.data();
    std::size_t at = 0;
    for (std::size_t r = 0; r < n; ++r) {
      std::memcpy(work + r * block, in + at * es, recv_counts[r] * es);
      at += recv_counts[r];
    }
    reduceScatter(work, work + me * block, largest, type, op);
    std::memcpy(recv, work + me * block, recv_counts[me] * es);
    return;
  }
  const std::uint64_t whole = bytesOf(total, es);
  if (padded_.size() < whole) padded_.resize(whole);
  allReduce(send, padded_.data(), total, type, op);
  std::memcpy(recv, padded_.data() + before_me * es, recv_counts[me] * es);
}

}  // namespace blink::runtime
