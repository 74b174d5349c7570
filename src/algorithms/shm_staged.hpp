// The direct path through a staging area (node_collectives.hpp): every rank copies
// what its peers need into its own part of a shared segment, and they read it from
// there with plain loads. No system call moves data and no peer ever touches a
// caller's buffer, so a call returns as soon as this rank has its result.
//
// An AllReduce is a reduce-scatter and an all-gather through the area (a Reduce the
// same, with the root alone gathering). In each round rank r copies the others'
// segments of its input into its slots; it reduces its own segment (its input,
// combined with slot r of every peer in a fixed order, goes into its output and
// into its own slot r); and it copies every owner's slot into its output. That is
// two plain copies per byte, against a plan's copy into and out of a slot at every
// step. The three stages run as a software pipeline over pieces of the segments,
// counted across calls in `staged_pieces` and `reduced_pieces`: step s copies piece
// s - 2 out, reduces piece s - 1 and stages piece s. A piece is read by the peers
// while it is still in a cache, and the rounds are small (256 KiB per rank, 1 MiB
// where ranks share cores), so the area itself stays in cache. Writes into the area
// go through a transport::StagingWriter (streaming_copy.hpp), which leaves the cache when the
// peers' hold on the lines from the last round makes cached stores crawl.
//
// Each rank's part has two halves; the control line says which half each round
// used. A half is free once every peer has published `done` for the last round that
// used it. A round reuses the half written last (still in cache) if it is free, and
// otherwise waits until the other half is. Within a pipelined call a round starts
// while the round before is still read, so it takes the other half, whose rounds
// the peers finished a step or more before.
//
// The other collectives go one round at a time. A call larger than half the area
// goes in rounds. The area grows, on every rank at once, to fit such a call in one
// round (a power of two, up to the configured maximum per rank); if it cannot
// grow, calls keep the area they have.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/node_collectives.hpp"
#include "transport/shm/shm_segment.hpp"
#include "transport/shm/streaming_copy.hpp"

namespace blink::algorithms {

class ShmStaged final : public NodeCollectives {
 public:
  // Collective over `node_comm` (not owned; ranks below are its ranks). The area
  // starts small and grows up to `max_bytes_per_rank` (both halves). Throws
  // blink::Error on every rank together when any rank cannot set it up, or when
  // `max_bytes_per_rank` is too small for the node's ranks.
  ShmStaged(MPI_Comm node_comm, std::size_t max_bytes_per_rank, double timeout_seconds);

  void allReduce(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t element_bytes,
                 const Combine& combine) override;
  void reduce(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t element_bytes,
              const Combine& combine, int root) override;
  void reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                     const Combine& combine) override;
  void allGather(const std::byte* in, std::byte* out, std::size_t block_bytes) override;
  void broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root) override;
  std::string describe() const override;
  // Rounds read each block of the input before the round writes its result.
  bool reduceScatterIntoInputStart() const override { return true; }

  // The area per rank now (both halves), for tests and explain.
  std::size_t bytesPerRank() const { return per_rank_; }

  // Smallest area per rank that works for `ranks` ranks (each slot of a half at
  // least a page).
  static std::size_t minimumBytesPerRank(int ranks);

 private:
  struct alignas(64) Control {
    // Round whose data this rank has written, in the collectives that go a round at
    // a time (AllReduce and Reduce count pieces instead).
    std::uint64_t filled;
    // The half round r used, at r % 2, valid once `filled` (or a piece of round r)
    // is published.
    std::uint64_t half_of[2];
    // AllReduce and Reduce count in pieces (all calls together): the pieces whose
    // input this rank has staged, and those whose result it has written.
    std::uint64_t staged_pieces;
    char pad0[32];
    std::uint64_t reduced_pieces;
    char pad1[56];
    std::uint64_t done;  // round up to which this rank has finished reading the peers' halves
    char pad2[56];
  };
  static_assert(sizeof(Control) == 192);

  Control& control(int rank) const;
  // The half of `rank`'s area that round `round` uses.
  std::byte* half(int rank, std::uint64_t round) const;
  std::size_t halfBytes() const { return per_rank_ / 2; }
  // Slot `slot` of `rank`'s half for `round`, a slot being 1 / size() of a half.
  std::byte* slot(int rank, std::uint64_t round, int slot) const;
  std::size_t slotBytes() const;

  // AllReduce (root < 0) or Reduce to `root`: the same rounds, but only the ranks
  // that get the result copy the owners' shares out.
  void reduceTo(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t element_bytes,
                const Combine& combine, int root);
  void begin(const char* collective, std::size_t bytes, std::size_t half_bytes_wanted);
  // Grows the area (collectively) towards `half_bytes_wanted` per half.
  void reserve(std::size_t half_bytes_wanted);
  // Starts the next round as a writer: picks this rank's half for it and waits
  // until that half is free.
  void startWriting();
  // Starts the next round as a rank that only reads.
  void startReading();
  // Publishes the round in progress.
  void publish(std::uint64_t Control::*field);
  // Publishes any count (a round or a piece).
  void publishCount(std::uint64_t Control::*field, std::uint64_t value);
  // Waits until `rank`'s counter `field` reaches `round`.
  void await(int rank, std::uint64_t Control::*field, std::uint64_t round, const char* what_for);
  [[noreturn]] void timedOut(int rank, const char* what_for, double seconds) const;
  // out[0, n) = mine[0, n) combined with slot `rank_` of every peer's half for
  // this round, from `in_slot` bytes on, in pieces that stay in cache; `result`,
  // when not null, gets a copy.
  void reduceShare(const std::byte* mine, std::byte* out, std::byte* result, std::uint64_t round,
                   std::size_t in_slot, std::size_t n, const Combine& combine);

  MPI_Comm node_comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  double timeout_seconds_ = 300.0;
  std::size_t max_per_rank_ = 0;
  std::size_t per_rank_ = 0;        // both halves
  transport::ShmSegment controls_;  // one Control per rank; counters never restart
  transport::ShmSegment area_;      // size_ parts of per_rank_ bytes, remade as it grows
  std::uint64_t round_ = 0;         // the round in progress (rounds count from 1)
  std::uint64_t call_ = 0;          // the call in progress, for messages
  std::uint64_t piece_ = 0;         // AllReduce and Reduce pieces before this round
  std::uint64_t last_half_ = 0;     // the half this rank wrote last
  std::uint64_t last_round_of_half_[2] = {0, 0};
  std::size_t reduce_slot_bytes_ = 0;  // an AllReduce round's slot per rank, at most
  std::string grow_failure_;           // why the area stopped growing, if it did
  transport::StagingWriter writer_;
  const char* collective_ = "";
  std::size_t bytes_ = 0;
};

}  // namespace blink::algorithms
