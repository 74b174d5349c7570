#include "algorithms/shm_staged.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <string>

#include "common/backoff.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "transport/shm/node_segment.hpp"

namespace blink::algorithms {
namespace {

// A slot's start stays on a cache line of its own, which every element size divides.
constexpr std::size_t kLine = 64;
constexpr std::size_t kPage = 4096;
// What the area starts with per rank (both halves), before any call asks for more.
constexpr std::size_t kInitialBytesPerRank = std::size_t{4} << 20;
// The output piece being reduced and the peers' pieces combined into it stay in L2.
constexpr std::size_t kPieceBytes = std::size_t{128} << 10;
// An AllReduce round's slot per rank. Small rounds keep the two halves in flight in
// cache; where ranks share cores, a rank's turn on a core is longer than a small
// round, and larger rounds did better (perf/README.md).
constexpr std::size_t kReduceSlotBytes = std::size_t{256} << 10;
constexpr std::size_t kReduceSlotBytesSharedCores = std::size_t{1} << 20;

std::size_t roundUp(std::size_t value, std::size_t unit) {
  return (value + unit - 1) / unit * unit;
}

}  // namespace

std::size_t ShmStaged::minimumBytesPerRank(int ranks) {
  return 2 * static_cast<std::size_t>(ranks) * kPage;
}

ShmStaged::ShmStaged(MPI_Comm node_comm, std::size_t max_bytes_per_rank, double timeout_seconds)
    : node_comm_(node_comm), timeout_seconds_(timeout_seconds) {
  transport::checkSetUpCall(PMPI_Comm_rank(node_comm, &rank_), "staging area", "MPI_Comm_rank");
  transport::checkSetUpCall(PMPI_Comm_size(node_comm, &size_), "staging area", "MPI_Comm_size");
  const std::size_t minimum = minimumBytesPerRank(size_);
  if (max_bytes_per_rank < minimum) {
    // Every rank sees the same agreed setting, so every rank throws here.
    throw Error(blinkUnsupported, "BLINK_SHM_STAGING_BYTES=" + std::to_string(max_bytes_per_rank) +
                                      " is below the " + std::to_string(minimum) +
                                      " bytes per rank that a staging area for " +
                                      std::to_string(size_) + " ranks needs");
  }
  // Halves of whole pages: every rank's part then starts on a page of its own.
  max_per_rank_ = max_bytes_per_rank / (2 * kPage) * (2 * kPage);
  controls_ =
      transport::mapNodeSegment(node_comm, static_cast<std::size_t>(size_) * sizeof(Control),
                                timeout_seconds_, "staging area control lines");
  per_rank_ = std::max(minimum, std::min(max_per_rank_, kInitialBytesPerRank));
  // Every rank must cut rounds alike, so the node agrees on whether cores are shared.
  const int own_cores = sysconf(_SC_NPROCESSORS_ONLN) >= size_ ? 1 : 0;
  int all_own_cores = 0;
  allreduceWithin(&own_cores, &all_own_cores, 1, MPI_INT, MPI_MIN, node_comm, timeout_seconds_,
                  "staging area: counting cores");
  reduce_slot_bytes_ = all_own_cores == 1 ? kReduceSlotBytes : kReduceSlotBytesSharedCores;
  area_ = transport::mapNodeSegment(node_comm, static_cast<std::size_t>(size_) * per_rank_,
                                    timeout_seconds_, "staging area");
}

std::string ShmStaged::describe() const {
  std::string text =
      "every rank copies its data into a staging area in shared memory and reads its peers' "
      "from there (" +
      std::to_string(per_rank_) + " bytes per rank now, growing to at most " +
      std::to_string(max_per_rank_) + "; BLINK_SHM_STAGING_BYTES)";
  if (!grow_failure_.empty()) text += "; it could not grow further: " + grow_failure_;
  return text;
}

ShmStaged::Control& ShmStaged::control(int rank) const {
  return reinterpret_cast<Control*>(controls_.data())[rank];
}

std::byte* ShmStaged::half(int rank, std::uint64_t round) const {
  // Written before `filled` reached `round` (release), read after it did (acquire).
  const std::uint64_t which =
      std::atomic_ref(control(rank).half_of[round % 2]).load(std::memory_order_relaxed);
  return area_.data() + static_cast<std::size_t>(rank) * per_rank_ + which * halfBytes();
}

std::size_t ShmStaged::slotBytes() const {
  return halfBytes() / static_cast<std::size_t>(size_) / kLine * kLine;
}

std::byte* ShmStaged::slot(int rank, std::uint64_t round, int slot_index) const {
  return half(rank, round) + static_cast<std::size_t>(slot_index) * slotBytes();
}

void ShmStaged::begin(const char* collective, std::size_t bytes, std::size_t half_bytes_wanted) {
  ++call_;
  collective_ = collective;
  bytes_ = bytes;
  reserve(half_bytes_wanted);
}

void ShmStaged::reserve(std::size_t half_bytes_wanted) {
  if (half_bytes_wanted <= halfBytes() || per_rank_ >= max_per_rank_) return;
  // Every rank computes the same size from the same history, so all grow together.
  const std::size_t wanted =
      std::min(max_per_rank_, 2 * std::bit_ceil(roundUp(half_bytes_wanted, kPage)));
  try {
    // Every rank enters this collective only after its earlier calls, reads included,
    // are over: nobody still reads the old area when it goes.
    area_ = transport::mapNodeSegment(node_comm_, static_cast<std::size_t>(size_) * wanted,
                                      timeout_seconds_, "staging area");
    if (rank_ == 0) {
      BLINK_LOG(Info, "direct path: staging area grown from "
                          << per_rank_ << " to " << wanted << " bytes per rank for a "
                          << collective_ << " of " << bytes_ << " bytes");
    }
    per_rank_ = wanted;
  } catch (const Error& e) {
    // Every rank failed together (transport::mapNodeSegment agrees); the old area still works,
    // only in more rounds.
    if (e.status() == blinkTimeout) throw;
    grow_failure_ = e.what();
    max_per_rank_ = per_rank_;
    if (rank_ == 0) {
      BLINK_LOG(Warn, "direct path: the staging area stays at " << per_rank_ << " bytes per rank ("
                                                                << e.what() << ")");
    }
  }
}

void ShmStaged::publish(std::uint64_t Control::*field) {
  publishCount(field, round_);
}

void ShmStaged::publishCount(std::uint64_t Control::*field, std::uint64_t value) {
  std::atomic_ref(control(rank_).*field).store(value, std::memory_order_release);
}

void ShmStaged::await(int rank, std::uint64_t Control::*field, std::uint64_t round,
                      const char* what_for) {
  blink::awaitCounter(control(rank).*field, round, timeout_seconds_,
                      [&](double seconds) { timedOut(rank, what_for, seconds); });
}

void ShmStaged::startWriting() {
  ++round_;
  // Readers of round_ - 2 find its half through half_of[round_ % 2], which this
  // round rewrites, so every peer must be done with that round; a rank that read
  // only in round_ - 1 would otherwise see its half change under it. The other half
  // is then free: no round since round_ - 2 used it.
  const std::uint64_t two_back = round_ >= 2 ? round_ - 2 : 0;
  for (int step = 1; step < size_; ++step) {
    await((rank_ + step) % size_, &Control::done, two_back,
          "to finish reading this rank's staging area");
  }
  // The half written last is still in cache: it is taken if every peer is done
  // with it too. Nobody waits for that; a late peer costs the other half.
  bool reuse = true;
  for (int step = 1; step < size_ && reuse; ++step) {
    reuse = std::atomic_ref(control((rank_ + step) % size_).done).load(std::memory_order_acquire) >=
            last_round_of_half_[last_half_];
  }
  if (!reuse) last_half_ = 1 - last_half_;
  last_round_of_half_[last_half_] = round_;
  std::atomic_ref(control(rank_).half_of[round_ % 2]).store(last_half_, std::memory_order_relaxed);
}

void ShmStaged::startReading() {
  ++round_;
}

void ShmStaged::timedOut(int rank, const char* what_for, double seconds) const {
  blink::throwPeerTimeout(collective_, bytes_, "direct path, staging area", call_, rank_, rank,
                          what_for, seconds);
}

void ShmStaged::reduceShare(const std::byte* mine, std::byte* out, std::byte* result,
                            std::uint64_t round, std::size_t in_slot, std::size_t n,
                            const Combine& combine) {
  for (std::size_t at = 0; at < n; at += kPieceBytes) {
    const std::size_t piece = std::min(kPieceBytes, n - at);
    std::byte* to = out + at;
    if (to != mine + at) std::memcpy(to, mine + at, piece);
    // Peers in turn from the next rank on: one rank combines each element, always
    // in the same order, so every rank gets the same bits.
    for (int step = 1; step < size_; ++step) {
      combine(to, slot((rank_ + step) % size_, round, rank_) + in_slot + at, piece);
    }
    if (result != nullptr) writer_.copy(result + at, to, piece);
  }
}

void ShmStaged::allReduce(const std::byte* in, std::byte* out, std::size_t bytes,
                          std::size_t element_bytes, const Combine& combine) {
  reduceTo(in, out, bytes, element_bytes, combine, -1);
}

void ShmStaged::reduce(const std::byte* in, std::byte* out, std::size_t bytes,
                       std::size_t element_bytes, const Combine& combine, int root) {
  reduceTo(in, out, bytes, element_bytes, combine, root);
}

void ShmStaged::reduceTo(const std::byte* in, std::byte* out, std::size_t bytes,
                         std::size_t element_bytes, const Combine& combine, int root) {
  const auto ranks = static_cast<std::size_t>(size_);
  const std::size_t elements = bytes / element_bytes;
  const std::size_t share_bytes = (elements + ranks - 1) / ranks * element_bytes;
  const std::size_t slot_bytes = std::min(reduce_slot_bytes_, roundUp(share_bytes, kLine));
  begin(root < 0 ? "AllReduce" : "Reduce", bytes, ranks * slot_bytes);
  if (elements == 0) return;
  // Who gathers the result: every rank, or the root only. A rank that does not
  // reduces its share straight into its result slot, for the root to read.
  const bool gathers = root < 0 || root == rank_;
  // Rounds of `round_elements`, the last one shorter; each rank's share of a round
  // in pieces of `piece_elements` (whole elements, and whole cache lines but at the
  // end of a share).
  const std::size_t round_elements = std::min(slotBytes(), slot_bytes) / element_bytes * ranks;
  const std::size_t piece_elements = std::max<std::size_t>(1, kPieceBytes / element_bytes);
  const std::size_t full_pieces = (round_elements / ranks + piece_elements - 1) / piece_elements;
  const std::size_t round_count = (elements + round_elements - 1) / round_elements;
  struct Round {
    std::uint64_t number;
    std::size_t first, count, share;
    std::size_t first_piece, pieces;  // pieces numbered across the call
  };
  // The round of the call's piece `global`: every round has `full_pieces` pieces but
  // the last, which may have fewer.
  const std::uint64_t rounds_before = round_;
  auto roundOf = [&](std::size_t global) {
    const std::size_t index = std::min(global / full_pieces, round_count - 1);
    Round round{rounds_before + index + 1, index * round_elements, 0, 0, index * full_pieces, 0};
    round.count = std::min(round_elements, elements - round.first);
    round.share = (round.count + ranks - 1) / ranks;
    round.pieces = (round.share + piece_elements - 1) / piece_elements;
    return round;
  };
  const Round last = roundOf((round_count - 1) * full_pieces);
  const std::size_t total_pieces = last.first_piece + last.pieces;
  // Piece `k` of rank r's share in `round`: its byte offset in the buffers, its byte
  // offset in r's slot, and its length (0 past the end of a short share).
  struct Piece {
    std::size_t offset, in_slot, length;
  };
  auto piece = [&](const Round& round, int r, std::size_t k) {
    const std::size_t share_from = std::min(round.count, round.share * static_cast<std::size_t>(r));
    const std::size_t share_to = std::min(round.count, share_from + round.share);
    const std::size_t from = std::min(share_to, share_from + k * piece_elements);
    const std::size_t to = std::min(share_to, from + piece_elements);
    return Piece{(round.first + from) * element_bytes, (from - share_from) * element_bytes,
                 (to - from) * element_bytes};
  };
  // A software pipeline over the call's pieces: step s copies piece s - 2 out,
  // reduces piece s - 1 and stages piece s, so a piece is read while it is still in
  // a cache, and each wait is for what a peer did one step before (or first in this
  // step: a new round's half waits for the peers' copies out of the round two back).
  for (std::size_t step = 0; step < total_pieces + 2; ++step) {
    if (step >= 2) {
      const std::size_t global = step - 2;
      const Round round = roundOf(global);
      const std::size_t k = global - round.first_piece;
      for (int offset_rank = 1; gathers && offset_rank < size_; ++offset_rank) {
        const int owner = (rank_ + offset_rank) % size_;
        await(owner, &Control::reduced_pieces, piece_ + global + 1, "to finish its share");
        // In place, this piece of the owner's share was staged two steps before.
        const Piece p = piece(round, owner, k);
        std::memcpy(out + p.offset, slot(owner, round.number, owner) + p.in_slot, p.length);
      }
      if (k + 1 == round.pieces) publishCount(&Control::done, round.number);
    }
    if (step >= 1 && step - 1 < total_pieces) {
      const std::size_t global = step - 1;
      const Round round = roundOf(global);
      for (int offset_rank = 1; offset_rank < size_; ++offset_rank) {
        await((rank_ + offset_rank) % size_, &Control::staged_pieces, piece_ + global + 1,
              "to stage its input");
      }
      const Piece p = piece(round, rank_, global - round.first_piece);
      std::byte* result = slot(rank_, round.number, rank_) + p.in_slot;
      if (!gathers) {
        reduceShare(in + p.offset, result, nullptr, round.number, p.in_slot, p.length, combine);
      } else {
        reduceShare(in + p.offset, out + p.offset, root < 0 ? result : nullptr, round.number,
                    p.in_slot, p.length, combine);
      }
      publishCount(&Control::reduced_pieces, piece_ + global + 1);
    }
    if (step < total_pieces) {
      const Round round = roundOf(step);
      const std::size_t k = step - round.first_piece;
      if (k == 0) startWriting();  // round_ becomes round.number
      for (int offset_rank = 1; offset_rank < size_; ++offset_rank) {
        const int owner = (rank_ + offset_rank) % size_;
        const Piece p = piece(round, owner, k);
        writer_.copy(slot(rank_, round.number, owner) + p.in_slot, in + p.offset, p.length);
      }
      publishCount(&Control::staged_pieces, piece_ + step + 1);
    }
  }
  piece_ += total_pieces;
}

void ShmStaged::reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                              const Combine& combine) {
  const auto ranks = static_cast<std::size_t>(size_);
  begin("ReduceScatter", ranks * block_bytes, ranks * roundUp(block_bytes, kLine));
  // slotBytes() is a whole number of cache lines, so of elements too.
  for (std::size_t offset = 0; offset < block_bytes;) {
    const std::size_t length = std::min(slotBytes(), block_bytes - offset);
    startWriting();
    for (int step = 1; step < size_; ++step) {
      const int owner = (rank_ + step) % size_;
      writer_.copy(slot(rank_, round_, owner),
                   in + static_cast<std::size_t>(owner) * block_bytes + offset, length);
    }
    publish(&Control::filled);
    for (int step = 1; step < size_; ++step) {
      await((rank_ + step) % size_, &Control::filled, round_, "to stage its input");
    }
    // A result at the start of the input overwrites only block 0's part of this
    // round, which is staged already (or is this rank's own block, in place).
    reduceShare(in + static_cast<std::size_t>(rank_) * block_bytes + offset, out + offset, nullptr,
                round_, 0, length, combine);
    publish(&Control::done);
    offset += length;
  }
}

void ShmStaged::allGather(const std::byte* in, std::byte* out, std::size_t block_bytes) {
  const auto ranks = static_cast<std::size_t>(size_);
  begin("AllGather", ranks * block_bytes, roundUp(block_bytes, kLine));
  std::byte* own = out + static_cast<std::size_t>(rank_) * block_bytes;
  if (own != in) std::memcpy(own, in, block_bytes);
  for (std::size_t offset = 0; offset < block_bytes;) {
    const std::size_t length = std::min(halfBytes(), block_bytes - offset);
    startWriting();
    writer_.copy(half(rank_, round_), own + offset, length);
    publish(&Control::filled);
    for (int step = 1; step < size_; ++step) {
      const int peer = (rank_ + step) % size_;
      await(peer, &Control::filled, round_, "to stage its block");
      std::memcpy(out + static_cast<std::size_t>(peer) * block_bytes + offset, half(peer, round_),
                  length);
    }
    publish(&Control::done);
    offset += length;
  }
}

void ShmStaged::broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root) {
  begin("Broadcast", bytes, roundUp(bytes, kLine));
  for (std::size_t offset = 0; offset < bytes;) {
    const std::size_t length = std::min(halfBytes(), bytes - offset);
    if (rank_ == root) {
      startWriting();
      writer_.copy(half(rank_, round_), in + offset, length);
      publish(&Control::filled);
      publish(&Control::done);  // the root reads nobody's half
      // The root's own copy runs while the peers read.
      if (out != in) std::memcpy(out + offset, in + offset, length);
    } else {
      startReading();  // nothing to write; `done` below frees the root's half
      await(root, &Control::filled, round_, "to stage its data");
      std::memcpy(out + offset, half(root, round_), length);
      publish(&Control::done);
    }
    offset += length;
  }
}

}  // namespace blink::algorithms
