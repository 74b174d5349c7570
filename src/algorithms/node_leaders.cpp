#include "algorithms/node_leaders.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "algorithms/host_memory_model.hpp"
#include "common/backoff.hpp"
#include "common/error.hpp"

namespace blink::algorithms {
NodeLeaders::NodeLeaders(ShmOneShot* board, transport::Transport& between, Layout layout,
                         std::size_t capacity, double timeout_seconds)
    : board_(board),
      between_(between),
      layout_(std::move(layout)),
      capacity_(capacity),
      timeout_seconds_(timeout_seconds) {
  const auto me = static_cast<std::size_t>(layout_.rank);
  node_ = layout_.node_of_rank[me];
  local_rank_ = layout_.local_rank_of_rank[me];
  nodes_ = 1 + *std::max_element(layout_.node_of_rank.begin(), layout_.node_of_rank.end());
  if (nodes_ > kMaxNodes) {
    throw Error(blinkUnsupported,
                "node leaders: more than " + std::to_string(kMaxNodes) + " nodes");
  }
  leader_of_.assign(static_cast<std::size_t>(nodes_), -1);
  ranks_on_.assign(static_cast<std::size_t>(nodes_), 0);
  for (std::size_t r = 0; r < layout_.node_of_rank.size(); ++r) {
    const auto n = static_cast<std::size_t>(layout_.node_of_rank[r]);
    ++ranks_on_[n];
    if (layout_.local_rank_of_rank[r] == 0) leader_of_[n] = static_cast<int>(r);
  }
  call_leader_ = leader_of_;
  whole_.resize(2 * static_cast<std::size_t>(nodes_));
  local_size_ = ranks_on_[static_cast<std::size_t>(node_)];
  if (!alone() && board_ == nullptr) {
    throw Error(blinkInternalError, "node leaders: a node of several ranks needs its board");
  }
  first_block_.assign(static_cast<std::size_t>(nodes_) + 1, 0);
  for (int n = 0; n < nodes_; ++n) {
    first_block_[static_cast<std::size_t>(n) + 1] =
        first_block_[static_cast<std::size_t>(n)] + static_cast<std::size_t>(ranks_on_[n]);
  }
  every_node_alone_ = nodes_ == static_cast<int>(layout_.node_of_rank.size());
  equal_nodes_ = std::all_of(ranks_on_.begin(), ranks_on_.end(),
                             [&](int ranks) { return ranks == ranks_on_[0]; });
  ranks_in_node_order_ = true;
  for (std::size_t r = 0; r < layout_.node_of_rank.size(); ++r) {
    const auto n = static_cast<std::size_t>(layout_.node_of_rank[r]);
    if (first_block_[n] + static_cast<std::size_t>(layout_.local_rank_of_rank[r]) != r) {
      ranks_in_node_order_ = false;
    }
  }
  // Allocated once: fresh pages cost a fault each, slower than a small call.
  work_a_.resize(capacity_);
  work_b_.resize(capacity_);
  if (leader()) packed_.resize(capacity_);
  if (nodes_ > 1) many_.reset(new std::byte[static_cast<std::size_t>(nodes_ - 1) * capacity_]);
  shapes_.fill(oneRound(nodes_) ? Shape::OneRound : Shape::LogRounds);
}

void NodeLeaders::setShape(plan::Collective collective, Shape shape) {
  const auto applies = shapesFor(collective);
  if (std::find(applies.begin(), applies.end(), shape) == applies.end()) {
    throw Error(blinkInvalidArgument, std::string("node leaders: ") + toString(shape) +
                                          " does not apply to " + plan::toString(collective));
  }
  shapes_[static_cast<std::size_t>(collective)] = shape;
}

std::vector<transport::StreamKey> NodeLeaders::streamsNeeded() const {
  // A rooted call's root speaks for its node (callLeaders), so every rank may
  // exchange with the leaders of the other nodes, and a leader with any of their ranks.
  std::vector<transport::StreamKey> keys;
  for (std::size_t r = 0; r < layout_.node_of_rank.size(); ++r) {
    if (layout_.node_of_rank[r] == node_) continue;
    if (leader() || layout_.local_rank_of_rank[r] == 0)
      keys.push_back({static_cast<int>(r), kChannel});
  }
  return keys;
}

void NodeLeaders::callLeaders(int root) {
  // Only a rooted call changes a speaker, so only the node it changed is put back:
  // every small call passes here.
  if (call_root_node_ >= 0) {
    const auto n = static_cast<std::size_t>(call_root_node_);
    call_leader_[n] = leader_of_[n];
    call_root_node_ = -1;
  }
  if (root >= 0) {
    call_root_node_ = layout_.node_of_rank[static_cast<std::size_t>(root)];
    call_leader_[static_cast<std::size_t>(call_root_node_)] = root;
  }
}

void NodeLeaders::begin(plan::Collective collective, const char* name, std::size_t bytes,
                        bool mpi_fits) {
  if (bytes > capacity_) {
    throw Error(blinkInternalError, std::string("node leaders: ") + name + " of " +
                                        std::to_string(bytes) + " bytes exceeds " +
                                        std::to_string(capacity_));
  }
  ++call_;
  collective_ = name;
  shape_ = mpi_fits && mpi_ready_ && usesMpi(collective) ? Shape::Mpi : shape(collective);
  bytes_ = bytes;
  callLeaders(-1);
}

void NodeLeaders::exchangeAll(const Part* sends, int send_count, const Part* recvs,
                              int recv_count) {
  const int parts = send_count + recv_count;
  Backoff backoff(timeout_seconds_);
  auto timedOut = [&](int waiting) {
    const bool receiving = waiting >= send_count;
    const int node = receiving ? recvs[waiting - send_count].node : sends[waiting].node;
    throwPeerTimeout(collective_, bytes_, "node leaders between nodes", call_, layout_.rank,
                     call_leader_[static_cast<std::size_t>(node)],
                     receiving ? "to send its node's data" : "to take this node's data",
                     backoff.secondsSinceProgress());
  };
  std::size_t largest = 0;
  for (int i = 0; i < send_count; ++i) largest = std::max(largest, sends[i].bytes);
  for (int i = 0; i < recv_count; ++i) largest = std::max(largest, recvs[i].bytes);
  if (between_.movesAllAtOnce(largest)) {  // one poll for all of them (PMPI)
    auto speaker = [&](int node) {
      return transport::StreamKey{call_leader_[static_cast<std::size_t>(node)], kChannel};
    };
    for (int i = 0; i < send_count; ++i) {
      whole_[static_cast<std::size_t>(i)] = {speaker(sends[i].node), sends[i].send, nullptr,
                                             sends[i].bytes};
    }
    for (int i = 0; i < recv_count; ++i) {
      whole_[static_cast<std::size_t>(send_count + i)] = {speaker(recvs[i].node), nullptr,
                                                          recvs[i].recv, recvs[i].bytes};
    }
    const int waiting = between_.moveAllAtOnce(whole_.data(), parts, backoff);
    if (waiting >= 0) timedOut(waiting);
    return;
  }
  std::array<std::size_t, 2 * kMaxNodes> moved;  // the first `parts` only: zeroed here
  std::array<bool, 2 * kMaxNodes> done;
  std::fill_n(moved.begin(), parts, std::size_t{0});
  std::fill_n(done.begin(), parts, false);
  for (;;) {
    bool progress = false, all_done = true;
    for (int i = 0; i < parts; ++i) {
      const auto at = static_cast<std::size_t>(i);
      if (done[at]) continue;
      const std::size_t before = moved[at];
      if (i < send_count) {
        const Part& part = sends[i];
        done[at] =
            between_.sendStream({call_leader_[static_cast<std::size_t>(part.node)], kChannel})
                .push(part.send, part.bytes, moved[at]);
      } else {
        const Part& part = recvs[i - send_count];
        done[at] =
            between_.recvStream({call_leader_[static_cast<std::size_t>(part.node)], kChannel})
                .pullTo(part.bytes, moved[at], part.recv);
      }
      progress = progress || done[at] || moved[at] != before;
      all_done = all_done && done[at];
    }
    if (all_done) return;
    if (progress) {
      backoff.progressed();
    } else if (!backoff.idle()) {
      int waiting = 0;
      while (done[static_cast<std::size_t>(waiting)]) ++waiting;
      timedOut(waiting);
    }
  }
}

void NodeLeaders::exchange(int to, const std::byte* send, std::size_t send_bytes, int from,
                           std::byte* recv, std::size_t recv_bytes) {
  const Part out{to, send, nullptr, send_bytes}, in{from, nullptr, recv, recv_bytes};
  exchangeAll(&out, to < 0 ? 0 : 1, &in, from < 0 ? 0 : 1);
}

std::byte* NodeLeaders::slot(int node, std::size_t bytes) const {
  return many_.get() + static_cast<std::size_t>(node < node_ ? node : node - 1) * bytes;
}

void NodeLeaders::combineInNodeOrder(const std::byte* own, std::byte* into, std::size_t bytes,
                                     const Combine& combine) const {
  std::memcpy(into, node_ == 0 ? own : slot(0, bytes), bytes);
  for (int n = 1; n < nodes_; ++n) combine(into, n == node_ ? own : slot(n, bytes), bytes);
}

// The parts of a one-round exchange with every other node's speaker: `of(node)` each.
template <typename Parts, typename Of>
int everyOtherNode(int nodes, int me, Parts& parts, Of&& of) {
  int count = 0;
  for (int n = 0; n < nodes; ++n) {
    if (n != me) parts[static_cast<std::size_t>(count++)] = of(n);
  }
  return count;
}

std::byte* NodeLeaders::leadersAllReduce(std::byte* acc, std::size_t bytes,
                                         const Combine& combine) {
  std::byte* other = acc == work_a_.data() ? work_b_.data() : work_a_.data();
  if (shape_ == Shape::Mpi) {
    mpiDone(PMPI_Allreduce(acc, other, elements(bytes), mpi_reduction_.type, mpi_reduction_.op,
                           leaders_comm_),
            "MPI_Allreduce");
    return other;
  }
  if (shape_ == Shape::ViaFirstLeader) {  // the same bits as one round: node order
    if (node_ != 0) {
      exchange(0, acc, bytes, -1, nullptr, 0);
      exchange(-1, nullptr, 0, 0, acc, bytes);
      return acc;
    }
    std::array<Part, kMaxNodes> parts;
    const int count = everyOtherNode(nodes_, node_, parts, [&](int n) {
      return Part{n, nullptr, slot(n, bytes), bytes};
    });
    exchangeAll(nullptr, 0, parts.data(), count);
    combineInNodeOrder(acc, other, bytes, combine);
    everyOtherNode(nodes_, node_, parts, [&](int n) { return Part{n, other, nullptr, bytes}; });
    exchangeAll(parts.data(), count, nullptr, 0);
    return other;
  }
  if (shape_ == Shape::OneRound) {
    std::array<Part, kMaxNodes> sends, recvs;
    const int count = everyOtherNode(nodes_, node_, sends, [&](int n) {
      return Part{n, acc, nullptr, bytes};
    });
    everyOtherNode(nodes_, node_, recvs, [&](int n) {
      return Part{n, nullptr, slot(n, bytes), bytes};
    });
    exchangeAll(sends.data(), count, recvs.data(), count);
    combineInNodeOrder(acc, other, bytes, combine);
    return other;
  }
  const int p = NodeLeaders::largestPowerOfTwoUpTo(nodes_);
  if (node_ >= p) {  // hand the data to node_ - p, get the result back
    exchange(node_ - p, acc, bytes, -1, nullptr, 0);
    exchange(-1, nullptr, 0, node_ - p, acc, bytes);
    return acc;
  }
  if (node_ + p < nodes_) {
    exchange(-1, nullptr, 0, node_ + p, other, bytes);
    combine(acc, other, bytes);  // the lower node first
  }
  for (int mask = 1; mask < p; mask <<= 1) {
    const int partner = node_ ^ mask;
    exchange(partner, acc, bytes, partner, other, bytes);
    if (node_ < partner) {
      combine(acc, other, bytes);
    } else {
      combine(other, acc, bytes);
      std::swap(acc, other);
    }
  }
  if (node_ + p < nodes_) exchange(node_ + p, acc, bytes, -1, nullptr, 0);
  return acc;
}

void NodeLeaders::allReduce(const std::byte* in, std::byte* out, std::size_t bytes,
                            const Combine& combine, MpiReduction mpi) {
  if (mpiOnAll(plan::Collective::AllReduce, "AllReduce", in, out, bytes, -1, mpi)) return;
  begin(plan::Collective::AllReduce, "AllReduce", bytes, mpi.type != MPI_DATATYPE_NULL);
  mpi_reduction_ = mpi;
  if (shape_ == Shape::Mpi && alone()) {  // MPI's call on the caller's own buffers
    mpiOnCallersBuffers(plan::Collective::AllReduce, in, out, bytes, -1, leaders_comm_);
    return;
  }
  if (alone()) {
    std::memcpy(work_a_.data(), in, bytes);
  } else {
    board_->reduce(in, work_a_.data(), bytes, combine, 0);
  }
  if (leader()) {
    std::byte* result = leadersAllReduce(work_a_.data(), bytes, combine);
    if (!alone()) {
      board_->broadcast(result, out, bytes, 0);
    } else {
      std::memcpy(out, result, bytes);
    }
  } else {
    board_->broadcast(nullptr, out, bytes, 0);
  }
}

void NodeLeaders::reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                                const Combine& combine, MpiReduction mpi) {
  const std::size_t bytes = layout_.node_of_rank.size() * block_bytes;
  if (mpiOnAll(plan::Collective::ReduceScatter, "ReduceScatter", in, out, block_bytes, -1, mpi)) {
    return;
  }
  begin(plan::Collective::ReduceScatter, "ReduceScatter", bytes, mpi.type != MPI_DATATYPE_NULL);
  mpi_reduction_ = mpi;
  if (shape_ == Shape::Mpi && every_node_alone_ && ranks_in_node_order_) {
    // The leaders' comm is the comm: MPI's call on the caller's buffers.
    mpiOnCallersBuffers(plan::Collective::ReduceScatter, in, out, block_bytes, -1, leaders_comm_);
    return;
  }
  if (alone()) {
    std::memcpy(work_a_.data(), in, bytes);
  } else {
    board_->reduce(in, work_a_.data(), bytes, combine, 0);
  }
  if (shape_ == Shape::Mpi) {
    mpiReduceScatter(out, block_bytes);
    return;
  }
  const std::size_t mine = static_cast<std::size_t>(layout_.rank) * block_bytes;
  const std::byte* result = leader() ? leadersAllReduce(work_a_.data(), bytes, combine) : nullptr;
  if (alone()) {
    std::memmove(out, result + mine, block_bytes);
  } else {  // each rank takes its own block of the leader's result
    board_->scatter(result, bytes, out, mine, block_bytes, 0);
  }
}

void NodeLeaders::broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root) {
  if (mpiOnAll(plan::Collective::Broadcast, "Broadcast", in, out, bytes, root, {})) return;
  begin(plan::Collective::Broadcast, "Broadcast", bytes);
  callLeaders(root);
  const auto r = static_cast<std::size_t>(root);
  const int root_node = layout_.node_of_rank[r];
  const bool speaks = call_leader_[static_cast<std::size_t>(node_)] == layout_.rank;
  // The root posts on its node's board first (it waits for nobody there), then sends.
  if (node_ == root_node) {
    if (!alone()) {
      board_->broadcast(in, out, bytes, layout_.local_rank_of_rank[r]);
    } else if (out != in) {
      std::memcpy(out, in, bytes);
    }
  }
  if (shape_ == Shape::Mpi) {  // the leaders, not the root, speak: the board gave them `out`
    if (leader()) {
      mpiDone(PMPI_Bcast(out, static_cast<int>(bytes), MPI_BYTE, root_node, leaders_comm_),
              "MPI_Bcast");
    }
    if (node_ != root_node && !alone()) board_->broadcast(leader() ? out : nullptr, out, bytes, 0);
    return;
  }
  if (speaks && shape_ != Shape::LogRounds) {
    if (node_ == root_node) {
      std::array<Part, kMaxNodes> sends;
      const int count = everyOtherNode(nodes_, node_, sends, [&](int n) {
        return Part{n, out, nullptr, bytes};
      });
      exchangeAll(sends.data(), count, nullptr, 0);
    } else {
      exchange(-1, nullptr, 0, root_node, out, bytes);
    }
  } else if (speaks) {
    const int relative = (node_ - root_node + nodes_) % nodes_;
    for (int mask = 1; mask < nodes_; mask <<= 1) {
      if (relative >= mask && relative < 2 * mask) {
        exchange(-1, nullptr, 0, (relative - mask + root_node) % nodes_, out, bytes);
      } else if (relative < mask && relative + mask < nodes_) {
        exchange((relative + mask + root_node) % nodes_, out, bytes, -1, nullptr, 0);
      }
    }
  }
  if (node_ != root_node && !alone()) board_->broadcast(speaks ? out : nullptr, out, bytes, 0);
}

void NodeLeaders::reduce(const std::byte* in, std::byte* out, std::size_t bytes,
                         const Combine& combine, int root, MpiReduction mpi) {
  if (mpiOnAll(plan::Collective::Reduce, "Reduce", in, out, bytes, root, mpi)) return;
  // The Mpi way where the root is its node's leader, which speaks for the node anyway.
  begin(plan::Collective::Reduce, "Reduce", bytes,
        mpi.type != MPI_DATATYPE_NULL &&
            layout_.local_rank_of_rank[static_cast<std::size_t>(root)] == 0);
  mpi_reduction_ = mpi;
  callLeaders(root);
  const auto r = static_cast<std::size_t>(root);
  const int root_node = layout_.node_of_rank[r];
  const int speaker = call_leader_[static_cast<std::size_t>(node_)];
  if (shape_ == Shape::Mpi && alone()) {  // MPI's call on the caller's own buffers
    const bool root_here = layout_.rank == root;
    mpiDone(PMPI_Reduce(root_here && in == out ? MPI_IN_PLACE : in, root_here ? out : nullptr,
                        elements(bytes), mpi.type, mpi.op, root_node, leaders_comm_),
            "MPI_Reduce");
    return;
  }
  std::byte* acc = work_a_.data();
  if (alone()) {
    std::memcpy(acc, in, bytes);
  } else {
    board_->reduce(in, acc, bytes, combine,
                   layout_.local_rank_of_rank[static_cast<std::size_t>(speaker)]);
  }
  if (speaker != layout_.rank) return;
  if (shape_ == Shape::Mpi) {
    mpiDone(PMPI_Reduce(acc, layout_.rank == root ? out : nullptr, elements(bytes), mpi.type,
                        mpi.op, root_node, leaders_comm_),
            "MPI_Reduce");
    return;
  }
  if (shape_ != Shape::LogRounds) {
    if (node_ != root_node) {
      exchange(root_node, acc, bytes, -1, nullptr, 0);
      return;
    }
    std::array<Part, kMaxNodes> recvs;
    const int count = everyOtherNode(nodes_, node_, recvs, [&](int n) {
      return Part{n, nullptr, slot(n, bytes), bytes};
    });
    exchangeAll(nullptr, 0, recvs.data(), count);
    combineInNodeOrder(acc, work_b_.data(), bytes, combine);
    std::memcpy(out, work_b_.data(), bytes);
    return;
  }
  std::byte* incoming = work_b_.data();
  const int relative = (node_ - root_node + nodes_) % nodes_;
  for (int mask = 1; mask < nodes_; mask <<= 1) {
    if ((relative & mask) != 0) {
      exchange((relative - mask + root_node) % nodes_, acc, bytes, -1, nullptr, 0);
      break;
    }
    if (relative + mask < nodes_) {
      exchange(-1, nullptr, 0, (relative + mask + root_node) % nodes_, incoming, bytes);
      combine(acc, incoming, bytes);
    }
  }
  if (layout_.rank == root) std::memcpy(out, acc, bytes);
}

std::size_t NodeLeaders::pack(std::uint64_t nodes, const std::byte* all, std::byte* packed) const {
  std::size_t at = 0;
  for (int n = 0; n < nodes_; ++n) {
    if ((nodes >> n & 1u) == 0) continue;
    const std::size_t bytes = static_cast<std::size_t>(ranks_on_[n]) * block_bytes_;
    if (packed != nullptr) {
      std::memcpy(packed + at, all + first_block_[static_cast<std::size_t>(n)] * block_bytes_,
                  bytes);
    }
    at += bytes;
  }
  return at;
}

void NodeLeaders::unpack(std::uint64_t nodes, const std::byte* packed, std::byte* all) const {
  std::size_t at = 0;
  for (int n = 0; n < nodes_; ++n) {
    if ((nodes >> n & 1u) == 0) continue;
    const std::size_t bytes = static_cast<std::size_t>(ranks_on_[n]) * block_bytes_;
    std::memcpy(all + first_block_[static_cast<std::size_t>(n)] * block_bytes_, packed + at, bytes);
    at += bytes;
  }
}

void NodeLeaders::allGather(const std::byte* in, std::byte* out, std::size_t block_bytes) {
  const std::size_t ranks = layout_.node_of_rank.size();
  const std::size_t bytes = ranks * block_bytes;
  if (mpiOnAll(plan::Collective::AllGather, "AllGather", in, out, block_bytes, -1, {})) return;
  begin(plan::Collective::AllGather, "AllGather", bytes);
  block_bytes_ = block_bytes;
  if (shape_ == Shape::Mpi && every_node_alone_ && ranks_in_node_order_) {
    // The leaders' comm is the comm: MPI's call on the caller's buffers.
    mpiOnCallersBuffers(plan::Collective::AllGather, in, out, block_bytes, -1, leaders_comm_);
    return;
  }
  if (!leader()) {
    board_->gather(in, nullptr, block_bytes, 0);
    board_->broadcast(nullptr, out, bytes, 0);
    return;
  }
  // The leader's working buffer holds the blocks in node order (each node's ranks
  // in local rank order), so each node's blocks are one range.
  std::byte* all = work_a_.data();
  std::byte* own = all + first_block_[static_cast<std::size_t>(node_)] * block_bytes;
  if (alone()) {
    std::memcpy(own, in, block_bytes);
  } else {
    board_->gather(in, own, block_bytes, 0);
  }
  const int p = NodeLeaders::largestPowerOfTwoUpTo(nodes_);
  const std::size_t own_bytes = static_cast<std::size_t>(local_size_) * block_bytes;
  if (shape_ == Shape::Mpi) {  // each node's blocks are one range of `all`
    gather_counts_.resize(static_cast<std::size_t>(nodes_));
    gather_displs_.resize(static_cast<std::size_t>(nodes_));
    for (std::size_t n = 0; n < gather_counts_.size(); ++n) {
      gather_counts_[n] = static_cast<int>(static_cast<std::size_t>(ranks_on_[n]) * block_bytes);
      gather_displs_[n] = static_cast<int>(first_block_[n] * block_bytes);
    }
    // Equal nodes take MPI_Allgather: MPI libraries tune it more than the v form
    // (Open MPI's small Allgatherv on a few ranks is a ring, its Allgather not).
    if (equal_nodes_) {
      mpiDone(PMPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, all, gather_counts_[0], MPI_BYTE,
                             leaders_comm_),
              "MPI_Allgather");
    } else {
      mpiDone(PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, all, gather_counts_.data(),
                              gather_displs_.data(), MPI_BYTE, leaders_comm_),
              "MPI_Allgatherv");
    }
  } else if (shape_ == Shape::ViaFirstLeader && node_ != 0) {
    exchange(0, own, own_bytes, -1, nullptr, 0);
    exchange(-1, nullptr, 0, 0, all, bytes);
  } else if (shape_ == Shape::ViaFirstLeader) {  // each node's blocks to their place, all back
    std::array<Part, kMaxNodes> parts;
    const int count = everyOtherNode(nodes_, node_, parts, [&](int n) {
      const auto k = static_cast<std::size_t>(n);
      return Part{n, nullptr, all + first_block_[k] * block_bytes,
                  static_cast<std::size_t>(ranks_on_[k]) * block_bytes};
    });
    exchangeAll(nullptr, 0, parts.data(), count);
    everyOtherNode(nodes_, node_, parts, [&](int n) { return Part{n, all, nullptr, bytes}; });
    exchangeAll(parts.data(), count, nullptr, 0);
  } else if (shape_ == Shape::OneRound) {  // each node's blocks straight to their place
    std::array<Part, kMaxNodes> sends, recvs;
    const int count = everyOtherNode(nodes_, node_, sends, [&](int n) {
      return Part{n, own, nullptr, own_bytes};
    });
    everyOtherNode(nodes_, node_, recvs, [&](int n) {
      const auto k = static_cast<std::size_t>(n);
      return Part{n, nullptr, all + first_block_[k] * block_bytes,
                  static_cast<std::size_t>(ranks_on_[k]) * block_bytes};
    });
    exchangeAll(sends.data(), count, recvs.data(), count);
  } else if (node_ >= p) {
    const std::uint64_t mine = std::uint64_t{1} << node_;
    exchange(node_ - p, packed_.data(), pack(mine, all, packed_.data()), -1, nullptr, 0);
    exchange(-1, nullptr, 0, node_ - p, all, bytes);
  } else {
    auto held = [&](int n) {  // the nodes whose blocks leader n holds after the fold
      std::uint64_t set = std::uint64_t{1} << n;
      if (n + p < nodes_) set |= std::uint64_t{1} << (n + p);
      return set;
    };
    std::uint64_t have = std::uint64_t{1} << node_;
    if (node_ + p < nodes_) {
      const std::uint64_t theirs = std::uint64_t{1} << (node_ + p);
      exchange(-1, nullptr, 0, node_ + p, work_b_.data(), pack(theirs, all, nullptr));
      unpack(theirs, work_b_.data(), all);
      have |= theirs;
    }
    for (int mask = 1; mask < p; mask <<= 1) {
      const int partner = node_ ^ mask;
      // The partner holds what the nodes of its own group hold, mirrored.
      std::uint64_t theirs = 0;
      for (int n = 0; n < p; ++n) {
        if ((n & ~(mask - 1)) == (partner & ~(mask - 1))) theirs |= held(n);
      }
      const std::size_t send_bytes = pack(have, all, packed_.data());
      exchange(partner, packed_.data(), send_bytes, partner, work_b_.data(),
               pack(theirs, all, nullptr));
      unpack(theirs, work_b_.data(), all);
      have |= theirs;
    }
    if (node_ + p < nodes_) exchange(node_ + p, all, bytes, -1, nullptr, 0);
  }
  // Communicator rank order in `out`, then the node's other ranks copy it.
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto n = static_cast<std::size_t>(layout_.node_of_rank[r]);
    const std::size_t at =
        first_block_[n] + static_cast<std::size_t>(layout_.local_rank_of_rank[r]);
    std::memcpy(out + r * block_bytes, all + at * block_bytes, block_bytes);
  }
  if (!alone()) board_->broadcast(out, out, bytes, 0);
}

}  // namespace blink::algorithms
